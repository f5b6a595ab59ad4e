/**
 * The folder a CLI command works in (`--workspace DIR`, or one folder of a `.code-workspace` file:
 * `--folder NAME|PATH`, else the one holding the current directory, else the first): its settings resolved through the one policy both hosts share
 * (core/config/resolve.ts), with the user's CLI settings and the command's flags on top, and the folder's
 * trust (core/config/folderTrust.ts). An untrusted folder's restricted settings (its tools, interpreter,
 * sandbox, server URLs) are ignored, and the CLI says so once, with the command that trusts the folder.
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { cliConversationsDir } from '../core/agent/conversationCopy';
import type { TranscriptStore } from '../core/agent/transcriptStore';
import { sweepLeftSessions } from '../core/turn/sessionSweep';
import { runtimeConfigFrom, toolSetFrom } from '../core/config/engine';
import { folderTrust, type TrustState } from '../core/config/folderTrust';
import { describeIgnored, resolveEngineConfig, WORKSPACE_FILE_UNTRUSTED, type EngineConfig, type Ignored } from '../core/config/resolve';
import { isCodeWorkspaceFile, pickWorkspaceFolder, readCodeWorkspace } from '../core/config/codeWorkspace';
import { cliSettingsReader, readUserSettings, readWorkspaceSettings, settingsPath } from '../core/config/workspaceFile';
import { RuntimeConfigError, type RuntimeConfig } from '../core/runtime/factory';
import type { LocalRuntimeOptions } from '../core/runtime/local/localRuntime';
import { resolvePythonEnv } from '../core/runtime/local/pythonEnv';
import type { Runtime } from '../core/runtime/types';
import { formatDeclarationError, type ToolSet } from '../core/gateway/toolSet';
import { forTerminal } from '../common/untrusted';
import { configuredRuntime } from '../common/runtimes';
import { logLine, warn } from './print';
import { hostRunning, openRuntime } from '../core/sessionHost/launch';
import { UsageError } from './args';
import { flagFor, flagSettings } from './flags';

interface Workspace {
  /** The folder the command works in (with a `.code-workspace` file: the folder picked from it). */
  dir: string;
  /** The `.code-workspace` file it came from, its trust, and the folder's name in it. */
  codeWorkspace?: { file: string; folder: string; trust: TrustState };
  config: EngineConfig;
  ignored: Ignored[];
  trust: TrustState;
  toolSet: ToolSet;
}

