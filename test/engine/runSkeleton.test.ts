/**
 * The run skeleton that the local guest and the Jupyter kernel share, with a fake protocol and a clock moved
 * by steps (no real waiting): the output cap, the display caps, the timeout that stops counting while a
 * pause is open, Stop as interrupt then kill after the grace, and the finished item. Proved once here for
 * both runtimes; their own suites prove the protocols.
 */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CodeActEvent, DisplayOutput, ExecutionError } from '../../src/common/events';
import { GuestRun } from '../../src/core/runtime/local/guestRun';
import { RunSkeleton, type RunProtocol } from '../../src/core/runtime/runSkeleton';
import { DEFAULT_LIMITS, type RuntimeLimits } from '../../src/core/runtime/types';
import { manualClock } from '../support/manualClock';

/** A protocol that records what the skeleton asked of it. */
function fakeProtocol(interrupt: RunProtocol['interrupt'] = () => true) {
  const calls: string[] = [];
  let inFlight = 0;
  const protocol: RunProtocol = {
    inFlight: () => inFlight,
    onStop: (e) => calls.push(`onStop:${e.type}`),
    cancelTools: () => calls.push('cancelTools'),
    interrupt: () => {
      calls.push('interrupt');
      return interrupt();
    },
    kill: (grace) => calls.push(`kill:${grace}`),
  };
  return { protocol, calls, setInFlight: (n: number) => (inFlight = n) };
}

function newSkeleton(limits: Partial<RuntimeLimits> = {}, announceUnmatchedUpdates = false) {
  const events: CodeActEvent[] = [];
  const time = manualClock();
  const run = new RunSkeleton('exec_s', { onEvent: (e) => events.push(e) }, { ...DEFAULT_LIMITS, ...limits }, () => 500, { time, announceUnmatchedUpdates });
  return { run, events, time };
}

const html = (name: string) => ({ data: { 'text/html': `<b>${name}</b>`, 'text/plain': name } });

