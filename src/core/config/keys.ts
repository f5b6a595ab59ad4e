/**
 * Every CodeAct setting: its key (after `codeact.`), type, default and allowed values, in one place.
 * package.json's `contributes.configuration` must say the same (a test checks it), and both hosts read
 * settings through resolve.ts, which applies one policy to them.
 *
 * `trust`: what a workspace (or folder) value of the setting may do.
 * - `any`: a workspace may set it;
 * - `trusted`: it can run, redirect or expose something (tools that run commands, the interpreter, a
 *   server URL, the sandbox): a workspace value counts only in a trusted workspace (VS Code's Workspace
 *   Trust; the CLI's `codeact trust`). These are VS Code's `restrictedConfigurations`.
 * - `user`: only the user's own settings (or a command-line flag) may set it, trusted or not.
 *
 * `default`: written once. A default the engine below this zone needs too (a runtime limit, a provider's
 * stream bound, the output budget of common/) is that zone's constant, read here; other code reads the
 * default here (`SETTINGS[k].default`).
 */

import {
  ANTHROPIC_CODE_TOOL_VERSIONS,
  DEFAULT_ANTHROPIC_CODE_TOOL,
  DEFAULT_OPENAI_CONTAINER_MEMORY,
  OPENAI_CONTAINER_MEMORY,
  PROVIDER_IDS,
} from '../providers/shared/catalog';
import { CODE_MODES, CONFIGURED_RUNTIMES } from '../../common/runtimes';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../common/imageHeader';
import { DEFAULT_OUTPUT_CHARS } from '../../common/outputBudget';
import { DEFAULT_IMAGE_BUDGET } from '../providers/shared/types';
import { DEFAULT_STREAM_BOUNDS } from '../providers/shared/watchdog';
import { DEFAULT_JUPYTER_SETTINGS, DEFAULT_LIMITS, DEFAULT_REWIND_BUDGETS, DEFAULT_SANDBOX_LIMITS } from '../runtime/types';
import { DEFAULT_SESSIONS } from '../runtime/local/sessionPool';
import { DEFAULT_INLINE_LIMIT } from '../tools/modelTools';

const MB = 1024 * 1024;

type SettingType = 'string' | 'number' | 'boolean' | 'array' | 'object';
type SettingTrust = 'any' | 'trusted' | 'user';

export interface SettingKey {
  type: SettingType;
  default: unknown;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  trust: SettingTrust;
}

