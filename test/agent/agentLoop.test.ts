/**
 * End-to-end agent loop: real SDK clients against loopback wire servers, code running in the real
 * local guest, managed tools through the real gateway.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { AgentLoop, type AgentOptions } from '../../src/core/agent/agent';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import type { ProviderId } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { DEFAULT_MODELS, providerFor, resultsInRequest, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { barrier, waitFor } from '../support/wait';
import { retryNote } from '../../src/core/agent/retries';

function inventoryTool(log: Array<{ start: number; end: number }> = []): ManagedTool {
  return {
    name: 'check_inventory',
    description: 'Stock on hand for one SKU.',
    inputSchema: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false },
    outputSchema: { type: 'object', properties: { on_hand: { type: 'integer' } }, required: ['on_hand'] },
    approval: 'auto',
    expose: 'code',
    source: 'test',
    invoke: async (args) => {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, 150));
      log.push({ start, end: Date.now() });
      return { sku: args.sku, on_hand: String(args.sku).length };
    },
  };
}

const providers: ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];

describe('agent loop end to end', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());

  async function agentFor(provider: ProviderId, server: WireServer, extra: Partial<AgentOptions> = {}, tools: ManagedTool[] = [inventoryTool()]) {
    const events: CodeActEvent[] = [];
    const gateway = new ToolGateway(tools);
    const agent = new AgentLoop({
      provider: await providerFor(provider, server),
      model: DEFAULT_MODELS[provider],
      runtime,
      gateway,
      onEvent: (e) => events.push(e),
      retry: { baseDelayMs: 10, maxDelayMs: 50 },
      ...extra,
    });
    return { agent, events, gateway };
  }

  for (const provider of providers) {
    describe(provider, () => {
      let server: WireServer;
      beforeEach(async () => (server = await startServerFor(provider)));
      afterEach(() => server.close());

      it('runs execute_tool_code in the local guest, sends the result back in the provider format, and streams the final answer', async () => {
        const code = 'r = await call_tool("check_inventory", sku="ÄBC-1")\nprint("stock:", r["on_hand"])\nreturn r["on_hand"]';
        server.push(
          turn()
            .call('execute_tool_code', { code }, { chunkSize: 7 })
            .with({ usage: { input: 100, output: 20 } }),
        );
        server.push(
          turn()
            .text('There are 5 units of ÄBC-1 in stock. ✓')
            .with({ usage: { input: 150, output: 12 } }),
        );
        const { agent, events } = await agentFor(provider, server);
        const result = await agent.run([], 'How many ÄBC-1 are in stock?');

        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        assert.equal(result.text, 'There are 5 units of ÄBC-1 in stock. ✓');
        // The code streamed in as plain text while the model wrote it, then ran once.
        const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') as { item: CodeInterpreterCallItem };
        assert.equal(done.item.status, 'completed');
        assert.equal(done.item.value, 5);
        const codeDeltas = events
          .filter((e) => e.type === 'response.code_interpreter_call_code.delta' && e.item_id === done.item.id)
          .map((e) => (e as { delta: string }).delta)
          .join('');
        assert.equal(codeDeltas, code);
        assert.equal(events.filter((e) => e.type === 'response.code_interpreter_call.in_progress' && e.item_id === done.item.id).length, 1);
        assert.ok(events.some((e) => e.type === 'codeact.tool_call.completed' && e.name === 'check_inventory'));
        // The second request carries the result in the provider's format.
        assert.equal(server.turns.length, 2);
        const sent = resultsInRequest(provider, server.turns[1].body);
        assert.equal(sent.length, 1);
        assert.match(sent[0], /"value":5/);
        assert.match(sent[0], /stock: 5/);
        // The final answer streamed as text deltas; usage per turn and in total.
        const text = events
          .filter((e) => e.type === 'response.output_text.delta')
          .map((e) => (e as { delta: string }).delta)
          .join('');
        assert.equal(text, 'There are 5 units of ÄBC-1 in stock. ✓');
        assert.equal(result.usage.turns.length, 2);
        assert.equal(result.usage.total.input_tokens, 250);
        assert.equal(result.usage.total.output_tokens, 32);
      });

      it('runs several function calls of one turn in parallel (a barrier: each waits for the other to start)', async () => {
        // Each execution's tool call waits until the other execution's has started: run one after the
        // other, the first would wait forever (and fail after the generous limit). No clock is compared.
        let arrived = 0;
        const both = barrier();
        const tool = inventoryTool();
        const invoke = tool.invoke;
        tool.invoke = async (args, ctx) => {
          if (++arrived === 2) both.open();
          let timer: NodeJS.Timeout | undefined;
          try {
            await Promise.race([
              both.opened,
              new Promise(
                (_, reject) => (timer = setTimeout(() => reject(new Error('the other execution never started: the calls ran one after the other')), 30_000)),
              ),
            ]);
          } finally {
            clearTimeout(timer);
          }
          return invoke(args, ctx);
        };
        server.push(
          turn()
            .call('execute_tool_code', { code: 'return (await call_tool("check_inventory", sku="A"))["on_hand"]' }, { id: 'call_a' })
            .call('execute_tool_code', { code: 'return (await call_tool("check_inventory", sku="BB"))["on_hand"]' }, { id: 'call_b' }),
        );
        server.push(turn().text('A has 1, BB has 2.'));
        const { agent, events } = await agentFor(provider, server, {}, [tool]);
        const result = await agent.run([], 'Check A and BB.');
        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        const values = events
          .filter((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call')
          .map((e) => (e as { item: CodeInterpreterCallItem }).item.value);
        assert.deepEqual(values.sort(), [1, 2]);
        assert.equal(arrived, 2);
        const sent = resultsInRequest(provider, server.turns[1].body);
        assert.equal(sent.length, 2);
      });
    });
  }

  describe('faults', () => {
    let server: WireServer;
    afterEach(() => server?.close());

    it('retries a 429 with backoff, surfaced as an event, then succeeds', async () => {
      server = await startServerFor('openai');
      server.push(fault.status(429, { message: 'Rate limit reached', retryAfter: 0 }), turn().text('ok'));
      const { agent, events } = await agentFor('openai', server);
      const result = await agent.run([], 'hi');
      assert.equal(result.status, 'completed');
      const retry = events.find((e) => e.type === 'codeact.retry') as { attempt: number; status?: number; message: string; delay_ms: number };
      assert.equal(retry.attempt, 1);
      assert.equal(retry.status, 429);
      assert.ok(retry.message.endsWith(` ${retryNote(retry.delay_ms, 2, 4)}`), retry.message);
    });

    it('gives up on repeated 500s with a clear error', async () => {
      server = await startServerFor('anthropic');
      server.push(fault.status(500), fault.status(500), fault.status(500));
      const { agent, events } = await agentFor('anthropic', server, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
      const result = await agent.run([], 'hi');
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.code, 'server');
      assert.equal(events.filter((e) => e.type === 'codeact.retry').length, 2);
      assert.ok(events.some((e) => e.type === 'error'));
    });

    it('explains a 401: which key, and where to set it', async () => {
      server = await startServerFor('gemini');
      server.push(fault.status(401));
      const { agent } = await agentFor('gemini', server);
      const result = await agent.run([], 'hi');
      assert.equal(result.error?.code, 'auth');
      assert.match(result.error!.message, /GEMINI_API_KEY|GOOGLE_API_KEY/);
      assert.match(result.error!.message, /Set API Key/);
    });

    it('keeps what arrived before a stream is cut mid-way', async () => {
      server = await startServerFor('openai');
      server.push(fault.cut(turn().text('Partial answer that goes on and on').call('execute_tool_code', { code: 'return 1' }), 12));
      const { agent, events } = await agentFor('openai', server, { retry: { maxAttempts: 1 } });
      const result = await agent.run([], 'hi');
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.code, 'stream_cut');
      assert.ok(
        events.some((e) => e.type === 'response.output_text.delta'),
        'text received before the cut was emitted',
      );
    });

    it('closes a streamed code card whose arguments turn out broken, instead of leaving it "writing"', async () => {
      server = await startServerFor('openai-compatible');
      server.push(turn().call('execute_tool_code', '{"code": "print(1)\\nreturn 2"', { chunkSize: 5 }), turn().text('sorry'));
      const { agent, events } = await agentFor('openai-compatible', server);
      const result = await agent.run([], 'x');
      assert.equal(result.status, 'completed');
      const opened = events.filter((e) => e.type === 'response.code_interpreter_call.in_progress').map((e) => (e as { item_id: string }).item_id);
      assert.equal(opened.length, 1);
      const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && e.item.id === opened[0]) as {
        item: CodeInterpreterCallItem;
      };
      assert.ok(done, 'the card was closed');
      assert.equal(done.item.status, 'failed');
      assert.equal(done.item.error?.type, 'NotRun');
      assert.match(done.item.error!.message, /not a valid JSON object/);
    });

    it('says clearly that a provider has no hosted sandbox', async () => {
      server = await startServerFor('openai-compatible');
      const { agent } = await agentFor('openai-compatible', server, { mode: 'hosted' });
      const result = await agent.run([], 'hi');
      assert.equal(result.error?.code, 'hosted_unsupported');
      assert.match(result.error!.message, /no hosted code sandbox/);
      assert.equal(server.turns.length, 0);
    });

    it('stops at maxTurns with a clear error', async () => {
      server = await startServerFor('openai');
      server.push(turn().call('execute_tool_code', { code: 'return 1' }), turn().call('execute_tool_code', { code: 'return 2' }));
      const { agent } = await agentFor('openai', server, { maxTurns: 2 });
      const result = await agent.run([], 'loop');
      assert.equal(result.status, 'max_turns');
      assert.match(result.error!.message, /after 2 model turns/);
    });

    it('Stop mid-stream aborts the HTTP request', async () => {
      server = await startServerFor('anthropic');
      server.push(fault.endless(20));
      const controller = new AbortController();
      const { agent, events } = await agentFor('anthropic', server, { signal: controller.signal });
      const running = agent.run([], 'talk forever');
      // Stop once the answer is streaming (a fixed pause could stop before the request was even sent).
      await waitFor(() => events.some((e) => e.type === 'response.output_text.delta'), { what: 'the endless answer to stream' });
      controller.abort();
      const result = await running;
      assert.equal(result.status, 'cancelled');
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true);
    });

    it('Stop during code execution ends the guest process', async () => {
      server = await startServerFor('openai');
      const marker = `stop-marker-${Date.now()}`;
      server.push(
        turn().call('execute_tool_code', {
          code: `import subprocess, sys, time\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "${marker}"])\ntime.sleep(60)`,
        }),
      );
      const controller = new AbortController();
      const { agent, events } = await agentFor('openai', server, { signal: controller.signal });
      const running = agent.run([], 'sleep');
      while (!events.some((e) => e.type === 'response.code_interpreter_call.interpreting')) await new Promise((r) => setTimeout(r, 20));
      // The barrier is the child process itself (a busy machine may take a while to start it), not a delay.
      for (let waited = 0; processesWithCmdline(marker).length === 0 && waited < 40_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      assert.equal(processesWithCmdline(marker).length, 1);
      controller.abort();
      const result = await running;
      assert.equal(result.status, 'cancelled');
      // Killed with the guest's process tree; reaping may lag a little behind the result on a busy machine.
      for (let waited = 0; processesWithCmdline(marker).length > 0 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(processesWithCmdline(marker), []);
    });
  });

  describe('modes and direct tools', () => {
    let server: WireServer;
    afterEach(() => server?.close());

    it('code mode offers only execute_code, which runs without the tool bridge', async () => {
      server = await startServerFor('openai');
      server.push(
        turn().call('execute_code', { code: 'try:\n    await call_tool("anything")\nexcept RuntimeError as e:\n    return str(e)' }),
        turn().text('done'),
      );
      const { agent, events } = await agentFor('openai', server, { mode: 'code' });
      const result = await agent.run([], 'compute');
      assert.equal(result.status, 'completed');
      assert.deepEqual(
        server.turns[0].body.tools.map((t: { name: string }) => t.name),
        ['execute_code'],
      );
      const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') as { item: CodeInterpreterCallItem };
      assert.equal(done.item.value, 'No managed tools are available in this run, so "anything" cannot be called.');
    });

    it('offers a tool with expose "direct" as a function and runs it through the gateway', async () => {
      server = await startServerFor('anthropic');
      const direct: ManagedTool = { ...inventoryTool(), name: 'lookup', expose: 'direct' };
      server.push(turn().call('lookup', { sku: 'XYZ' }), turn().text('XYZ has 3.'));
      const { agent, gateway, events } = await agentFor('anthropic', server, {}, [direct]);
      const result = await agent.run([], 'stock of XYZ?');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.deepEqual(
        server.turns[0].body.tools.map((t: { name: string }) => t.name),
        ['execute_tool_code', 'lookup'],
      );
      assert.equal(gateway.records[0].name, 'lookup');
      // Announced and timed as a call from the code is, under the call id `<item id>:1`.
      const call = result.items.find((i) => i.type === 'function_call')!;
      const calls = events.filter((e) => e.type === 'codeact.tool_call.started' || e.type === 'codeact.tool_call.completed');
      assert.deepEqual(
        calls.map((e) => [e.type, e.item_id, e.call_id, e.name]),
        [
          ['codeact.tool_call.started', call.id, `${call.id}:1`, 'lookup'],
          ['codeact.tool_call.completed', call.id, `${call.id}:1`, 'lookup'],
        ],
      );
      const completed = calls[1] as Extract<CodeActEvent, { type: 'codeact.tool_call.completed' }>;
      assert.ok(completed.duration_ms >= 0 && !completed.error && !('kind' in completed));
      assert.match(resultsInRequest('anthropic', server.turns[1].body)[0], /"on_hand":3/);
    });

    it('refuses a direct call of a tool that is only exposed to code', async () => {
      server = await startServerFor('openai');
      server.push(turn().call('check_inventory', { sku: 'A' }), turn().text('ok'));
      const { agent, gateway } = await agentFor('openai', server);
      await agent.run([], 'x');
      assert.equal(gateway.records.length, 0);
      assert.match(resultsInRequest('openai', server.turns[1].body)[0], /Unknown function \\"check_inventory\\"/);
    });
  });
});
