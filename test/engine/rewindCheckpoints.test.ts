/**
 * "Rewind to here" on real parts (issue 35): bubblewrap, a real session (cold and forked from the warm zygote,
 * which makes the guest PID 1 of its own namespace), pandas, real files, a subprocess of the code.
 *
 * Turn 1 loads `df` and writes out.csv; turn 2 drops a column, overwrites out.csv, deletes data.csv and runs a
 * subprocess that writes side.txt. Rewinding to turn 2 gives back df.shape, the exact bytes of out.csv and
 * data.csv, and no side.txt; an untouched 50 MB file keeps its inode and mtime; redo gives turn 2's state back.
 * After a rewind the session is whole: Stop interrupts the process that serves it now, and when the session
 * ends nothing of it is left. Budgets drop the oldest checkpoints and say so; a thread the code left running
 * refuses a checkpoint and says why. As root and as the unprivileged user.
 */
import * as assert from 'node:assert/strict';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { LocalRuntime, type LocalRuntimeOptions } from '../../src/core/runtime/local/localRuntime';
import { descendantsOf } from '../../src/core/util/processTree';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { cannotSwitchUser, runScriptInChild, TESTER } from '../security/support/asUser';
import { DEBIAN_PYTHON } from '../support/guestHarness';
import { DATA, TURN_1, TURN_2 } from '../support/rewindScenario';

const OUT_1 = DATA;
const OUT_2 = 'a,c\n1,3\n4,6\n';

function makeWorkspace(root = tmpdir()): string {
  const ws = mkdtempSync(path.join(root, 'codeact-rewind-'));
  writeFileSync(path.join(ws, 'data.csv'), DATA);
  return ws;
}

const read = (ws: string, f: string) => (existsSync(path.join(ws, f)) ? readFileSync(path.join(ws, f), 'utf8') : null);

/** Processes of this test process still running the keeper (a session's first process after its first rewind). */
function keepers(): number[] {
  return descendantsOf(process.pid).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes('codeact_keeper.py');
    } catch {
      return false;
    }
  });
}

/** Polls `check` until it holds (counted tries, generous: the machine may be busy). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(what);
}

/** The scenario, as the unprivileged user runs it in a child (the same steps as the root test). */
const SCENARIO = String.raw`
import { LocalRuntime } from '${path.resolve(__dirname, '../../src/core/runtime/local/localRuntime')}';
import { existsSync, readFileSync } from 'node:fs';
(async () => {
  const { ws, turns } = JSON.parse(process.argv[2]);
  const rt = new LocalRuntime({ python: '/usr/bin/python3', sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws } });
  const run = (code) => rt.execute({ code: 'WS = ' + JSON.stringify(ws) + '\n' + code, sessionId: 's', timeoutMs: 60_000 });
  const files = () => Object.fromEntries(['data.csv', 'out.csv', 'side.txt'].map((f) => [f, existsSync(ws + '/' + f) ? readFileSync(ws + '/' + f, 'utf8') : null]));
  await run(turns[0]);
  const two = await run(turns[1]);
  const rewound = await rt.rewind(two.id);
  const back = { shape: (await run('return list(df.shape)')).value, files: files() };
  await rt.rewind(rewound.redo);
  const redone = { shape: (await run('return list(df.shape)')).value, files: files() };
  await rt.dispose();
  console.log(JSON.stringify({ python: rewound.python, back, redone }));
})();
`;

