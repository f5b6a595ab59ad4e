/**
 * A throw-away JupyterHub for tests: Debian's `jupyterhub` (3.0; `apt-get install jupyterhub`) with the
 * npm registry's `configurable-http-proxy` v4 (a devDependency: Debian's own proxy does not run on
 * Node 20), on loopback ports, in a temp folder. No system users are needed:
 *   - the dummy authenticator, with `alice` as the only allowed user;
 *   - SimpleLocalProcessSpawner: `jupyterhub-singleuser` runs as the hub's own user, its home under the
 *     temp folder; `--allow-root` lets it run when that user is root (CI), and is ignored otherwise;
 *   - an admin service token, to create alice's API token and start and stop her server.
 * The hub can also run as another user (`as`: root starts it as an unprivileged one), so both cases
 * are tested on a machine that runs as root.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, chownSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort } from './jupyterServer';

const REPO = path.resolve(__dirname, '..', '..');
const PROXY = path.join(REPO, 'node_modules', 'configurable-http-proxy', 'bin', 'configurable-http-proxy');

export interface JupyterHub {
  /** The hub's public root (its proxy), `http://127.0.0.1:PORT/`. */
  url: string;
  /** `URL/user/NAME/`: the user's server through the proxy. */
  userUrl(name: string): string;
  /** An API token of `name`'s (what the hub's token page makes). */
  tokenFor(name: string): Promise<string>;
  /** Starts the user's server and waits until the hub says it is ready. */
  startServer(name: string): Promise<void>;
  /** Stops the user's server and waits until the hub says it is gone. */
  stopServer(name: string): Promise<void>;
  /** The hub's log (its own, the proxy's and the single-user servers'), for failure messages. */
  log(): string;
  /** Stops the hub, its proxy and every server it spawned, and removes the temp folder. */
  stop(): Promise<void>;
}

