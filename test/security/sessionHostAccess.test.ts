/**
 * Who may reach a session host: only this user (the folder is private, and the peer's uid is checked even
 * where the socket is reachable), only with the host's token, and a bad line closes that connection, never
 * the host. Runs as root and as the unprivileged user `tester` (uid 1001) where it can switch.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { HostConnection, type HostedRuntime } from '../../src/core/sessionHost/client';
import { attachSessionHost } from '../../src/core/sessionHost/launch';
import { ensurePrivateFolder, hostFolder, HostFolderError, hostName, placeOf, writeToken } from '../../src/core/sessionHost/place';
import { SessionHostServer } from '../../src/core/sessionHost/server';
import { cannotSwitchUser, TESTER } from './support/asUser';
import { isAlive } from '../../src/core/util/processTree';
import { waitFor } from '../support/wait';

const ENTRY = path.resolve(__dirname, '../../dist/sessionHost.js');

/** Connects to `socket` (as `user` when given, in a child process), sends `lines`, and returns what came back and how it ended. */
function probe(socket: string, lines: string[], user?: { uid: number; gid: number }): Promise<{ out: string; error?: string }> {
  const script = `
    const s = require('node:net').connect(${JSON.stringify(socket)});
    let out = '';
    s.on('connect', () => { for (const l of ${JSON.stringify(lines)}) s.write(l + '\\n'); });
    s.on('data', (d) => (out += d));
    s.on('error', (e) => { console.log(JSON.stringify({ out, error: e.code })); process.exit(0); });
    s.on('close', () => { console.log(JSON.stringify({ out })); process.exit(0); });
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], cwd: '/', ...(user ?? {}) });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.on('error', reject);
    child.on('close', () => resolve(JSON.parse(out.trim()) as { out: string; error?: string }));
  });
}

describe('session host access', function () {
  this.timeout(90_000);
  let root: string;
  let env: NodeJS.ProcessEnv;
  let host: HostedRuntime;

  before(async function () {
    if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run node esbuild.mjs first`);
    root = mkdtempSync(path.join(tmpdir(), 'codeact-hostsec-'));
    chmodSync(root, 0o755);
    mkdirSync(path.join(root, 'run'), { mode: 0o700 });
    env = { ...process.env, XDG_RUNTIME_DIR: path.join(root, 'run') };
    host = await attachSessionHost({ workspace: root, local: { sandbox: { kind: 'none' } }, idleMs: 0, entry: ENTRY, env });
  });
  after(async () => {
    const pid = host?.connection.welcome.pid;
    host?.connection.end();
    await host?.dispose();
    if (pid) await waitFor(() => !isAlive(pid), { what: 'the session host to end', timeoutMs: 60_000 });
    rmSync(root, { recursive: true, force: true });
  });

  const socketOf = () => placeOf(hostFolder(env), host.connection.place.name).socket;

  it('refuses a wrong token, and closes the connection', async () => {
    const r = await probe(socketOf(), [JSON.stringify({ type: 'hello', token: 'f'.repeat(64) })]);
    assert.match(r.out, /"type":"refused".*wrong token/);
    assert.equal(r.error, undefined);
  });

  it('closes a connection that sends a bad line, and goes on serving others', async () => {
    const r = await probe(socketOf(), ['{not json']);
    assert.match(r.out, /"type":"refused".*not JSON/);
    const other = await HostConnection.open(host.connection.place);
    assert.equal(other.welcome.pid, host.connection.welcome.pid);
    other.close();
  });

  it('refuses plainly when it cannot check who connects (no /usr/bin/python3): install python3, or turn the host off', async () => {
    const ws = mkdtempSync(path.join(root, 'nopy-'));
    const local = { sandbox: { kind: 'none' as const } };
    const place = placeOf(ensurePrivateFolder(hostFolder(env)), hostName(ws, local));
    writeFileSync(place.lock, String(process.pid)); // a host started by mistake would leave at once
    const server = new SessionHostServer({
      runtime: new LocalRuntime(local),
      token: writeToken(place),
      workspace: ws,
      idleMs: 0,
      peerPython: path.join(root, 'no-python3'),
    });
    await new Promise<void>((r) => server.server.listen(place.socket, r));
    try {
      const e = await attachSessionHost({ workspace: ws, local, idleMs: 0, entry: ENTRY, env, startMs: 10_000 }).then(
        () => assert.fail('attached'),
        (err: Error) => err,
      );
      assert.match(e.message, /refused this client: cannot read the caller's uid: .*no-python3 is missing/);
      assert.match(e.message, /install python3 \(Debian: apt install python3\), or set codeact\.session\.host to "off"/);
    } finally {
      await server.end();
      for (const f of [place.lock, place.token, place.socket]) rmSync(f, { force: true });
    }
  });

  it('keeps its folder private, and refuses a planted symlink or another user’s folder', function () {
    assert.equal(statSync(hostFolder(env)).mode & 0o777, 0o700);
    const planted = path.join(root, 'planted');
    mkdirSync(planted);
    mkdirSync(path.join(root, 'elsewhere'), { mode: 0o700 });
    symlinkSync(path.join(root, 'elsewhere'), path.join(planted, 'codeact'));
    assert.throws(
      () => ensurePrivateFolder(hostFolder({ XDG_RUNTIME_DIR: planted })),
      (e: Error) => e instanceof HostFolderError && /symbolic link/.test(e.message),
    );
    if (process.getuid?.() !== 0) return;
    const foreign = path.join(root, 'foreign');
    mkdirSync(path.join(foreign, 'codeact'), { recursive: true, mode: 0o700 });
    chownSync(path.join(foreign, 'codeact'), TESTER.uid, TESTER.gid);
    assert.throws(
      () => ensurePrivateFolder(hostFolder({ XDG_RUNTIME_DIR: foreign })),
      (e: Error) => e instanceof HostFolderError && /another user/.test(e.message),
    );
  });

  describe('as the unprivileged user', function () {
    before(function () {
      const why = cannotSwitchUser();
      if (why) {
        console.log(`      skipped: ${why}`);
        this.skip();
      }
    });

    it('cannot reach the socket in our private folder', async () => {
      const r = await probe(socketOf(), [JSON.stringify({ type: 'hello', token: 'x' })], TESTER);
      assert.equal(r.error, 'EACCES');
    });

    it('is refused by uid even where the socket is reachable and it knows the token', async () => {
      // A server on a socket anyone may open: only the uid check stands between the other user and the sessions.
      const open = mkdtempSync(path.join(root, 'open-'));
      chmodSync(open, 0o755);
      const socket = path.join(open, 's.sock');
      const server = new SessionHostServer({ runtime: new LocalRuntime({ sandbox: { kind: 'none' } }), token: 'the-token', workspace: open, idleMs: 0 });
      await new Promise<void>((r) => server.server.listen(socket, r));
      chmodSync(socket, 0o777);
      try {
        const r = await probe(socket, [JSON.stringify({ type: 'hello', token: 'the-token' })], TESTER);
        assert.match(r.out, /"type":"refused".*another user/);
        assert.doesNotMatch(r.out, /welcome/);
        const mine = await probe(socket, [JSON.stringify({ type: 'hello', token: 'the-token' })].concat([JSON.stringify({ type: 'end' })]));
        assert.match(mine.out, /"type":"welcome"/);
      } finally {
        await server.end();
      }
    });
  });
});
