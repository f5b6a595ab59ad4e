/**
 * `codeact chat` against a model server that falls silent: the CLI reads
 * codeact.modelStream.idleTimeoutSeconds from its user settings, the stalled request is retried once,
 * then the turn fails with exit 1 and a message that says the model stopped sending and which setting to
 * raise. Before the bounds, this hung for 300 s per attempt, four attempts.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault } from '../support/wire/turn';
import { PROVIDER_MESSAGES } from '../../src/core/providers/shared/errors';
import { providerInfo } from '../../src/common/providers';

describe('codeact chat: a silent model server', function () {
  this.timeout(30_000);
  let home: string;
  let server: WireServer | undefined;
  beforeEach(() => (home = mkdtempSync(path.join(tmpdir(), 'codeact-stall-'))));
  afterEach(async () => {
    rmSync(home, { recursive: true, force: true });
    await server?.close();
    server = undefined;
  });

  it('ends with exit 1 after one retry, saying the model stopped sending and naming the setting', async () => {
    writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ 'codeact.modelStream.idleTimeoutSeconds': 1 }));
    server = await startServerFor('openai-compatible', 'ollama');
    server.push(fault.silence(), fault.silence(), fault.silence());
    const r = await runCli(
      ['chat', 'hi', '--provider', 'openai-compatible', '--model', 'qwen2.5-coder:7b', '--base-url', server.url, '--storage', path.join(home, 'conv')],
      { CODEACT_HOME: home },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(PROVIDER_MESSAGES.headersOnly('1 s', providerInfo('openai-compatible').who)), r.stderr);
    assert.ok(r.stderr.includes(PROVIDER_MESSAGES.idleFix('1 s')), r.stderr);
    assert.ok(!r.stderr.includes(PROVIDER_MESSAGES.connectionCut), r.stderr);
    assert.equal(server.turns.length, 2, 'one retry, not four attempts');
  });
});
