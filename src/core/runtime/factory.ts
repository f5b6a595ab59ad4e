/**
 * Builds the configured runtime: the local Python guest (default) or a remote Jupyter kernel.
 * The Jupyter client library loads only when that runtime is chosen.
 */
import type { LocalRuntimeOptions } from './local/localRuntime';
import { LocalRuntime } from './local/localRuntime';
import type { Runtime, RuntimeLimits } from './types';
import { CodeActError } from '../util/errors';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../common/canonicalJson';
import { CONFIGURED_RUNTIMES, type ConfiguredRuntime } from '../../common/runtimes';

/**
 * Each runtime's own options, under its name in {@link RuntimeConfig}. A new runtime of ours (common/runtimes.ts)
 * does not compile until it has its entry here (`{}` when it has none) and in `RUNTIME_OPTIONS`
 * (../config/engine.ts), which makes them from the settings.
 */
export interface RuntimeOptions {
  local: LocalRuntimeOptions;
  jupyter: { url?: string; token?: string; kernelName?: string; sessionPolicy?: 'conversation' | 'execution'; log?: (line: string) => void };
}

/** Where the sessions live: in a session host that outlives its client (core/sessionHost/launch.ts `openRuntime`), named by this folder. */
export interface SessionHostChoice {
  workspace: string;
  /** The host ends after this long with no client and no run (codeact.session.hostIdleMinutes); 0 = never. */
  idleMs: number;
}

export type RuntimeConfig = { runtime: ConfiguredRuntime; limits?: Partial<RuntimeLimits>; sessionHost?: SessionHostChoice } & {
  [K in ConfiguredRuntime]?: RuntimeOptions[K];
};

/**
 * A stable key of what a runtime is built from: the config with its keys sorted and its callbacks left out,
 * the Jupyter token hashed (never kept in clear). A config with the same key builds the same runtime.
 */
export function runtimeConfigKey(config: RuntimeConfig): string {
  const token = config.jupyter?.token;
  const keyed = token ? { ...config, jupyter: { ...config.jupyter, token: createHash('sha256').update(token).digest('hex').slice(0, 16) } } : config;
  // Through JSON first, which leaves out the callbacks (and fields set to undefined).
  return canonicalJson(JSON.parse(JSON.stringify(keyed)));
}

export class RuntimeConfigError extends CodeActError {
  readonly category = 'config' as const;
  constructor(message: string) {
    super(message);
    this.name = 'RuntimeConfigError';
  }
}

/** How each runtime of ours is built (a new row of common/runtimes.ts needs its builder here). */
const BUILDERS: Record<ConfiguredRuntime, (config: RuntimeConfig) => Promise<Runtime>> = {
  local: async (config) => new LocalRuntime({ ...(config.local ?? {}), limits: { ...(config.local?.limits ?? {}), ...(config.limits ?? {}) } }),
  jupyter: async (config) => {
    const url = config.jupyter?.url;
    if (!url) {
      throw new RuntimeConfigError(
        'The Jupyter runtime needs a server URL: set codeact.jupyter.serverURL (CLI: --jupyter-url URL), and the token in CODEACT_JUPYTER_TOKEN.',
      );
    }
    const { JupyterRuntime } = await import('./jupyter/jupyterRuntime');
    return new JupyterRuntime({ ...config.jupyter, url, limits: config.limits });
  },
};

export async function createRuntime(config: RuntimeConfig): Promise<Runtime> {
  if (!Object.hasOwn(BUILDERS, config.runtime))
    throw new RuntimeConfigError(`codeact.runtime must be ${CONFIGURED_RUNTIMES.map((r) => `"${r}"`).join(' or ')}, not "${String(config.runtime)}".`);
  return BUILDERS[config.runtime](config);
}
