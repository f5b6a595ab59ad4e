/**
 * One configuration resolver for both hosts. The extension reads VS Code's settings layers, the CLI
 * reads its user settings file, the folder's `.vscode/settings.json` and its flags; both hand the
 * layers of each key to `resolveEngineConfig`, which applies one policy and returns the engine's
 * configuration, what it ignored and why.
 *
 * The policy:
 * - A workspace (or folder) value of a `trusted` setting (keys.ts) counts only when the folder is
 *   trusted. Untrusted, the user's value (or the default) applies, and the workspace value is listed
 *   as ignored.
 * - A first-party provider's base URL (OpenAI, Anthropic, Gemini) comes only from the user's settings or
 *   a flag, trusted or not: a repository must not send the user's API key to a server it chose. An
 *   OpenAI-compatible server's URL may come from a trusted workspace.
 * - Approvals: a workspace may make them stricter (`approval.default` ask/deny, `reviewCode` on), never
 *   looser than the user's own setting; `approval.alwaysAllow` is the user's alone. A folder's tools
 *   never run looser than the user's own default either: the whole precedence is one table, in
 *   core/gateway/approvalPolicy.ts, applied to every tool.
 * - A value of the wrong type or outside its allowed values is ignored (and listed), never half-used.
 */
import { PROVIDER_CATALOG as PROVIDERS } from '../providers/shared/catalog';
import { APPROVAL_ORDER } from '../gateway/approvalPolicy';
import { LEGACY_KEYS, SETTINGS, type SettingKey, type SettingName, type SettingValue } from './keys';

type Origin = 'default' | 'user' | 'workspace' | 'folder' | 'flag';

/** The values one key has in each place it can be set (undefined: not set there). */
export interface SettingLayers {
  flag?: unknown;
  folder?: unknown;
  workspace?: unknown;
  user?: unknown;
}

/** How a host reads the layers of `codeact.<key>`. */
export type SettingsReader = (key: string) => SettingLayers | undefined;

export interface Ignored {
  key: string;
  origin: Origin;
  reason: string;
}

/** The configuration's fields of settings' values have the settings' types (keys.ts). */
export interface EngineConfig {
  provider: SettingValue<'provider'>;
  model: string;
  /** codeact.baseURL (unset: the provider's default). */
  baseURL?: string;
  mode: SettingValue<'mode'>;
  protocol: SettingValue<'agent.protocol'>;
  toolsInlineLimit: number;
  runtime: SettingValue<'runtime'>;
  /** codeact.python.path when set; unset, the folder's environment is found (core/runtime/local/pythonEnv.ts). */
  python?: string;
  preload: string[];
  /** codeact.python.installArgs: arguments for pip before the specs of install_packages (trusted settings only). */
  installArgs: string[];
  sessionPolicy: SettingValue<'session.policy'>;
  sessionIdleMs: number;
  sessionMaxAlive: number;
  /** codeact.session.host: the local sessions in a session host that outlives its client. */
  sessionHost: SettingValue<'session.host'>;
  sessionHostIdleMs: number;
  timeoutMs: number;
  /** A model's streamed response: the longest wait for it to start, and the longest silence in it. */
  modelFirstByteMs: number;
  modelIdleMs: number;
  maxTurns: number;
  defaultApproval: SettingValue<'approval.default'>;
  /** Your own codeact.approval.default (`auto` when unset): a folder's tools never run looser than it (../gateway/approvalPolicy.ts). */
  userDefaultApproval: SettingValue<'approval.default'>;
  /** Whose settings declared `tools`: yours, or a folder's (workspace or folder settings). */
  toolsDeclaredIn: 'user' | 'folder';
  reviewCode: boolean;
  alwaysAllow: string[];
  sandbox: SettingValue<'sandbox.kind'>;
  sandboxNetwork: boolean;
  mountWorkspace: SettingValue<'sandbox.mountWorkspace'>;
  /** codeact.sandbox.reviewWrites: a `readwrite` workspace gets the code's writes only when the person keeps them. */
  reviewWrites: boolean;
  limits: { memory?: string; cpuSeconds?: number; processes?: number; fileSize?: string; openFiles?: number };
  /** codeact.jupyter.serverURL (unset: none). */
  jupyterServerURL?: string;
  jupyterKernel: string;
  jupyterSessionPolicy: SettingValue<'jupyter.sessionPolicy'>;
  compatibleSupportsTools: boolean;
  compatibleContextWindow: number;
  /** OpenAI-compatible models that take images ("*" for all). */
  compatibleVisionModels: string[];
  /** codeact.openaiCompatible.contextWindows: the context window of each named model, in tokens. */
  compatibleContextWindows: Record<string, number>;
  /** Rich outputs: the cap of one display, and of all displays of one execution, in bytes. */
  maxDisplayBytes: number;
  maxExecutionDisplayBytes: number;
  /** The largest image (width × height, from its header) anything shows, decodes or sends to a model. */
  maxImagePixels: number;
  /** The output budget: the most characters of one code or tool result the model reads. */
  outputModelChars: number;
  /** codeact.context.compactAt: compaction starts past this share of the usable window. */
  contextCompactAt: number;
  /** Plots at twice the pixel density. */
  plotsHighDPI: boolean;
  /** Managed-tool calls one execution may make. */
  maxToolCallsPerRun: number;
  /** Background jobs one local session may run at once (0: none), and the total time of one. */
  maxJobs: number;
  maxJobMs: number;
  /** What each run changed in a writable workspace is kept (codeact.rewind.*): off, or the store's budgets in bytes. */
  rewind: false | { storeBytes: number; maxFileBytes: number };
  /** Checkpoints of a session's Python state before each run (codeact.rewind.maxCheckpoints, memoryMB); max 0: none. */
  checkpoints: { max: number; memoryBytes: number };
  /** At most this many images, and bytes of images, in one request to a vision model. */
  visionMaxImages: number;
  visionMaxBytes: number;
  hostedMemoryLimit: SettingValue<'hosted.memoryLimit'>;
  anthropicToolVersion: SettingValue<'hosted.anthropicToolVersion'>;
  inlineResults: boolean;
  /** The raw `codeact.tools` declarations (loadTools checks them one by one). */
  tools: unknown;
  /**
   * Every setting's resolved value under its key, as keys.ts types it: what code reads for a setting that has
   * no field above (`config.settings['x.y']`). The fields above are the same values, named and in their units.
   */
  settings: SettingValues;
}