export const SETTINGS = {
  tools: { type: 'array', default: [], trust: 'trusted' },
  // The providers of the catalogue (core/providers/shared/catalog.ts), as the hosted-sandbox options below.
  provider: { type: 'string', default: 'openai', enum: PROVIDER_IDS, trust: 'any' },
  model: { type: 'string', default: '', trust: 'any' },
  // A first-party provider's base URL only from user settings or a flag (see resolve.ts). "baseURL", not
  // "baseUrl": VS Code's Settings editor builds the label from the key, and this one reads "Base URL".
  baseURL: { type: 'string', default: '', trust: 'trusted' },
  // The modes and our runtimes of the catalogue (common/runtimes.ts).
  mode: { type: 'string', default: 'toolCode', enum: CODE_MODES, trust: 'any' },
  runtime: { type: 'string', default: 'local', enum: CONFIGURED_RUNTIMES, trust: 'trusted' },
  // Unset by default: the folder's Python environment is then found (core/runtime/local/pythonEnv.ts).
  'python.path': { type: 'string', default: '', trust: 'trusted' },
  'python.preload': { type: 'array', default: [], trust: 'trusted' },
  // argv for pip (install_packages): from trusted settings only, never from the model.
  'python.installArgs': { type: 'array', default: [], trust: 'trusted' },
  'session.policy': { type: 'string', default: DEFAULT_SESSIONS.policy, enum: ['conversation', 'run'], trust: 'any' },
  'session.idleMinutes': { type: 'number', default: DEFAULT_SESSIONS.idleMs / 60_000, minimum: 0, trust: 'any' },
  'session.maxAlive': { type: 'number', default: DEFAULT_SESSIONS.maxAlive, minimum: 1, maximum: 64, trust: 'any' },
  // The local runtime's sessions in a session host that outlives its client (core/sessionHost); "off" keeps them in this process.
  'session.host': { type: 'string', default: 'auto', enum: ['auto', 'off'], trust: 'user' },
  'session.hostIdleMinutes': { type: 'number', default: DEFAULT_SESSIONS.idleMs / 60_000, minimum: 0, trust: 'user' },
  timeoutSeconds: { type: 'number', default: DEFAULT_LIMITS.timeoutMs / 1000, minimum: 1, trust: 'any' },
  // A model's streamed response: the wait for it to start, and the longest silence in it. "modelStream", not
  // "model.…": codeact.model is a string, and VS Code ignores keys nested under a string setting.
  'modelStream.firstByteTimeoutSeconds': { type: 'number', default: DEFAULT_STREAM_BOUNDS.firstByteMs / 1000, minimum: 1, maximum: 3600, trust: 'any' },
  'modelStream.idleTimeoutSeconds': { type: 'number', default: DEFAULT_STREAM_BOUNDS.idleMs / 1000, minimum: 1, maximum: 3600, trust: 'any' },
  'agent.protocol': { type: 'string', default: 'tools', enum: ['tools', 'text'], trust: 'any' },
  'toolDiscovery.inlineLimit': { type: 'number', default: DEFAULT_INLINE_LIMIT, minimum: 0, trust: 'any' },
  maxTurns: { type: 'number', default: 12, minimum: 1, trust: 'any' },
  // A workspace may make approvals stricter, never looser (see resolve.ts).
  'approval.default': { type: 'string', default: 'auto', enum: ['auto', 'ask', 'deny'], trust: 'any' },
  'approval.reviewCode': { type: 'boolean', default: false, trust: 'any' },
  'approval.alwaysAllow': { type: 'array', default: [], trust: 'user' },
  'sandbox.kind': { type: 'string', default: 'auto', enum: ['auto', 'bubblewrap', 'none'], trust: 'trusted' },
  'sandbox.network': { type: 'boolean', default: false, trust: 'trusted' },
  'sandbox.mountWorkspace': { type: 'string', default: 'none', enum: ['none', 'readonly', 'readwrite'], trust: 'trusted' },
  // A workspace may turn review mode on, never off below your own setting (see resolve.ts).
  'sandbox.reviewWrites': { type: 'boolean', default: false, trust: 'trusted' },
  'sandbox.limits': { type: 'object', default: DEFAULT_SANDBOX_LIMITS, trust: 'trusted' },
  // "serverURL": the Settings editor reads it "Jupyter: Server URL" (the older "jupyter.url" read "Jupyter: Url").
  'jupyter.serverURL': { type: 'string', default: '', trust: 'trusted' },
  'jupyter.kernelName': { type: 'string', default: DEFAULT_JUPYTER_SETTINGS.kernelName, trust: 'trusted' },
  'jupyter.sessionPolicy': { type: 'string', default: DEFAULT_JUPYTER_SETTINGS.sessionPolicy, enum: ['conversation', 'execution'], trust: 'any' },
  'openaiCompatible.supportsTools': { type: 'boolean', default: true, trust: 'any' },
  'openaiCompatible.contextWindow': { type: 'number', default: 32768, minimum: 1, trust: 'any' },
  // Per model, {model: tokens}: beats openaiCompatible.contextWindow for that model.
  'openaiCompatible.contextWindows': { type: 'object', default: {}, trust: 'any' },
  // Models of the OpenAI-compatible server that take images (off by default: most local models do not).
  'openaiCompatible.visionModels': { type: 'array', default: [], trust: 'any' },
  // Rich outputs (display(), plots, tables): caps per display and per execution, in MB of the bundle.
  'outputs.maxDisplayMB': { type: 'number', default: DEFAULT_LIMITS.maxDisplayBytes / MB, minimum: 0.01, maximum: 12, trust: 'any' },
  'outputs.maxExecutionMB': { type: 'number', default: DEFAULT_LIMITS.maxDisplayTotalBytes / MB, minimum: 0.01, maximum: 256, trust: 'any' },
  // The largest image any place shows or sends, in megapixels from its header (common/imageHeader.ts).
  'outputs.maxImageMegapixels': { type: 'number', default: DEFAULT_MAX_IMAGE_PIXELS / 1e6, minimum: 0.01, maximum: 1000, trust: 'any' },
  // The output budget: the most characters of one result the model reads (common/outputBudget.ts).
  // Compaction starts past this share of the model's window (less the answer's room).
  'context.compactAt': { type: 'number', default: 0.75, minimum: 0.3, maximum: 0.95, trust: 'any' },
  'outputs.modelChars': { type: 'number', default: DEFAULT_OUTPUT_CHARS, minimum: 1000, maximum: 1000000, trust: 'any' },
  'plots.highDPI': { type: 'boolean', default: DEFAULT_LIMITS.hidpi, trust: 'any' },
  // Managed-tool calls one execution may make (the code's call_tool, however it sends them).
  'toolCalls.maxPerRun': { type: 'number', default: DEFAULT_LIMITS.maxToolCallsPerRun, minimum: 1, maximum: 100000, trust: 'any' },
  // Background jobs of a local session (docs/design/backgroundJobs.md): running at once, and the time of one.
  'jobs.maxPerSession': { type: 'number', default: DEFAULT_LIMITS.maxJobs, minimum: 0, maximum: 32, trust: 'any' },
  'jobs.maxMinutes': { type: 'number', default: DEFAULT_LIMITS.maxJobMs / 60_000, minimum: 1, maximum: 10080, trust: 'any' },
  // What each run changed in a workspace mounted readwrite (core/runtime/rewind): on or off, and the store's budgets.
  'rewind.trackChanges': { type: 'boolean', default: true, trust: 'any' },
  'rewind.storeMB': { type: 'number', default: DEFAULT_REWIND_BUDGETS.storeBytes / MB, minimum: 0, maximum: 1048576, trust: 'any' },
  'rewind.maxFileMB': { type: 'number', default: DEFAULT_REWIND_BUDGETS.maxFileBytes / MB, minimum: 0, maximum: 1048576, trust: 'any' },
  // Checkpoints of a session's Python state before each run (core/runtime/local/checkpoints): how many, and their memory.
  'rewind.maxCheckpoints': { type: 'number', default: 10, minimum: 0, maximum: 50, trust: 'any' },
  'rewind.memoryMB': { type: 'number', default: 1024, minimum: 0, maximum: 1048576, trust: 'any' },
  // What reaches a vision model in one request: the newest images up to these caps.
  'vision.maxImages': { type: 'number', default: DEFAULT_IMAGE_BUDGET.maxImages, minimum: 0, maximum: 100, trust: 'any' },
  'vision.maxMB': { type: 'number', default: DEFAULT_IMAGE_BUDGET.maxBytes / MB, minimum: 0, maximum: 64, trust: 'any' },
  'hosted.memoryLimit': { type: 'string', default: DEFAULT_OPENAI_CONTAINER_MEMORY, enum: OPENAI_CONTAINER_MEMORY, trust: 'any' },
  'hosted.anthropicToolVersion': { type: 'string', default: DEFAULT_ANTHROPIC_CODE_TOOL, enum: ANTHROPIC_CODE_TOOL_VERSIONS, trust: 'any' },
  inlineResults: { type: 'boolean', default: true, trust: 'any' },
} as const satisfies Record<string, SettingKey>;

