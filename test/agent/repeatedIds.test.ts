/**
 * Turns never collide. OpenAI-compatible and scripted servers reuse tool-call ids
 * (`call_0`) and response ids from one turn to the next, and even within one response. Every item of the
 * events, the history and the panel has an id of ours; the provider's ids are kept only for the wire.
 *
 * With each of the four adapters (real SDKs against loopback wire servers): two chat turns whose calls are
 * all `call_0` (two of them in one response), every response with the same id. Turn 1's card keeps its
 * code and result after turn 2, also when the transcript is rebuilt from the saved events; each result goes
 * back to the model answering its own call. And transcripts saved before ids were ours still load, with a
 * card per turn.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent, CodeInterpreterCallItem, FunctionCallItem, FunctionCallOutputItem } from '../../src/common/events';
import { buildTranscript, type ExecView, type FunctionView, type MessageView, type TranscriptEvent, type TranscriptModel } from '../../src/common/transcript';
import { AgentLoop } from '../../src/core/agent/agent';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ConversationItem, ProviderId } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { DEFAULT_MODELS, providerFor, resultsInRequest, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const PROVIDERS: ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];
/** The one response id every scripted response carries (Anthropic message ids used to name its text items). */
const SAME_RESPONSE = { openai: 'resp_0', 'openai-compatible': 'chatcmpl-0', anthropic: 'msg_0', gemini: 'resp0' } as const;

const CODE1 = 'print("turn one")\nreturn 1';
const CODE2 = 'return 2';
const CODE3 = 'return 3';

/** The cards of one turn of the panel's model, in order. */
function cardsOf(model: TranscriptModel, turnIndex: number): ExecView[] {
  return model.turns[turnIndex].itemKeys.map((k) => model.items[k]).filter((v): v is ExecView => v?.kind === 'exec');
}

function messagesOf(model: TranscriptModel, turnIndex: number): string[] {
  return model.turns[turnIndex].itemKeys
    .map((k) => model.items[k])
    .filter((v): v is MessageView => v?.kind === 'message')
    .map((m) => m.text);
}

