/**
 * The switch to the text protocol, whatever the server's wording: the agent loop, the official openai SDK,
 * a loopback OpenAI-compatible server answering with exact bodies, code running in the real local guest.
 *   - A rejection that mentions tools switches at once.
 *   - A 400, 422 or 500 that says nothing useful (FastAPI's `{"detail": …}` the SDK cannot read, a bare
 *     "Internal Server Error") gets one retry without tools; if that succeeds, the switch is made and
 *     remembered; if it fails, the first error is reported and nothing is remembered.
 *   - One retry, no loops; none for an error clearly about something else, none once tools worked.
 */
import * as assert from 'node:assert/strict';
import type { CodeActEvent } from '../../src/common/events';
import { forgetToolRejections } from '../../src/core/agent/textProtocol';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { startServerFor, wireAgent } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { replay, turn } from '../support/wire/turn';
import { orderDeskTools, toolsOf } from '../support/textWire';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';

const json = (status: number, body: unknown) => replay(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const CODE = 'print(6 * 7)';

describe('agent loop: falling back to the text protocol without depending on wording', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  let server: WireServer | undefined;
  after(() => runtime.dispose());
  afterEach(async () => {
    forgetToolRejections();
    await server?.close();
    server = undefined;
  });

  async function run(prompt = 'What is 6 times 7?') {
    const events: CodeActEvent[] = [];
    const agent = await wireAgent('openai-compatible', server!, {
      runtime,
      gateway: new ToolGateway(orderDeskTools()),
      onEvent: (e) => events.push(e),
      retry: { baseDelayMs: 5, maxDelayMs: 20 },
    });
    const result = await agent.run([], prompt);
    const notices = events.filter((e): e is Extract<CodeActEvent, { type: 'codeact.retry' }> => e.type === 'codeact.retry');
    const execs = events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item] : []));
    return { result, events, notices, execs };
  }

  /** A block that runs, then the answer: what a model without function calling writes. */
  function scriptText(): void {
    server!.push(turn().text(`I will compute it.\n\`\`\`python\n${CODE}\n\`\`\``), turn().text('It is 42.'));
  }

  const withTools = () => server!.turns.map((r) => toolsOf('openai-compatible', r.body) !== undefined);

  const wordings: [string, number, unknown][] = [
    ['"tools" is not supported', 400, { error: { message: '"tools" is not supported' } }],
    ['function calling not available', 400, { error: { message: 'function calling not available for this model' } }],
    ['Unsupported parameter: tool_choice', 422, { error: { message: 'Unsupported parameter: tool_choice', param: 'tool_choice' } }],
  ];
  for (const [what, status, body] of wordings) {
    it(`${what} (${status}): switches at once and the turn goes on in text form`, async () => {
      server = await startServerFor('openai-compatible', 'openai');
      server.push(json(status, body));
      scriptText();
      const { result, notices, execs } = await run();
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.equal(result.text, 'It is 42.');
      assert.deepEqual(withTools(), [true, false, false]);
      assert.equal(notices.length, 1);
      assert.ok(notices[0].message.includes(PROVIDER_MESSAGES.toolsUnsupported), notices[0].message);
      assert.match(notices[0].message, /text protocol/);
      assert.deepEqual(
        execs.map((e) => [e.status, e.code]),
        [['completed', CODE]],
      );
    });
  }

  it('a 422 whose FastAPI body the SDK cannot read: one retry without tools, which works, so the switch is made and remembered', async () => {
    server = await startServerFor('openai-compatible', 'vllm');
    server.push(json(422, { detail: [{ loc: ['body', 'tools'], msg: 'extra fields not permitted', type: 'value_error.extra' }] }));
    scriptText();
    const { result, notices, execs } = await run();
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    assert.equal(result.text, 'It is 42.');
    assert.deepEqual(withTools(), [true, false, false]);
    assert.equal(notices.length, 1);
    assert.match(notices[0].message, /rejected the request with tools.*HTTP 422.*once without tools/s);
    assert.equal(execs.length, 1);
    assert.equal(execs[0].status, 'completed');

    // Remembered: the next run sends no tools and says nothing.
    server.push(turn().text('Still 42.'));
    const later = await run('Sure?');
    assert.equal(later.result.status, 'completed');
    assert.deepEqual(withTools(), [true, false, false, false]);
    assert.equal(later.notices.length, 0);
  });

  it('a bare 500 "Internal Server Error": the usual retries, then one retry without tools, which works', async () => {
    server = await startServerFor('openai-compatible', 'llamacpp');
    for (let i = 0; i < 4; i++) server.push(replay('Internal Server Error', { status: 500, headers: { 'content-type': 'text/plain' } }));
    scriptText();
    const { result } = await run();
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    assert.deepEqual(withTools(), [true, true, true, true, false, false]);
  });

  it('when the retry without tools fails too, the first error is reported, once, and nothing is remembered', async () => {
    server = await startServerFor('openai-compatible', 'openai');
    server.push(json(400, { error: { message: "Invalid value for 'top_k'" } }), json(400, { error: { message: "Invalid value for 'top_k'" } }));
    const { result, notices } = await run();
    assert.equal(result.status, 'failed');
    assert.equal(result.error?.code, 'bad_request');
    assert.match(result.error!.message, /HTTP 400.*Invalid value for 'top_k'.*without tools failed too/s);
    assert.deepEqual(withTools(), [true, false], 'one retry, without tools, and no more');
    assert.equal(notices.length, 1);

    // Not remembered: the next run offers tools again.
    server.push(turn().text('Hello.'));
    const later = await run('Hi');
    assert.equal(later.result.status, 'completed');
    assert.deepEqual(withTools(), [true, false, true]);
  });

  it('an error clearly about something else (an unknown model) is not retried without tools', async () => {
    server = await startServerFor('openai-compatible', 'openai');
    server.push(json(400, { error: { message: "The model 'qwen9' does not exist" } }));
    const { result, notices } = await run();
    assert.equal(result.status, 'failed');
    assert.deepEqual(withTools(), [true]);
    assert.equal(notices.length, 0);
  });

  it('once a request with tools has worked in this run, a later 400 is not blamed on tools', async () => {
    server = await startServerFor('openai-compatible', 'openai');
    server.push(turn().call('execute_tool_code', { code: CODE }), json(400, { error: { message: 'Bad request' } }));
    const { result, notices, execs } = await run();
    assert.equal(result.status, 'failed');
    assert.equal(execs.length, 1);
    assert.deepEqual(withTools(), [true, true]);
    assert.equal(notices.length, 0);
  });
});
