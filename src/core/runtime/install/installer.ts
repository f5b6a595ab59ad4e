/**
 * `install_packages` on the host: the reserved call `codeact.install_packages` from the guest. It checks the
 * specs (./specs), reads the session's interpreter (./environment), asks the person (an approval that lists
 * every spec, the environment, and the `.venv` it would make), then runs pip, or uv for a uv environment,
 * outside the sandbox and with the network (./pipRun), its output streaming into the execution's card.
 *
 * A system or externally-managed Python is never written to: with a folder open, the approval offers to make
 * `<folder>/.venv` (`python -m venv --system-site-packages`, so what the system Python has stays importable)
 * and install there; the host then switches the session to it (`switchEnvironment`), which a running session
 * cannot do in place, so the result says the session restarts. The person's time deciding and the install's
 * own time (bounded by `timeoutMs`) are not counted against the run's timeout.
 */
import { existsSync, lstatSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { installArgv } from '../../../common/installCommand';
import type { ToolCallRequest } from '../types';
import { adoptPlaceholder, isPlaceholder } from '../local/workspaceMount';
import { inspectEnvironment, refusal, type PythonEnvironment } from './environment';
import { failureReason, runInstaller, type InstallerOutcome } from './pipRun';
import { checkSpecs } from './specs';

export interface InstallApproval {
  packages: string[];
  /** The interpreter pip installs for (the new `.venv`'s when `createVenv` is set). */
  python: string;
  /** "Python 3.11.2, virtual environment /work/.venv": what the person reads. */
  environment: string;
  /** The venv folder that would be made first (the session's Python is a system one). */
  createVenv?: string;
  /** Why the session's own Python is not installed into (with `createVenv`). */
  refused?: string;
  tool: 'pip' | 'uv';
  /** `codeact.python.installArgs`, shown as they are passed. */
  installArgs: string[];
  itemId: string;
  signal: AbortSignal;
}

/** The person's answer (as the gateway's approvals): allowed, denied, or no answer before the run ended. */
export type InstallApprover = (request: InstallApproval) => Promise<'allowed' | 'denied' | { unanswered: string }>;

interface PackageInstallerOptions {
  /** The interpreter the session runs (the runtime config's `python`). */
  python: string;
  /** The folder a `.venv` may be made in; undefined: no folder open (then a system Python is only refused). */
  folder?: string;
  /** `codeact.python.installArgs`: argv for pip (trusted settings only), before the specs. */
  installArgs?: readonly string[];
  approve?: InstallApprover;
  /** A `.venv` was made for the session: the host uses it from the next run it starts on. */
  switchEnvironment?(venvPython: string): PromiseLike<void> | void;
  /** The install's own timeout; default 10 minutes. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  log?(line: string): void;
}

interface InstallResult {
  installed: string[];
  python: string;
  tool: 'pip' | 'uv';
  /** The session must restart to see the packages (a new environment was made). */
  restart: boolean;
  message: string;
}

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
/** Output of a failed install that the code's error carries (its end). */
const ERROR_TAIL = 3000;

function venvPython(dir: string): string {
  return process.platform === 'win32' ? path.join(dir, 'Scripts', 'python.exe') : path.join(dir, 'bin', 'python');
}

function describe(e: PythonEnvironment): string {
  const kind = e.venv
    ? e.uv
      ? 'uv virtual environment'
      : 'virtual environment'
    : e.conda
      ? 'conda environment'
      : e.externallyManaged
        ? 'externally-managed system Python'
        : 'system Python';
  return `Python ${e.version}, ${kind} ${e.prefix}`;
}

/** Finds `uv` on PATH (for a uv environment). */
function findOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter).slice(0, 100)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The folder of a new venv, made by the host when the venv is made (not when the person was asked: the code
 * keeps running while the question waits). Python's venv keeps what is already in a folder (a planted
 * `lib/python3.X/site-packages/evil.pth`, a `bin/python` link to another program), so the folder must be new:
 * made here (mkdir fails when anything has that name), or the placeholder this process holds there, which
 * every sandbox of a writable workspace binds read-only (workspaceMount.ts), so no code could write into it.
 * Returns its identity, checked again before anything in it runs.
 */
