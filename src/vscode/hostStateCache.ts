/**
 * The host facts the panel's state is made of, resolved when they change rather than each time they are
 * read: a folder's settings (until the `codeact.*` settings, Workspace Trust or the workspace folders
 * change) and whether a provider has a key (until the secret storage changes). And {@link StatePosts}:
 * a page is sent the state only when it differs from the last one it was sent.
 */
import { describeIgnored } from '../core/config/resolve';
import type { ProviderId } from '../core/providers/shared/types';
import type { ControllerApis, Log, ControllerDeps } from './controller.apis';
import { ChangeCache } from './changeCache';
import { providerInfo } from '../core/providers/shared/catalog';
import type { CodeActSettings } from './settings';

interface HostFactsDeps {
  apis: Pick<ControllerApis, 'resolveSettings' | 'onDidChangeSettings'>;
  secrets: Pick<ControllerDeps['secrets'], 'hasKey' | 'onDidChange'>;
  log: Log;
  /** A change was taken in (its cached values dropped): whoever shows them is told. */
  changed(what: 'settings' | 'keys'): void;
}

export class HostFacts {
  private readonly settingsOf = new ChangeCache<string | undefined, CodeActSettings>((folder) => this.resolve(folder));
  private readonly keys = new ChangeCache<ProviderId, Promise<boolean>>((provider) => {
    const has = this.deps.secrets.hasKey(provider);
    // A failed read is not kept: the next one asks again.
    has.catch(() => this.keys.delete(provider));
    return has;
  });
  private loggedIgnored = '[]';
  private readonly subscriptions: Array<{ dispose(): void }>;

  constructor(private readonly deps: HostFactsDeps) {
    this.subscriptions = [
      deps.apis.onDidChangeSettings(() => {
        this.settingsOf.clear();
        deps.changed('settings');
      }),
      deps.secrets.onDidChange(() => {
        this.keys.clear();
        deps.changed('keys');
      }),
    ];
  }

  /** The settings of a folder (fs path; undefined: the first), resolved once per change. Shared: never mutated by readers. */
  settings(folder: string | undefined): CodeActSettings {
    return this.settingsOf.get(folder);
  }

  /** Whether a provider has a key (stored or from the environment), asked once per change of the secret storage. */
  hasKey(provider: ProviderId): Promise<boolean> {
    return this.keys.get(provider);
  }

  private resolve(folder: string | undefined): CodeActSettings {
    const resolved = this.deps.apis.resolveSettings(folder);
    const key = JSON.stringify(resolved.ignored);
    if (key !== this.loggedIgnored) {
      this.loggedIgnored = key;
      for (const line of describeIgnored(resolved.ignored)) this.deps.log.warn(line);
    }
    const s = resolved.config;
    if (!s.model) s.model = providerInfo(s.provider).defaultModels[0] ?? '';
    return s;
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}

/**
 * What one page is sent of the host state: a state only when it differs from the last one sent (its JSON),
 * and never an older read over a newer one.
 */
export class StatePosts<S> {
  private last?: { json: string; state: S };
  private started = 0;
  private answered = 0;

  /** The state, when it is the newest read so far and differs from the last one given out; else undefined. */
  async changed(read: () => Promise<S>): Promise<S | undefined> {
    const n = ++this.started;
    const state = await read();
    if (n < this.answered) return undefined;
    this.answered = n;
    const json = JSON.stringify(state);
    if (json === this.last?.json) return undefined;
    this.last = { json, state };
    return state;
  }

  /** The state for a page that (re)loaded: always given (the newest read, if one overtook this one); later changes are compared with it. */
  async initial(read: () => Promise<S>): Promise<S> {
    const n = ++this.started;
    const state = await read();
    if (n < this.answered && this.last) return this.last.state;
    this.answered = n;
    this.last = { json: JSON.stringify(state), state };
    return state;
  }
}
