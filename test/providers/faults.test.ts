/**
 * Faults, for every provider, through the real SDKs: HTTP errors (429 then success, 500, 401, 404,
 * context overflow), a body cut mid-event, malformed JSON in the stream, a mid-stream error event, and
 * Stop (an AbortSignal aborts the HTTP request; the server sees the connection close). Each maps to a
 * ProviderError code with a message that says what to do, and the events received before the failure
 * stay emitted.
 */
import assert from 'node:assert/strict';
import { keyHint, ProviderError, PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';
import { providerInfo } from '../../src/common/providers';
import { createProvider } from '../../src/core/providers/factory';
import type { ProviderId } from '../../src/core/providers/shared/types';
import { DEFAULT_MODELS, Recorder, providerFor, runFailingTurn, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';

const PROVIDERS: ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];
const KEY_VARS: Record<ProviderId, RegExp> = {
  openai: /OPENAI_API_KEY/,
  'openai-compatible': /OPENAI_COMPATIBLE_API_KEY/,
  anthropic: /ANTHROPIC_API_KEY/,
  gemini: /GEMINI_API_KEY or GOOGLE_API_KEY/,
};
const STREAM_ERROR: Record<ProviderId, [string, string]> = {
  openai: ['server_error', 'server'],
  'openai-compatible': ['server_error', 'server'],
  anthropic: ['overloaded_error', 'server'],
  gemini: ['UNAVAILABLE', 'server'],
};
const CONTEXT_MESSAGE: Record<ProviderId, string> = {
  openai: "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens.",
  'openai-compatible': "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
  anthropic: 'prompt is too long: 210000 tokens > 200000 maximum',
  gemini: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
};

const answer = (): ReturnType<typeof turn> => turn().text('The quick brown fox jumps over the lazy dog, twice.', { chunkSize: 4 });

for (const p of PROVIDERS) {
  describe(`providers: faults (${p})`, () => {
    let server: WireServer;
    beforeEach(async () => {
      server = await startServerFor(p);
    });
    afterEach(async () => {
      await server.close();
    });

    it('429 with retry-after is a retryable rate_limit; the next request succeeds', async () => {
      server.push(fault.status(429, { retryAfter: 2 }), answer());
      const provider = await providerFor(p, server);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'rate_limit');
      assert.equal(error.status, 429);
      assert.equal(error.retryable, true);
      assert.equal(error.retryAfterMs, 2000);
      assert.ok(error.message.includes(PROVIDER_MESSAGES.rateLimiting), error.message);
      assert.equal(rec.events.length, 0);
      // The SDK did not retry by itself: one request so far.
      assert.equal(server.turns.length, 1);
      const { rec: ok } = await runTurn(provider, { history: [userMessage('hi')] });
      assert.equal(ok.text(), 'The quick brown fox jumps over the lazy dog, twice.');
      assert.equal(server.turns.length, 2);
    });

    it('500 is a retryable server error, not retried by the SDK', async () => {
      server.push(fault.status(500));
      const provider = await providerFor(p, server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'server');
      assert.equal(error.status, 500);
      assert.equal(error.retryable, true);
      assert.ok(error.message.includes(PROVIDER_MESSAGES.serverError(' (HTTP 500)')), error.message);
      assert.ok(error.message.endsWith(PROVIDER_MESSAGES.usuallyTemporary), error.message);
      assert.equal(server.turns.length, 1);
    });

    it('401 says which key and where to set it', async () => {
      server.push(fault.status(401));
      const provider = await providerFor(p, server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'auth');
      assert.equal(error.retryable, false);
      assert.match(error.message, /rejected the API key \(HTTP 401\)/);
      assert.match(error.message, KEY_VARS[p]);
      assert.ok(error.message.includes(keyHint(p)), error.message);
    });

    it('404 is an unknown model, naming it', async () => {
      server.push(fault.status(404));
      const provider = await providerFor(p, server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'unknown_model');
      assert.ok(error.message.includes(`"${DEFAULT_MODELS[p]}"`), error.message);
      assert.match(error.message, /Check the model name/);
    });

    it('a context-length 400 is context_overflow', async () => {
      server.push(fault.status(400, { message: CONTEXT_MESSAGE[p], code: p === 'openai' ? 'context_length_exceeded' : undefined }));
      const provider = await providerFor(p, server);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'context_overflow');
      assert.equal(error.retryable, false);
      assert.match(error.message, /too long for .*context window.*Start a new conversation/);
    });

    it('a body cut mid-event is stream_cut; the text received before is kept', async () => {
      // Enough frames in for some text deltas to have arrived before the cut.
      server.push(fault.cut(answer(), p === 'openai' ? 9 : p === 'anthropic' ? 6 : 5));
      const provider = await providerFor(p, server);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'stream_cut');
      assert.equal(error.retryable, true);
      assert.ok(error.message.endsWith(PROVIDER_MESSAGES.cut(' cut', providerInfo(p).who)), error.message);
      const got = rec.text();
      assert.ok(got.length > 0 && 'The quick brown fox jumps over the lazy dog, twice.'.startsWith(got), `kept ${JSON.stringify(got)}`);
      assert.deepEqual(
        error.partial?.items.map((i) => i.type === 'message' && i.text),
        [got],
      );
    });

    it('malformed JSON in the stream is malformed_stream; the text before is kept', async () => {
      server.push(fault.malformed(answer(), p === 'openai' ? 8 : p === 'anthropic' ? 6 : 4));
      const provider = await providerFor(p, server);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'malformed_stream');
      assert.match(error.message, /malformed stream event/);
      assert.ok(rec.text().length > 0);
      assert.equal(error.partial?.items.length, 1);
    });

    it('an error event mid-stream is a retryable server error; the text before is kept', async () => {
      const [type, code] = STREAM_ERROR[p];
      server.push(fault.streamError(answer(), p === 'openai' ? 8 : p === 'anthropic' ? 6 : 4, type, 'Overloaded'));
      const provider = await providerFor(p, server);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, code);
      assert.equal(error.retryable, true);
      assert.match(error.message, /Overloaded/);
      assert.ok(rec.text().length > 0);
    });

    it('Stop: aborting the signal aborts the HTTP request and the server sees the connection close', async () => {
      server.push(fault.endless(10));
      const provider = await providerFor(p, server);
      const ac = new AbortController();
      const rec = new Recorder();
      let deltas = 0;
      const pending = provider.streamTurn({ model: DEFAULT_MODELS[p], history: [userMessage('go on forever')], tools: [], signal: ac.signal }, (e) => {
        rec.emit(e);
        if (e.type === 'response.output_text.delta' && ++deltas === 3) ac.abort();
      });
      const error = await pending.then(
        () => assert.fail('the turn should have been stopped'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ProviderError);
      assert.equal(error.code, 'aborted');
      assert.equal(error.retryable, false);
      assert.ok(rec.text().startsWith('tick tick') || rec.text().startsWith('start tick'), rec.text());
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true, 'the server saw the client go away mid-response');
    });

    it('an already-aborted signal sends no request', async () => {
      const provider = await providerFor(p, server);
      const ac = new AbortController();
      ac.abort();
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], signal: ac.signal });
      assert.equal(error.code, 'aborted');
      assert.equal(server.turns.length, 0);
    });
  });
}

