/**
 * Which Python interpreter the local guest of a folder runs, the same way in both hosts:
 * 1. `codeact.python.path`, when set (user settings, or a trusted folder's: resolve.ts's policy). One that
 *    names a path in the folder (relative, `${workspaceFolder}`, or absolute inside it) is the folder's own
 *    interpreter, whatever settings layer set it (your user settings too, a `.code-workspace` file): like
 *    `.venv`, it runs only in a trusted folder;
 * 2. the Python extension's selected environment for the folder (the extension passes its path);
 * 3. a virtual environment in the folder: `.venv`, then `venv` (a folder with `pyvenv.cfg` and
 *    `bin/python`), only in a trusted folder (its interpreter is the folder's code: it runs on the host
 *    to be probed, before any sandbox);
 * 4. `python3` on PATH.
 * Synchronous and cheap (a few stat calls and one bounded read of `pyvenv.cfg`), never a process: it runs
 * for every status bar refresh and runtime lookup. Files on disk are untrusted: `pyvenv.cfg` is read only
 * when it is a regular file of at most 16 KiB (a FIFO never blocks), and at most 64 of its lines count.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { isUnder } from '../../util/paths';

type PythonEnvSource = 'setting' | 'python-extension' | 'venv' | 'system';

export interface PythonEnv {
  /** The interpreter command or absolute path the guest runs (a venv's own `bin/python`, never resolved). */
  python: string;
  source: PythonEnvSource;
  /** The virtual environment's folder, when the interpreter is one's. */
  venv?: string;
  /** Short, for the status bar: ".venv 3.11", "python3". */
  label: string;
  /** Why this one, for a tooltip or a log line. */
  reason: string;
  /** The venv's Python version as pyvenv.cfg says ("3.11.2"), when known. */
  version?: string;
  /** The venv sees the system's site-packages too (`--system-site-packages`). */
  systemSitePackages?: boolean;
}

interface PythonEnvQuery {
  /** The folder (absolute path); undefined: no folder open. */
  folder?: string;
  /** `codeact.python.path` as resolved (undefined or empty: not set). */
  setting?: string;
  /** The Python extension's selected interpreter for the folder (an executable or an environment folder). */
  pythonExtensionPath?: string;
  /** The folder is trusted (default true): an untrusted folder's own venv is never run. */
  trusted?: boolean;
}

/** The folders of a project that hold its virtual environment, in the order they are looked for. */
export const VENV_DIRS = ['.venv', 'venv'] as const;
const CFG_MAX_BYTES = 16 * 1024;

export function resolvePythonEnv(q: PythonEnvQuery): PythonEnv {
  const trusted = q.trusted !== false;
  const setting = q.setting?.trim();
  const python = setting ? expandSetting(setting, q.folder) : undefined;
  const folderOwn = python !== undefined && isFolderInterpreter(python, q.folder);
  if (python && (trusted || !folderOwn)) return describe(python, 'setting', 'codeact.python.path is set');
  const fromExtension = q.pythonExtensionPath?.trim();
  if (fromExtension && trusted) {
    // A bare command ("python") is the Python extension's fallback when nothing is selected: not a choice.
    const python = path.isAbsolute(fromExtension) ? executableIn(fromExtension) : undefined;
    if (python) return describe(python, 'python-extension', "the Python extension's selected environment for this folder");
  }
  if (q.folder && trusted) {
    for (const name of VENV_DIRS) {
      const venv = readVenv(path.join(q.folder, name));
      if (venv) return { ...venvEnv(venv), source: 'venv', reason: `the folder's ${name} (no codeact.python.path, no Python extension environment)` };
    }
  }
  const why =
    q.folder && !trusted
      ? folderOwn
        ? `the folder is not trusted, so its own environments are not used (codeact.python.path ${JSON.stringify(setting)} names one of them)`
        : 'the folder is not trusted, so its own environments are not used'
      : q.folder
        ? 'no codeact.python.path, no Python extension environment, no .venv or venv in the folder'
        : 'no folder is open and codeact.python.path is not set';
  return { python: 'python3', source: 'system', label: 'python3', reason: `python3 on PATH: ${why}` };
}

