/**
 * What `codeact chat` reports about tokens: at the end of a human chat, a line with the turn's and the
 * conversation's tokens (and cost where a price is known); with --json, a last `codeact.usage.summary`
 * line. Real SDKs against loopback wire servers.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { UsageSummary } from '../../src/common/events';
import { runCli, scriptedModel } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

describe('codeact chat: tokens and cost at the end', function () {
  this.timeout(60_000);
  let storage: string;
  let server: WireServer | undefined;
  beforeEach(() => (storage = mkdtempSync(path.join(tmpdir(), 'codeact-usage-'))));
  afterEach(async () => {
    rmSync(storage, { recursive: true, force: true });
    await server?.close();
    server = undefined;
  });

  it("a human chat ends with the turn's and the conversation's tokens and cost; --json ends with codeact.usage.summary", async () => {
    server = await startServerFor('openai');
    const env = { OPENAI_API_KEY: 'sk-test' };
    server.push(
      turn()
        .text('Hello.')
        .with({ usage: { input: 2000, output: 100 } }),
    );
    const first = await runCli(['chat', 'Say hello', '--provider', 'openai', '--model', 'gpt-5-mini', '--base-url', server.url, '--storage', storage], env);
    assert.equal(first.code, 0, first.stderr);
    // gpt-5-mini: 2,000 × $0.25/M + 100 × $2/M = $0.0007.
    assert.match(
      first.stderr,
      /\] completed; tokens: this turn 2,000 in · 100 out · \$0\.0007; conversation 2,000 in · 100 out · \$0\.0007; context [\d,]+ of [\d,]+ tokens \(\d+%\); compaction at 75% \(list prices as of 2026-\d\d-\d\d\)\. Continue with: codeact chat --continue c_/,
    );
    const id = /\[(c_[A-Za-z0-9_]+)\]/.exec(first.stderr)![1];

    server.push(
      turn()
        .text('Hello again.')
        .with({ usage: { input: 4000, output: 200 } }),
    );
    const second = await runCli(['chat', 'Again', '--continue', id, '--base-url', server.url, '--storage', storage, '--json'], env);
    assert.equal(second.code, 0, second.stderr);
    const lines = second.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    const summary = lines.at(-1) as UsageSummary;
    assert.equal(summary.type, 'codeact.usage.summary');
    assert.equal(summary.conversation_id, id);
    assert.deepEqual(
      { ...summary.turn, cost_usd: Number(summary.turn.cost_usd?.toFixed(6)) },
      { input_tokens: 4000, output_tokens: 200, cached_tokens: 0, total_tokens: 4200, cost_usd: 0.0014, unpriced: 0 },
    );
    assert.equal(summary.conversation.input_tokens, 6000, 'the conversation counts the earlier turn too');
    assert.equal(Number(summary.conversation.cost_usd?.toFixed(6)), 0.0021);
    assert.match(summary.prices_as_of ?? '', /^2026-/);
    assert.equal(lines.filter((l) => l.type === 'codeact.usage.summary').length, 1);
    // The window at the last request: the engine's own codeact.context.usage, also printed as an event.
    const usage = lines.filter((l) => l.type === 'codeact.context.usage').at(-1) as UsageSummary['context'] & { type: string };
    assert.ok(usage && usage.window_tokens > 0, 'the engine reported the window');
    assert.deepEqual(summary.context, { used_tokens: usage.used_tokens, window_tokens: usage.window_tokens, compact_at_tokens: usage.compact_at_tokens });
  });

  it('a local server has no price: tokens only, and the summary counts the request as unpriced', async () => {
    server = await startServerFor('openai-compatible', 'ollama');
    server.push(
      turn()
        .text('Hi.')
        .with({ usage: { input: 1234, output: 56 } }),
    );
    const human = await runCli(['chat', 'Hi', ...scriptedModel(server.url, storage)]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stderr,
      /completed; tokens: this turn 1,234 in · 56 out; conversation 1,234 in · 56 out; context [\d,]+ of [\d,]+ tokens \(\d+%\); compaction at 75%\. Continue with/,
    );
    assert.doesNotMatch(human.stderr, /\$|list prices/);
    server.push(
      turn()
        .text('Hi.')
        .with({ usage: { input: 10, output: 5 } }),
    );
    const json = await runCli(['chat', 'Hi', ...scriptedModel(server.url, storage), '--json']);
    const summary = JSON.parse(json.stdout.trim().split('\n').at(-1)!) as UsageSummary;
    assert.equal(summary.type, 'codeact.usage.summary');
    assert.equal(summary.turn.cost_usd, undefined);
    assert.equal(summary.turn.unpriced, 1);
    assert.equal(summary.prices_as_of, undefined);
  });
});
