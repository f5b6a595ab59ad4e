/**
 * A run cannot flood the host with tool calls. The guest library bounds its own calls,
 * but code can write `tool_call` frames straight to the protocol descriptor (fd 3), past it; the host bounds
 * them itself: a per-run total (codeact.toolCalls.maxPerRun), a cap on calls waiting at once, and nothing
 * queued survives the run. Real python3 guests on the local runtime.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { logsOf } from '../../src/common/events';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import type { RuntimeLimits, ToolCallHandler } from '../../src/core/runtime/types';
import { MAX_OUTSTANDING_TOOL_CALLS, TOOL_FLOOD_MARGIN } from '../../src/core/runtime/toolDispatcher';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { runtimeLimitsFrom } from '../../src/core/config/engine';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { SKIP_MESSAGE, findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';

/**
 * Python that writes `n` raw tool_call frames for the running run straight to fd 3; then, with `replies`, reads
 * that many answers back (the refusals the host sends at once) and returns them.
 */
const rawFlood = (n: number, replies = 0) => `
import json, os, select
bridge = call_tool.__closure__[0].cell_contents
run = bridge.run_id
data = b"".join(b'{"t":"tool_call","run":%d,"id":%d,"name":"echo","args":{}}\\n' % (run, i) for i in range(1, ${n} + 1))
view = memoryview(data)
while view:
    view = view[os.write(3, view):]
buf = b""
while buf.count(b"\\n") < ${replies} and select.select([3], [], [], 30)[0]:
    buf += os.read(3, 65536)
lines = [json.loads(l) for l in buf.split(b"\\n")[:${replies}]]
return {"refused": sum(1 for l in lines if l.get("ok") is False), "first": lines[0]["error"] if lines else None}
`;

interface Outcome {
  item: CodeInterpreterCallItem;
  events: CodeActEvent[];
  /** Events that came after output_item.done (one macrotask later). */
  after: CodeActEvent[];
  calls: number;
}

async function run(code: string, limits: Partial<RuntimeLimits>, handler: (signal: AbortSignal) => Promise<unknown>): Promise<Outcome> {
  const rt = new LocalRuntime({ sandbox: { kind: 'none' }, zygote: false, limits });
  const events: CodeActEvent[] = [];
  let done = -1;
  let calls = 0;
  const onToolCall: ToolCallHandler = (_req, signal) => {
    calls++;
    return handler(signal);
  };
  try {
    const item = await rt.execute(
      { code, timeoutMs: 120_000 },
      {
        onEvent: (e) => {
          events.push(e);
          if (e.type === 'response.output_item.done') done = events.length;
        },
        onToolCall,
      },
    );
    // Whatever the run left queued would run now, in the microtasks and callbacks after the result.
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(done > 0, 'the result item was emitted');
    return { item, events, after: events.slice(done), calls };
  } finally {
    await rt.dispose();
  }
}

const started = (events: CodeActEvent[]) => events.filter((e) => e.type === 'codeact.tool_call.started').length;

describe('security: tool calls cannot flood the host', function () {
  this.timeout(120_000);

  it('refuses raw frames past the per-run limit and stops a run whose frames keep coming', async () => {
    const limit = 50;
    const flood = limit + TOOL_FLOOD_MARGIN + 2000;
    const { item, events, calls } = await run(rawFlood(flood), { maxToolCallsPerRun: limit }, async () => ({ ok: true }));
    assert.equal(calls, limit, 'no call past the limit reached a tool');
    assert.equal(started(events), limit, 'refused calls are not announced one by one');
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.type, 'ProtocolError');
    assert.match(
      item.error!.message,
      new RegExp(`more than ${(limit + TOOL_FLOOD_MARGIN).toLocaleString('en-US')} tool calls in one run \\(the limit is ${limit}\\); the run was stopped`),
    );
    assert.match(logsOf(item, 'stderr'), /this run reached its limit of 50 tool calls \(codeact\.toolCalls\.maxPerRun\); further calls were refused/);
  });

  it('answers code past the limit with a clear error, and the guest library stops sending', async () => {
    const code = `
import asyncio
errors = []
for i in range(20):
    try:
        await call_tool("echo", i=i)
    except RuntimeError as e:
        errors.append(str(e))
# A gather past the limit: refused in the guest, without a frame each.
more = await asyncio.gather(*(call_tool("echo") for _ in range(3000)), return_exceptions=True)
return {"errors": len(errors), "first": errors[0], "gathered": sum(isinstance(r, RuntimeError) for r in more)}
`;
    const { item, calls } = await run(code, { maxToolCallsPerRun: 5 }, async () => ({ ok: true }));
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.equal(calls, 5);
    const value = item.value as { errors: number; first: string; gathered: number };
    assert.equal(value.errors, 15);
    assert.equal(value.gathered, 3000);
    assert.match(value.first, /^too many tool calls in this run: limit 5\. /);
    assert.match(logsOf(item, 'stderr'), /reached its limit of 5 tool calls/);
  });

  it('caps the calls waiting at once, and starts none of the queued ones after the run ended', async () => {
    // The tool holds every call until the run ends (its signal): the first calls take the slots, the rest queue.
    const hold = (signal: AbortSignal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
    const { item, events, after, calls } = await run(rawFlood(MAX_OUTSTANDING_TOOL_CALLS + 1500, 1500), {}, hold);
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    const value = item.value as { refused: number; first: string };
    assert.equal(value.refused, 1500, 'each call past the cap was answered at once');
    assert.match(value.first, /^too many tool calls waiting in this run: limit 4096 at once/);
    assert.equal(calls, 8, 'only the calls that had a slot reached the tool');
    assert.equal(started(events), 8);
    assert.equal(started(after), 0, 'no queued call started after the run ended');
    assert.match(
      logsOf(item, 'stderr'),
      new RegExp(`more than ${MAX_OUTSTANDING_TOOL_CALLS.toLocaleString('en-US')} tool calls of this run were waiting at once`),
    );
  });

  it('reads the limit from codeact.toolCalls.maxPerRun (default 10,000)', () => {
    const none = resolveEngineConfig(() => undefined, { trusted: false });
    assert.equal(runtimeLimitsFrom(none.config).maxToolCallsPerRun, 10_000);
    const set = resolveEngineConfig((k) => (k === 'toolCalls.maxPerRun' ? { workspace: 250 } : undefined), { trusted: false });
    assert.equal(runtimeLimitsFrom(set.config).maxToolCallsPerRun, 250);
    const bad = resolveEngineConfig((k) => (k === 'toolCalls.maxPerRun' ? { user: 0 } : undefined), { trusted: false });
    assert.equal(bad.config.maxToolCallsPerRun, 10_000);
    assert.ok(bad.ignored.some((i) => i.key === 'codeact.toolCalls.maxPerRun'));
  });
});

