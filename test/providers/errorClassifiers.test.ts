/**
 * The error classifier of each SDK (openai/openaiErrors, anthropic/anthropicErrors, gemini/geminiErrors),
 * read through the real SDKs against the loopback wire servers: each SDK's own error words decide the
 * error when the HTTP status does not (a stream's error event, a 400 that names the reason), the registry
 * hands each provider the classifier of its SDK, and a classifier knows no other SDK's words.
 */
import assert from 'node:assert/strict';
import { PROVIDER_IDS, type ProviderId } from '../../src/common/providers';
import { providerEntry } from '../../src/core/providers/registry';
import type { SdkErrorKind } from '../../src/core/providers/shared/errorReading';
import { providerFor, runFailingTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';

type Fault = Parameters<WireServer['push']>[0];

interface Case {
  /** What the provider sends: its word, in a stream's error event or a 400's body. */
  say: string;
  fault: () => Fault;
  /** The ProviderError's code the shared chain makes of it. */
  code: string;
  /** What the SDK's classifier reads the word as. */
  kind: SdkErrorKind | undefined;
  status: number | undefined;
}

const answer = () => turn().text('The quick brown fox jumps over the lazy dog.', { chunkSize: 4 });
const FRAMES: Record<ProviderId, number> = { openai: 8, 'openai-compatible': 4, anthropic: 6, gemini: 4 };
const inStream = (p: ProviderId, word: string) => () => fault.streamError(answer(), FRAMES[p], word, `The provider said ${word}.`);
const in400 = (word: string) => () => fault.status(400, { code: word });

/** A stream's error event carries the word and no status (OpenAI's Responses API gives two of them one). */
const STREAM = (p: ProviderId, rows: [string, string, SdkErrorKind | undefined, number?][]): Case[] =>
  rows.map(([say, code, kind, status]) => ({ say: `stream ${say}`, fault: inStream(p, say), code, kind, status }));
/** A 400 whose body names the reason: the word decides. */
const BAD_REQUEST = (rows: [string, string, SdkErrorKind | undefined][]): Case[] =>
  rows.map(([say, code, kind]) => ({ say: `400 ${say}`, fault: in400(say), code, kind, status: 400 }));

const CASES: Record<ProviderId, Case[]> = {
  openai: STREAM('openai', [
    ['invalid_api_key', 'auth', 'auth'],
    ['rate_limit_exceeded', 'rate_limit', 'rate_limit', 429],
    ['context_length_exceeded', 'context_overflow', 'too_long'],
    ['model_not_found', 'unknown_model', 'not_found'],
    ['server_error', 'server', 'server', 500],
    ['invalid_prompt', 'bad_request', undefined],
  ]),
  'openai-compatible': STREAM('openai-compatible', [
    ['invalid_api_key', 'auth', 'auth'],
    ['rate_limit_exceeded', 'rate_limit', 'rate_limit'],
    ['context_length_exceeded', 'context_overflow', 'too_long'],
    ['model_not_found', 'unknown_model', 'not_found'],
    ['server_error', 'server', 'server'],
    ['api_error', 'server', 'server'],
    ['invalid_request_error', 'bad_request', undefined],
  ]).concat(
    // A server that fronts another provider's model (a proxy of Claude, Gemini's endpoint) says it in that one's words.
    ...['prompt is too long: 210000 tokens > 200000 maximum', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'].map(
      (message): Case => ({ say: `400 ${message}`, fault: () => fault.status(400, { message }), code: 'context_overflow', kind: undefined, status: 400 }),
    ),
  ),
  anthropic: [
    ...STREAM('anthropic', [
      ['overloaded_error', 'server', 'server'],
      ['api_error', 'server', 'server'],
      ['rate_limit_error', 'rate_limit', 'rate_limit'],
      ['invalid_request_error', 'bad_request', undefined],
    ]),
    ...BAD_REQUEST([
      ['authentication_error', 'auth', 'auth'],
      ['permission_error', 'auth', 'forbidden'],
      ['rate_limit_error', 'rate_limit', 'rate_limit'],
      ['request_too_large', 'context_overflow', 'too_long'],
      ['not_found_error', 'unknown_model', 'not_found'],
      ['overloaded_error', 'server', 'server'],
    ]),
  ],
  // Gemini's stream errors carry their HTTP status: its words are read from 400s.
  gemini: [
    ...BAD_REQUEST([
      ['UNAUTHENTICATED', 'auth', 'auth'],
      ['PERMISSION_DENIED', 'auth', 'forbidden'],
      ['RESOURCE_EXHAUSTED', 'rate_limit', 'rate_limit'],
      ['NOT_FOUND', 'unknown_model', 'not_found'],
      ['UNAVAILABLE', 'server', 'server'],
      ['INTERNAL', 'server', 'server'],
      ['INVALID_ARGUMENT', 'bad_request', undefined],
    ]),
    {
      say: '400 API key not valid',
      fault: () => fault.status(400, { message: 'API key not valid. Please pass a valid API key.', code: 'INVALID_ARGUMENT' }),
      code: 'auth',
      kind: 'auth',
      status: 400,
    },
  ],
};

/** The words no other SDK's classifier knows (OpenAI and Anthropic both call a server error `api_error`). */
const SHARED_WORDS = new Set(['api_error']);

describe('providers: an error classifier per SDK', () => {
  it("the registry hands each provider its SDK's classifier: OpenAI's serves both OpenAI providers", () => {
    assert.equal(providerEntry('openai').errors, providerEntry('openai-compatible').errors);
    const sdks = new Set(PROVIDER_IDS.map((id) => providerEntry(id).errors));
    assert.equal(sdks.size, 3);
  });

  for (const p of PROVIDER_IDS) {
    describe(`${p}: its SDK's words`, () => {
      let server: WireServer;
      beforeEach(async () => {
        server = await startServerFor(p);
      });
      afterEach(async () => {
        await server.close();
      });

      for (const c of CASES[p]) {
        it(`${c.say}: ${c.code}`, async () => {
          server.push(c.fault());
          const provider = await providerFor(p, server);
          const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
          assert.equal(error.code, c.code, error.message);
          assert.equal(error.status, c.status);
          const said = providerEntry(p).errors.read(error.cause);
          assert.ok(said, 'the SDK error is read as the provider answer');
          assert.equal(said.kind, c.kind);
          assert.equal(said.status, c.status);
          assert.equal(said.detail, error.detail);
          // Another SDK's classifier does not know this SDK's word.
          const word = c.say.replace(/^(stream|400) /, '');
          if (c.kind && !SHARED_WORDS.has(word)) {
            for (const other of new Set(PROVIDER_IDS.map((id) => providerEntry(id).errors))) {
              if (other !== providerEntry(p).errors) assert.equal(other.read(error.cause)?.kind, undefined, `another SDK read ${word}`);
            }
          }
        });
      }
    });
  }
});
