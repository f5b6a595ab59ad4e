/**
 * Cached input tokens, for every provider, through the real SDKs at the loopback wire.
 * Each provider reports the prompt-cache reads in a field of its own (OpenAI Responses
 * `input_tokens_details.cached_tokens`, Chat Completions `prompt_tokens_details.cached_tokens`, Anthropic
 * `cache_read_input_tokens` beside `input_tokens`, Gemini `cachedContentTokenCount`); the turn's usage
 * carries them as `cached_tokens`, part of `input_tokens`, for the context meter and the prices.
 */
import assert from 'node:assert/strict';
import type { ProviderId } from '../../src/core/providers/shared/types';
import { providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const PROVIDERS: ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];

for (const p of PROVIDERS) {
  describe(`providers: cached input tokens (${p})`, () => {
    let server: WireServer;
    beforeEach(async () => (server = await startServerFor(p)));
    afterEach(async () => server.close());

    it("the prompt-cache reads the provider reports are the usage's cached_tokens, within input_tokens", async () => {
      server.push(
        turn()
          .text('Cached.')
          .with({ usage: { input: 1000, output: 20, cached: 600 } }),
      );
      const { result } = await runTurn(await providerFor(p, server), { history: [userMessage('hi')] });
      // Anthropic counts cache reads beside input_tokens; the adapter adds them in.
      const input = p === 'anthropic' ? 1600 : 1000;
      assert.equal(result.usage?.input_tokens, input);
      assert.equal(result.usage?.cached_tokens, 600);
    });

    it('no cached_tokens when the provider reports none', async () => {
      server.push(
        turn()
          .text('Fresh.')
          .with({ usage: { input: 1000, output: 20 } }),
      );
      const { result } = await runTurn(await providerFor(p, server), { history: [userMessage('hi')] });
      assert.equal(result.usage?.cached_tokens, undefined);
    });
  });
}
