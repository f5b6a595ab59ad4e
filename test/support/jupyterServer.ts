/**
 * Starts a real `jupyter-server` on 127.0.0.1 with a random token and a free port, in private
 * Jupyter directories, for the Jupyter runtime's tests and bench. Debian's `jupyter-server` and
 * `python3-ipykernel` provide it (`apt-get install jupyter-server python3-ipykernel`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export interface JupyterServer {
  url: string;
  token: string;
  port: number;
  process: ChildProcess;
  /** Server log (stdout + stderr), for failure messages. */
  log(): string;
  /** GET an API path with the token, parsed as JSON. */
  api<T = unknown>(pathname: string): Promise<T>;
  /** Ids of the kernels the server runs now (REST: GET /api/kernels). */
  kernelIds(): Promise<string[]>;
  /** Kills the server process (SIGKILL by default) without any clean-up of its kernels. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the server (SIGTERM; it shuts its kernels down) and removes its directories. */
  stop(): Promise<void>;
}

/** The path of `jupyter-server`, or undefined when it is not installed. */
export function findJupyterServer(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'jupyter-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export const SKIP_MESSAGE = 'jupyter-server is not installed (apt-get install jupyter-server python3-ipykernel): skipping the Jupyter runtime tests';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function startJupyterServer(options: { startTimeoutMs?: number } = {}): Promise<JupyterServer> {
  const exe = findJupyterServer();
  if (!exe) throw new Error(SKIP_MESSAGE);
  const token = randomBytes(24).toString('hex');
  const home = mkdtempSync(path.join(tmpdir(), 'codeact-jupyter-'));
  const root = path.join(home, 'root');
  mkdirSync(root);
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(
      exe,
      [
        '--allow-root',
        '--no-browser',
        '--ServerApp.ip=127.0.0.1',
        `--port=${port}`,
        '--ServerApp.port_retries=0',
        `--ServerApp.token=${token}`,
        `--ServerApp.root_dir=${root}`,
        // Keep kernels local to the test; no culling surprises.
        '--MappingKernelManager.cull_idle_timeout=0',
      ],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          LANG: 'C.UTF-8',
          JUPYTER_CONFIG_DIR: path.join(home, 'config'),
          JUPYTER_DATA_DIR: path.join(home, 'data'),
          JUPYTER_RUNTIME_DIR: path.join(home, 'runtime'),
          IPYTHONDIR: path.join(home, 'ipython'),
          JUPYTER_PLATFORM_DIRS: '1',
          PYDEVD_DISABLE_FILE_VALIDATION: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const chunks: string[] = [];
    child.stdout!.on('data', (b: Buffer) => chunks.push(b.toString()));
    child.stderr!.on('data', (b: Buffer) => chunks.push(b.toString()));
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    let exited = false;
    child.on('exit', () => (exited = true));
    const url = `http://127.0.0.1:${port}/`;
    const api = async <T>(pathname: string): Promise<T> => {
      const res = await fetch(new URL(pathname, url), { headers: { Authorization: `token ${token}` }, signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`GET ${pathname}: HTTP ${res.status}`);
      return (await res.json()) as T;
    };
    const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
    let up = false;
    while (Date.now() < deadline && !exited) {
      try {
        await api('api/status');
        up = true;
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (!up) {
      lastError = new Error(`jupyter-server did not start on port ${port}:\n${chunks.join('').slice(-2000)}`);
      child.kill('SIGKILL');
      continue;
    }
    const waitExit = () => new Promise<void>((r) => (exited ? r() : child.once('exit', () => r())));
    return {
      url,
      token,
      port,
      process: child,
      log: () => chunks.join(''),
      api,
      kernelIds: async () => (await api<Array<{ id: string }>>('api/kernels')).map((k) => k.id),
      kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
        if (!exited) child.kill(signal);
        await waitExit();
      },
      stop: async () => {
        if (!exited) {
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await waitExit();
          clearTimeout(t);
        }
        rmSync(home, { recursive: true, force: true });
      },
    };
  }
  rmSync(home, { recursive: true, force: true });
  throw lastError;
}
