/**
 * Builds the configured runtime: the local Python guest (default) or a remote Jupyter kernel.
 * The Jupyter client library loads only when that runtime is chosen.
 */
import type { LocalRuntimeOptions } from './local/localRuntime';
import { LocalRuntime } from './local/localRuntime';
import type { Runtime, RuntimeLimits } from './types';
import { CodeActError } from '../util/errors';

export type RuntimeSetting = 'local' | 'jupyter';

export interface RuntimeConfig {
  runtime: RuntimeSetting;
  local?: LocalRuntimeOptions;
  jupyter?: { url?: string; token?: string; kernelName?: string; sessionPolicy?: 'conversation' | 'execution'; log?: (line: string) => void };
  limits?: Partial<RuntimeLimits>;
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
      throw new RuntimeConfigError('The Jupyter runtime needs a server URL: set codeact.jupyter.serverURL (CLI: --jupyter-url URL), and the token in CODEACT_JUPYTER_TOKEN.');
    }
    const { JupyterRuntime } = await import('./jupyter/jupyterRuntime');
    return new JupyterRuntime({ ...config.jupyter, url, limits: config.limits });
  }
  if (config.runtime !== 'local') throw new RuntimeConfigError(`codeact.runtime must be "local" or "jupyter", not "${String(config.runtime)}".`);
  return new LocalRuntime({ ...(config.local ?? {}), limits: { ...(config.local?.limits ?? {}), ...(config.limits ?? {}) } });
}
