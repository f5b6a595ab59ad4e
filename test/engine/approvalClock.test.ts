/**
 * An approval waits for the person: the time spent waiting for an approval decision
 * counts neither against the run's timeout nor in the tool call's duration, in the local runtime and in a
 * Jupyter kernel. The clock only pauses: once the person has answered, the code's own time counts again.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, ToolCallCompleted } from '../../src/common/events';
import { ToolGateway, type Approver } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import type { Runtime } from '../../src/core/runtime/types';
import { pausedTime, RunClock } from '../../src/core/util/timeout';
import { findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { manualClock } from '../support/manualClock';
import { sleep } from '../support/wait';
import { managedTool } from '../support/managedTool';
import { REFUSALS } from '../../src/core/gateway/gateway';

function noteTool(): ManagedTool {
  return managedTool({
    name: 'send_note',
    description: 'Sends a note.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    approval: 'ask',
    invoke: async (args) => {
      await sleep(50);
      return { sent: args.text };
    },
  });
}

/** An approver that takes `ms` to say yes, as a person reading the card would. */
function slowYes(ms: number): Approver {
  return async () => {
    await sleep(ms);
    return 'allowed';
  };
}

describe('RunClock: a timeout that stops counting while paused', () => {
  it('fires after the running time, not the wall time; pauses overlap; resuming twice is harmless; stop disarms', () => {
    const time = manualClock();
    const fired: number[] = [];
    const clock = new RunClock(time);
    clock.start(150, () => fired.push(time.now()));
    time.advance(50);
    const a = clock.pause();
    const b = clock.pause();
    time.advance(200);
    a();
    a();
    time.advance(100);
    assert.deepEqual(fired, [], 'still paused by the second pause');
    b();
    time.advance(60);
    assert.deepEqual(fired, [], '50 + 60 ms of running time: not yet');
    time.advance(120);
    assert.deepEqual(fired, [450], 'fired at 150 ms of running time: 450 ms of wall time, once');
    time.advance(1000);
    assert.equal(fired.length, 1, 'at most once');

    const paused = new RunClock(time);
    const resume = paused.pause();
    let early = false;
    paused.start(30, () => (early = true));
    time.advance(80);
    assert.equal(early, false, 'paused before it started: it waits for the resume');
    resume();
    paused.stop();
    time.advance(60);
    assert.equal(early, false, 'stopped');
  });

  it('runs on the real timers by default', async () => {
    const clock = new RunClock();
    await new Promise<void>((resolve) => clock.start(5, resolve));
  });
});

describe('pausedTime: what a step spent waiting', () => {
  it("counts the paused time once, and pauses the run's clock with it", async () => {
    let runPaused = 0;
    const { pause, pausedMs } = pausedTime(() => {
      runPaused++;
      return () => runPaused--;
    });
    const resume = pause();
    assert.equal(runPaused, 1);
    await sleep(120);
    resume();
    resume();
    assert.equal(runPaused, 0);
    assert.ok(pausedMs() >= 100, `${pausedMs()} ms: at least the 120 ms paused (timers never fire early by more than a millisecond)`);
  });
});

describe('an unanswered approval is not a deny', () => {
  it('the call fails saying nobody answered, and the record says no_answer, not denied', async () => {
    const gateway = new ToolGateway([noteTool()], { approver: async () => ({ unanswered: 'no answer: the run was stopped' }) });
    await assert.rejects(gateway.call({ itemId: 'exec_1', callId: 'exec_1:1', name: 'send_note', arguments: { text: 'hi' } }, new AbortController().signal), {
      message: REFUSALS.didNotRun('send_note', 'no answer: the run was stopped'),
    });
    assert.equal(gateway.records[0].code, 'no_answer');
    const denied = new ToolGateway([noteTool()], { approver: async () => 'denied' });
    await assert.rejects(denied.call({ itemId: 'exec_1', callId: 'exec_1:1', name: 'send_note', arguments: { text: 'hi' } }, new AbortController().signal), {
      message: REFUSALS.userDenied('send_note'),
    });
    assert.equal(denied.records[0].code, 'denied');
  });
});

function approvalSuite(name: string, make: () => Promise<{ runtime: Runtime; sessionId?: string; cleanup?: () => Promise<void> }>) {
  describe(`an approval waits for the person: ${name}`, function () {
    this.timeout(120_000);
    let runtime: Runtime;
    let sessionId: string | undefined;
    let cleanup: (() => Promise<void>) | undefined;
    before(async function () {
      this.timeout(120_000);
      ({ runtime, sessionId, cleanup } = await make());
    });
    after(async () => {
      await runtime?.dispose();
      await cleanup?.();
    });

    it("an approval that takes longer than the run's timeout: the run completes, and the call's duration leaves the wait out", async () => {
      const gateway = new ToolGateway([noteTool()], { approver: slowYes(2500) });
      const events: CodeActEvent[] = [];
      const t0 = performance.now();
      const item = await runtime.execute(
        { code: 'r = await call_tool("send_note", text="hi")\nreturn r', timeoutMs: 1500, sessionId },
        { onToolCall: gateway.handler, onEvent: (e) => events.push(e) },
      );
      const wall = performance.now() - t0;
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, { sent: 'hi' });
      assert.ok(wall > 2500, `the run waited for the approval (${Math.round(wall)} ms)`);
      const done = events.find((e): e is ToolCallCompleted => e.type === 'codeact.tool_call.completed')!;
      // Bounded by the wait itself, not by the machine's speed: with the 2.5 s wait in it, the figure would be over 2.5 s.
      assert.ok(done.duration_ms >= 40 && done.duration_ms < 2500, `the call took ${done.duration_ms} ms of its own, not the 2.5 s wait`);
      assert.ok(gateway.records[0].duration_ms < 2500, `the gateway's record leaves the wait out too (${gateway.records[0].duration_ms} ms)`);
    });

    it("the clock only pauses: after the answer the code's own time counts again, and the timeout still stops it", async () => {
      const gateway = new ToolGateway([noteTool()], { approver: slowYes(1200) });
      const item = await runtime.execute(
        {
          code: 'import asyncio\nawait asyncio.sleep(0.6)\nawait call_tool("send_note", text="hi")\nawait asyncio.sleep(0.8)\nreturn 1',
          timeoutMs: 1000,
          sessionId,
        },
        { onToolCall: gateway.handler },
      );
      assert.equal(item.status, 'failed', 'ran 0.6 + 0.8 s of its own, past the 1 s timeout');
      assert.equal(item.error?.type, 'Timeout');
    });
  });
}

approvalSuite('local runtime', async () => ({ runtime: new LocalRuntime({ sandbox: { kind: 'auto' } }) }));

const jupyter = !!findJupyterServer();
(jupyter ? describe : describe.skip)('with a real jupyter-server', () => {
  let server: JupyterServer | undefined;
  approvalSuite('Jupyter runtime', async () => {
    server = await startJupyterServer();
    return { runtime: new JupyterRuntime({ url: server.url, token: server.token }), sessionId: 'approval-clock', cleanup: async () => server?.stop() };
  });
});
