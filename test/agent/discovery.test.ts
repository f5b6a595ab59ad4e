/**
 * A workspace with 300 managed tools, end to end: the first request's tool description stays within
 * budget; code in the real local guest finds tools with search_tools, imports one from the generated
 * `tools` module (the guest library installs it when the code names it),
 * gets a TypeError with the signature for a wrong keyword, and calls the tool through the gateway. The
 * discovery calls travel the ordinary tool channel under reserved names and are tagged as discovery.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { AgentLoop } from '../../src/core/agent/agent';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { COMPACT_TOKEN_BUDGET, estimateTextTokens, executeToolCodeSpec, inlineToolLines } from '../../src/core/tools/modelTools';
import { manyManagedTools } from '../support/manyTools';
import { DEFAULT_MODELS, providerFor, startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';
import { systemOf } from '../support/textWire';

const CODE = [
  'hits = await search_tools("scale a deployment", limit=3)',
  'from tools import k8s_scale_deployment',
  'try:',
  '    await k8s_scale_deployment(deployment="web", replica=3)',
  'except TypeError as e:',
  '    err = str(e)',
  'done = await k8s_scale_deployment(deployment="web", replicas=3)',
  'schema = (await describe_tool("k8s_scale_deployment"))["input_schema"]',
  'return {"first": hits[0]["name"], "err": err, "done": done, "required": schema["required"]}',
].join('\n');

describe('agent loop: 300 managed tools, discovery from the code', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());

  it('keeps the first request small, and the code finds, imports and calls a tool (wrong keyword: TypeError, no round trip)', async () => {
    const server = await startServerFor('openai-compatible', 'vllm');
    try {
      server.push(turn().call('execute_tool_code', { code: CODE }), turn().text('Scaled web to 3 replicas.'));
      const calls: string[] = [];
      const tools = manyManagedTools(300, calls);
      const gateway = new ToolGateway(tools);
      const events: CodeActEvent[] = [];
      const agent = new AgentLoop({
        provider: await providerFor('openai-compatible', server),
        model: DEFAULT_MODELS['openai-compatible'],
        runtime,
        gateway,
        onEvent: (e) => events.push(e),
      });
      const result = await agent.run([], 'Scale the web deployment to 3 replicas.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));

      // The first request: the short listing, within budget and under 10% of every schema inline.
      const body = server.turns[0].body;
      const description: string = body.tools[0].function.description;
      const inline = executeToolCodeSpec([]).description + inlineToolLines(tools).join('\n');
      assert.ok(estimateTextTokens(description) <= COMPACT_TOKEN_BUDGET + 700, `${estimateTextTokens(description)} tokens`);
      assert.ok(description.length <= inline.length / 10);
      assert.match(description, /search_tools/);
      const system = systemOf('openai-compatible', body);
      assert.match(system, /300 managed tools are available/);
      assert.ok(!system.includes('k8s_scale_deployment'), 'the system prompt does not list 300 names');

      const exec = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') as { item: CodeInterpreterCallItem };
      assert.equal(exec.item.status, 'completed', JSON.stringify(exec.item.error));
      const value = exec.item.value as { first: string; err: string; done: unknown; required: string[] };
      assert.equal(value.first, 'k8s_scale_deployment');
      assert.equal(
        value.err,
        "k8s_scale_deployment() got an unexpected keyword argument 'replica' (did you mean 'replicas'?). Signature: k8s_scale_deployment(*, deployment: str, replicas: int, namespace: str = 'default')",
      );
      assert.deepEqual(value.done, { ok: true, message: 'k8s_scale_deployment done' });
      assert.deepEqual(value.required, ['deployment', 'replicas']);

      // One real tool call; the discovery calls are tagged and never recorded as tool calls; the catalogue
      // the guest fetched to build its `tools` module is not shown at all.
      assert.deepEqual(calls, ['k8s_scale_deployment:{"deployment":"web","replicas":3}']);
      assert.deepEqual(
        gateway.records.map((r) => r.name),
        ['k8s_scale_deployment'],
      );
      const started = events.filter((e) => e.type === 'codeact.tool_call.started') as Extract<CodeActEvent, { type: 'codeact.tool_call.started' }>[];
      assert.deepEqual(
        started.map((e) => [e.name, e.kind ?? null]),
        [
          ['codeact.search_tools', 'discovery'],
          ['k8s_scale_deployment', null],
          ['codeact.describe_tool', 'discovery'],
        ],
      );
      const completed = events.filter((e) => e.type === 'codeact.tool_call.completed' && e.kind === 'discovery');
      assert.equal(completed.length, 2);
    } finally {
      await server.close();
    }
  });
});