/** `${workspaceFolder}` and a path relative to the folder (one with a slash) are the folder's. */
export function expandSetting(setting: string, folder: string | undefined): string {
  let p = folder ? setting.replace(/\$\{workspaceFolder\}/g, folder) : setting;
  if (p === '~' || p.startsWith('~/')) p = path.join(process.env.HOME ?? '/', p.slice(1));
  if (folder && !path.isAbsolute(p) && /[\\/]/.test(p)) p = path.resolve(folder, p);
  return p;
}

/** An interpreter (as expanded) that is the folder's own: a path inside it, or relative (resolved from wherever the host runs). */
function isFolderInterpreter(python: string, folder: string | undefined): boolean {
  if (!/[\\/]/.test(python)) return false;
  if (!path.isAbsolute(python)) return true;
  return !!folder && isUnder(path.resolve(python), path.resolve(folder));
}

/** The interpreter of an executable path, or of an environment folder (its bin/python); undefined when neither exists. */
export function executableIn(p: string): string | undefined {
  const st = statOf(p);
  if (st?.isFile()) return p;
  if (st?.isDirectory())
    return [path.join(p, 'bin', 'python'), path.join(p, 'python.exe'), path.join(p, 'Scripts', 'python.exe')].find((e) => statOf(e)?.isFile());
  return undefined;
}

function describe(python: string, source: PythonEnvSource, reason: string): PythonEnv {
  const venv = venvOf(python);
  if (venv) return { ...venvEnv(venv), python, source, reason };
  return { python, source, label: path.basename(python) || python, reason };
}

interface Venv {
  dir: string;
  python: string;
  version?: string;
  systemSitePackages: boolean;
}

function venvEnv(v: Venv): Omit<PythonEnv, 'source' | 'reason'> {
  const short = v.version?.split('.').slice(0, 2).join('.');
  return {
    python: v.python,
    venv: v.dir,
    label: `${path.basename(v.dir)}${short ? ` ${short}` : ''}`,
    version: v.version,
    systemSitePackages: v.systemSitePackages,
  };
}

/** The venv an interpreter path belongs to (`<venv>/bin/python*` next to `<venv>/pyvenv.cfg`), if any. */
export function venvOfInterpreter(python: string): string | undefined {
  return venvOf(python)?.dir;
}

function venvOf(python: string): Venv | undefined {
  if (!path.isAbsolute(python)) return undefined;
  const bin = path.dirname(python);
  return ['bin', 'Scripts'].includes(path.basename(bin)) ? readVenv(path.dirname(bin), python) : undefined;
}

/** A virtual environment folder: `pyvenv.cfg` (a regular file) and its interpreter; undefined otherwise. */
export function readVenv(dir: string, python?: string): Venv | undefined {
  if (!statOf(dir)?.isDirectory()) return undefined;
  const exe =
    python ?? [path.join(dir, 'bin', 'python'), path.join(dir, 'bin', 'python3'), path.join(dir, 'Scripts', 'python.exe')].find((e) => statOf(e)?.isFile());
  if (!exe || !statOf(exe)?.isFile()) return undefined;
  const text = readSmallFile(path.join(dir, 'pyvenv.cfg'), CFG_MAX_BYTES);
  if (text === undefined) return undefined;
  const cfg = new Map<string, string>();
  for (const line of text.split(/\r?\n/, 64)) {
    const m = /^\s*([A-Za-z_-]{1,40})\s*=\s*(.{0,300}?)\s*$/.exec(line);
    if (m) cfg.set(m[1].toLowerCase(), m[2]);
  }
  const version = /^\d+\.\d+(\.\d+)?/.exec(cfg.get('version') ?? cfg.get('version_info') ?? '')?.[0];
  return { dir, python: exe, version, systemSitePackages: cfg.get('include-system-site-packages')?.toLowerCase() === 'true' };
}

/** A regular file's text, when it is one of at most `max` bytes: opened without blocking (a FIFO never hangs), checked once open. */
function readSmallFile(file: string, max: number): string | undefined {
  if (!statOf(file)?.isFile()) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return undefined;
    const buf = Buffer.alloc(max + 1);
    let got = 0;
    for (let n = 1; n > 0 && got <= max; got += n) n = readSync(fd, buf, got, buf.length - got, null);
    return got > max ? undefined : buf.subarray(0, got).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function statOf(p: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}
