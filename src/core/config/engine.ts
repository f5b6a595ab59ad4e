/**
 * From a resolved configuration to the engine's parts, the same way in both hosts: the runtime's
 * options, the provider's, and the tool set. What differs between the hosts (where the Jupyter token
 * and the API key come from, how warnings are shown) is passed in.
 */
import type { SessionChanged } from '../../common/events';
import type { ImageBudget, ProviderConfig } from '../providers/shared/types';
import type { RuntimeConfig } from '../runtime/factory';
import type { RuntimeLimits } from '../runtime/types';
import type { ToolSet } from '../gateway/toolSet';
import { loadTools, type DeclarationContext } from '../tools/declarations';
import type { EngineConfig } from './resolve';

export interface RuntimeHost {
  /** The folder command tools run in and the sandbox may mount. */
  workspace?: string;
  /** The Jupyter token (SecretStorage or CODEACT_JUPYTER_TOKEN), never from settings. */
  jupyterToken?: string;
  /** A long-lived host (the extension, a chat) keeps a warm zygote and the next guest started. */
  longLived: boolean;
  onWarning?: (message: string) => void;
  log?: (line: string) => void;
  onSessionEvent?: (e: SessionChanged) => void;
}

export function runtimeConfigFrom(config: EngineConfig, host: RuntimeHost): RuntimeConfig {
  return {
    runtime: config.runtime,
    local: {
      python: config.python,
      sandbox: { kind: config.sandbox, network: config.sandboxNetwork, mountWorkspace: config.mountWorkspace, limits: config.limits, workspace: host.workspace },
      session: config.sessionPolicy,
      idleMs: config.sessionIdleMs,
      maxAlive: config.sessionMaxAlive,
      preload: config.preload,
      zygote: host.longLived,
      prestart: host.longLived,
      onWarning: host.onWarning,
      log: host.log,
      onSessionEvent: host.onSessionEvent,
    },
    jupyter: { url: config.jupyterUrl, token: host.jupyterToken, kernelName: config.jupyterKernel, sessionPolicy: config.jupyterSessionPolicy, log: host.log },
    limits: runtimeLimitsFrom(config),
  };
}

/** The runtime limits the settings set (rich outputs), the same on every runtime. */
export function runtimeLimitsFrom(config: EngineConfig): Partial<RuntimeLimits> {
  return { maxDisplayBytes: config.maxDisplayBytes, maxDisplayTotalBytes: config.maxExecutionDisplayBytes, hidpi: config.plotsHighDPI };
}

export function providerConfigFrom(config: EngineConfig, apiKey: string | undefined): ProviderConfig {
  return {
    provider: config.provider,
    apiKey,
    baseURL: config.baseUrl,
    supportsTools: config.compatibleSupportsTools,
    contextWindow: config.compatibleContextWindow,
    visionModels: config.compatibleVisionModels,
    firstByteTimeoutMs: config.modelFirstByteMs,
    idleTimeoutMs: config.modelIdleMs,
  };
}

/** The managed tools the configuration declares, with the approval default it sets. */
export function toolSetFrom(config: EngineConfig, workspace: string, extra: Omit<DeclarationContext, 'workspace' | 'defaultApproval'> = {}): ToolSet {
  return loadTools(config.tools, { ...extra, workspace, defaultApproval: config.defaultApproval });
}

/** The images a request to a model that sees them may carry (codeact.vision.maxImages / maxMB). */
export function imageBudgetFrom(config: EngineConfig): ImageBudget {
  return { maxImages: config.visionMaxImages, maxBytes: config.visionMaxBytes };
}

/** The hosted-sandbox options of a turn. */
export function hostedOptionsFrom(config: EngineConfig, containerId: string | null | undefined) {
  return { containerId: containerId ?? null, memoryLimit: config.hostedMemoryLimit, toolVersion: config.anthropicToolVersion };
}