/** The flags `codeact run` and `codeact chat` share that are not settings: where the code runs, the output format, the log. */
export const RUNTIME_FLAGS = {
  workspace: { type: 'string', short: 'w' },
  folder: { type: 'string' },
  'trust-workspace': { type: 'boolean' },
  outputs: { type: 'string', short: 'o' },
  staged: { type: 'string' },
  verbose: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface OpenOptions {
  /** Flag values (as parsed) that set settings. */
  flags?: Record<string, unknown>;
  /** Settings that stand in for missing ones (a continued conversation's provider and model). */
  fallback?: Record<string, unknown>;
  /** --trust-workspace, or CODEACT_TRUST_WORKSPACE=1. */
  trustOverride?: boolean;
  /** Print what an untrusted folder's settings would have done (default true). */
  quiet?: boolean;
  /** `--folder NAME|PATH`: which folder of a `.code-workspace` file. */
  folder?: string;
}

/** `--workspace` as given: a folder, or a `.code-workspace` file and the folder picked from it. */
function workspaceTarget(dir: string | undefined, folder: string | undefined) {
  const target = path.resolve(dir ?? process.cwd());
  if (!isCodeWorkspaceFile(target)) {
    if (folder !== undefined)
      throw new UsageError(
        `--folder picks a folder of a .code-workspace file; ${target} is a folder. Pass the .code-workspace file as --workspace, or the folder itself.`,
      );
    return { ws: target };
  }
  const file = readCodeWorkspace(target);
  const picked = pickWorkspaceFolder(file, folder);
  let isDir = false;
  try {
    isDir = statSync(picked.path).isDirectory();
  } catch {}
  if (!isDir)
    throw new UsageError(
      `the folder "${picked.name}" of ${file.file} (${picked.path}) does not exist. Fix the path in the workspace file, or pick another with --folder.`,
    );
  return { ws: picked.path, file, name: picked.name };
}

export function openWorkspace(dir: string | undefined, o: OpenOptions = {}): Workspace {
  const target = workspaceTarget(dir, o.folder);
  const ws = target.ws;
  const folder = readWorkspaceSettings(ws);
  const user = readUserSettings();
  const flags = flagSettings(o.flags ?? {});
  const override = o.trustOverride || process.env.CODEACT_TRUST_WORKSPACE === '1';
  const trust = folderTrust(ws, override);
  // A .code-workspace file's settings are trusted on their own (core/config/folderTrust.ts).
  const fileTrust = target.file ? folderTrust(target.file.file, override) : undefined;
  const reader = cliSettingsReader(flags, folder, user, target.file?.settings);
  const withFallback = (key: string) => {
    const layers = reader(key);
    const fb = o.fallback?.[key];
    return fb === undefined || layers.flag !== undefined ? layers : { ...layers, flag: fb };
  };
  const { config, ignored } = resolveEngineConfig(withFallback, { trusted: trust.trusted, workspaceTrusted: fileTrust?.trusted });
  const bad = ignored.find((i) => i.origin === 'flag');
  if (bad) {
    throw new UsageError(`${flagFor(bad.key) ?? bad.key} ${bad.reason}.`);
  }
  const codeWorkspace = target.file && fileTrust ? { file: target.file.file, folder: target.name!, trust: fileTrust } : undefined;
  if (!o.quiet) reportIgnored(ws, trust, ignored, codeWorkspace);
  const toolSet = toolSetFrom(config, ws);
  return { dir: ws, config, ignored, trust, toolSet, ...(codeWorkspace ? { codeWorkspace } : {}) };
}

/** How the CLI says it did not obey settings it was not trusted with; the tests compare against these. */
export const IGNORED_SETTINGS = {
  ignoring: (keys: string, from: string, why: string) => `ignoring ${keys} from ${from}: ${why}.`,
  notTrusted: 'it is not trusted',
  folderChanged: (settingsFile: string) => `its settings changed since you trusted it (${settingsFile})`,
  fileChanged: 'it changed since you trusted it',
};

/** Once, on stderr: what the folder's settings asked for that is not done, and how to change that. */
function reportIgnored(dir: string, trust: TrustState, ignored: Ignored[], codeWorkspace?: Workspace['codeWorkspace']): void {
  const untrusted = ignored.filter((i) => i.reason === 'the folder is not trusted');
  const fromFile = ignored.filter((i) => i.reason === WORKSPACE_FILE_UNTRUSTED);
  const other = ignored.filter((i) => i.reason !== 'the folder is not trusted' && i.reason !== WORKSPACE_FILE_UNTRUSTED);
  for (const line of describeIgnored(other)) warn(line);
  if (fromFile.length && codeWorkspace) {
    const keys = [...new Set(fromFile.map((i) => i.key))].sort().join(', ');
    const why = !codeWorkspace.trust.trusted && codeWorkspace.trust.why === 'changed' ? IGNORED_SETTINGS.fileChanged : IGNORED_SETTINGS.notTrusted;
    warn(
      `${IGNORED_SETTINGS.ignoring(keys, `the settings of ${codeWorkspace.file}`, why)} To trust the workspace file: codeact trust ${JSON.stringify(codeWorkspace.file)}`,
    );
  }
  if (!untrusted.length || trust.trusted) return;
  const keys = [...new Set(untrusted.map((i) => i.key))].sort().join(', ');
  const why = !trust.trusted && trust.why === 'changed' ? IGNORED_SETTINGS.folderChanged(settingsPath(dir)) : IGNORED_SETTINGS.notTrusted;
  warn(
    `${IGNORED_SETTINGS.ignoring(keys, settingsPath(dir), why)} A folder's settings can run commands, pick the interpreter and turn the sandbox off, ` +
      `so the CLI obeys them only in folders you trust. Code still runs, with the safe defaults. To trust this folder: codeact trust ${JSON.stringify(dir)}`,
  );
}

export function reportDeclarationErrors(toolSet: ToolSet): void {
  for (const e of toolSet.errors) warn(`${formatDeclarationError(e)} (this tool is unavailable)`);
}

/**
 * The runtime the configuration asks for: the local guest (default) or a Jupyter kernel. With `sessionHost`
 * (codeact chat) and codeact.session.host "auto", a runtime whose sessions can live in a session host
 * attaches to this folder's host, starting it when none runs (core/config/engine.ts `sessionHostChoice`).
 */
export async function runtimeFrom(ws: Workspace, host: RuntimeHostFlags, extra: Partial<LocalRuntimeOptions> = {}): Promise<Runtime> {
  return opened(() => openRuntime(runtimeConfigFor(ws, host, extra)));
}

/** The runtime of this folder's session host when one runs (`codeact review`: none is started), else undefined. */
export async function liveHostRuntime(ws: Workspace, verbose?: boolean): Promise<Runtime | undefined> {
  return opened(async () => {
    const cfg = runtimeConfigFor(ws, { longLived: false, sessionHost: true, verbose, reviews: true }, {});
    return hostRunning(cfg) ? openRuntime(cfg) : undefined;
  });
}

/** A runtime config the settings make that cannot work is a usage error (exit 2). */
async function opened<T>(open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (e) {
    if (e instanceof RuntimeConfigError) throw new UsageError(e.message);
    throw e;
  }
}

interface RuntimeHostFlags {
  longLived: boolean;
  sessionHost?: boolean;
  verbose?: boolean;
  /** This command settles review mode's staged writes (at a terminal, or --staged); false: it could at a terminal. */
  reviews?: boolean;
}

/** The runtime config of {@link runtimeFrom}, refused (UsageError) when review mode is on and no one can review. */
function runtimeConfigFor(ws: Workspace, host: RuntimeHostFlags, extra: Partial<LocalRuntimeOptions>): RuntimeConfig {
  // A codeact.python.path (or --python) in the folder is the folder's code: an untrusted folder's is not run.
  const env = resolvePythonEnv({ folder: ws.dir, setting: ws.config.python, trusted: ws.trust.trusted });
  if (ws.config.python && env.source === 'system' && !extra.python)
    warn(`not running ${JSON.stringify(ws.config.python)}: ${env.reason}. To trust this folder: codeact trust ${JSON.stringify(ws.dir)}`);
  const cfg = runtimeConfigFrom(ws.config, {
    workspace: ws.dir,
    trusted: ws.trust.trusted,
    jupyterToken: process.env.CODEACT_JUPYTER_TOKEN,
    longLived: host.longLived,
    sessionHost: host.sessionHost,
    onWarning: warn,
    // --verbose: the runtime's log (a warning's full detail among it) on stderr.
    log: host.verbose ? logLine : () => {},
  });
  cfg.local = { ...cfg.local, ...extra };
  // Review mode needs someone to keep or revert the staged writes (./stagedReview): before any code runs, a command
  // that cannot says so.
  if (reviewsWrites(ws) && host.reviews !== true) {
    throw new UsageError(
      "codeact.sandbox.reviewWrites is on for this folder, so the code's writes to the workspace are staged for review, " +
        (host.reviews === false
          ? 'and stdin is not a terminal to ask about them: pass --staged keep or --staged revert, run it at a terminal, '
          : 'and this command cannot show them for review: run the code in VS Code or with codeact run or codeact chat, ') +
        'or turn review mode off (or set codeact.sandbox.mountWorkspace to "readonly").',
    );
  }
  return cfg;
}

/** Review mode is on for this folder: the local runtime stages the code's writes to its readwrite workspace (./stagedReview). */
export function reviewsWrites(ws: Workspace): boolean {
  return !!(configuredRuntime(ws.config.runtime).hostPaths && ws.config.reviewWrites && ws.config.mountWorkspace === 'readwrite');
}

/** Where `codeact chat` keeps its conversations unless --storage says otherwise (the panel continues them from there). */
export const defaultStorage = (): string => cliConversationsDir();

/**
 * Sessions earlier chats left running (Jupyter kernels) whose conversations were not continued within the idle
 * time are ended (core/turn/sessionSweep), while the command goes on; what it did is said on stderr. `skip`: the
 * conversation this command continues (its run takes its kernel back).
 */
export function sweepLeft(store: TranscriptStore, runtime: Runtime, skip?: string): Promise<unknown> {
  return sweepLeftSessions(store, runtime, { log: (l) => process.stderr.write(`${forTerminal(l)}\n`), skip: (id) => id === skip });
}