describe("turns never collide: ids are ours, the provider's are kept for the wire", function () {
  this.timeout(90_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());

  for (const provider of PROVIDERS) {
    describe(provider, () => {
      let server: WireServer;
      beforeEach(async () => (server = await startServerFor(provider)));
      afterEach(() => server.close());

      it('two turns whose calls are all "call_0" (two in one response): each card keeps its own code and result, also rebuilt from the saved events', async () => {
        const id = SAME_RESPONSE[provider];
        server.push(
          turn().call('execute_tool_code', { code: CODE1 }, { id: 'call_0', chunkSize: 5 }).with({ id }),
          turn().text('One.').with({ id }),
          turn().call('execute_tool_code', { code: CODE2 }, { id: 'call_0' }).call('execute_tool_code', { code: CODE3 }, { id: 'call_0' }).with({ id }),
          turn().text('Two and three.').with({ id }),
        );
        const events: TranscriptEvent[] = [];
        const history: ConversationItem[] = [];
        const chat = async (n: number, prompt: string) => {
          events.push({ type: 'codeact.turn.started', turn_id: `turn_${n}`, prompt, source: 'chat' });
          const agent = new AgentLoop({
            provider: await providerFor(provider, server),
            model: DEFAULT_MODELS[provider],
            runtime,
            gateway: new ToolGateway([]),
            onEvent: (e: CodeActEvent) => events.push(e),
          });
          const result = await agent.run(history, prompt);
          assert.equal(result.status, 'completed', JSON.stringify(result.error));
          history.push(...result.items);
          events.push({ type: 'codeact.turn.ended', turn_id: `turn_${n}`, status: 'completed' });
        };
        await chat(1, 'first');
        const afterTurn1 = buildTranscript(events);
        await chat(2, 'second');

        // The events: three executions, three function calls, three outputs, each with an id of ours.
        const done = events.flatMap((e) => (e.type === 'response.output_item.done' ? [e.item] : []));
        const execs = done.filter((i): i is CodeInterpreterCallItem => i.type === 'code_interpreter_call');
        assert.equal(new Set(execs.map((x) => x.id)).size, 3, `three executions, three ids: ${execs.map((x) => x.id).join(', ')}`);
        assert.deepEqual(execs.map((x) => [x.code, x.value]).sort(), [
          [CODE1, 1],
          [CODE2, 2],
          [CODE3, 3],
        ]);
        const calls = history.filter((i): i is FunctionCallItem & ConversationItem => i.type === 'function_call');
        assert.deepEqual(
          calls.map((c) => c.call_id),
          ['call_0', 'call_0', 'call_0'],
          "the provider's call ids are kept, for the wire",
        );
        assert.equal(new Set(calls.map((c) => c.id)).size, 3, 'our ids are distinct');
        assert.ok(calls.every((c) => c.id && c.id !== c.call_id));
        // Each output names its own call (by our id) and carries that call's result.
        const outputs = history.filter((i): i is FunctionCallOutputItem => i.type === 'function_call_output');
        for (const out of outputs) {
          const call = calls.find((c) => c.id === out.item_id)!;
          assert.ok(call, `output ${out.id} names a call of ours`);
          const expected = JSON.parse(call.arguments!).code === CODE1 ? 1 : JSON.parse(call.arguments!).code === CODE2 ? 2 : 3;
          assert.match(out.output, new RegExp(`"value":${expected}\\b`));
        }
        const messageIds = done.filter((i) => i.type === 'message').map((m) => m.id);
        assert.equal(new Set(messageIds).size, messageIds.length, `message ids are distinct although every response had id ${id}`);

        // The model got each result back, answering its call, in order.
        const sent = resultsInRequest(provider, server.turns[3].body);
        assert.equal(sent.length, 3);
        sent.forEach((text, i) => assert.match(text, new RegExp(`"value":${i + 1}\\b`)));

        // The panel: turn 1's card is the same after turn 2; turn 2 has two cards of its own.
        for (const model of [buildTranscript(events), buildTranscript(JSON.parse(JSON.stringify(events)))]) {
          const [one] = cardsOf(model, 0);
          assert.equal(cardsOf(model, 0).length, 1);
          assert.equal(one.code, CODE1);
          assert.equal(one.value, 1);
          assert.equal(one.status, 'done');
          assert.match(one.output.chunks.map((c) => c.text).join(''), /turn one/);
          assert.deepEqual(
            { code: one.code, value: one.value, status: one.status },
            { code: cardsOf(afterTurn1, 0)[0].code, value: cardsOf(afterTurn1, 0)[0].value, status: 'done' },
          );
          assert.deepEqual(
            cardsOf(model, 1).map((x) => [x.code, x.value, x.status]),
            [
              [CODE2, 2, 'done'],
              [CODE3, 3, 'done'],
            ],
          );
          assert.deepEqual(messagesOf(model, 0), ['One.']);
          assert.deepEqual(messagesOf(model, 1), ['Two and three.']);
        }
      });
    });
  }

  it('a transcript saved before ids were ours (exec_call_0 and call_0 in both turns) loads with a card per turn', () => {
    // As the earlier versions wrote them: the execution id derived from the provider's call id.
    const execTurn = (n: number, code: string, value: number): TranscriptEvent[] => [
      { type: 'codeact.turn.started', turn_id: `t${n}`, prompt: `p${n}`, source: 'chat' },
      {
        type: 'response.output_item.added',
        item: { type: 'function_call', id: 'call_0', call_id: 'call_0', name: 'execute_tool_code', arguments: '', status: 'in_progress' },
      },
      { type: 'response.code_interpreter_call.in_progress', item_id: 'exec_call_0', runtime: 'local' },
      { type: 'response.code_interpreter_call_code.delta', item_id: 'exec_call_0', delta: code },
      { type: 'response.code_interpreter_call_code.done', item_id: 'exec_call_0', code },
      { type: 'codeact.tool_call.started', item_id: 'exec_call_0', call_id: 'exec_call_0:1', name: 'lookup', arguments: { n } },
      { type: 'codeact.tool_call.completed', item_id: 'exec_call_0', call_id: 'exec_call_0:1', name: 'lookup', output: n, duration_ms: 3 },
      {
        type: 'response.output_item.done',
        item: { type: 'code_interpreter_call', id: 'exec_call_0', status: 'completed', code, runtime: 'local', outputs: [], value },
      },
      {
        type: 'response.output_item.added',
        item: { type: 'function_call', id: 'call_1', call_id: 'call_1', name: 'get_weather', arguments: '', status: 'in_progress' },
      },
      { type: 'response.function_call_arguments.delta', item_id: 'call_1', call_id: 'call_1', delta: `{"n":${n}}` },
      { type: 'response.output_item.done', item: { type: 'function_call_output', call_id: 'call_1', output: `weather ${n}` } },
      { type: 'response.output_text.done', item_id: 'msg_0_0', text: `answer ${n}` },
      { type: 'codeact.turn.ended', turn_id: `t${n}`, status: 'completed' },
    ];
    const model = buildTranscript([...execTurn(1, 'return 1', 1), ...execTurn(2, 'return 2', 2)]);
    const cards = [cardsOf(model, 0), cardsOf(model, 1)];
    assert.deepEqual(
      cards.map((c) => c.map((x) => [x.code, x.value, x.tools.map((t) => t.output)])),
      [[['return 1', 1, [1]]], [['return 2', 2, [2]]]],
    );
    const fns = [0, 1].map((t) => model.turns[t].itemKeys.map((k) => model.items[k]).filter((v): v is FunctionView => v?.kind === 'function'));
    assert.deepEqual(
      fns.map((f) => f.map((x) => [x.arguments, x.output])),
      [[['{"n":1}', 'weather 1']], [['{"n":2}', 'weather 2']]],
    );
    assert.deepEqual([messagesOf(model, 0), messagesOf(model, 1)], [['answer 1'], ['answer 2']]);
  });
});
