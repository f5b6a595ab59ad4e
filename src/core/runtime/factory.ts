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

type RuntimeSetting = 'local' | 'jupyter';

export interface RuntimeConfig {
  runtime: RuntimeSetting;
  local?: LocalRuntimeOptions;
  jupyter?: { url?: string; token?: string; kernelName?: string; sessionPolicy?: 'conversation' | 'execution'; log?: (line: string) => void };
  limits?: Partial<RuntimeLimits>;
}

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

export async function createRuntime(config: RuntimeConfig): Promise<Runtime> {
  if (config.runtime === 'jupyter') {
    const url = config.jupyter?.url;
    if (!url) {
      throw new RuntimeConfigError(
        'The Jupyter runtime needs a server URL: set codeact.jupyter.serverURL (CLI: --jupyter-url URL), and the token in CODEACT_JUPYTER_TOKEN.',
      );
    }
    const { JupyterRuntime } = await import('./jupyter/jupyterRuntime');
    return new JupyterRuntime({ ...config.jupyter, url, limits: config.limits });
  }
  if (config.runtime !== 'local') throw new RuntimeConfigError(`codeact.runtime must be "local" or "jupyter", not "${String(config.runtime)}".`);
  return new LocalRuntime({ ...(config.local ?? {}), limits: { ...(config.local?.limits ?? {}), ...(config.limits ?? {}) } });
}
