/**
 * From a resolved configuration to the engine's parts, the same way in both hosts: the runtime's
 * options, the provider's, and the tool set. What differs between the hosts (where the Jupyter token
 * and the API key come from, how warnings are shown) is passed in.
 */
import type { JobChanged, JobOutput, SessionChanged } from '../../common/events';
import type { ImageBudget, ProviderConfig } from '../providers/shared/types';
import type { RuntimeConfig, RuntimeOptions, SessionHostChoice } from '../runtime/factory';
import type { RuntimeLimits } from '../runtime/types';
import { CONFIGURED_RUNTIMES, configuredRuntime, type ConfiguredRuntime } from '../../common/runtimes';
import type { ToolSet } from '../gateway/toolSet';
import { loadTools } from '../tools/declarations';
import { hostLaunches, type DeclarationContext } from '../tools/toolSources';
import { hostRunPaths, type HostRunFile } from '../runtime/local/hostFiles';
import { resolvePythonEnv } from '../runtime/local/pythonEnv';
import type { EngineConfig } from './resolve';

interface RuntimeHost {
  /** The folder command tools run in and the sandbox may mount. */
  workspace?: string;
  /**
   * The interpreter the local guest runs, as the host resolved it (the extension asks the Python
   * extension too); unset, it is resolved here from the setting and the folder (runtime/local/pythonEnv.ts).
   */
  python?: string;
  /** The folder is trusted (default true): an untrusted folder's own venv is never run. */
  trusted?: boolean;
  /** The Jupyter token (SecretStorage or CODEACT_JUPYTER_TOKEN), never from settings. */
  jupyterToken?: string;
  /** A long-lived host (the extension, a chat) keeps a warm zygote and the next guest started. */
  longLived: boolean;
  onWarning?: (message: string) => void;
  log?: (line: string) => void;
  onSessionEvent?: (e: SessionChanged) => void;
  /** Background jobs that start, print or end. */
  onJobEvent?: (e: JobChanged | JobOutput) => void;
  /**
   * The client keeps its conversations' sessions (the extension, `codeact chat`; not one-shot `codeact run`): with
   * codeact.session.host "auto" they may live in a session host ({@link sessionHostChoice}).
   */
  sessionHost?: boolean;
}

/** Each runtime's options, from the settings and the host (a new runtime of ours does not compile until it has its entry). */
const RUNTIME_OPTIONS: { [K in ConfiguredRuntime]: (config: EngineConfig, host: RuntimeHost) => RuntimeOptions[K] } = {
  local: (config, host) => {
    const python = host.python ?? resolvePythonEnv({ folder: host.workspace, setting: config.python, trusted: host.trusted }).python;
    return {
      python,
      sandbox: {
        kind: config.sandbox,
        network: config.sandboxNetwork,
        mountWorkspace: config.mountWorkspace,
        limits: config.limits,
        workspace: host.workspace,
        hostRunPaths: hostRunPathsFrom(config, host.workspace, python),
      },
      session: config.sessionPolicy,
      idleMs: config.sessionIdleMs,
      maxAlive: config.sessionMaxAlive,
      preload: config.preload,
      zygote: host.longLived,
      prestart: host.longLived,
      onWarning: host.onWarning,
      log: host.log,
      onSessionEvent: host.onSessionEvent,
      onJobEvent: host.onJobEvent,
      rewind: config.rewind,
      checkpoints: config.checkpoints,
      reviewWrites: config.reviewWrites,
    };
  },
  jupyter: (config, host) => ({
    url: config.jupyterServerURL,
    token: host.jupyterToken,
    kernelName: config.jupyterKernel,
    sessionPolicy: config.jupyterSessionPolicy,
    log: host.log,
  }),
};

/** What the factory (../runtime/factory.ts) builds the configured runtime from: every runtime's options, and the limits they share. */
export function runtimeConfigFrom(config: EngineConfig, host: RuntimeHost): RuntimeConfig {
  const options = Object.fromEntries(CONFIGURED_RUNTIMES.map((r) => [r, RUNTIME_OPTIONS[r](config, host)])) as { [K in ConfiguredRuntime]: RuntimeOptions[K] };
  const sessionHost = sessionHostChoice(config, host);
  return { runtime: config.runtime, ...options, limits: runtimeLimitsFrom(config), ...(sessionHost ? { sessionHost } : {}) };
}

