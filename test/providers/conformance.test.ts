/**
 * Conformance against real recorded provider streams (../shared/fixtures/providers, beside the
 * repository; never copied into it). Each recorded body is served byte for byte from a loopback
 * server to the real SDK client, and the normalised events are checked against values computed from
 * the recording itself: code, code deltas, logs (stdout with stderr apart), images, files, text,
 * function calls, the per-item event order, and the second request carrying the results.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { logsOf, type FunctionCallOutputItem } from '../../src/common/events';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { cassetteResponse, fixturesDir, loadCassette, parseSse } from '../support/wire/cassette';
import { assertCodeItemOrder, providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { replay } from '../support/wire/turn';

type Json = Record<string, any>;

const DIR = fixturesDir();
const HAVE = fs.existsSync(DIR);

function fixture(name: string): string | undefined {
  const p = path.join(DIR, name);
  return fs.existsSync(p) ? p : undefined;
}

function events(body: string): Json[] {
  return parseSse(body)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as Json);
}

describe('providers: conformance with recorded streams', function () {
  if (!HAVE) {
    it(`recorded provider streams (${DIR} not found; it holds the real recordings beside the repository)`, function () {
      // CI has ../shared: there the recordings must be found and every conformance test must run and count.
      if (process.env.CI) throw new Error(`${DIR} is missing: CI must run the provider conformance suite against the recorded streams.`);
      this.skip();
    });
    return;
  }

  let server: WireServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function need(name: string, ctx: Mocha.Context): string {
    const f = fixture(name);
    if (!f && process.env.CI) throw new Error(`${name} is missing from ${DIR}: CI must run every conformance test.`);
    if (!f) ctx.skip();
    return f as string;
  }

  it('01 OpenAI Responses code_interpreter with an image: code, logs, image, files, text, order', async function () {
    const file = need('01-openai-responses--code_interpreter_image_stream.pydantic-ai.yaml', this);
    const [i0] = loadCassette(file);
    const rec = events(i0.response.body);
    const codeItems = rec.filter((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call').map((e) => e.item);
    const message = rec.find((e) => e.type === 'response.output_item.done' && e.item.type === 'message')!.item;
    const recordedText = message.content.map((c: Json) => c.text).join('');
    const citations = message.content.flatMap((c: Json) => c.annotations).filter((a: Json) => a.type === 'container_file_citation');
    assert.ok(codeItems.length > 0 && citations.length > 0);

    server = await startServerFor('openai');
    server.push(cassetteResponse(i0, { chunkBytes: 4093 }));
    const provider = await providerFor('openai', server);
    const { result, rec: got } = await runTurn(provider, { history: [userMessage('Plot y = x^2')], hosted: { enabled: true }, toolChoice: 'required' });

    for (const [k, expected] of codeItems.entries()) {
      // In the recorded order (the item ids are ours; the provider's stay in the replay data).
      const item = got.codeItems()[k];
      const code = assertCodeItemOrder(got, item.id);
      assert.equal(code, expected.code);
      assert.equal(item.runtime, 'openai');
      assert.equal(item.container_id, expected.container_id);
      assert.equal(item.status, 'completed');
      const logs = expected.outputs
        .filter((o: Json) => o.type === 'logs')
        .map((o: Json) => o.logs)
        .join('');
      assert.equal(logsOf(item), logs);
      assert.equal(logsOf(item, 'stderr'), '');
      const images = expected.outputs.filter((o: Json) => o.type === 'image').map((o: Json) => o.url);
      assert.ok(images.length > 0, 'the recording has an image');
      assert.deepEqual(
        item.outputs.filter((o) => o.type === 'image').map((o) => (o as { url: string }).url),
        images,
      );
      assert.ok(images[0].startsWith('data:image/png;base64,'));
    }
    assert.equal(got.text(), recordedText);
    const msgDone = got.ofType('response.output_item.done').find((e) => e.item.type === 'message')!;
    assert.deepEqual(
      (msgDone.item as { annotations?: unknown[] }).annotations,
      message.content.flatMap((c: Json) => c.annotations),
    );
    for (const c of citations) {
      assert.ok(
        result.files.some((f) => f.file_id === c.file_id && f.filename === c.filename && f.container_id === c.container_id),
        `file ${c.file_id} surfaced`,
      );
    }
    assert.equal(result.containerId, codeItems[0].container_id);
    const completed = rec.find((e) => e.type === 'response.completed')!.response;
    assert.equal(result.responseId, completed.id);
    assert.deepEqual(result.usage, {
      input_tokens: completed.usage.input_tokens,
      output_tokens: completed.usage.output_tokens,
      total_tokens: completed.usage.total_tokens,
    });
    assert.equal(got.events[got.events.length - 1].type, 'response.completed');
    // What was asked of the server: the hosted tool with its outputs included.
    const body = server.turns[0].body;
    assert.deepEqual(body.tools, [{ type: 'code_interpreter', container: { type: 'auto' } }]);
    assert.deepEqual(body.include, ['code_interpreter_call.outputs']);
  });

  it('03 OpenAI Responses function call round trip: call, then function_call_output in the 2nd request', async function () {
    const file = need('03-openai-responses--function_call_roundtrip_stream.pydantic-ai.yaml', this);
    const [i0, i1] = loadCassette(file);
    const r0 = events(i0.response.body);
    const fcItem = r0.find((e) => e.type === 'response.output_item.done' && e.item.type === 'function_call')!.item;
    const commentary = r0.find((e) => e.type === 'response.output_item.done' && e.item.type === 'message')!.item.content[0].text;
    const r1 = events(i1.response.body);
    const finalText = r1.find((e) => e.type === 'response.output_text.done')!.text;

    server = await startServerFor('openai');
    server.push(cassetteResponse(i0, { chunkBytes: 211 }), cassetteResponse(i1, { chunkBytes: 97 }));
    const provider = await providerFor('openai', server);
    const tools = [
      {
        name: 'get_capital',
        description: 'Capital of a country',
        parameters: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'] },
      },
    ];
    const history: ConversationItem[] = [userMessage('What is the capital of PotatoLand?')];
    const t1 = await runTurn(provider, { history, tools, system: 'Briefly narrate what you are about to do before calling each tool.' });
    assert.equal(t1.rec.text(), commentary);
    assert.deepEqual(
      t1.result.functionCalls.map(({ call_id, name, arguments: a }) => ({ call_id, name, arguments: a })),
      [{ call_id: fcItem.call_id, name: 'get_capital', arguments: fcItem.arguments }],
    );
    assert.equal(t1.result.stopReason, 'tool_use');
    const added = t1.rec.ofType('response.output_item.added');
    const ourId = t1.result.functionCalls[0].item_id;
    assert.notEqual(ourId, fcItem.id, "the item id is ours; the provider's stays in the replay data");
    assert.deepEqual(
      added.map((e) => e.item),
      [{ type: 'function_call', id: ourId, call_id: fcItem.call_id, name: 'get_capital', arguments: '', status: 'in_progress' }],
    );
    assert.equal(
      t1.rec
        .ofType('response.function_call_arguments.delta')
        .map((e) => e.delta)
        .join(''),
      fcItem.arguments,
    );
    assert.equal(t1.rec.ofType('response.function_call_arguments.done')[0].arguments, fcItem.arguments);

    const output: FunctionCallOutputItem = { type: 'function_call_output', call_id: fcItem.call_id, name: 'get_capital', output: 'Potato City' };
    const t2 = await runTurn(provider, { history: [...history, ...t1.result.items, output], tools });
    assert.equal(t2.rec.text(), finalText);
    assert.equal(t2.result.stopReason, 'end_turn');
    const input: Json[] = server.turns[1].body.input;
    assert.deepEqual(input[0], { role: 'user', content: 'What is the capital of PotatoLand?' });
    assert.deepEqual(input[input.length - 1], { type: 'function_call_output', call_id: fcItem.call_id, output: 'Potato City' });
    // The model's own items go back verbatim (reasoning with its encrypted content, message, call).
    const recordedOutput = r0.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    assert.deepEqual(
      input.slice(1, -1).map((x) => x.id),
      recordedOutput.map((x: Json) => x.id),
    );
    assert.equal(input.find((x) => x.type === 'reasoning')!.encrypted_content, recordedOutput.find((x: Json) => x.type === 'reasoning').encrypted_content);
    assert.deepEqual(
      input.find((x) => x.type === 'function_call'),
      { id: fcItem.id, type: 'function_call', arguments: fcItem.arguments, call_id: fcItem.call_id, name: 'get_capital' },
    );
  });

  it('04 Chat Completions tool_calls merged by index; role:"tool" result in the 2nd request', async function () {
    const file = need('04-openai-chat-completions--tool_calls_roundtrip_stream.pydantic-ai.yaml', this);
    const [i0, i1] = loadCassette(file);
    const chunks0 = events(i0.response.body);
    const firstCall = chunks0.find((c) => c.choices?.[0]?.delta?.tool_calls)!.choices[0].delta.tool_calls[0];
    const args = chunks0
      .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])
      .map((t: Json) => t.function?.arguments ?? '')
      .join('');
    const finalText = events(i1.response.body)
      .map((c) => c.choices?.[0]?.delta?.content ?? '')
      .join('');
    const usage0 = chunks0.find((c) => c.usage)?.usage;

    server = await startServerFor('openai-compatible');
    server.push(cassetteResponse(i0, { chunkBytes: 53 }), cassetteResponse(i1, { chunkBytes: 61 }));
    const provider = await providerFor('openai-compatible', server);
    const tools = [
      { name: firstCall.function.name, description: 'Capital of a country', parameters: { type: 'object', properties: { country: { type: 'string' } } } },
    ];
    const history: ConversationItem[] = [userMessage('What is the capital of the UK?')];
    const t1 = await runTurn(provider, { history, tools }, 'gpt-4o-mini');
    assert.deepEqual(
      t1.result.functionCalls.map(({ call_id, name, arguments: a }) => ({ call_id, name, arguments: a })),
      [{ call_id: firstCall.id, name: firstCall.function.name, arguments: args }],
    );
    assert.equal(t1.result.stopReason, 'tool_use');
    if (usage0)
      assert.deepEqual(t1.result.usage, { input_tokens: usage0.prompt_tokens, output_tokens: usage0.completion_tokens, total_tokens: usage0.total_tokens });

    const t2 = await runTurn(
      provider,
      { history: [...history, ...t1.result.items, { type: 'function_call_output', call_id: firstCall.id, output: 'London' }], tools },
      'gpt-4o-mini',
    );
    assert.equal(t2.rec.text(), finalText);
    const messages: Json[] = server.turns[1].body.messages;
    assert.deepEqual(messages.slice(-2), [
      { role: 'assistant', content: null, tool_calls: [{ id: firstCall.id, type: 'function', function: { name: firstCall.function.name, arguments: args } }] },
      { role: 'tool', tool_call_id: firstCall.id, content: 'London' },
    ]);
  });

  it('05 Anthropic code_execution_20260120 bash: plain command deltas, stdout/stderr apart, exit code, container', async function () {
    const file = need('05-anthropic--code_execution_20260120_bash_stream.pydantic-ai.yaml', this);
    const [i0] = loadCassette(file);
    const rec = events(i0.response.body);
    const useStart = rec.find((e) => e.type === 'content_block_start' && e.content_block.type === 'server_tool_use')!;
    const json = rec
      .filter((e) => e.type === 'content_block_delta' && e.index === useStart.index && e.delta.type === 'input_json_delta')
      .map((e) => e.delta.partial_json)
      .join('');
    const command = JSON.parse(json).command;
    const result = rec.find((e) => e.type === 'content_block_start' && e.content_block.type === 'bash_code_execution_tool_result')!.content_block.content;
    const textIdx = new Set(rec.filter((e) => e.type === 'content_block_start' && e.content_block.type === 'text').map((e) => e.index));
    const text = rec
      .filter((e) => e.type === 'content_block_delta' && textIdx.has(e.index))
      .map((e) => e.delta.text)
      .join('');
    const thinking = rec
      .filter((e) => e.type === 'content_block_delta' && e.delta.type === 'thinking_delta')
      .map((e) => e.delta.thinking)
      .join('');
    const container = rec.find((e) => e.type === 'message_delta')!.delta.container.id;

    server = await startServerFor('anthropic');
    server.push(cassetteResponse(i0, { chunkBytes: 89 }));
    const provider = await providerFor('anthropic', server);
    const { result: res, rec: got } = await runTurn(provider, {
      history: [userMessage('what is 65465-6544 * 65464-6+1.02255')],
      hosted: { enabled: true, toolVersion: 'code_execution_20260120' },
    });

    const code = assertCodeItemOrder(got, got.codeItems()[0].id);
    assert.equal(code, command);
    assert.ok(
      !got.ofType('response.code_interpreter_call_code.delta').some((d) => d.delta.includes('{"command')),
      'code deltas are plain text, not JSON fragments',
    );
    const item = got.codeItems()[0];
    // Our id; the provider's server_tool_use id goes back in the replay data.
    assert.notEqual(item.id, useStart.content_block.id);
    assert.equal((res.items.find((i) => i.type === 'code_interpreter_call')!.replay!.parts[0].data as Json).id, useStart.content_block.id);
    assert.equal(item.tool, 'bash_code_execution');
    assert.equal(logsOf(item), result.stdout);
    assert.equal(logsOf(item, 'stderr'), result.stderr);
    assert.equal(item.exit_code, result.return_code);
    assert.equal(item.status, 'completed');
    // The container id arrives after the item (message_delta): on the result's item and on response.completed.
    assert.equal((res.items.find((i) => i.type === 'code_interpreter_call' && i.id === item.id) as { container_id?: string }).container_id, container);
    assert.equal(res.containerId, container);
    assert.equal(got.ofType('response.completed')[0].response.container_id, container);
    assert.equal(got.text(), text);
    got.assertNoReasoningInOutputText();
    assert.equal(got.text({ thinking: true }), thinking);
    got.assertNoReasoningInOutputText();
    assert.equal(server.turns[0].path, '/v1/messages');
    assert.equal(server.turns[0].headers['anthropic-beta'], undefined, 'code_execution_20260120 needs no beta header');
    assert.deepEqual(server.turns[0].body.tools, [{ type: 'code_execution_20260120', name: 'code_execution' }]);
  });

  it('09 Anthropic client tool: input_json_delta arguments and text', async function () {
    const file = need('09-anthropic--client_tool_use_input_json_delta.anthropic-sdk-ts.sse.txt', this);
    const body = fs.readFileSync(file, 'utf8');
    const rec = events(body);
    const start = rec.find((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use')!;
    const args = rec
      .filter((e) => e.type === 'content_block_delta' && e.index === start.index)
      .map((e) => e.delta.partial_json)
      .join('');
    const text = rec
      .filter((e) => e.type === 'content_block_delta' && e.delta.type === 'text_delta')
      .map((e) => e.delta.text)
      .join('');

    server = await startServerFor('anthropic');
    server.push(replay(body, { headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunkBytes: 37 }));
    const provider = await providerFor('anthropic', server);
    const tools = [{ name: start.content_block.name, description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } }];
    const { result, rec: got } = await runTurn(provider, { history: [userMessage('Weather in SF?')], tools });
    assert.equal(got.text(), text);
    got.assertNoReasoningInOutputText();
    assert.deepEqual(
      result.functionCalls.map(({ call_id, name, arguments: a }) => ({ call_id, name, arguments: a })),
      [{ call_id: start.content_block.id, name: start.content_block.name, arguments: args }],
    );
    assert.deepEqual(JSON.parse(result.functionCalls[0].arguments), JSON.parse(args));
    assert.equal(result.stopReason, 'tool_use');
    assert.equal(server.turns[0].headers['anthropic-beta'], undefined, 'client tools need no beta');
  });

  it('10 Gemini codeExecution: code, output, outcome, text; finishReason does not end the turn early', async function () {
    const file = need('10-gemini--code_execution_stream_gemini3.pydantic-ai.yaml', this);
    const [i0] = loadCassette(file);
    const chunks = events(i0.response.body);
    const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    const ec = parts.find((p: Json) => p.executableCode).executableCode;
    const res = parts.find((p: Json) => p.codeExecutionResult).codeExecutionResult;
    const text = parts
      .filter((p: Json) => typeof p.text === 'string' && !p.thought)
      .map((p: Json) => p.text)
      .join('');
    const last = chunks[chunks.length - 1];

    server = await startServerFor('gemini');
    server.push(cassetteResponse(i0, { chunkBytes: 71 }));
    const provider = await providerFor('gemini', server);
    const { result, rec: got } = await runTurn(provider, { history: [userMessage('what is 65465-6544 * 65464-6+1.02255')], hosted: { enabled: true } });
    const code = assertCodeItemOrder(got, got.codeItems()[0].id);
    assert.equal(code, ec.code);
    const item = got.codeItems()[0];
    assert.equal(item.runtime, 'gemini');
    assert.equal(logsOf(item), res.output);
    assert.equal(logsOf(item, 'stderr'), '');
    assert.equal(item.exit_code, res.outcome === 'OUTCOME_OK' ? 0 : 1);
    assert.equal(item.status, 'completed');
    assert.equal(got.text(), text);
    got.assertNoReasoningInOutputText();
    assert.equal(result.responseId, last.responseId);
    assert.equal(result.usage?.total_tokens, last.usageMetadata.totalTokenCount);
    assert.deepEqual(server.turns[0].body.tools, [{ codeExecution: {} }]);
    assert.equal(server.turns[0].query.alt, 'sse');
    // The code item replays with its thoughtSignature, and the final signature part is kept too.
    const replayParts = result.items.flatMap((i) => i.replay?.parts ?? []).map((p) => p.data as Json);
    assert.ok(replayParts.some((p) => p.executableCode && p.thoughtSignature));
    assert.ok(replayParts.some((p) => p.text === '' && p.thoughtSignature === last.candidates[0].content.parts[0].thoughtSignature));
  });

  it('12 Gemini function call round trip: thoughtSignature echoed, functionResponse in the 2nd request', async function () {
    const file = need('12-gemini--functionCall_roundtrip_stream.pydantic-ai.yaml', this);
    const [i0, i1] = loadCassette(file);
    const parts0 = events(i0.response.body).flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    const callPart = parts0.find((p: Json) => p.functionCall);
    const finalText = events(i1.response.body)
      .flatMap((c) => c.candidates?.[0]?.content?.parts ?? [])
      .filter((p: Json) => typeof p.text === 'string' && !p.thought)
      .map((p: Json) => p.text)
      .join('');

    server = await startServerFor('gemini');
    server.push(cassetteResponse(i0, { chunkBytes: 101 }), cassetteResponse(i1, { chunkBytes: 43 }));
    const provider = await providerFor('gemini', server);
    const tools = [{ name: callPart.functionCall.name, description: '', parameters: { type: 'object', properties: {}, additionalProperties: false } }];
    const history: ConversationItem[] = [userMessage('What is the capital of the user country? Call the tool')];
    const t1 = await runTurn(provider, { history, tools }, 'gemini-3-pro-preview');
    assert.equal(t1.result.functionCalls.length, 1);
    const call = t1.result.functionCalls[0];
    assert.equal(call.name, callPart.functionCall.name);
    assert.deepEqual(JSON.parse(call.arguments), callPart.functionCall.args);
    assert.equal(t1.result.stopReason, 'tool_use');

    const t2 = await runTurn(
      provider,
      { history: [...history, ...t1.result.items, { type: 'function_call_output', call_id: call.call_id, output: 'Mexico' }], tools },
      'gemini-3-pro-preview',
    );
    assert.equal(t2.rec.text(), finalText);
    const contents: Json[] = server.turns[1].body.contents;
    assert.equal(contents.length, 3);
    assert.deepEqual(contents[1].role, 'model');
    const echoed = contents[1].parts.find((p: Json) => p.functionCall);
    assert.deepEqual(echoed, callPart, 'the functionCall part goes back verbatim, thoughtSignature included');
    assert.deepEqual(contents[2], { role: 'user', parts: [{ functionResponse: { name: callPart.functionCall.name, response: { output: 'Mexico' } } }] });
    assert.deepEqual(server.turns[1].body.tools, [
      { functionDeclarations: [{ name: callPart.functionCall.name, description: '', parametersJsonSchema: tools[0].parameters }] },
    ]);
  });
});
