/**
 * matplotlib's font cache, kept per interpreter so the first plot of a guest is not slow and prints no
 * warning: `~/.cache/codeact/matplotlib/<interpreter>` (or `$XDG_CACHE_HOME/...`). Without a sandbox it is
 * the guest's MPLCONFIGDIR; in bubblewrap it is mounted read-only and the guest copies the font list into
 * its own writable MPLCONFIGDIR (codeact_mpl.py), so guests never share a writable folder.
 *
 * The cache is built once, in the background, by the interpreter itself (`import matplotlib.font_manager`
 * builds it), outside the sandbox: that runs the configured interpreter and matplotlib, never model code.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import type { PythonInfo } from './python';

const building = new Map<string, Promise<void>>();

/** The cache folder of an interpreter (made, 0700), or undefined when no cache folder can be made. */
export function matplotlibCacheDir(python: PythonInfo, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(homedir(), '.cache');
  const id = createHash('sha256').update(`${python.executable}\0${python.version}`).digest('hex').slice(0, 16);
  const dir = path.join(base, 'codeact', 'matplotlib', id);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  } catch {
    return undefined;
  }
}

function hasFontList(dir: string): boolean {
  try {
    return readdirSync(dir).some((n) => /^fontlist-v\d+\.json$/.test(n));
  } catch {
    return false;
  }
}

/**
 * Builds the font cache in the background when the folder has none (once per process and folder). Resolves
 * when it is there or could not be built (matplotlib not installed: nothing to do); never rejects.
 */
export function prebuildMatplotlibCache(python: PythonInfo, dir: string): Promise<void> {
  if (hasFontList(dir)) return Promise.resolve();
  let p = building.get(dir);
  if (!p) {
    p = new Promise<void>((resolve) => {
      const child = spawn(
        python.executable,
        ['-I', '-c', 'import importlib.util,sys\nif importlib.util.find_spec("matplotlib"): import matplotlib.font_manager'],
        {
          env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir, MPLCONFIGDIR: dir, LANG: 'C.UTF-8' },
          stdio: 'ignore',
          detached: false,
        },
      );
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      timer.unref();
      child.on('error', () => resolve());
      child.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      child.unref();
    });
    building.set(dir, p);
  }
  return p;
}

/** The folders fontconfig reads outside /usr (which the sandbox mounts anyway), read-only in the sandbox. */
export const FONT_PATHS = ['/etc/fonts', '/var/cache/fontconfig'].filter((p) => existsSync(p));
