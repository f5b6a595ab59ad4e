/**
 * The session host's process (bundled as dist/sessionHost.js, started detached by ./launch.ts). It reads what
 * to serve from CODEACT_SESSION_HOST (JSON: the folder, its name, the workspace, the idle time, the local
 * runtime's options), takes the host's lock (one host per name: a second one started at the same time
 * sees a live pid there and leaves), writes a new token, listens on the socket, and removes its files when
 * it ends. Its environment was scrubbed by the client that started it: no provider key reaches it.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync, chmodSync, appendFileSync, statSync } from 'node:fs';
import { LocalRuntime, type LocalRuntimeOptions } from '../runtime/local/localRuntime';
import { ensurePrivateFolder, placeOf, writeToken, type HostPlace } from './place';
import { SessionHostServer } from './server';
import { isAlive } from '../util/processTree';

/** What the client hands the host (JSON in its environment). */
export interface HostSpec {
  dir: string;
  name: string;
  workspace: string;
  idleMs: number;
  local: LocalRuntimeOptions;
}

const MAX_LOG_BYTES = 1024 * 1024;

/** Takes the host's lock (a file holding our pid); false when a live host holds it. */
function lock(place: HostPlace): boolean {
  for (let i = 0; i < 3; i++) {
    try {
      const fd = openSync(place.lock, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let pid = NaN;
      try {
        pid = Number(readFileSync(place.lock, 'utf8').trim());
      } catch {}
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) return false;
      try {
        unlinkSync(place.lock);
      } catch {}
    }
  }
  return false;
}

function unlinkQuiet(file: string) {
  try {
    unlinkSync(file);
  } catch {}
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.env.CODEACT_SESSION_HOST ?? 'null') as HostSpec | null;
  if (!spec || typeof spec.dir !== 'string' || !/^[0-9a-f]{20}$/.test(spec.name)) {
    process.exitCode = 2;
    return;
  }
  delete process.env.CODEACT_SESSION_HOST;
  ensurePrivateFolder(spec.dir);
  const place = placeOf(spec.dir, spec.name);
  if (!lock(place)) return; // another host serves this name
  const log = (line: string) => {
    try {
      if ((statSync(place.log, { throwIfNoEntry: false })?.size ?? 0) < MAX_LOG_BYTES)
        appendFileSync(place.log, `${new Date().toISOString()} ${line}\n`, { mode: 0o600 });
    } catch {}
  };
  const runtime = new LocalRuntime({ ...spec.local, zygote: true, prestart: true, log, onWarning: log });
  unlinkQuiet(place.socket);
  const token = writeToken(place);
  const server = new SessionHostServer({ runtime, token, workspace: spec.workspace, idleMs: spec.idleMs, log });
  const cleanup = () => {
    unlinkQuiet(place.socket);
    unlinkQuiet(place.token);
    try {
      if (readFileSync(place.lock, 'utf8').trim() === String(process.pid)) unlinkSync(place.lock);
    } catch {}
  };
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => void server.end());
  process.on('SIGHUP', () => {});
  server.server.on('error', (e) => {
    log(`cannot listen: ${e.message}`);
    void server.end();
  });
  server.server.listen(place.socket, () => {
    chmodSync(place.socket, 0o600);
    log(`listening (pid ${process.pid}, workspace ${spec.workspace})`);
  });
  await server.ended;
  cleanup();
  log('ended');
  process.exit(0);
}

void main();
