/**
 * The extension's one runtime: built from the settings on first need, reused while the settings it is
 * made of stay the same (a key of them), rebuilt when they changed. Also the Run with Tools documents'
 * sessions. The runtime factory and VS Code's toast come through ./runtimeCache.apis.
 */
import { createHash } from 'node:crypto';
import type { SessionChanged } from '../common/events';
import { hostRunPathsFrom, runtimeConfigFrom, runtimeLimitsFrom } from '../core/config/engine';
import type { Runtime } from '../core/runtime/types';
import type { RuntimeCacheApis } from './runtimeCache.apis';
import type { Log } from './session.apis';
import type { CodeActSettings } from './settings';

/** The session of a Run with Tools document: its own, apart from the chat's. */
export function documentSessionId(uri: string): string {
  return `doc:${uri}`;
}

export interface RuntimeCacheDeps {
  apis: RuntimeCacheApis;
  settings(): CodeActSettings;
  /** The Jupyter token (SecretStorage or the environment). */
  jupyterToken(): Promise<string | undefined>;
  /** The folder command tools run in and the sandbox may mount. */
  workspaceFolder(): string | undefined;
  log: Log;
  /** A session started fresh or ended. */
  onSessionEvent(e: SessionChanged): void;
}

export class RuntimeCache {
  private cached?: { key: string; runtime: Runtime };
  /** The live-or-not sessions of Run with Tools documents: id -> the document's name (for Restart Session). */
  readonly documentSessions = new Map<string, string>();

  constructor(private readonly deps: RuntimeCacheDeps) {}

  /** The runtime built last, if any: for reading sessions and variables, never built for that. */
  get current(): Runtime | undefined {
    return this.cached?.runtime;
  }

  /** The runtime for the current settings: the cached one while its key is the same, else a new one (the old one disposed). */
  async get(): Promise<Runtime> {
    const s = this.deps.settings();
    const token = s.runtime === 'jupyter' ? await this.deps.jupyterToken() : undefined;
    // The token is part of the key (hashed), so a new token takes effect on the next run.
    const tokenHash = token ? createHash('sha256').update(token).digest('hex').slice(0, 16) : '';
    // With a writable workspace, the files the tools run on the host are kept read-only: a changed tool rebuilds the runtime.
    const hostRun = hostRunPathsFrom(s, this.deps.workspaceFolder());
    // The interpreter as resolved for the folder (setting, Python extension, .venv, python3): a new one rebuilds the runtime.
    const python = this.deps.apis.pythonEnv?.(this.deps.workspaceFolder(), s.python)?.python;
    const key = JSON.stringify([s.runtime, python ?? s.python, s.preload, s.sessionPolicy, s.sessionIdleMs, s.sessionMaxAlive, s.sandbox, s.sandboxNetwork, s.mountWorkspace, s.limits, s.jupyterUrl, s.jupyterKernel, s.jupyterSessionPolicy, runtimeLimitsFrom(s), tokenHash, hostRun]);
    if (this.cached?.key === key) return this.cached.runtime;
    void this.dispose();
    // A warm zygote forks each session's guest, and the next one is started ahead of need.
    const runtime = await this.deps.apis.createRuntime(
      runtimeConfigFrom(s, {
        workspace: this.deps.workspaceFolder(),
        python,
        jupyterToken: token,
        longLived: true,
        onSessionEvent: (e) => this.deps.onSessionEvent(e),
        log: (l) => this.deps.log.info(l),
        onWarning: (m) => {
          this.deps.log.warn(m);
          this.deps.apis.showWarningMessage(`CodeAct: ${m}`);
        },
      }),
    );
    this.cached = { key, runtime };
    return runtime;
  }

  async dispose(): Promise<void> {
    const r = this.cached?.runtime;
    this.cached = undefined;
    await r?.dispose();
  }
}
