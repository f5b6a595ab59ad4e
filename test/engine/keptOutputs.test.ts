/**
 * A session keeps each run's whole output for its later runs:
 * output_of(n) and last_output() in the real local guest (bubblewrap), bounded per run and per session
 * with a note, gone with a restart, absent from the variables view; as root and as an unprivileged user.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { KEPT_RUN_CHARS, KEPT_TOTAL_CHARS, keptOutput } from '../../src/core/runtime/keptOutput';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { executeCodeSpec, executeToolCodeSpec } from '../../src/core/tools/modelTools';
import { TESTER, cannotSwitchUser, runScriptInChild } from '../security/support/asUser';
import { FOLLOW_UP_CODE, LONG_FAILING_CODE, expectedFollowUp } from '../support/longOutput';

const REPO = path.resolve(__dirname, '..', '..');

/** Two runs of one session in a child process (as `user` when given): the long failing one, then the follow-up. */
const CHILD = String.raw`
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { codes } = JSON.parse(process.argv[2]);
  const rt = new LocalRuntime({ sandbox: { kind: 'auto' } });
  const items = [];
  for (const [i, code] of codes.entries()) items.push(await rt.execute({ code, sessionId: 'child', execution: i + 1, timeoutMs: 120_000 }));
  await rt.dispose();
  console.log(JSON.stringify(items.map((it) => ({ status: it.status, value: it.value, error: it.error, sandbox: it.sandbox?.kind }))));
})();
`;

function runInChild(codes: string[], user?: { uid: number; gid: number }): Promise<{ status: string; value: unknown; error: unknown; sandbox?: string }[]> {
  return runScriptInChild(CHILD, { codes }, user);
}

