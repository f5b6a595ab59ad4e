/**
 * The extension's runtimes, one per workspace folder (its workspace mount and command tools' working
 * directory are the folder's): each built from that folder's settings on first need, reused while the
 * runtime config resolved from them stays the same (its key), rebuilt when it changed. At most
 * {@link MAX_FOLDER_RUNTIMES} live at once (the least recently used idle one goes). With codeact.session.host
 * "auto" a folder's runtime is an attachment to its session host (core/sessionHost), only in a trusted workspace,
 * and letting it go leaves the host's sessions running (`release`, `dispose`). Also which runtime each
 * session ran in, and the Run with Tools documents' sessions. The runtime factory and VS Code's toast come
 * through ./runtimeCache.apis.
 */
import type { JobChanged, JobOutput, SessionChanged } from '../common/events';
import { runtimeConfigFrom } from '../core/config/engine';
import { runtimeConfigKey, type RuntimeConfig } from '../core/runtime/factory';
import type { Runtime } from '../core/runtime/types';
import type { RuntimeCacheApis } from './runtimeCache.apis';
import type { Log } from './controller.apis';
import type { CodeActSettings } from './settings';
import { forDisplay } from '../common/untrusted';
import { configuredRuntime } from '../common/runtimes';
import { UntrustedWorkspaceError } from './untrusted';

/** The session of a Run with Tools document: its own, apart from the chat's. */
export function documentSessionId(uri: string): string {
  return `doc:${uri}`;
}

/** Folders with a live runtime at most (each has its warm zygote and sessions). */
export const MAX_FOLDER_RUNTIMES = 4;
/** Sessions whose runtime is remembered at most (the oldest forgotten first). */
const MAX_SESSIONS = 500;

interface RuntimeCacheDeps {
  apis: RuntimeCacheApis;
  /** The settings for a folder (fs path; undefined: no folder). */
  settings(folder: string | undefined): CodeActSettings;
  /** The Jupyter token (SecretStorage or the environment). */
  jupyterToken(): Promise<string | undefined>;
  /** The folder a run goes to when none is given: the chat's (command tools run in it, the sandbox may mount it). */
  workspaceFolder(): string | undefined;
  log: Log;
  /** A session started fresh or ended. */
  onSessionEvent(e: SessionChanged): void;
  /** A background job started, printed or ended. */
  onJobEvent?(e: JobChanged | JobOutput): void;
  /** Workspace Trust, asked again before every attach to a session host (the host does not check trust itself). */
  trusted(): boolean;
  /** A runtime was built (the sweep of sessions left running starts: core/turn/sessionSweep); not waited for. */
  built?(runtime: Runtime): void;
}

export class RuntimeCache {
  /** Folder ('' for none) -> its runtime, least recently used first. */
  private readonly cached = new Map<string, { key: string; runtime: Runtime }>();
  /** Session id -> the folder ('' for none) whose runtime it ran in. */
  private readonly sessionFolders = new Map<string, string>();
  /** The live-or-not sessions of Run with Tools documents: id -> the document's name (for Restart Session). */
  readonly documentSessions = new Map<string, string>();

  constructor(private readonly deps: RuntimeCacheDeps) {}

  /** The runtime used last, if any: for reading sessions and variables, never built for that. */
  get current(): Runtime | undefined {
    return [...this.cached.values()].pop()?.runtime;
  }

  /** The runtime a session ran in (else the one used last), never built for that. */
  of(sessionId: string | undefined): Runtime | undefined {
    const folder = sessionId === undefined ? undefined : this.sessionFolders.get(sessionId);
    return (folder !== undefined ? this.cached.get(folder)?.runtime : undefined) ?? this.current;
  }

  /** Every live runtime (each folder's). */
  all(): Runtime[] {
    return [...this.cached.values()].map((c) => c.runtime);
  }