/** The library's calls past the limit, then raw frames past it, on a real Jupyter kernel. */
const LIBRARY_PAST_LIMIT = `
import asyncio
errors = []
for i in range(20):
    try:
        await call_tool("echo", i=i)
    except RuntimeError as e:
        errors.append(str(e))
more = await asyncio.gather(*(call_tool("echo") for _ in range(3000)), return_exceptions=True)
return {"errors": len(errors), "first": errors[0], "gathered": sum(isinstance(r, RuntimeError) for r in more)}
`;

/** Frames of 4,096 calls each, sent through the kernel's own tool channel past the library. */
const KERNEL_RAW_FLOOD = `
import json, sys
k = sys.modules["__codeact__"]
answers = []
for seq in range(1, 6):
    calls = ",".join('{"id":"raw-%d-%d","name":"echo","arguments":{}}' % (seq, i) for i in range(4096))
    frame = '{"run":%s,"seq":%d,"calls":[%s],"hold_ms":0}' % (json.dumps(k._run.id), 1000 + seq, calls)
    answers.append(k._request(k._prefix + frame, 1000 + seq))
    if answers[-1].get("cancelled"):
        break
return len(answers)
`;

(findJupyterServer() ? describe : describe.skip)('security: tool calls cannot flood the host, Jupyter kernel', function () {
  this.timeout(120_000);
  let server: JupyterServer;
  before(async function () {
    this.timeout(60_000);
    server = await startJupyterServer();
  });
  after(async () => server?.stop());

  async function runOn(code: string): Promise<{ item: CodeInterpreterCallItem; calls: number; events: CodeActEvent[] }> {
    const rt = new JupyterRuntime({ url: server.url, token: server.token, limits: { maxToolCallsPerRun: 5 } });
    let calls = 0;
    const events: CodeActEvent[] = [];
    try {
      const item = await rt.execute({ code, timeoutMs: 100_000 }, { onEvent: (e) => events.push(e), onToolCall: async () => (calls++, { ok: true }) });
      return { item, calls, events };
    } finally {
      await rt.dispose();
    }
  }

  it('answers calls past the limit with a clear error, and the kernel library stops sending', async () => {
    const { item, calls } = await runOn(LIBRARY_PAST_LIMIT);
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.equal(calls, 5);
    const value = item.value as { errors: number; first: string; gathered: number };
    assert.deepEqual([value.errors, value.gathered], [15, 3000]);
    assert.match(value.first, /^too many tool calls in this run: limit 5\. /);
    assert.match(logsOf(item, 'stderr'), /reached its limit of 5 tool calls/);
  });

  it('stops a run whose raw frames keep coming past the limit', async () => {
    const { item, calls, events } = await runOn(KERNEL_RAW_FLOOD);
    assert.equal(calls, 5, 'no call past the limit reached a tool');
    assert.equal(started(events), 5);
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.type, 'ProtocolError');
    assert.match(item.error!.message, /The kernel sent more than 4,101 tool calls in one run \(the limit is 5\); the run was stopped/);
  });
});
if (!findJupyterServer()) console.log(`  ${SKIP_MESSAGE}`);
