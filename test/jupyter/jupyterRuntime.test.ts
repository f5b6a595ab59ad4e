/**
 * The Jupyter runtime against a real `jupyter-server` (Debian's jupyter-server + python3-ipykernel)
 * on 127.0.0.1 with a random token and port.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import type { CodeActEvent, CodeInterpreterCallItem, DisplayOutput } from '../../src/common/events';
import { rasterImage } from '../../src/common/displays';
import { logsOf } from '../../src/common/events';
import { JupyterRuntime, type JupyterRuntimeOptions } from '../../src/core/runtime/jupyter/jupyterRuntime';
import type { ToolCallHandler } from '../../src/core/runtime/types';
import { SKIP_MESSAGE, findJupyterServer, freePort, startJupyterServer, type JupyterServer } from '../support/jupyterServer';

const available = !!findJupyterServer();
if (!available) console.log(`  ${SKIP_MESSAGE}`);

/** A TCP proxy in front of the server whose open connections can be cut (a network blip). */
async function blipProxy(targetPort: number): Promise<{ url: string; cut: () => void; close: () => void }> {
  const sockets = new Set<Socket>();
  const proxy = createTcpServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      proxy.close();
    },
  };
}

function collect(): { events: CodeActEvent[]; onEvent: (e: CodeActEvent) => void } {
  const events: CodeActEvent[] = [];
  return { events, onEvent: (e) => events.push(e) };
}