describe('kept outputs: output_of(n) and last_output() in a local session', function () {
  this.timeout(180_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());

  /** The writes the host makes to a session's guest, from now on. */
  const watchWrites = (rt: LocalRuntime, sessionId: string): string[] => {
    const entries = (rt.sessions as unknown as { entries: Map<string, { session: { guest: { proto: { write(chunk: unknown): boolean } } } }> }).entries;
    const proto = entries.get(sessionId)!.session.guest.proto;
    const writes: string[] = [];
    const write = proto.write.bind(proto);
    proto.write = (chunk: unknown) => (writes.push(String(chunk)), write(chunk));
    return writes;
  };
  const kinds = (write: string) =>
    write
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { t: string; n?: number })
      .map((f) => [f.t, f.n]);

  it("without checkpoints, wakes the guest once per run: nothing is written to it between runs; the last run's output goes in the next run's write", async () => {
    const bare = new LocalRuntime({ sandbox: { kind: 'auto' }, checkpoints: { max: 0 } });
    try {
      const sessionId = 'kept-one-write';
      await bare.execute({ code: 'print("first")', sessionId, execution: 1 });
      const writes = watchWrites(bare, sessionId);
      for (let n = 2; n <= 4; n++) {
        const before = writes.length;
        const item = await bare.execute({ code: `print("run ${n}")\nreturn output_of(${n - 1})`, sessionId, execution: n });
        assert.equal(item.value, `run ${n - 1}\n`.replace('run 1', 'first'));
        // One write went out for this run: the keep frame of the run before, then the run frame, and nothing after the result.
        assert.equal(writes.length - before, 1, writes.slice(before).join('|'));
        assert.deepEqual(kinds(writes[writes.length - 1]), [
          ['keep', n - 1],
          ['run', undefined],
        ]);
      }
    } finally {
      await bare.dispose();
    }
  });

  it("with checkpoints (the default), one write after each result (the run's kept output, then its checkpoint) and the next run frame alone", async () => {
    const sessionId = 'kept-checkpoint-write';
    await runtime.execute({ code: 'print("first")', sessionId, execution: 1 });
    const writes = watchWrites(runtime, sessionId);
    for (let n = 2; n <= 4; n++) {
      const before = writes.length;
      const item = await runtime.execute({ code: `print("run ${n}")\nreturn output_of(${n - 1})`, sessionId, execution: n });
      assert.equal(item.value, `run ${n - 1}\n`.replace('run 1', 'first'), 'the checkpoint holds the kept output of the run before it');
      // The run frame, then (after its result) the keep frame and the checkpoint in one write.
      assert.deepEqual(writes.slice(before).map(kinds), [
        [['run', undefined]],
        [
          ['keep', n],
          ['checkpoint', undefined],
        ],
      ]);
    }
  });

  it("a later run reads an earlier run's whole stdout and stderr; the names stay out of the variables view", async () => {
    const sessionId = 'kept-basic';
    const first = await runtime.execute({ code: 'import sys\nprint("out " * 10000)\nprint("err " * 5000, file=sys.stderr)\nx = 1', sessionId, execution: 5 });
    assert.equal(first.status, 'completed');
    const read = await runtime.execute({
      code: 'return [len(output_of(5)), len(output_of(5, "stderr")), output_of(5) == last_output(), last_output("stderr")[-5:]]',
      sessionId,
      execution: 6,
    });
    assert.deepEqual(read.value, [40001, 20001, true, 'err \n']);
    const vars = await runtime.sessions.variables(sessionId);
    assert.deepEqual(vars?.variables.map((v) => v.name).sort(), ['sys', 'x']);
    const bad = await runtime.execute({ code: 'output_of(5, "both")', sessionId, execution: 7 });
    assert.equal(bad.error?.type, 'ValueError');
    assert.match(bad.error!.message, /stream must be "stdout" or "stderr", not 'both'/);
    const missing = await runtime.execute({ code: 'output_of(42)', sessionId, execution: 8 });
    assert.equal(missing.error?.type, 'LookupError');
    assert.match(missing.error!.message, /^No output of execution 42 in this session; it keeps executions 5, 6, 7\./);
    assert.match(
      missing.error!.traceback ?? '',
      /^Traceback \(most recent call last\):\n {2}File "<cell-\d+>", line 1, in <module>\n {4}output_of\(42\)\nLookupError/,
    );
  });

  it('one numbering per session, whichever door runs: a run without a number (a code turn) takes the next, a chat whose count lags gets the one after; each item says the number its output is kept under', async () => {
    const sessionId = 'kept-doors';
    const chat1 = await runtime.execute({ code: 'print("chat one")', sessionId, execution: 1 });
    const turn = await runtime.execute({ code: 'print("code turn")', sessionId }); // Run with Tools: no number of its own
    const chat2 = await runtime.execute({ code: 'print("chat two")', sessionId, execution: 2 }); // the chat counted only its own
    assert.deepEqual(
      [chat1, turn, chat2].map((i) => i.session?.execution),
      [1, 2, 3],
    );
    const read = await runtime.execute({ code: 'return [output_of(1), output_of(2), output_of(3)]', sessionId, execution: 3 });
    assert.deepEqual(read.value, ['chat one\n', 'code turn\n', 'chat two\n']);
    assert.equal(read.session?.execution, 4);
  });

  it("a session keeps at most KEPT_TOTAL_CHARS: the oldest runs' output goes first, and asking for it says so", async () => {
    const sessionId = 'kept-total';
    // Each run prints 1 MiB (the output cap of a run); nine of them are over the 8 MiB a session keeps.
    const mib = 1024 * 1024;
    const runs = Math.ceil(KEPT_TOTAL_CHARS / mib) + 1;
    for (let n = 1; n <= runs; n++) {
      const it = await runtime.execute({ code: `import sys\nsys.stdout.write(str(${n}) * ${mib - 100})`, sessionId, execution: n });
      assert.equal(it.status, 'completed', JSON.stringify(it.error));
    }
    const probe = await runtime.execute({
      code: [
        'try:',
        '    output_of(1)',
        'except LookupError as e:',
        '    gone = str(e)',
        `return [gone, len(output_of(${runs})), output_of(${runs})[:1], output_of(2)[:1]]`,
      ].join('\n'),
      sessionId,
      execution: runs + 1,
    });
    assert.equal(probe.status, 'completed', JSON.stringify(probe.error));
    const [gone, length, newest, second] = probe.value as [string, number, string, string];
    assert.match(gone, /^The output of execution 1 is no longer kept: the session keeps the most recent output only \(executions 2, 3, /);
    assert.equal(length, mib - 100);
    assert.equal(newest, String(runs));
    assert.equal(second, '2');
  });

  it("one run's stream is kept up to KEPT_RUN_CHARS, its beginning and end, with a note", () => {
    const big = 'a'.repeat(KEPT_RUN_CHARS) + 'THE END\n';
    const kept = keptOutput(
      [
        { type: 'logs', logs: big },
        { type: 'logs', logs: 'e\n', stream: 'stderr' },
      ],
      3,
    );
    assert.equal(kept.n, 3);
    assert.equal(kept.stderr, 'e\n');
    assert.equal(kept.max_total, KEPT_TOTAL_CHARS);
    assert.ok(kept.stdout.length <= KEPT_RUN_CHARS);
    assert.match(kept.stdout, /…\[codeact: [\d,]+ characters \(0 lines\) of stdout not kept: a session keeps 2 MiB of a run's stdout\]…\n/);
    assert.ok(kept.stdout.startsWith('aaaa') && kept.stdout.endsWith('THE END\n'));
  });

  it('a restarted session starts empty, and output_of says why', async () => {
    const sessionId = 'kept-restart';
    await runtime.execute({ code: 'print("before")', sessionId, execution: 1 });
    await runtime.sessions.restart(sessionId);
    const after = await runtime.execute({ code: 'output_of(1)', sessionId, execution: 2 });
    assert.equal(after.error?.type, 'LookupError');
    assert.match(after.error!.message, /this session has no earlier run's output \(it is new, or it was restarted since\)/);
  });

  it('without sessions (codeact.session.policy "run") nothing is kept, and the description says to print less', async () => {
    const oneShot = new LocalRuntime({ sandbox: { kind: 'auto' }, session: 'run' });
    try {
      assert.equal(oneShot.sessions.keepsOutputs, false);
      assert.equal(runtime.sessions.keepsOutputs, true);
      await oneShot.execute({ code: 'print("once")', sessionId: 's', execution: 1 });
      const next = await oneShot.execute({ code: 'last_output()', sessionId: 's', execution: 2 });
      assert.equal(next.error?.type, 'LookupError');
    } finally {
      await oneShot.dispose();
    }
    const kept = executeToolCodeSpec([], { persistent: true, keepsOutputs: true, outputChars: 8000 }).description;
    assert.match(kept, /Results show at most 8,000 characters of output/);
    assert.match(
      kept,
      /A later run reads a run's whole output with `output_of\(n\)` \(n: its result's "execution"; `output_of\(n, "stderr"\)`, `last_output\(\)`\)\./,
    );
    const once = executeCodeSpec({ persistent: false }).description;
    assert.match(once, /at most 20,000 characters of output[\s\S]*exactly what was left out: print less, or summarise in code\./);
    assert.doesNotMatch(once, /output_of/);
  });

  const why = cannotSwitchUser();
  for (const who of ['root', TESTER.name]) {
    (who !== 'root' && why ? it.skip : it)(`as ${who}: the follow-up run reads the whole 60,000 characters of the failed run`, async () => {
      const items = await runInChild([LONG_FAILING_CODE, FOLLOW_UP_CODE], who === 'root' ? undefined : TESTER);
      assert.equal(items[0].status, 'failed');
      assert.equal(items[1].status, 'completed', JSON.stringify(items[1].error));
      assert.deepEqual(items[1].value, expectedFollowUp());
      assert.deepEqual(
        items.map((i) => i.sandbox),
        ['bubblewrap', 'bubblewrap'],
      );
    });
  }
});