/**
 * The one place that decides whether the sessions go through a session host (core/sessionHost): a client that
 * keeps sessions (the extension, `codeact chat`), in a folder, with codeact.session.host "auto", a runtime whose
 * sessions can live there (common/runtimes.ts `sessionHost`), and sessions kept per conversation.
 */
function sessionHostChoice(config: EngineConfig, host: Pick<RuntimeHost, 'sessionHost' | 'workspace'>): SessionHostChoice | undefined {
  if (!host.sessionHost || !host.workspace || config.sessionHost !== 'auto') return undefined;
  if (!configuredRuntime(config.runtime).sessionHost || config.sessionPolicy !== 'conversation') return undefined;
  return { workspace: host.workspace, idleMs: config.sessionHostIdleMs };
}

/**
 * The files in the workspace that the declared tools and the runtime's interpreter run on the host, which a
 * `readwrite` workspace keeps read-only in the sandbox (part of the extension's runtime key: a changed tool
 * or interpreter rebuilds it).
 */
export function hostRunPathsFrom(config: EngineConfig, workspace: string | undefined, python?: string): HostRunFile[] | undefined {
  return workspace && config.mountWorkspace === 'readwrite' ? hostRunPaths(hostLaunches(config.tools), workspace, python) : undefined;
}

/** The runtime limits the settings set (rich outputs), the same on every runtime. */
export function runtimeLimitsFrom(config: EngineConfig): Partial<RuntimeLimits> {
  return {
    maxDisplayBytes: config.maxDisplayBytes,
    maxDisplayTotalBytes: config.maxExecutionDisplayBytes,
    hidpi: config.plotsHighDPI,
    maxImagePixels: config.maxImagePixels,
    // Tool calls per execution (codeact.toolCalls.maxPerRun).
    maxToolCallsPerRun: config.maxToolCallsPerRun,
    // Background jobs of a local session (codeact.jobs.*).
    maxJobs: config.maxJobs,
    maxJobMs: config.maxJobMs,
  };
}

export function providerConfigFrom(config: EngineConfig, apiKey: string | undefined): ProviderConfig {
  return {
    provider: config.provider,
    apiKey,
    baseURL: config.baseURL,
    supportsTools: config.compatibleSupportsTools,
    contextWindow: config.compatibleContextWindow,
    models: Object.fromEntries(Object.entries(config.compatibleContextWindows ?? {}).map(([model, contextWindow]) => [model, { contextWindow }])),
    visionModels: config.compatibleVisionModels,
    firstByteTimeoutMs: config.modelFirstByteMs,
    idleTimeoutMs: config.modelIdleMs,
  };
}

/** The managed tools the configuration declares, their approvals decided by the one precedence table (../gateway/approvalPolicy.ts). */
export function toolSetFrom(
  config: EngineConfig,
  workspace: string,
  extra: Omit<DeclarationContext, 'workspace' | 'defaultApproval' | 'userDefaultApproval' | 'declaredIn'> = {},
): ToolSet {
  return loadTools(config.tools, {
    ...extra,
    workspace,
    defaultApproval: config.defaultApproval,
    userDefaultApproval: config.userDefaultApproval,
    declaredIn: config.toolsDeclaredIn,
  });
}

/** The images a request to a model that sees them may carry (codeact.vision.maxImages / maxMB). */
export function imageBudgetFrom(config: EngineConfig): ImageBudget {
  return { maxImages: config.visionMaxImages, maxBytes: config.visionMaxBytes, maxPixels: config.maxImagePixels };
}

/** The hosted-sandbox options of a turn. */
export function hostedOptionsFrom(config: EngineConfig, containerId: string | null | undefined) {
  return { containerId: containerId ?? null, memoryLimit: config.hostedMemoryLimit, toolVersion: config.anthropicToolVersion };
}