(available ? describe : describe.skip)('Jupyter runtime (real jupyter-server)', function () {
  this.timeout(60_000);
  let server: JupyterServer;
  const runtimes: JupyterRuntime[] = [];

  function runtime(options: Partial<JupyterRuntimeOptions> = {}): JupyterRuntime {
    const rt = new JupyterRuntime({ url: server.url, token: server.token, ...options });
    runtimes.push(rt);
    return rt;
  }

  before(async function () {
    this.timeout(60_000);
    server = await startJupyterServer();
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.allSettled(runtimes.map((r) => r.dispose()));
    await server?.stop();
  });

  describe('running code', () => {
    let rt: JupyterRuntime;
    before(() => {
      rt = runtime();
    });

    it('returns the value and stdout, with the events of the vocabulary in order', async () => {
      const { events, onEvent } = collect();
      const item = await rt.execute({ code: 'print("hello")\nx = 6 * 7\nreturn {"x": x, "ok": True}', sessionId: 'basic' }, { onEvent });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.runtime, 'jupyter');
      assert.deepEqual(item.value, { x: 42, ok: true });
      assert.equal(logsOf(item), 'hello\n');
      assert.equal(item.exit_code, 0);
      assert.equal(item.error, null);
      assert.match(String(item.container_id), /^[0-9a-f-]{36}$/);
      const types = events.map((e) => e.type);
      assert.deepEqual(types.slice(0, 4), [
        'response.code_interpreter_call.in_progress',
        'response.code_interpreter_call_code.delta',
        'response.code_interpreter_call_code.done',
        'response.code_interpreter_call.interpreting',
      ]);
      assert.deepEqual(types.slice(-2), ['response.code_interpreter_call.completed', 'response.output_item.done']);
      assert.deepEqual(events[0], { type: 'response.code_interpreter_call.in_progress', item_id: item.id, runtime: 'jupyter' });
      const delta = events.find((e) => e.type === 'codeact.output.delta');
      assert.deepEqual(delta, { type: 'codeact.output.delta', item_id: item.id, stream: 'stdout', delta: 'hello\n' });
      const done = events.at(-1) as { item: CodeInterpreterCallItem };
      assert.deepEqual(done.item, item);
    });

    it('gives the last expression as the value, like a notebook cell', async () => {
      const item = await rt.execute({ code: 'a = [1, 2]\na + [3]', sessionId: 'basic' });
      assert.deepEqual(item.value, [1, 2, 3]);
    });

    it('keeps stderr apart from stdout', async () => {
      const item = await rt.execute({ code: 'import sys\nprint("out")\nprint("err", file=sys.stderr)', sessionId: 'basic' });
      assert.equal(item.status, 'completed');
      assert.equal(logsOf(item, 'stdout'), 'out\n');
      assert.equal(logsOf(item, 'stderr'), 'err\n');
      assert.deepEqual(
        item.outputs.find((o) => o.type === 'logs' && o.stream === 'stderr'),
        { type: 'logs', logs: 'err\n', stream: 'stderr' },
      );
    });

    it('keeps state across two executions of one session', async () => {
      const first = await rt.execute({ code: 'import math\ncounter = 10\ndef bump(n):\n    return counter + n', sessionId: 'state' });
      assert.equal(first.status, 'completed', JSON.stringify(first.error));
      const second = await rt.execute({ code: 'counter += 1\nreturn [bump(1), round(math.pi, 2)]', sessionId: 'state' });
      assert.equal(second.status, 'completed', JSON.stringify(second.error));
      assert.deepEqual(second.value, [12, 3.14]);
      assert.equal(second.container_id, first.container_id);
    });

    it('runs of one conversation take turns, in order', async () => {
      const [a, b] = await Promise.all([
        rt.execute({ code: 'import asyncio\nawait asyncio.sleep(0.3)\nturns = ["first"]', sessionId: 'turns' }),
        rt.execute({ code: 'turns.append("second")\nreturn turns', sessionId: 'turns' }),
      ]);
      assert.equal(a.status, 'completed', JSON.stringify(a.error));
      assert.deepEqual(b.value, ['first', 'second']);
    });

    it('keeps non-ASCII text intact', async () => {
      const item = await rt.execute({ code: 'print("héllo ✓ 🐍 日本")\nreturn "ü→✓"', sessionId: 'basic' });
      assert.equal(logsOf(item), 'héllo ✓ 🐍 日本\n');
      assert.equal(item.value, 'ü→✓');
    });

    it("reports a traceback that points at the user's own line", async () => {
      const item = await rt.execute({ code: 'a = 1\nb = 0\n\nc = a / b\nprint(c)', sessionId: 'basic' });
      assert.equal(item.status, 'failed');
      assert.equal(item.exit_code, 1);
      assert.equal(item.error?.type, 'ZeroDivisionError');
      assert.equal(item.error?.line, 4);
      assert.match(item.error?.traceback ?? '', /line 4/);
      assert.match(item.error?.traceback ?? '', /c = a \/ b/);
      assert.doesNotMatch(item.error?.traceback ?? '', /\u001b\[|codeact|ipykernel/);
    });

    it('reports syntax errors with their line', async () => {
      const item = await rt.execute({ code: 'x = 1\nif x\n    pass', sessionId: 'basic' });
      assert.equal(item.error?.type, 'SyntaxError');
      assert.equal(item.error?.line, 2);
    });

    it('keeps output that arrived before a failure', async () => {
      const item = await rt.execute({ code: 'print("before")\nraise ValueError("bad value")', sessionId: 'basic' });
      assert.equal(item.status, 'failed');
      assert.equal(logsOf(item), 'before\n');
      assert.deepEqual([item.error?.type, item.error?.message, item.error?.line], ['ValueError', 'bad value', 2]);
    });

    it('refuses a non-JSON return value with a clear error', async () => {
      const item = await rt.execute({ code: 'return object()', sessionId: 'basic' });
      assert.equal(item.error?.type, 'ReturnValueError');
      assert.match(item.error?.message ?? '', /not JSON-serialisable/);
    });

    it('keeps an image display whole: its PNG and its text, as a display output', async () => {
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
      const code = `import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode("${png}")))`;
      const item = await rt.execute({ code, sessionId: 'basic' });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      const displays = item.outputs.filter((o) => o.type === 'display');
      assert.equal(displays.length, 1, JSON.stringify(item.outputs));
      assert.deepEqual(rasterImage(displays[0] as DisplayOutput), { mime: 'image/png', data: png });
      assert.match(String((displays[0] as DisplayOutput).data['text/plain']), /IPython\.core\.display\.Image object/);
    });

    it('gives input() a clear error instead of hanging or being taken for a tool frame', async () => {
      const item = await rt.execute({ code: 'try:\n    input("name? ")\nexcept EOFError as e:\n    print("EOF:", e)\nreturn "after"', sessionId: 'basic' });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.match(logsOf(item), /EOF: input\(\) has no one to answer it/);
      assert.equal(item.value, 'after');
    });

    it('answers any other stdin request with end-of-file, never as a tool call', async () => {
      let called = false;
      const code = [
        'k = get_ipython().kernel',
        'k._allow_stdin = True  # force the raw channel, past the guard',
        'try:',
        '    k.raw_input("who? ")',
        'except EOFError:',
        '    return "eof"',
      ].join('\n');
      const item = await rt.execute({ code, sessionId: 'basic' }, { onToolCall: async () => (called = true) });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.value, 'eof');
      assert.equal(called, false);
    });

    it('caps the output with the truncation marker', async () => {
      const small = runtime({ limits: { maxOutputBytes: 1000 } });
      const item = await small.execute({ code: 'for i in range(2000):\n    print("line", i)\nreturn "done"' });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.truncated, true);
      const out = logsOf(item);
      assert.ok(out.endsWith('\n…[codeact: stdout truncated after 1000 bytes; the rest was discarded]\n'), out.slice(-200));
      assert.ok(Buffer.byteLength(out) < 1200);
      assert.equal(item.value, 'done');
    });

    it('refuses source over the cap without any HTTP request', async () => {
      let requests = 0;
      const http: Server = createServer((_req, res) => {
        requests++;
        res.writeHead(500).end();
      });
      await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
      try {
        const port = (http.address() as AddressInfo).port;
        const capped = runtime({ url: `http://127.0.0.1:${port}/`, limits: { maxSourceBytes: 100 } });
        const item = await capped.execute({ code: `x = "${'a'.repeat(200)}"` });
        assert.equal(item.status, 'failed');
        assert.equal(item.error?.type, 'SourceTooLarge');
        assert.match(item.error?.message ?? '', /limit is 100 bytes/);
        assert.equal(requests, 0);
      } finally {
        http.close();
      }
    });
  });

  describe('call_tool', () => {
    let rt: JupyterRuntime;
    before(() => {
      rt = runtime();
    });

    it('routes a call to the host handler and returns its result', async () => {
      const { events, onEvent } = collect();
      const seen: unknown[] = [];
      const onToolCall: ToolCallHandler = async (req) => {
        seen.push({ name: req.name, arguments: req.arguments, itemId: req.itemId });
        return { total: (req.arguments as { a: number; b: number }).a + (req.arguments as { a: number; b: number }).b };
      };
      const item = await rt.execute({ code: 'r = await call_tool("add", a=2, b=3)\nreturn r["total"]', sessionId: 't' }, { onEvent, onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.value, 5);
      assert.deepEqual(seen, [{ name: 'add', arguments: { a: 2, b: 3 }, itemId: item.id }]);
      const started = events.find((e) => e.type === 'codeact.tool_call.started');
      const completed = events.find((e) => e.type === 'codeact.tool_call.completed');
      assert.deepEqual(started && { ...started }, {
        type: 'codeact.tool_call.started',
        item_id: item.id,
        call_id: `${item.id}:1`,
        name: 'add',
        arguments: { a: 2, b: 3 },
      });
      assert.equal(completed?.type === 'codeact.tool_call.completed' && JSON.stringify(completed.output), '{"total":5}');
    });

    it("raises RuntimeError with the handler's message, which the code can catch", async () => {
      const onToolCall: ToolCallHandler = async () => {
        throw new Error('arguments do not match the schema: /qty must be integer');
      };
      const code = 'try:\n    await call_tool("order", qty="x")\nexcept RuntimeError as e:\n    return "caught: " + str(e)';
      const item = await rt.execute({ code, sessionId: 't' }, { onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.value, 'caught: arguments do not match the schema: /qty must be integer');
    });

    it("an uncaught tool error fails the run on the user's line", async () => {
      const onToolCall: ToolCallHandler = async () => {
        throw new Error('denied by policy');
      };
      const item = await rt.execute({ code: 'x = 1\nawait call_tool("secret")', sessionId: 't' }, { onToolCall });
      assert.equal(item.status, 'failed');
      assert.deepEqual([item.error?.type, item.error?.message, item.error?.line], ['RuntimeError', 'denied by policy', 2]);
    });

    it('runs 4 gathered calls concurrently on the host (all 4 are running at once: a barrier, not the clock)', async () => {
      let active = 0;
      let maxActive = 0;
      let allIn!: () => void;
      const barrier = new Promise<void>((r) => (allIn = r));
      const onToolCall: ToolCallHandler = async (req) => {
        active++;
        maxActive = Math.max(maxActive, active);
        if (active === 4) allIn();
        // Each call waits for all 4 to be running; calls run one after another never get there (the
        // generous net only ends the test with a clear failure instead of a hang).
        await Promise.race([barrier, new Promise((r) => setTimeout(r, 10_000))]);
        active--;
        return (req.arguments as { i: number }).i * 10;
      };
      const code = 'import asyncio\nreturn await asyncio.gather(*(call_tool("slow", i=i) for i in range(4)))';
      const item = await rt.execute({ code, sessionId: 't' }, { onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, [0, 10, 20, 30]);
      assert.equal(maxActive, 4, `at most ${maxActive} calls ran at once`);
    });

    it('delivers results in completion order, so follow-up calls join calls still running', async () => {
      const order: string[] = [];
      const onToolCall: ToolCallHandler = async (req) => {
        const { name } = req;
        order.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, name === 'slow' ? 600 : 50));
        order.push(`end ${name}`);
        return name;
      };
      const code = [
        'import asyncio',
        'async def chain():',
        '    a = await call_tool("fast")',
        '    return [a, await call_tool("next")]',
        'return await asyncio.gather(call_tool("slow"), chain())',
      ].join('\n');
      const item = await rt.execute({ code, sessionId: 't' }, { onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, ['slow', ['fast', 'next']]);
      assert.ok(order.indexOf('start next') < order.indexOf('end slow'), order.join(', '));
    });

    it('lets tasks sleeping on timers run while a tool call is pending', async () => {
      // "slow" finishes only once the kernel has called "tick" from a task that sleeps first; if the
      // kernel's event loop were frozen while it waits for "slow", "tick" would never come.
      let tick!: () => void;
      const ticked = new Promise<void>((r) => (tick = r));
      const order: string[] = [];
      const onToolCall: ToolCallHandler = async (req) => {
        if (req.name === 'tick') {
          order.push('tick');
          tick();
          return 'tick';
        }
        await Promise.race([ticked, new Promise((r) => setTimeout(r, 5000))]);
        order.push('slow done');
        return 'slow';
      };
      const code = [
        'import asyncio',
        'async def ticker():',
        '    await asyncio.sleep(0.2)',
        '    return await call_tool("tick")',
        'return await asyncio.gather(call_tool("slow"), ticker())',
      ].join('\n');
      const item = await rt.execute({ code, sessionId: 't' }, { onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, ['slow', 'tick']);
      assert.deepEqual(order, ['tick', 'slow done']);
    });

    it('bounds concurrency by maxConcurrentToolCalls', async () => {
      const bounded = runtime({ limits: { maxConcurrentToolCalls: 2 } });
      let active = 0;
      let maxActive = 0;
      const onToolCall: ToolCallHandler = async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 50));
        active--;
        return null;
      };
      const item = await bounded.execute({ code: 'import asyncio\nawait asyncio.gather(*(call_tool("t") for _ in range(6)))' }, { onToolCall });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(maxActive, 2);
    });

    it('does not define working tools when the request has tools: false', async () => {
      let called = false;
      const item = await rt.execute(
        { code: 'try:\n    await call_tool("x")\nexcept RuntimeError as e:\n    return str(e)', sessionId: 't', tools: false },
        {
          onToolCall: async () => {
            called = true;
          },
        },
      );
      assert.match(String(item.value), /No managed tools are available in this run/);
      assert.equal(called, false);
    });
  });

  describe('stopping', () => {
    it('a timeout stops `while True: pass` and keeps the kernel and its variables', async () => {
      const rt = runtime();
      await rt.execute({ code: 'kept = "still here"', sessionId: 's' });
      const item = await rt.execute({ code: 'n = 0\nwhile True:\n    n += 1', sessionId: 's', timeoutMs: 1500 });
      assert.equal(item.status, 'failed');
      assert.equal(item.error?.type, 'Timeout');
      assert.match(item.error?.message ?? '', /timeout/);
      assert.match(item.error?.message ?? '', /interrupted; its variables are kept/);
      assert.ok(item.error?.line === 2 || item.error?.line === 3, `line ${item.error?.line}`);
      const after = await rt.execute({ code: 'return [kept, n > 0]', sessionId: 's' });
      assert.deepEqual(after.value, ['still here', true]);
    });

    it('an AbortSignal stops a run that awaits', async () => {
      const rt = runtime();
      const ac = new AbortController();
      const { events, onEvent } = collect();
      const item = await rt.execute(
        { code: 'import asyncio\nprint("waiting", flush=True)\nawait asyncio.sleep(60)', sessionId: 'a' },
        {
          signal: ac.signal,
          onEvent: (e) => {
            onEvent(e);
            if (e.type === 'codeact.output.delta') setTimeout(() => ac.abort(), 100);
          },
        },
      );
      assert.equal(item.status, 'incomplete', 'a stopped run is incomplete, not failed');
      assert.equal(item.error?.type, 'Cancelled');
      assert.equal(logsOf(item), 'waiting\n');
      assert.equal(item.error?.line, 3);
      assert.equal(events.at(-1)?.type, 'response.output_item.done');
      const again = await rt.execute({ code: '1 + 1', sessionId: 'a' });
      assert.equal(again.value, 2);
    });

    it('stops tool calls in flight: their AbortSignal fires', async () => {
      const rt = runtime();
      let aborted = false;
      const onToolCall: ToolCallHandler = (_req, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        });
      const item = await rt.execute({ code: 'await call_tool("forever")', timeoutMs: 800 }, { onToolCall });
      assert.equal(item.error?.type, 'Timeout');
      assert.match(item.error?.message ?? '', /1 tool call\(s\) still in flight/);
      assert.equal(aborted, true);
    });

    it('restarts the kernel when the interrupt does not take', async () => {
      const rt = runtime({ interruptGraceMs: 1000 });
      await rt.execute({ code: 'lost = 1', sessionId: 'r' });
      const item = await rt.execute({
        code: 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass',
        sessionId: 'r',
        timeoutMs: 1000,
      });
      assert.equal(item.error?.type, 'Timeout');
      assert.match(item.error?.message ?? '', /did not respond to the interrupt .* so it was restarted/);
      const after = await rt.execute({ code: 'return "lost" in globals()', sessionId: 'r' });
      assert.equal(after.status, 'completed', JSON.stringify(after.error));
      assert.equal(after.value, false);
    });

    it('reports a kernel that dies mid-run, and the next run works', async () => {
      const rt = runtime();
      const item = await rt.execute({ code: 'print("bye", flush=True)\nimport os, time\ntime.sleep(0.2)\nos._exit(1)', sessionId: 'd' });
      assert.equal(item.status, 'failed');
      assert.equal(item.error?.type, 'KernelDied');
      assert.match(item.error?.message ?? '', /died while running the code/);
      assert.equal(logsOf(item), 'bye\n');
      const next = await rt.execute({ code: '1 + 2', sessionId: 'd' });
      assert.equal(next.status, 'completed', JSON.stringify(next.error));
      assert.equal(next.value, 3);
    });
  });

  describe('sessions', () => {
    it('the per-execution policy does not keep state', async () => {
      const rt = runtime({ sessionPolicy: 'execution' });
      const a = await rt.execute({ code: 'only_here = 1', sessionId: 'p' });
      assert.equal(a.status, 'completed');
      const b = await rt.execute({ code: 'return "only_here" in globals()', sessionId: 'p' });
      assert.equal(b.value, false);
      assert.notEqual(a.container_id, b.container_id);
      assert.deepEqual(rt.kernelIds, []);
      const running = await server.kernelIds();
      assert.ok(!running.includes(String(a.container_id)) && !running.includes(String(b.container_id)));
    });

    it('restartSession restarts the kernel on demand (state gone, call_tool still there)', async () => {
      const rt = runtime();
      const a = await rt.execute({ code: 'before_restart = 1', sessionId: 'rs' });
      await rt.sessions.restart('rs');
      const b = await rt.execute({ code: 'return ["before_restart" in globals(), await call_tool("t")]', sessionId: 'rs' }, { onToolCall: async () => 'ok' });
      assert.equal(b.status, 'completed', JSON.stringify(b.error));
      assert.deepEqual(b.value, [false, 'ok']);
      assert.equal(a.container_id, b.container_id);
    });

    it('one number per execution of a kernel, whichever door runs: a run without one takes the next, a lagging count gets the one after', async () => {
      const rt = runtime();
      const chat1 = await rt.execute({ code: 'print("chat one")', sessionId: 'num', execution: 1 });
      const turn = await rt.execute({ code: 'print("code turn")', sessionId: 'num' });
      const chat2 = await rt.execute({ code: 'print("chat two")', sessionId: 'num', execution: 2 });
      assert.deepEqual(
        [chat1, turn, chat2].map((i) => i.session?.execution),
        [1, 2, 3],
      );
      const read = await rt.execute({ code: 'return [output_of(1), output_of(2), output_of(3)]', sessionId: 'num', execution: 3 });
      assert.equal(read.status, 'completed', JSON.stringify(read.error));
      assert.deepEqual([read.value, read.session?.execution], [['chat one\n', 'code turn\n', 'chat two\n'], 4]);
    });

    it('a new runtime takes back the kernel an earlier one left running: its variables and kept output are there', async () => {
      const a = runtime();
      const [first, notebook] = await Promise.all([
        a.execute({ code: 'x = 41\nprint("from A")', sessionId: 'back', execution: 1 }),
        a.execute({ code: '1', sessionId: 'nobody-remembers' }),
      ]);
      assert.equal(first.status, 'completed', JSON.stringify(first.error));
      const id = a.sessions.handover!.idOf('back');
      assert.equal(id, first.container_id);
      await a.sessions.handover!.release(); // a reload: the process lets go, the kernel stays
      const left = await server.kernelIds();
      assert.ok(left.includes(id!), 'the kernel is still on the server');
      assert.ok(!left.includes(String(notebook.container_id)), 'a kernel whose id nobody took is shut down');
      const b = runtime();
      b.sessions.handover!.adopt('back', id!);
      assert.equal(b.sessions.handover!.idOf('back'), id, 'remembered until the next run takes it back');
      const read = await b.execute({ code: 'return [x + 1, output_of(1)]', sessionId: 'back', execution: 2 });
      assert.equal(read.status, 'completed', JSON.stringify(read.error));
      assert.deepEqual(read.value, [42, 'from A\n']);
      assert.equal(read.container_id, id);
      assert.match(logsOf(read, 'stderr'), /Reconnected to this conversation's Jupyter kernel .*still defined/);
      const tool = await b.execute({ code: 'return await call_tool("t")', sessionId: 'back' }, { onToolCall: async () => 'ok' });
      assert.equal(tool.value, 'ok', JSON.stringify(tool.error));
      await b.dispose(); // a plain dispose still shuts it down
      assert.ok(!(await server.kernelIds()).includes(id!));
    });

    it('a kernel that is gone (or an id that is not one) is said plainly, and a new kernel starts', async () => {
      const a = runtime();
      const first = await a.execute({ code: 'y = 1', sessionId: 'gone' });
      const id = a.sessions.handover!.idOf('gone')!;
      assert.equal(id, first.container_id);
      await a.sessions.handover!.release();
      const killer = runtime();
      killer.sessions.handover!.adopt('gone', id);
      await killer.sessions.handover!.release(); // never ran: nothing taken back, nothing shut
      assert.ok((await server.kernelIds()).includes(id));
      await fetch(`${server.url}api/kernels/${id}`, { method: 'DELETE', headers: { Authorization: `token ${server.token}` } });
      const b = runtime();
      b.sessions.handover!.adopt('gone', id);
      b.sessions.handover!.adopt('bad', '../../api/sessions');
      const fresh = await b.execute({ code: 'return "y" in globals()', sessionId: 'gone' });
      assert.equal(fresh.value, false);
      assert.notEqual(fresh.container_id, id);
      assert.match(
        logsOf(fresh, 'stderr'),
        /could not be taken back \(the server no longer has it: .*\); a new kernel was started, so variables from earlier runs are gone/,
      );
      const bad = await b.execute({ code: '1', sessionId: 'bad' });
      assert.match(logsOf(bad, 'stderr'), /the id remembered for it is not a kernel id/);
    });

    it('closing a conversation whose kernel was left running shuts that kernel down; so does taking it back after the idle time', async () => {
      const a = runtime();
      const [one, two] = await Promise.all([a.execute({ code: '1', sessionId: 'left1' }), a.execute({ code: '2', sessionId: 'left2' })]);
      a.sessions.handover!.idOf('left1');
      a.sessions.handover!.idOf('left2');
      await a.sessions.handover!.release();
      const b = runtime({ idleShutdownMs: 200 });
      b.sessions.handover!.adopt('left1', String(one.container_id));
      await b.sessions.close('left1'); // the conversation was deleted in this process
      assert.ok(!(await server.kernelIds()).includes(String(one.container_id)));
      assert.equal(b.sessions.handover!.idOf('left1'), undefined);
      await new Promise((r) => setTimeout(r, 1000)); // older than the idle time, by far
      b.sessions.handover!.adopt('left2', String(two.container_id));
      const next = await b.execute({ code: '1', sessionId: 'left2' });
      assert.match(logsOf(next, 'stderr'), /it had no run for over .*, so it was shut down/);
      assert.ok(!(await server.kernelIds()).includes(String(two.container_id)));
    });

    it('closeSession shuts the kernel down', async () => {
      const rt = runtime();
      const a = await rt.execute({ code: '1', sessionId: 'c' });
      assert.ok((await server.kernelIds()).includes(String(a.container_id)));
      await rt.sessions.close('c');
      assert.ok(!(await server.kernelIds()).includes(String(a.container_id)));
    });

    it('an idle kernel is shut down, and the next run says its state is gone', async () => {
      const rt = runtime({ idleShutdownMs: 300 });
      const a = await rt.execute({ code: 'v = 1', sessionId: 'i' });
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && (await server.kernelIds()).includes(String(a.container_id))) await new Promise((r) => setTimeout(r, 100));
      assert.ok(!(await server.kernelIds()).includes(String(a.container_id)));
      const b = await rt.execute({ code: 'return "v" in globals()', sessionId: 'i' });
      assert.equal(b.value, false);
      assert.match(logsOf(b, 'stderr'), /shut down after .* without a run/);
    });
  });

  describe('connection errors', () => {
    it('a wrong token gives a clear error', async () => {
      const rt = runtime({ token: 'not-the-token' });
      const item = await rt.execute({ code: '1' });
      assert.equal(item.status, 'failed');
      assert.equal(item.error?.type, 'JupyterAuthError');
      assert.equal(item.error?.category, 'config');
      assert.match(item.error?.message ?? '', /refused the token \(HTTP 403\)/);
      assert.match(item.error?.message ?? '', /CODEACT_JUPYTER_TOKEN/);
      assert.match(item.error?.message ?? '', /CodeAct: Set Jupyter Token/);
      assert.doesNotMatch(item.error?.message ?? '', /not-the-token/);
    });

    it('a wrong URL gives a clear error', async () => {
      const port = await freePort();
      const rt = runtime({ url: `http://127.0.0.1:${port}/` });
      const item = await rt.execute({ code: '1' });
      assert.equal(item.error?.type, 'JupyterUnreachable');
      assert.equal(item.error?.category, 'environment');
      assert.match(item.error?.message ?? '', /Cannot reach the Jupyter server at http:\/\/127\.0\.0\.1:\d+\/ \(ECONNREFUSED\)/);
      assert.match(item.error?.message ?? '', /codeact\.jupyter\.serverURL/);
    });

    it('an unknown kernel name lists the kernels the server has', async () => {
      const rt = runtime({ kernelName: 'no-such-kernel' });
      const item = await rt.execute({ code: '1' });
      assert.equal(item.error?.type, 'JupyterKernelNotFound');
      assert.equal(item.error?.category, 'config');
      assert.match(item.error?.message ?? '', /no kernel named "no-such-kernel" \(it has: .*python3/);
    });

    it('a lost WebSocket reconnects and the run completes with all its output, tool calls included', async () => {
      const proxy = await blipProxy(server.port);
      const rt = runtime({ url: proxy.url });
      try {
        let cut = false;
        const item = await rt.execute(
          { code: 'import time\nprint("a", flush=True)\ntime.sleep(1)\nprint("b", flush=True)\nr = await call_tool("t")\nreturn r', sessionId: 'blip' },
          {
            onEvent: (e) => {
              if (e.type === 'codeact.output.delta' && !cut) {
                cut = true;
                proxy.cut();
              }
            },
            onToolCall: async () => {
              proxy.cut(); // the reply has to wait for the next WebSocket
              await new Promise((r) => setTimeout(r, 300));
              return 'through';
            },
          },
        );
        assert.equal(cut, true);
        assert.equal(item.status, 'completed', JSON.stringify(item.error));
        assert.equal(logsOf(item), 'a\nb\n');
        assert.equal(item.value, 'through');
      } finally {
        await rt.dispose(); // through the proxy, before it goes
        proxy.close();
      }
    });

    it('a server killed mid-run gives a clean error, keeps the output, and nothing hangs', async function () {
      this.timeout(60_000);
      const doomed = await startJupyterServer();
      const rt = new JupyterRuntime({ url: doomed.url, token: doomed.token });
      try {
        const { events, onEvent } = collect();
        let killed = false;
        const item = await rt.execute(
          { code: 'import time\nprint("started", flush=True)\ntime.sleep(30)', sessionId: 'k', timeoutMs: 45_000 },
          {
            onEvent: (e) => {
              onEvent(e);
              if (e.type === 'codeact.output.delta' && !killed) {
                killed = true;
                void doomed.kill('SIGKILL');
              }
            },
          },
        );
        assert.equal(item.status, 'failed');
        assert.equal(item.error?.type, 'JupyterConnectionLost', JSON.stringify(item.error));
        assert.match(item.error?.message ?? '', /Lost the connection to the Jupyter server at http:\/\/127\.0\.0\.1/);
        assert.equal(logsOf(item), 'started\n');
        assert.equal(events.at(-1)?.type, 'response.output_item.done');
        // The next run says the server is gone instead of hanging.
        const next = await rt.execute({ code: '1', sessionId: 'k' });
        assert.equal(next.status, 'failed');
        assert.equal(next.error?.type, 'JupyterUnreachable');
      } finally {
        await rt.dispose();
        await doomed.stop();
      }
    });
  });

  describe('clean-up', () => {
    it('dispose() shuts every kernel down (checked through /api/kernels)', async () => {
      const rt = runtime();
      await Promise.all([rt.execute({ code: '1', sessionId: 'x1' }), rt.execute({ code: '2', sessionId: 'x2' })]);
      assert.equal(rt.kernelIds.length, 2);
      await Promise.all(runtimes.map((r) => r.dispose()));
      assert.deepEqual(await server.kernelIds(), []);
    });
  });
});