/** Every setting's value once resolved, by key. */
type SettingValues = { readonly [K in SettingName]: SettingValue<K> };

export interface ResolvedConfig {
  config: EngineConfig;
  /** Where each setting's value came from. */
  origins: Record<SettingName, Origin>;
  /** Values that were set but not used, with the reason. */
  ignored: Ignored[];
}

interface ResolveOptions {
  /** The folder is trusted (VS Code's Workspace Trust; `codeact trust` for the CLI). */
  trusted: boolean;
  /** The CLI: the `.code-workspace` file whose `settings` are the workspace layer is trusted (default: `trusted`). */
  workspaceTrusted?: boolean;
}

/** Why a `.code-workspace` file's restricted setting was not used (the CLI; VS Code's trust covers the whole window). */
export const WORKSPACE_FILE_UNTRUSTED = 'the workspace file is not trusted';

const FIRST_PARTY: readonly string[] = PROVIDERS.filter((p) => p.firstParty).map((p) => p.id);
const MB = 1024 * 1024;
const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

function typeError(key: SettingKey, value: unknown): string | undefined {
  const t = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  if (t !== key.type)
    return `must be ${key.type === 'array' ? 'an array' : key.type === 'object' ? 'an object' : `a ${key.type}`}, not ${t === 'object' ? 'an object' : t}`;
  if (key.enum && !key.enum.includes(value as string))
    return `must be one of ${key.enum.map((e) => JSON.stringify(e)).join(', ')}, not ${JSON.stringify(value)}`;
  if (key.type === 'number' && !Number.isFinite(value as number)) return 'must be a finite number';
  if (key.minimum !== undefined && (value as number) < key.minimum) return `must be at least ${key.minimum}`;
  if (key.maximum !== undefined && (value as number) > key.maximum) return `must be at most ${key.maximum}`;
  return undefined;
}