export type SettingName = keyof typeof SETTINGS;

interface ValueOfType {
  string: string;
  number: number;
  boolean: boolean;
  array: unknown[];
  object: Record<string, unknown>;
}

/** The value a setting holds once resolved: one of its allowed values, else a value of its type. */
export type SettingValue<K extends SettingName> = (typeof SETTINGS)[K] extends { enum: readonly (infer E)[] } ? E : ValueOfType[(typeof SETTINGS)[K]['type']];

/** The CLI commands whose flags set settings. */
export type FlagCommand = 'run' | 'chat';

/**
 * A setting's command-line flag: `--name` (and `-short`) in the commands listed. Its value is read as the
 * setting's type (a number flag must be a number) and checked like any other layer: enum, minimum and
 * maximum (resolve.ts), its errors naming the flag. The usage shows `--name ARG`; an enum's values stand
 * for ARG and a boolean flag takes none. `help`: a line under the usage of each command that takes it.
 */
export interface SettingFlag {
  name: string;
  short?: string;
  arg?: string;
  commands: readonly FlagCommand[];
  help?: string;
}

type FlagOf<S> = S extends { type: 'array' | 'object' }
  ? null
  : S extends { enum: readonly string[] } | { type: 'boolean' }
    ? Omit<SettingFlag, 'arg'> | null
    : (SettingFlag & { arg: string }) | null;

/**
 * Each setting's CLI flag, or null: one row per setting (the compiler asks for a new setting's), in the
 * order the usage lists them. The CLI's options, usage and flag -> setting mapping are made from it.
 */
