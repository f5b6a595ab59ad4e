/**
 * Attaching to this workspace's session host, starting it first when none is running: one host per (user,
 * workspace folder, runtime options), found by name in the private folder (./place.ts). Two clients that
 * start at the same time both spawn one; the host's lock lets one serve and the other leave, and both
 * clients connect to the one that listens.
 *
 * The host is started detached (its own process group, no stdio, unref'd: it outlives this process) with a
 * scrubbed environment: only what a Python guest and the host need (PATH, HOME, locale, XDG folders), never
 * a provider's key or the Jupyter token.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { LocalRuntimeOptions } from '../runtime/local/localRuntime';
import { createRuntime, type RuntimeConfig } from '../runtime/factory';
import type { Runtime } from '../runtime/types';
import { HostConnection, HostedRuntime, SessionHostError } from './client';
import type { HostSpec } from './main';
import { ensurePrivateFolder, hostFolder, hostName, hostNames, placeOf } from './place';

/** The variables the host keeps from its client's environment (everything else, keys included, is left out). */
const KEPT_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'XDG_RUNTIME_DIR',
  'XDG_CACHE_HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
];

/** The session host's environment: the kept variables of `env`, and the spec of what it serves. */
function hostEnv(env: NodeJS.ProcessEnv, spec: HostSpec): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const k of KEPT_ENV) if (env[k] !== undefined) out[k] = env[k];
  // Under Electron (the extension host), process.execPath is Electron: it runs the script as Node with this.
  if (process.versions.electron) out.ELECTRON_RUN_AS_NODE = '1';
  out.CODEACT_SESSION_HOST = JSON.stringify(spec);
  return out;
}

export interface AttachOptions {
  /** The workspace folder (part of the host's name). */
  workspace: string;
  /** The local runtime's options (what is JSON of them; callbacks stay here). */
  local: LocalRuntimeOptions;
  /** The host ends after this long with no client attached and no run; 0 = never. */
  idleMs: number;
  /** The host's program (default: sessionHost.js beside this bundle). */
  entry?: string;
  /** The environment the host's is made from, and where its folder is found (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Longest wait for a host just started to listen (default 30 s). */
  startMs?: number;
}

/** The local options as the host gets them (what is JSON of them: its name is made from these). */
/**
 * The options as the host gets them and is named by: JSON-able (callbacks left out), without `zygote` and `prestart`
 * (a host always forks its guests from a warm zygote and starts one ahead, main.ts). A client that would run guests
 * cold (`codeact chat`) and one that keeps them warm (the extension, `codeact mcp serve`, `codeact acp`) then share
 * the folder's host, and one's conversation goes on in the other with its session.
 */
function plainOptions(local: LocalRuntimeOptions | undefined): LocalRuntimeOptions {
  const { zygote: _zygote, prestart: _prestart, ...rest } = local ?? {};
  return JSON.parse(JSON.stringify(rest)) as LocalRuntimeOptions;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Connects to this workspace's session host, starting it when none answers. */
export async function attachSessionHost(o: AttachOptions): Promise<HostedRuntime> {
  const env = o.env ?? process.env;
  const dir = ensurePrivateFolder(hostFolder(env));
  const local = plainOptions(o.local);
  const name = hostName(o.workspace, local);
  const place = placeOf(dir, name);
  try {
    return new HostedRuntime(await HostConnection.open(place));
  } catch (e) {
    // A host answered and refused us (it cannot check who we are): another would not do better. Else none answers: start one.
    if (e instanceof SessionHostError && e.refused) throw new SessionHostError(`${e.message}`, true);
  }
  const entry = o.entry ?? path.join(__dirname, 'sessionHost.js');
  if (!existsSync(entry))
    throw new SessionHostError(`The session host's program is missing (${entry}); reinstall CodeAct, or set codeact.session.host to "off".`);
  const spec: HostSpec = { dir, name, workspace: o.workspace, idleMs: o.idleMs, local };
  const child = spawn(process.execPath, [entry], { detached: true, stdio: 'ignore', env: hostEnv(env, spec), cwd: dir });
  child.on('error', () => {});
  child.unref();
  const deadline = Date.now() + (o.startMs ?? 30_000);
  let last: unknown;
  while (Date.now() < deadline) {
    await sleep(25);
    try {
      return new HostedRuntime(await HostConnection.open(place));
    } catch (e) {
      last = e;
    }
  }
  throw new SessionHostError(
    `The session host did not start (${(last as Error)?.message ?? 'no answer'}); see ${place.log}, or set codeact.session.host to "off".`,
  );
}

/**
 * The runtime a config asks for: attached to its folder's session host when the config chose one
 * (core/config/engine.ts `sessionHostChoice`), else built in this process (../runtime/factory.ts). The host's
 * session and job events go to the local options' `onSessionEvent` and `onJobEvent`, as a runtime in this
 * process would send them.
 */
export async function openRuntime(config: RuntimeConfig, o: Pick<AttachOptions, 'entry' | 'env'> = {}): Promise<Runtime> {
  const attach = attachOptionsOf(config);
  if (!attach) return createRuntime(config);
  const runtime = await attachSessionHost({ ...attach, ...o });
  const relay = config.local?.onSessionEvent;
  if (relay) runtime.onSession(relay);
  const jobs = config.local?.onJobEvent;
  if (jobs) runtime.onJob(jobs);
  return runtime;
}

/** What attaching for a config takes (none: the config keeps its sessions in this process). */
function attachOptionsOf(config: RuntimeConfig): Pick<AttachOptions, 'workspace' | 'local' | 'idleMs'> | undefined {
  if (!config.sessionHost) return undefined;
  const local = { ...(config.local ?? {}), limits: { ...(config.local?.limits ?? {}), ...(config.limits ?? {}) } };
  return { workspace: config.sessionHost.workspace, local, idleMs: config.sessionHost.idleMs };
}

/**
 * Whether the session host a config would attach to is there (its socket exists), without starting one: a
 * window that comes back attaches only to a host that kept its sessions (a host started now would have none).
 */
export function hostRunning(config: RuntimeConfig, env: NodeJS.ProcessEnv = process.env): boolean {
  const attach = attachOptionsOf(config);
  if (!attach) return false;
  return existsSync(placeOf(hostFolder(env), hostName(attach.workspace, plainOptions(attach.local))).socket);
}

/** Connections to every session host of this user that answers (for listing and ending them). */
export async function everyHost(env: NodeJS.ProcessEnv = process.env): Promise<HostConnection[]> {
  const dir = ensurePrivateFolder(hostFolder(env));
  const conns = await Promise.all(hostNames(dir).map((n) => HostConnection.open(placeOf(dir, n)).catch(() => undefined)));
  return conns.filter((c): c is HostConnection => !!c);
}