function onPath(exe: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat('/usr/bin')) {
    if (!dir) continue;
    const candidate = path.join(dir, exe);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** Why the hub tests cannot run here, or undefined when they can. */
export function hubUnavailable(): string | undefined {
  const missing: string[] = [];
  if (!onPath('jupyterhub') || !onPath('jupyterhub-singleuser')) missing.push('jupyterhub (apt-get install jupyterhub)');
  if (!existsSync(PROXY)) missing.push('configurable-http-proxy v4 from npm (npm ci installs it as a devDependency)');
  return missing.length ? `${missing.join(' and ')} not installed: skipping the JupyterHub tests` : undefined;
}

export async function startJupyterHub(options: { as?: { uid: number; gid: number }; startTimeoutMs?: number } = {}): Promise<JupyterHub> {
  const why = hubUnavailable();
  if (why) throw new Error(why);
  const hubExe = onPath('jupyterhub')!;
  const singleuser = onPath('jupyterhub-singleuser')!;
  const dir = mkdtempSync(path.join(tmpdir(), 'codeact-hub-'));
  chmodSync(dir, 0o755);
  const serviceToken = randomBytes(24).toString('hex');
  const [port, hubPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}/`;
  const config = `
import os
c = get_config()
d = ${JSON.stringify(dir)}
c.JupyterHub.ip = '127.0.0.1'
c.JupyterHub.port = ${port}
c.JupyterHub.hub_ip = '127.0.0.1'
c.JupyterHub.hub_port = ${hubPort}
c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:${apiPort}'
c.ConfigurableHTTPProxy.command = [${JSON.stringify(process.execPath)}, ${JSON.stringify(PROXY)}]
c.ConfigurableHTTPProxy.pid_file = os.path.join(d, 'proxy.pid')
c.JupyterHub.authenticator_class = 'dummy'
c.Authenticator.allowed_users = {'alice'}
c.JupyterHub.spawner_class = 'simple'
c.SimpleLocalProcessSpawner.home_dir_template = os.path.join(d, 'home', '{username}')
c.Spawner.cmd = [${JSON.stringify(singleuser)}]
c.Spawner.args = ['--allow-root', '--MappingKernelManager.cull_idle_timeout=0']
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.JupyterHub.db_url = 'sqlite:///' + os.path.join(d, 'hub.sqlite')
c.JupyterHub.cookie_secret_file = os.path.join(d, 'cookie_secret')
c.JupyterHub.pid_file = os.path.join(d, 'hub.pid')
c.JupyterHub.services = [{'name': 'codeact-test', 'api_token': ${JSON.stringify(serviceToken)}}]
c.JupyterHub.load_roles = [{'name': 'codeact-test', 'scopes': ['admin:users', 'admin:servers', 'tokens'], 'services': ['codeact-test']}]
`;
  writeFileSync(path.join(dir, 'jupyterhub_config.py'), config);
  mkdirSync(path.join(dir, 'home'));
  if (options.as) {
    for (const p of [dir, path.join(dir, 'home'), path.join(dir, 'jupyterhub_config.py')]) chownSync(p, options.as.uid, options.as.gid);
  }
  const child: ChildProcess = spawn(hubExe, ['-f', path.join(dir, 'jupyterhub_config.py')], {
    cwd: dir,
    detached: true, // its own process group: the proxy and the single-user servers go with it
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      LANG: 'C.UTF-8',
      JUPYTER_CONFIG_DIR: path.join(dir, 'config'),
      JUPYTER_DATA_DIR: path.join(dir, 'data'),
      JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime'),
      JUPYTER_PLATFORM_DIRS: '1',
      PYDEVD_DISABLE_FILE_VALIDATION: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.as ? { uid: options.as.uid, gid: options.as.gid } : {}),
  });
  const chunks: string[] = [];
  let logSize = 0;
  const keep = (b: Buffer) => {
    // Bounded: the last ~1 MB is enough to diagnose a failure.
    chunks.push(b.toString());
    logSize += b.length;
    while (logSize > 1 << 20 && chunks.length > 1) logSize -= chunks.shift()!.length;
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const log = () => chunks.join('');

  const api = async (method: string, pathname: string, body?: unknown): Promise<Response> =>
    fetch(new URL(`hub/api/${pathname}`, url), {
      method,
      headers: { Authorization: `token ${serviceToken}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  const until = async (what: string, check: () => Promise<boolean>, budgetMs: number): Promise<void> => {
    const deadline = Date.now() + budgetMs;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`jupyterhub exited while ${what}:\n${log().slice(-3000)}`);
      if (await check().catch(() => false)) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`jupyterhub: timed out ${what}:\n${log().slice(-3000)}`);
  };
  const serverState = async (name: string): Promise<{ ready?: boolean } | null> => {
    const res = await api('GET', `users/${name}`);
    if (!res.ok) throw new Error(`GET users/${name}: HTTP ${res.status}`);
    const user = (await res.json()) as { servers?: Record<string, { ready?: boolean }> };
    return user.servers?.[''] ?? null;
  };
  const stop = async (): Promise<void> => {
    if (!exited && child.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {}
      }, 15_000);
      await exit;
      clearTimeout(t);
    }
    // The hub stops its servers and proxy on SIGTERM; whatever of its group is left goes now.
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await until('starting', async () => (await fetch(new URL('hub/api/', url), { signal: AbortSignal.timeout(5_000) })).ok, options.startTimeoutMs ?? 90_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url,
    userUrl: (name) => `${url}user/${name}/`,
    tokenFor: async (name) => {
      const res = await api('POST', `users/${name}/tokens`, { note: 'codeact tests' });
      if (!res.ok) throw new Error(`creating ${name}'s token: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { token: string }).token;
    },
    startServer: async (name) => {
      const res = await api('POST', `users/${name}/server`);
      if (res.status !== 201 && res.status !== 202 && res.status !== 400) throw new Error(`starting ${name}'s server: HTTP ${res.status} ${await res.text()}`);
      await until(`starting ${name}'s server`, async () => (await serverState(name))?.ready === true, 120_000);
    },
    stopServer: async (name) => {
      const res = await api('DELETE', `users/${name}/server`);
      if (res.status !== 204 && res.status !== 202) throw new Error(`stopping ${name}'s server: HTTP ${res.status} ${await res.text()}`);
      await until(`stopping ${name}'s server`, async () => (await serverState(name)) === null, 60_000);
    },
    log,
    stop,
  };
}