function claimVenvFolder(dir: string): { dev: number; ino: number; adopted: boolean } {
  const adopted = adoptPlaceholder(dir);
  if (!adopted) {
    try {
      mkdirSync(path.dirname(dir), { recursive: true });
      mkdirSync(dir, { mode: 0o755 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST')
        throw new Error(
          `install_packages: ${dir} appeared while the question waited (the code, or something else, made it), so no virtual environment is made over it and nothing is installed. If you did not make it, delete it; then install again.`,
        );
      throw new Error(`install_packages: could not make ${dir} (${(e as Error).message}).`);
    }
  }
  const st = lstatSync(dir);
  return { dev: st.dev, ino: st.ino, adopted };
}

/**
 * A venv that could not be made is removed, when it is still the folder made for it (a later install may try
 * again). Not an adopted placeholder: a sandbox still holds it as a mount point, and removing that on the host
 * would detach the sandbox's read-only mount, so the code could then make the name.
 */
function dropMadeVenv(dir: string, claimed: { dev: number; ino: number; adopted: boolean }): void {
  if (claimed.adopted) return;
  try {
    const st = lstatSync(dir);
    if (st.isDirectory() && st.dev === claimed.dev && st.ino === claimed.ino) rmSync(dir, { recursive: true, force: true });
  } catch {
    // Gone already.
  }
}

/** Before pip runs in the new venv: it is still the folder made for it, and its python is the interpreter it was made from. */
function checkMadeVenv(dir: string, claimed: { dev: number; ino: number }, python: string, base: string): void {
  const st = lstatSync(dir);
  let same = st.isDirectory() && st.dev === claimed.dev && st.ino === claimed.ino;
  try {
    same &&= realpathSync(python) === realpathSync(base);
  } catch {
    same = false;
  }
  if (!same)
    throw new Error(
      `install_packages: ${dir} changed while it was made (it is no longer the folder made for it, or its python is not ${base}), so nothing is installed into it. Delete it, then install again.`,
    );
}

/** The handler of `codeact.install_packages` (give it to the gateway as its `installer`). */
export function packageInstaller(o: PackageInstallerOptions): (request: ToolCallRequest, signal: AbortSignal) => Promise<InstallResult> {
  const env = o.env ?? process.env;
  const installArgs = [...(o.installArgs ?? [])];
  return async (request, signal) => {
    const args = request.arguments as { packages?: unknown } | null;
    const check = checkSpecs(args && typeof args === 'object' ? args.packages : undefined);
    if (check.error) throw new Error(check.error);
    const specs = check.specs;
    if (!o.approve)
      throw new Error(
        "install_packages needs the user's approval, and nobody can approve it here. Ask the user to install the packages, or run CodeAct in VS Code or an interactive terminal.",
      );
    const current = await inspectEnvironment(o.python, env);
    const why = refusal(current);
    let createVenv: string | undefined;
    if (why) {
      if (!o.folder)
        throw new Error(
          `install_packages: ${why}, so nothing is installed into it. Open a folder (CodeAct then offers to make a .venv there), or set codeact.python.path to a virtual environment's python.`,
        );
      createVenv = path.join(o.folder, '.venv');
      if (existsSync(createVenv) && !isPlaceholder(createVenv)) {
        throw new Error(
          `install_packages: ${why}, and ${createVenv} already exists but is not the session's Python. Ask the user to select it (codeact.python.path, or "CodeAct: Select Python Environment"); then install again.`,
        );
      }
    }
    const target = createVenv ? venvPython(createVenv) : current.executable;
    const uv = !createVenv && current.uv ? findOnPath('uv', env) : undefined;
    const tool: 'pip' | 'uv' = uv ? 'uv' : 'pip';
    if (!createVenv && !uv && !current.pip) {
      throw new Error(
        current.uv
          ? `install_packages: ${current.prefix} is a uv environment without pip, and uv is not on PATH. Put uv on the PATH of VS Code (or the CLI), or install pip into the environment.`
          : `install_packages: ${current.executable} has no pip. Install pip into that environment (python -m ensurepip), then try again.`,
      );
    }
    // The person's time, and the install's own (bounded below), are not the code's: the run's clock stops.
    const resume = request.pause?.();
    try {
      const answer = await o.approve({
        packages: specs,
        python: target,
        environment: createVenv ? `a new virtual environment ${createVenv} (from ${describe(current)})` : describe(current),
        ...(createVenv ? { createVenv, refused: why } : {}),
        tool,
        installArgs,
        itemId: request.itemId,
        signal,
      });
      if (typeof answer === 'object') throw new Error(`install_packages did not run (${answer.unanswered}).`);
      if (answer === 'denied')
        throw new Error(`The user declined to install ${specs.join(', ')}. Do without ${specs.length === 1 ? 'it' : 'them'}, or ask the user.`);
      const say = (stream: 'stdout' | 'stderr', delta: string) => request.emit?.({ type: 'codeact.output.delta', item_id: request.itemId, stream, delta });
      const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const run = async (argv: string[]): Promise<InstallerOutcome> => {
        say('stderr', `$ ${argv.join(' ')}\n`);
        o.log?.(`install_packages: ${argv.join(' ')}`);
        return runInstaller({ argv, env: { ...env, PIP_NO_INPUT: '1', PYTHONUNBUFFERED: '1' }, timeoutMs, signal, workspace: o.folder, onOutput: say });
      };
      const ended = (out: InstallerOutcome, what: string): Error | undefined => {
        if (out.ended === 'stopped') return new Error(`install_packages was stopped while ${what}.`);
        if (out.ended === 'timeout')
          return new Error(
            `install_packages: ${what} took longer than ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`} and was stopped.`,
          );
        if (out.ended) return new Error(`install_packages: ${what} could not start: ${out.ended}.`);
        return undefined;
      };
      if (createVenv) {
        const claimed = claimVenvFolder(createVenv);
        const made = await run([current.executable, '-m', 'venv', '--system-site-packages', createVenv]);
        const err = ended(made, `making ${createVenv}`);
        if (err || made.exitCode !== 0) dropMadeVenv(createVenv, claimed);
        if (err) throw err;
        if (made.exitCode !== 0) {
          throw new Error(
            `install_packages: could not make ${createVenv} (python -m venv exited with ${made.exitCode}: ${made.tail.trim().slice(-600)}). On Debian and Ubuntu, the python3-venv package provides venv.`,
          );
        }
        checkMadeVenv(createVenv, claimed, target, current.executable);
      }
      const argv = installArgv({ tool, python: target, install_args: installArgs, packages: specs }, uv);
      const out = await run(argv);
      const err = ended(out, `installing ${specs.join(', ')}`);
      if (err) throw err;
      if (out.exitCode !== 0) {
        const tail = out.tail.trim().slice(-ERROR_TAIL);
        throw new Error(`install_packages failed: ${failureReason(out, specs)}\n--- the installer's last output ---\n${tail}`);
      }
      if (createVenv) {
        await o.switchEnvironment?.(target);
        return {
          installed: specs,
          python: target,
          tool,
          restart: true,
          message: `${current.executable} is not installed into (${why}). Made ${createVenv} (the system's packages stay visible) and installed ${specs.join(', ')} there. This session still runs ${current.executable}: it restarts with ${createVenv} from the user's next message, which loses this session's variables. End the turn and tell the user; import the packages after that.`,
        };
      }
      return {
        installed: specs,
        python: target,
        tool,
        restart: false,
        message: `Installed ${specs.join(', ')} into ${describe(current)}; import ${specs.length === 1 ? 'it' : 'them'} now.`,
      };
    } finally {
      resume?.();
    }
  };
}
