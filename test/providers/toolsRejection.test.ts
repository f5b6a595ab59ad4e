/**
 * An OpenAI-compatible server that rejects `tools`, in the many wordings real servers and proxies use:
 * the official openai SDK against a loopback server that answers with the exact body. Any 400, 422, 500
 * or 501 whose body mentions tools or functions (quoted, in JSON, in a `param`, in another order) is a
 * `tools_unsupported` error; the same body for a request without tools, or about the conversation's own
 * tool calls, is not.
 */
import assert from 'node:assert/strict';
import { EXECUTE_TOOL_CODE, providerFor, runFailingTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { replay } from '../support/wire/turn';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';

const json = (status: number, body: unknown) => replay(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('providers: OpenAI-compatible rejections of tools, whatever the wording', () => {
  let server: WireServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const rejections: [string, number, unknown][] = [
    ['a quoted parameter name', 400, { error: { message: '"tools" is not supported' } }],
    ['function calling, in other words', 400, { error: { message: 'function calling not available for this model', type: 'invalid_request_error' } }],
    ['the tool_choice parameter', 400, { error: { message: 'Unsupported parameter: tool_choice', type: 'invalid_request_error', param: 'tool_choice' } }],
    [
      'only the JSON param names it (422)',
      422,
      { error: { message: 'Invalid request', type: 'invalid_request_error', param: 'tools', code: 'unsupported_parameter' } },
    ],
    ['JSON inside the message, in another order (500)', 500, { error: { code: 500, message: '{"error":"Not supported: tools"}', type: 'server_error' } }],
    ['an error that is a bare string', 400, { error: 'this backend: tool use unavailable' }],
    ['Not Implemented (501), functions', 501, { error: { message: 'functions are not implemented by this proxy' } }],
  ];
  for (const [what, status, body] of rejections) {
    it(`${what}: tools_unsupported, not retried, naming the server`, async () => {
      server = await startServerFor('openai-compatible', 'openai');
      server.push(json(status, body));
      const provider = await providerFor('openai-compatible', server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [EXECUTE_TOOL_CODE] });
      assert.equal(error.code, 'tools_unsupported', error.message);
      assert.equal(error.status, status);
      assert.equal(error.retryable, false);
      assert.ok(error.message.includes(PROVIDER_MESSAGES.toolsUnsupported), error.message);
      assert.ok(error.message.includes(server.url), 'names the server');
      assert.equal(server.turns.length, 1);
    });
  }

  it('the same words for a request without tools are a plain bad request', async () => {
    server = await startServerFor('openai-compatible', 'openai');
    server.push(json(400, { error: { message: '"tools" is not supported' } }));
    const provider = await providerFor('openai-compatible', server);
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [] });
    assert.equal(error.code, 'bad_request');
  });

  it("an error about the conversation's own tool calls is not a rejection of tools", async () => {
    server = await startServerFor('openai-compatible', 'vllm');
    server.push(json(400, { error: { message: 'messages[2].tool_calls[0].function.arguments must be a JSON string', type: 'BadRequestError', code: 400 } }));
    const provider = await providerFor('openai-compatible', server);
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [EXECUTE_TOOL_CODE] });
    assert.equal(error.code, 'bad_request');
  });

  it('"toolbox" and "functionality" are not mentions of tools', async () => {
    server = await startServerFor('openai-compatible', 'openai');
    server.push(json(400, { error: { message: 'the toolbox functionality is disabled' } }));
    const provider = await providerFor('openai-compatible', server);
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], tools: [EXECUTE_TOOL_CODE] });
    assert.equal(error.code, 'bad_request');
  });
});