export function resolveEngineConfig(read: SettingsReader, options: ResolveOptions): ResolvedConfig {
  const ignored: Ignored[] = [];
  const origins = {} as Record<SettingName, Origin>;
  const values = {} as Record<SettingName, unknown>;

  /** The value of one key under the policy; `allow` may refuse a layer for a reason of its own. */
  const pick = <K extends SettingName>(name: K, allow?: (origin: Origin, value: unknown) => string | undefined): SettingValue<K> => {
    const spec: SettingKey = SETTINGS[name];
    const layers: SettingLayers = { ...read(name) };
    // The key each layer's value was set under: an older key (keys.ts) fills a layer the new key leaves
    // empty, under the same policy, and what is ignored is reported under the key the user wrote.
    const setAs: Partial<Record<keyof SettingLayers, string>> = {};
    for (const [old, now] of Object.entries(LEGACY_KEYS)) {
      if (now !== name) continue;
      const legacy = read(old) ?? {};
      for (const origin of ['flag', 'folder', 'workspace', 'user'] as const) {
        if (layers[origin] !== undefined || legacy[origin] === undefined) continue;
        layers[origin] = legacy[origin];
        setAs[origin] = old;
      }
    }
    for (const origin of ['flag', 'folder', 'workspace', 'user'] as const) {
      const value = layers[origin];
      if (value === undefined) continue;
      const fromWorkspace = origin === 'folder' || origin === 'workspace';
      let reason: string | undefined;
      if (fromWorkspace && spec.trust === 'user') reason = 'only your user settings may set it';
      else if (fromWorkspace && spec.trust === 'trusted' && !(origin === 'workspace' ? (options.workspaceTrusted ?? options.trusted) : options.trusted)) {
        reason = origin === 'workspace' && options.workspaceTrusted !== undefined ? WORKSPACE_FILE_UNTRUSTED : 'the folder is not trusted';
      } else reason = typeError(spec, value) ?? allow?.(origin, value);
      if (reason) {
        ignored.push({ key: `codeact.${setAs[origin] ?? name}`, origin, reason });
        continue;
      }
      origins[name] = origin;
      values[name] = value;
      return value as SettingValue<K>;
    }
    origins[name] = 'default';
    values[name] = spec.default;
    return spec.default as SettingValue<K>;
  };
  /** The settings no field above reads, under the policy every setting has; then all of them by key. */
  const everySetting = (): SettingValues => {
    for (const name of Object.keys(SETTINGS) as SettingName[]) if (!(name in origins)) pick(name);
    return values as SettingValues;
  };

  const provider = pick('provider');
  const baseURL = pick('baseURL', (origin) =>
    (origin === 'folder' || origin === 'workspace') && FIRST_PARTY.includes(provider)
      ? `a workspace cannot send your ${provider} API key to a server of its choosing; set it in your user settings or pass --base-url`
      : undefined,
  );
  const userApproval = read('approval.default')?.user;
  const userReview = read('approval.reviewCode')?.user;
  const userReviewWrites = read('sandbox.reviewWrites')?.user;
  const looser = (origin: Origin, value: unknown, user: unknown, order: (v: unknown) => number) =>
    (origin === 'folder' || origin === 'workspace') && user !== undefined && order(value) < order(user)
      ? 'a workspace may make approvals stricter than your own setting, never looser'
      : undefined;
  const limitsRaw = pick('sandbox.limits');
  const preloadRaw = pick('python.preload', (_o, v) =>
    (v as unknown[]).every((m) => typeof m === 'string' && MODULE_NAME.test(m)) ? undefined : 'must list module names such as "numpy" or "pandas"',
  );
  const config: EngineConfig = {
    provider,
    model: pick('model'),
    baseURL: baseURL || undefined,
    mode: pick('mode'),
    protocol: pick('agent.protocol'),
    toolsInlineLimit: pick('toolDiscovery.inlineLimit'),
    runtime: pick('runtime'),
    python: pick('python.path').trim() || undefined,
    preload: preloadRaw.slice(0, 64) as string[],
    installArgs: pick('python.installArgs', (_o, v) =>
      (v as unknown[]).length <= 64 && (v as unknown[]).every((a) => typeof a === 'string' && a.length <= 4096)
        ? undefined
        : 'must be at most 64 strings, arguments for pip such as ["--no-index", "--find-links", "/path/wheels"]',
    ) as string[],
    sessionPolicy: pick('session.policy'),
    sessionIdleMs: pick('session.idleMinutes') * 60_000,
    sessionMaxAlive: Math.floor(pick('session.maxAlive')),
    sessionHost: pick('session.host'),
    sessionHostIdleMs: pick('session.hostIdleMinutes') * 60_000,
    timeoutMs: Math.round(pick('timeoutSeconds') * 1000),
    modelFirstByteMs: Math.round(pick('modelStream.firstByteTimeoutSeconds') * 1000),
    modelIdleMs: Math.round(pick('modelStream.idleTimeoutSeconds') * 1000),
    maxTurns: Math.floor(pick('maxTurns')),
    defaultApproval: pick('approval.default', (o, v) => looser(o, v, userApproval, (x) => APPROVAL_ORDER.indexOf(x as EngineConfig['defaultApproval']))),
    userDefaultApproval: APPROVAL_ORDER.includes(userApproval as EngineConfig['defaultApproval']) ? (userApproval as EngineConfig['defaultApproval']) : 'auto',
    toolsDeclaredIn: 'user',
    reviewCode: pick('approval.reviewCode', (o, v) => looser(o, v, userReview, (x) => (x ? 1 : 0))),
    alwaysAllow: pick('approval.alwaysAllow').filter((n): n is string => typeof n === 'string'),
    sandbox: pick('sandbox.kind'),
    sandboxNetwork: pick('sandbox.network'),
    mountWorkspace: pick('sandbox.mountWorkspace'),
    reviewWrites: pick('sandbox.reviewWrites', (o, v) =>
      (o === 'folder' || o === 'workspace') && userReviewWrites === true && v !== true
        ? 'a workspace may turn review mode on, never off when your own setting has it on'
        : undefined,
    ),
    limits: limitsRaw as EngineConfig['limits'],
    jupyterServerURL: pick('jupyter.serverURL') || undefined,
    jupyterKernel: pick('jupyter.kernelName') || 'python3',
    jupyterSessionPolicy: pick('jupyter.sessionPolicy'),
    compatibleSupportsTools: pick('openaiCompatible.supportsTools'),
    compatibleContextWindow: pick('openaiCompatible.contextWindow'),
    compatibleContextWindows: pick('openaiCompatible.contextWindows', (_o, v) => {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length > 200) return 'must name at most 200 models';
      const bad = entries.find(([, n]) => !Number.isInteger(n) || (n as number) < 256 || (n as number) > 100_000_000);
      return bad
        ? `must map model names to whole numbers of tokens (256 to 100,000,000); "${bad[0].slice(0, 80)}" has ${JSON.stringify(bad[1])?.slice(0, 40)}`
        : undefined;
    }) as Record<string, number>,
    compatibleVisionModels: pick('openaiCompatible.visionModels', (_o, v) =>
      (v as unknown[]).every((m) => typeof m === 'string') ? undefined : 'must list model names',
    ).slice(0, 200) as string[],
    maxDisplayBytes: Math.round(pick('outputs.maxDisplayMB') * MB),
    maxExecutionDisplayBytes: Math.round(pick('outputs.maxExecutionMB') * MB),
    maxImagePixels: Math.round(pick('outputs.maxImageMegapixels') * 1e6),
    outputModelChars: Math.floor(pick('outputs.modelChars')),
    contextCompactAt: pick('context.compactAt'),
    plotsHighDPI: pick('plots.highDPI'),
    maxToolCallsPerRun: Math.floor(pick('toolCalls.maxPerRun')),
    maxJobs: Math.floor(pick('jobs.maxPerSession')),
    maxJobMs: Math.round(pick('jobs.maxMinutes') * 60_000),
    rewind: pick('rewind.trackChanges') && { storeBytes: Math.round(pick('rewind.storeMB') * MB), maxFileBytes: Math.round(pick('rewind.maxFileMB') * MB) },
    checkpoints: { max: Math.floor(pick('rewind.maxCheckpoints')), memoryBytes: Math.round(pick('rewind.memoryMB') * MB) },
    visionMaxImages: Math.floor(pick('vision.maxImages')),
    visionMaxBytes: Math.round(pick('vision.maxMB') * MB),
    hostedMemoryLimit: pick('hosted.memoryLimit'),
    anthropicToolVersion: pick('hosted.anthropicToolVersion'),
    inlineResults: pick('inlineResults'),
    tools: pick('tools'),
    settings: everySetting(),
  };
  config.toolsDeclaredIn = origins.tools === 'folder' || origins.tools === 'workspace' ? 'folder' : 'user';
  return { config, origins, ignored };
}

/** One line per ignored value, for the log or stderr. */
export function describeIgnored(ignored: readonly Ignored[]): string[] {
  return ignored.map((i) => `${i.key} from the ${i.origin === 'flag' ? 'command line' : `${i.origin} settings`} is ignored: ${i.reason}.`);
}