describe('run skeleton (shared by the local guest and the Jupyter kernel)', () => {
  it('keeps stdout up to the byte cap, streams what it kept with one truncation note, and marks the item truncated', () => {
    const { run, events } = newSkeleton({ maxOutputBytes: 10 });
    run.out.text('stdout', 'hello ');
    run.out.bytes('stdout', Buffer.from('world, and more'));
    run.out.text('stdout', 'dropped');
    const deltas = events.flatMap((e) => (e.type === 'codeact.output.delta' ? [e.delta] : []));
    assert.equal(deltas[0], 'hello ');
    assert.match(deltas[1], /^worl\n…\[codeact: stdout truncated after 10 bytes; the rest was discarded\]\n$/);
    assert.equal(deltas.length, 2);
    const item = run.item('print()', { runtime: 'local' });
    assert.equal(item.truncated, true);
    assert.equal(item.status, 'completed');
    assert.equal(item.outputs.length, 1);
  });

  it('refuses displays over the count cap with a note, and closes with one summary', () => {
    const { run, events } = newSkeleton({ maxDisplays: 1 });
    const first = run.out.take(html('a'), false);
    assert.ok(first);
    run.out.place(first, false);
    assert.equal(run.out.take(html('b'), false), null);
    assert.equal(run.out.take(html('c'), false), null);
    const notes = () => events.filter((e) => e.type === 'codeact.output.delta' && e.stream === 'stderr').length;
    const before = notes();
    assert.ok(before >= 1, 'a refused display leaves a note on stderr');
    run.out.close();
    run.out.close();
    assert.equal(notes(), before + 1, 'one closing summary');
    assert.ok(events.some((e) => e.type === 'codeact.output.delta' && e.delta.includes('2 displays in all were not shown')));
    const item = run.item('', { runtime: 'jupyter' });
    assert.deepEqual(
      item.outputs.filter((o) => o.type === 'display').map((o) => String((o as DisplayOutput).data['text/plain'])),
      ['a'],
    );
    assert.equal(events.filter((e) => e.type === 'codeact.output.display').length, 1);
  });

  it('announces an update that replaced nothing as an update only when the runtime asks for it', () => {
    for (const announce of [false, true]) {
      const { run, events } = newSkeleton({}, announce);
      run.out.place({ type: 'display', data: { 'text/plain': 'x' }, display_id: 'd1' }, true);
      run.out.place({ type: 'display', data: { 'text/plain': 'y' }, display_id: 'd1' }, true);
      const flags = events.flatMap((e) => (e.type === 'codeact.output.display' ? [e.update === true] : []));
      assert.deepEqual(flags, [announce, true]);
      assert.equal(run.out.outputs().length, 1, 'the second replaced the first where it stands');
    }
  });

  it('times out by running time only: a paused clock does not count, then Stop runs its sequence', () => {
    const { run, time } = newSkeleton();
    const { protocol, calls, setInFlight } = fakeProtocol();
    run.attach(protocol);
    run.startClock(1000);
    time.advance(600);
    const resume = run.clock.pause();
    time.advance(60_000); // a person deciding an approval
    assert.equal(run.stopping, undefined);
    resume();
    time.advance(399);
    assert.equal(run.stopping, undefined);
    setInFlight(2);
    time.advance(1);
    const stopping = run.stopping as ExecutionError | undefined;
    assert.equal(stopping?.type, 'Timeout');
    assert.match(stopping!.message, /longer than the 1 s timeout and was stopped, with 2 tool call\(s\) still in flight/);
    assert.deepEqual(calls, ['onStop:Timeout', 'cancelTools', 'interrupt']);
  });

  it('kills after the grace when the interrupt does not take, and not when the run ends within it', () => {
    const slow = newSkeleton();
    const a = fakeProtocol();
    slow.run.attach(a.protocol);
    slow.run.stop('cancel');
    slow.run.stop('timeout'); // a second stop changes nothing
    assert.equal(slow.run.stopping?.type, 'Cancelled');
    slow.time.advance(499);
    assert.deepEqual(a.calls, ['onStop:Cancelled', 'cancelTools', 'interrupt']);
    slow.time.advance(1);
    assert.deepEqual(a.calls.slice(3), ['kill:500']);
    assert.equal(slow.run.item('', { runtime: 'local', error: slow.run.stopping }).status, 'incomplete');

    const quick = newSkeleton();
    const b = fakeProtocol();
    quick.run.attach(b.protocol);
    quick.run.startClock(10_000);
    quick.run.stop('cancel');
    quick.time.advance(100);
    quick.run.finish(); // the interrupt took
    quick.time.advance(60_000);
    assert.ok(!b.calls.some((c) => c.startsWith('kill')));
    assert.equal(quick.time.pending, 0, 'the clock and the grace are cleared at the end');
  });

  it('starts the grace only once an asynchronous interrupt is done, and never when there was nothing to interrupt', async () => {
    let answer!: (ok: boolean) => void;
    const s = newSkeleton();
    const p = fakeProtocol(() => new Promise<boolean>((r) => (answer = r)));
    s.run.attach(p.protocol);
    s.run.stop('cancel');
    s.time.advance(10_000);
    assert.ok(!p.calls.some((c) => c.startsWith('kill')), 'no grace while the interrupt is on its way');
    answer(true);
    await Promise.resolve();
    s.time.advance(500);
    assert.deepEqual(p.calls.slice(-1), ['kill:500']);

    const none = newSkeleton();
    const q = fakeProtocol(() => false);
    none.run.attach(q.protocol);
    none.run.stop('cancel');
    none.time.advance(10_000);
    assert.deepEqual(q.calls, ['onStop:Cancelled', 'cancelTools', 'interrupt']);
  });

  it('does not stop a run that already has its outcome, or one that is over', async () => {
    const s = newSkeleton();
    const p = fakeProtocol();
    s.run.attach({ ...p.protocol, settled: () => true });
    s.run.stop('cancel');
    assert.equal(s.run.stopping, undefined);
    assert.deepEqual(p.calls, []);

    const over = newSkeleton();
    over.run.finish();
    await over.run.done;
    over.run.stop('cancel');
    assert.equal(over.run.stopping, undefined);
  });

  it('is the skeleton of both runtimes', () => {
    const guest = new GuestRun(1, { code: '' }, {}, DEFAULT_LIMITS, 'exec_g', 1000);
    assert.ok(guest instanceof RunSkeleton);
    // The kernel's run is not imported here (it would need Jupyter); it builds its run on the same class.
    const kernel = readFileSync(path.join(__dirname, '../../src/core/runtime/jupyter/jupyterRun.ts'), 'utf8');
    assert.match(kernel, /new RunSkeleton\(/);
  });
});