export const SETTING_FLAGS: { readonly [K in SettingName]: FlagOf<(typeof SETTINGS)[K]> } = {
  provider: { name: 'provider', short: 'p', commands: ['chat'] },
  model: { name: 'model', short: 'm', arg: 'M', commands: ['chat'] },
  baseURL: { name: 'base-url', arg: 'URL', commands: ['chat'] },
  mode: { name: 'mode', commands: ['chat'] },
  'agent.protocol': {
    name: 'protocol',
    commands: ['chat'],
    help: '--protocol text: the model writes ```python blocks instead of calling functions (models without function calling).',
  },
  maxTurns: { name: 'max-turns', arg: 'N', commands: ['chat'] },
  'session.policy': { name: 'session', commands: ['chat'] },
  'jobs.maxPerSession': { name: 'max-jobs', arg: 'N', commands: ['chat'], help: '--max-jobs 0 turns background jobs off.' },
  'jobs.maxMinutes': { name: 'job-minutes', arg: 'MIN', commands: ['chat'] },
  'session.host': {
    name: 'session-host',
    commands: ['chat'],
    help: '--session-host off: the Python session ends with the command (default auto: it lives in a session host, so --continue finds its variables; codeact sessions lists them).',
  },
  timeoutSeconds: { name: 'timeout', short: 't', arg: 'SECONDS', commands: ['run', 'chat'] },
  'sandbox.kind': { name: 'sandbox', commands: ['run', 'chat'] },
  'python.path': {
    name: 'python',
    arg: 'PATH',
    commands: ['run', 'chat'],
    help: "Python: --python (or codeact.python.path; one inside the folder only in a trusted folder), else the folder's .venv or venv (a trusted folder), else python3.",
  },
  runtime: { name: 'runtime', commands: ['run', 'chat'] },
  'jupyter.serverURL': { name: 'jupyter-url', arg: 'URL', commands: ['run', 'chat'], help: 'The Jupyter token comes from CODEACT_JUPYTER_TOKEN.' },
  'jupyter.kernelName': { name: 'jupyter-kernel', arg: 'NAME', commands: ['run', 'chat'] },
  tools: null,
  'python.preload': null,
  'python.installArgs': null,
  'session.idleMinutes': null,
  'session.maxAlive': null,
  'session.hostIdleMinutes': null,
  'modelStream.firstByteTimeoutSeconds': null,
  'modelStream.idleTimeoutSeconds': null,
  'toolDiscovery.inlineLimit': null,
  'approval.default': null,
  'approval.reviewCode': null,
  'approval.alwaysAllow': null,
  'sandbox.network': null,
  'sandbox.mountWorkspace': null,
  'sandbox.reviewWrites': null,
  'sandbox.limits': null,
  'jupyter.sessionPolicy': null,
  'openaiCompatible.supportsTools': null,
  'openaiCompatible.contextWindow': null,
  'openaiCompatible.contextWindows': null,
  'openaiCompatible.visionModels': null,
  'outputs.maxDisplayMB': null,
  'outputs.maxExecutionMB': null,
  'outputs.maxImageMegapixels': null,
  'context.compactAt': null,
  'outputs.modelChars': null,
  'plots.highDPI': null,
  'toolCalls.maxPerRun': null,
  'rewind.trackChanges': null,
  'rewind.storeMB': null,
  'rewind.maxFileMB': null,
  'rewind.maxCheckpoints': null,
  'rewind.memoryMB': null,
  'vision.maxImages': null,
  'vision.maxMB': null,
  'hosted.memoryLimit': null,
  'hosted.anthropicToolVersion': null,
  inlineResults: null,
};

/**
 * Older keys still read (the value moved): old -> new. A layer (user, workspace, folder) that sets the
 * new key wins over the same layer's old key; either way the new key's policy applies.
 */
export const LEGACY_KEYS: Readonly<Record<string, SettingName>> = {
  python: 'python.path',
  baseUrl: 'baseURL',
  'jupyter.url': 'jupyter.serverURL',
};

/** Settings a workspace value of which counts only when the folder is trusted (VS Code's restrictedConfigurations). */
export function restrictedKeys(): string[] {
  const keys = (Object.keys(SETTINGS) as SettingName[]).filter((k) => SETTINGS[k].trust !== 'any' && SETTINGS[k].trust !== 'user').map((k) => `codeact.${k}`);
  return [...keys, ...Object.keys(LEGACY_KEYS).map((k) => `codeact.${k}`)];
}