  /**
   * The runtime for a folder's settings (default: the chat's folder): the cached one while its key is the
   * same, else a new one (the old one disposed). `sessionId`: the session about to run in it (remembered for
   * {@link of}).
   */
  async get(folder: string | undefined = this.deps.workspaceFolder(), sessionId?: string): Promise<Runtime> {
    const slot = folder ?? '';
    if (sessionId !== undefined) {
      this.sessionFolders.delete(sessionId);
      this.sessionFolders.set(sessionId, slot);
      if (this.sessionFolders.size > MAX_SESSIONS) this.sessionFolders.delete(this.sessionFolders.keys().next().value!);
    }
    const config = await this.configFor(folder);
    // Keyed by the config itself: a new interpreter, token (hashed in the key) or tool the sandbox keeps
    // read-only (hostRunPaths) rebuilds the runtime; a setting it is not made of keeps it.
    const key = runtimeConfigKey(config);
    // Every attach, a cached hosted runtime's too: its sessions run the folder's code.
    if (config.sessionHost && !this.deps.trusted()) throw new UntrustedWorkspaceError('Attaching to a Python session');
    const had = this.cached.get(slot);
    if (had?.key === key) {
      this.cached.delete(slot);
      this.cached.set(slot, had);
      return had.runtime;
    }
    this.cached.delete(slot);
    void had?.runtime.dispose();
    // Bounded: the least recently used folder's runtime goes (its sessions with it).
    while (this.cached.size >= MAX_FOLDER_RUNTIMES) {
      const [oldest, c] = this.cached.entries().next().value!;
      this.cached.delete(oldest);
      this.deps.log.info(`runtime of ${oldest || 'no folder'} disposed (at most ${MAX_FOLDER_RUNTIMES} folders have a runtime)`);
      void c.runtime.dispose();
    }
    const runtime = await this.deps.apis.createRuntime(config);
    this.cached.set(slot, { key, runtime });
    this.deps.built?.(runtime);
    return runtime;
  }

  /** The runtime config of a folder's settings (what the runtime is built from, and its key). */
  private async configFor(folder: string | undefined): Promise<RuntimeConfig> {
    const s = this.deps.settings(folder);
    const token = configuredRuntime(s.runtime).token ? await this.deps.jupyterToken() : undefined;
    // The interpreter as resolved for the folder (setting, Python extension, .venv, python3).
    const python = this.deps.apis.pythonEnv?.(folder, s.python)?.python;
    // A warm zygote forks each session's guest, and the next one is started ahead of need.
    return runtimeConfigFrom(s, {
      workspace: folder,
      python,
      jupyterToken: token,
      longLived: true,
      // The conversations' sessions may live in a session host that outlives the window (codeact.session.host).
      sessionHost: true,
      onSessionEvent: (e) => this.deps.onSessionEvent(e),
      onJobEvent: (e) => this.deps.onJobEvent?.(e),
      log: (l) => this.deps.log.info(l),
      onWarning: (m) => {
        this.deps.log.warn(m);
        this.deps.apis.showWarningMessage(`CodeAct: ${forDisplay(m)}`);
      },
    });
  }

  /**
   * The folder's runtime when it is an attachment to a session host that is running (a window that comes back:
   * its conversation's session may still be there), else undefined: no host is started to find out.
   */
  async live(folder: string | undefined, sessionId: string): Promise<Runtime | undefined> {
    const config = await this.configFor(folder);
    if (!config.sessionHost || !this.deps.trusted() || !this.deps.apis.hostRunning(config)) return undefined;
    return this.get(folder, sessionId);
  }

  /** A folder left the workspace: its runtime goes. */
  async disposeFolder(folder: string): Promise<void> {
    const c = this.cached.get(folder);
    this.cached.delete(folder);
    await c?.runtime.dispose();
  }

  async dispose(): Promise<void> {
    const all = this.all();
    this.cached.clear();
    await Promise.all(all.map((r) => r.dispose()));
  }

  /**
   * The extension goes: runtimes whose sessions live in a session host let go of them first, before the turn is
   * stopped, so a run going on is left running there (not stopped) for the next window.
   */
  async releaseHosted(): Promise<void> {
    for (const [slot, c] of [...this.cached]) {
      if (!c.runtime.sessions.outlivesClient) continue;
      this.cached.delete(slot);
      await c.runtime.dispose();
    }
  }

  /** The extension goes (a reload, VS Code closing): sessions that can outlive it are left running for the next one, the rest end. */
  async release(): Promise<void> {
    const all = this.all();
    this.cached.clear();
    await Promise.all(all.map((r) => (r.sessions.handover ? r.sessions.handover.release() : r.dispose())));
  }
}