for (const zygote of [false, true]) {
  describe(`rewind: Python state and workspace files (${zygote ? 'a guest forked from the warm zygote' : 'a cold guest'})`, function () {
    this.timeout(240_000);
    const dirs: string[] = [];
    const runtimes: LocalRuntime[] = [];

    before(async function () {
      const reason = await probeBubblewrap();
      if (reason) {
        console.log(`      skipped: ${reason}`);
        this.skip();
      }
    });
    after(async () => {
      for (const rt of runtimes) await rt.dispose();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    const start = (ws: string, more: Partial<LocalRuntimeOptions> = {}) => {
      const rt = new LocalRuntime({ python: DEBIAN_PYTHON, zygote, sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws }, ...more });
      runtimes.push(rt);
      const run = (code: string, signal?: AbortSignal, onEvent?: (e: CodeActEvent) => void) =>
        rt.execute({ code: `WS = ${JSON.stringify(ws)}\n${code}`, sessionId: 's', timeoutMs: 120_000 }, { signal, onEvent });
      return { rt, run };
    };

    it('rewinding to turn 2 gives back df, out.csv, data.csv and no side.txt; redo gives turn 2 back; a 50 MB file is untouched', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const big = path.join(ws, 'big.bin');
      writeFileSync(big, Buffer.alloc(50 * 1024 * 1024, 7));
      const bigBefore = statSync(big, { bigint: true });
      const { rt, run } = start(ws);

      const one = await run(TURN_1);
      assert.deepEqual(one.value, [2, 3], JSON.stringify(one.error));
      const two = await run(TURN_2);
      assert.deepEqual(two.value, [2, 2], JSON.stringify(two.error));
      assert.deepEqual([read(ws, 'data.csv'), read(ws, 'out.csv'), read(ws, 'side.txt')], [null, OUT_2, 'from a subprocess']);

      const rewound = await rt.rewind(two.id);
      assert.deepEqual(rewound.python, { restored: true });
      assert.deepEqual(rewound.files, { written: ['data.csv', 'out.csv'], removed: ['side.txt'], failed: [] });
      assert.ok(rewound.redo, 'a redo point');
      assert.deepEqual((await run('return list(df.shape)')).value, [2, 3], 'df as turn 1 left it');
      assert.deepEqual([read(ws, 'data.csv'), read(ws, 'out.csv'), read(ws, 'side.txt')], [DATA, OUT_1, null]);
      const bigAfter = statSync(big, { bigint: true });
      assert.equal(bigAfter.ino, bigBefore.ino);
      assert.equal(bigAfter.mtimeNs, bigBefore.mtimeNs);

      // Redo: turn 2's state (the Python state and the files as they were just before the rewind).
      const redone = await rt.rewind(rewound.redo!);
      assert.deepEqual(redone.python, { restored: true });
      assert.deepEqual((await run('return list(df.shape)')).value, [2, 2]);
      assert.deepEqual([read(ws, 'data.csv'), read(ws, 'out.csv'), read(ws, 'side.txt')], [null, OUT_2, 'from a subprocess']);

      // The same point again (its checkpoint was used up by the first rewind and taken anew).
      const again = await rt.rewind(two.id);
      assert.deepEqual(again.python, { restored: true });
      assert.deepEqual((await run('return list(df.shape)')).value, [2, 3]);
      assert.equal(statSync(big, { bigint: true }).ino, bigBefore.ino);
      await assert.rejects(rt.rewind('exec_unknown'), /not part of a session/);
    });

    it('after a rewind, Stop interrupts the code and keeps the session; when the session ends nothing of it is left', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const { rt, run } = start(ws, { idleMs: 0 });
      await run('x = 1\nreturn x');
      const two = await run('x = 2\nreturn x');
      const earlier = new Set(keepers());
      assert.deepEqual((await rt.rewind(two.id)).python, { restored: true });
      // The first process hands over, then execs the keeper: on a busy machine the exec may come a little later.
      const fresh = () => keepers().filter((p) => !earlier.has(p));
      await eventually(() => fresh().length > 0, 'the first process became a keeper');
      const mine = fresh();
      assert.equal(mine.length, 1, 'one keeper, the first process');

      const stop = new AbortController();
      // Stop once the code is surely running: its output has come.
      const onEvent = (e: CodeActEvent) => e.type === 'codeact.output.delta' && e.delta.includes('sleeping') && stop.abort();
      const slow = run('import time\nprint("sleeping", flush=True)\ntime.sleep(120)', stop.signal, onEvent);
      const stopped = await slow;
      assert.equal(stopped.session?.state_lost, undefined, `the interrupt reached the code: ${JSON.stringify(stopped.error)}`);
      const after = await run('return x');
      assert.deepEqual(after.value, 1, `the session lives on, as rewound: ${JSON.stringify([stopped.error, after.error, after.session])}`);

      await rt.dispose();
      runtimes.splice(runtimes.indexOf(rt), 1);
      await eventually(() => mine.every((p) => !existsSync(`/proc/${p}`)), 'the keeper ended with its session');
    });

    it('keeps at most maxCheckpoints, and says which runs can no longer be rewound in Python', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const { rt, run } = start(ws, { checkpoints: { max: 2 } });
      const items = [];
      for (let i = 1; i <= 4; i++) items.push(await run(`n = ${i}\nreturn n`));
      // The variables view shows what they hold against the budgets.
      const held = (await rt.sessions.variables('s'))?.checkpoints;
      assert.deepEqual({ ...held, bytes: 0 }, { count: 2, max: 2, budgetBytes: 1024 << 20, bytes: 0 });
      assert.ok(held!.bytes >= 0 && held!.bytes < 1024 << 20);
      const old = await rt.rewind(items[0].id);
      assert.equal(old.python.restored, false);
      assert.match((old.python as { why: string }).why, /dropped to keep 2 checkpoints \(codeact\.rewind\.maxCheckpoints\)/);
      const check = await run('n = n * 10\nreturn n');
      assert.deepEqual(check.value, 40, 'nothing was rewound in Python');
      // Two are kept: the states before the last run and after it. The one before run 4 gave way when the one after
      // the check was taken (a rewind waits for it, so this holds however fast the guest forks).
      assert.equal((await rt.rewind(items[3].id)).python.restored, false);
      assert.deepEqual((await rt.rewind(check.id)).python, { restored: true });
      assert.deepEqual((await run('return n')).value, 4);
    });

    it('drops the oldest checkpoints even when a process the code forked holds their sockets; the runs go on', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const { rt, run } = start(ws, { checkpoints: { max: 2 } });
      // The forked child keeps copies of every descriptor the session had then (the checkpoints' sockets too).
      const forked = await run('import os, time\nchild = os.fork()\nif child == 0:\n    time.sleep(600)\n    os._exit(0)\nreturn child > 0');
      assert.equal(forked.value, true, JSON.stringify(forked.error));
      const items = [];
      for (let i = 1; i <= 4; i++) {
        const item = await run(`n = ${i}\nreturn n`);
        assert.equal(item.value, i, `run ${i} after the drops: ${JSON.stringify(item.error)}`);
        items.push(item);
      }
      assert.deepEqual((await rt.rewind(items[3].id)).python, { restored: true });
      assert.deepEqual((await run('return n')).value, 3);
      await run('os.kill(child, 9)');
    });

    it('a checkpoint frame the code forges on the channel ends the session as a protocol violation, saying so', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const { run } = start(ws);
      await run('x = 1');
      const forged = await run(
        'import os\nos.write(3, b\'{"t":"checkpointed","id":"ckp-999","ok":true,"ms":1,"held":[["ckp-999",1]]}\\n\')\nimport time\ntime.sleep(5)',
      );
      assert.equal(forged.status, 'failed');
      assert.match(forged.error?.message ?? '', /an unexpected checkpointed frame/);
    });

    it('refuses a checkpoint while a thread the code started runs, and says why', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const { rt, run } = start(ws);
      await run('import threading\nstop = threading.Event()\nt = threading.Thread(target=stop.wait, name="worker", daemon=True)\nt.start()');
      const two = await run('y = 2');
      const r = await rt.rewind(two.id);
      assert.equal(r.python.restored, false);
      assert.match((r.python as { why: string }).why, /left 1 thread\(s\) running \(worker\)/);
      await run('stop.set()\nt.join()');
      const four = await run('y = 4');
      await run('y = 5');
      assert.deepEqual((await rt.rewind(four.id)).python, { restored: true }, 'with the thread gone, checkpoints are taken again');
      assert.deepEqual((await run('return y')).value, 2);
    });
  });
}

describe('rewind as the unprivileged user', function () {
  this.timeout(240_000);
  it('gives back df, the files, and redo, as for root', async function () {
    const reason = (await probeBubblewrap()) ?? cannotSwitchUser();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      return this.skip();
    }
    const parent = mkdtempSync(path.join(tmpdir(), 'codeact-rewind-tester-'));
    try {
      const ws = makeWorkspace(parent);
      for (const p of [parent, ws, path.join(ws, 'data.csv')]) chownSync(p, TESTER.uid, TESTER.gid);
      const r = await runScriptInChild<{
        python: unknown;
        back: { shape: unknown; files: Record<string, string | null> };
        redone: { shape: unknown; files: Record<string, string | null> };
      }>(SCENARIO, { ws, turns: [TURN_1, TURN_2] }, TESTER);
      assert.deepEqual(r.python, { restored: true });
      assert.deepEqual(r.back, { shape: [2, 3], files: { 'data.csv': DATA, 'out.csv': OUT_1, 'side.txt': null } });
      assert.deepEqual(r.redone, { shape: [2, 2], files: { 'data.csv': null, 'out.csv': OUT_2, 'side.txt': 'from a subprocess' } });
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
