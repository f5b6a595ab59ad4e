/**
 * Every process dies with its owner. A command tool's background children and an
 * MCP stdio server's daemons (setsid and double fork included) are killed when the call ends or the
 * server is closed. Real processes: python3 forks them, /proc tells whether they still run.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { isAlive, startTimeOf } from '../../src/core/util/processTree';
import { runCommandTool } from '../../src/core/tools/sources/command';
import { McpClientPool, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { sleep } from '../support/wait';

const hostile = path.resolve(__dirname, '../fixtures/mcp/hostile.mjs');

/** Python that starts a background child, a setsid child and a setsid double-forked daemon, writes their pids, prints {}. */
const ESCAPER = `
import json, os, subprocess, sys, time
d = sys.argv[1]
def note(name, pid):
    with open(os.path.join(d, name), 'w') as f:
        f.write(str(pid))
note('background', subprocess.Popen(['sleep', '600']).pid)
note('session', subprocess.Popen(['sleep', '600'], start_new_session=True).pid)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        note('daemon', os.getpid())
        time.sleep(600)
    os._exit(0)
os.wait()
while not os.path.exists(os.path.join(d, 'daemon')):
    time.sleep(0.01)
if len(sys.argv) > 2:
    time.sleep(600)
print(json.dumps({"ok": True}))
`;

async function pidsIn(dir: string, names: string[]): Promise<number[]> {
  const deadline = Date.now() + 10_000;
  while (!names.every((n) => existsSync(path.join(dir, n)) && readFileSync(path.join(dir, n), 'utf8').trim())) {
    if (Date.now() > deadline) throw new Error(`the fixture did not write ${names.join(', ')}`);
    await sleep(20);
  }
  const pids = names.map((n) => Number(readFileSync(path.join(dir, n), 'utf8')));
  for (const pid of pids) startOf.set(pid, startTimeOf(pid));
  return pids;
}

/** Each pid's start time when the fixture's file was read: a pid that ended and was reused is someone else's. */
const startOf = new Map<number, string | undefined>();

describe('security: tool processes die with their owner', function () {
  this.timeout(60_000);
  if (process.platform !== 'linux') {
    it('skipped: finding escaped processes needs /proc (Linux)', function () {
      this.skip();
    });
    return;
  }
  let dir: string;
  let started: number[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-procs-'));
    started = [];
  });
  afterEach(() => {
    for (const pid of started) {
      // Only what still is the process the fixture started (other suites may run beside this one).
      const start = startOf.get(pid);
      if (start === undefined || startTimeOf(pid) !== start) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    startOf.clear();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a command tool's background child, setsid child and double-forked daemon are killed when the call returns", async () => {
    const result = await runCommandTool('escaper', { argv: ['python3', '-c', ESCAPER, dir] }, {}, { workspace: dir, signal: new AbortController().signal });
    assert.deepEqual(result, { ok: true });
    started = await pidsIn(dir, ['background', 'session', 'daemon']);
    const alive = started.filter(isAlive);
    assert.deepEqual(alive, [], `still running after the call returned: ${alive.join(', ')}`);
  });

  it('the same when the call times out', async () => {
    // The timeout may come before the fixture has started all three on a busy machine (then nothing escaped, and
    // nothing is proved): the call is made again with a longer timeout, a bounded number of times.
    const names = ['background', 'session', 'daemon'];
    for (const timeoutMs of [1500, 6000, 24000]) {
      for (const n of names) rmSync(path.join(dir, n), { force: true });
      await assert.rejects(
        runCommandTool('escaper', { argv: ['python3', '-c', ESCAPER, dir, 'hang'], timeoutMs }, {}, { workspace: dir, signal: new AbortController().signal }),
        /Tool "escaper" timed out after [\d.]+ s/,
      );
      // The call's end came after the kill: a pid not written by then never will be.
      if (!names.every((n) => existsSync(path.join(dir, n)) && readFileSync(path.join(dir, n), 'utf8').trim())) continue;
      started = await pidsIn(dir, names);
      assert.deepEqual(started.filter(isAlive), []);
      return;
    }
    assert.fail('the fixture never started its three processes before even a 24 s timeout');
  });

  it('the same when the call is stopped', async () => {
    const stop = new AbortController();
    const call = runCommandTool('escaper', { argv: ['python3', '-c', ESCAPER, dir, 'hang'] }, {}, { workspace: dir, signal: stop.signal });
    started = await pidsIn(dir, ['background', 'session', 'daemon']);
    stop.abort();
    await assert.rejects(call, /Tool "escaper" was stopped/);
    assert.deepEqual(started.filter(isAlive), []);
  });

  it("an MCP stdio server's daemons (setsid, double fork) and background children are killed when the server is closed", async () => {
    const pool = new McpClientPool();
    const spec: McpServerSpec = {
      kind: 'stdio',
      argv: [
        process.execPath,
        hostile,
        `--tag=codeact-procs-${process.pid}`,
        `--daemon=${path.join(dir, 'daemon')}`,
        `--background=${path.join(dir, 'background')}`,
      ],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '' },
    };
    try {
      assert.equal((await pool.listTools(spec)).length, 1);
      started = await pidsIn(dir, ['daemon', 'background']);
      assert.deepEqual(started.filter(isAlive), started, 'the fixture did not start its processes');
    } finally {
      await pool.dispose();
    }
    assert.deepEqual(started.filter(isAlive), [], 'a process of the MCP server outlived dispose()');
  });
});