describe('providers: configuration errors', () => {
  for (const p of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${p}: a missing key says which variable to set and where`, async () => {
      await assert.rejects(createProvider({ provider: p, env: {} }), (e: unknown) => {
        assert.ok(e instanceof ProviderError);
        assert.equal(e.code, 'auth');
        assert.match(e.message, KEY_VARS[p]);
        assert.ok(e.message.includes(keyHint(p)), e.message);
        return true;
      });
    });
  }

  it('keys come from the environment: GEMINI_API_KEY, else GOOGLE_API_KEY', async () => {
    const server = await startServerFor('gemini');
    try {
      server.push(answer(), answer());
      const a = await createProvider({ provider: 'gemini', baseURL: server.url, env: { GOOGLE_API_KEY: 'g-key' } });
      await runTurn(a, { history: [userMessage('hi')] });
      const b = await createProvider({ provider: 'gemini', baseURL: server.url, env: { GOOGLE_API_KEY: 'g-key', GEMINI_API_KEY: 'gem-key' } });
      await runTurn(b, { history: [userMessage('hi')] });
      assert.deepEqual(
        server.turns.map((t) => t.headers['x-goog-api-key']),
        ['g-key', 'gem-key'],
      );
    } finally {
      await server.close();
    }
  });

  it('a connection refused names the base URL', async () => {
    const server = await startServerFor('openai-compatible');
    const url = server.url;
    await server.close();
    const provider = await createProvider({ provider: 'openai-compatible', baseURL: url, env: {} });
    const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
    assert.equal(error.code, 'server');
    assert.ok(error.message.includes(url), error.message);
    assert.match(error.message, /is the server running\?/);
  });
});
