/**
 * Finds the real Python interpreter once (never a pyenv/asdf shim, which costs ~50 ms a spawn) and
 * learns where its standard library and site-packages live, so a sandbox can mount them read-only.
 */
import { execFile } from 'node:child_process';
import { CodeActError } from '../../util/errors';

export interface PythonInfo {
  /** Absolute path of the real interpreter binary. */
  executable: string;
  version: string;
  prefix: string;
  basePrefix: string;
  /** Existing directories on sys.path. */
  path: string[];
}

const cache = new Map<string, Promise<PythonInfo>>();

const PROBE = [
  'import sys, json, os',
  'print(json.dumps({"executable": os.path.realpath(sys.executable), "version": sys.version.split()[0],',
  '  "prefix": sys.prefix, "basePrefix": sys.base_prefix, "path": [p for p in sys.path if p and os.path.isdir(p)]}))',
].join('\n');

export class PythonNotFoundError extends CodeActError {
  readonly category = 'environment' as const;
  constructor(command: string, detail: string) {
    super(
      `Python was not found: "${command}" could not be started (${detail}). ` +
        'Install Python 3.9 or newer, or point codeact.python (CLI: --python) at an interpreter.',
    );
    this.name = 'PythonNotFoundError';
  }
}

export function resolvePython(command = 'python3'): Promise<PythonInfo> {
  let pending = cache.get(command);
  if (!pending) {
    pending = probe(command);
    cache.set(command, pending);
    pending.catch(() => cache.delete(command));
  }
  return pending;
}

function probe(command: string): Promise<PythonInfo> {
  return new Promise((resolve, reject) => {
    execFile(command, ['-I', '-c', PROBE], { timeout: 15_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (err, stdout, stderr) => {
      if (err) {
        const detail = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such command' : (stderr.trim().split('\n').pop() ?? err.message);
        reject(new PythonNotFoundError(command, detail));
        return;
      }
      try {
        const info = JSON.parse(stdout) as PythonInfo;
        const [major, minor] = info.version.split('.').map(Number);
        if (major !== 3 || minor < 9) {
          reject(new PythonNotFoundError(command, `found Python ${info.version}; 3.9 or newer is needed`));
          return;
        }
        resolve(info);
      } catch {
        reject(new PythonNotFoundError(command, `unexpected output: ${stdout.slice(0, 200)}`));
      }
    });
  });
}
