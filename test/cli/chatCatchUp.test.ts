/**
 * Two writers, one after the other, on one conversation that a host keeps open in memory (the panel does):
 * `codeact chat --continue` adds a turn while the panel has the conversation open, then the panel's next turn
 * runs. The panel's turn takes in what the CLI wrote first: the model gets both turns' words (as the wire
 * server receives them), the panel is shown the CLI's turn, and nothing is saved twice.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { TranscriptEvent } from '../../src/common/transcript';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { runCli } from '../support/cli';
import { chatTurnsWith, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const MODEL = ['--provider', 'openai-compatible', '--model', 'qwen2.5-coder:7b'];

describe('a conversation open in the panel while the CLI continues it', function () {
  this.timeout(120_000);
  let dir: string;
  let storage: string;
  let ws: string;
  let server: WireServer;
  const runtime = new LocalRuntime();

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-catchup-'));
    storage = path.join(dir, 'conv');
    ws = path.join(dir, 'ws');
    mkdirSync(ws, { recursive: true });
    server = await startServerFor('openai-compatible', 'ollama');
  });
  afterEach(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  after(() => runtime.dispose());

  async function cli(prompt: string, ...extra: string[]): Promise<void> {
    const r = await runCli(['chat', prompt, ...extra, ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
  }

  const userWords = (body: { messages: { role: string; content?: unknown }[] }) => body.messages.filter((m) => m.role === 'user').map((m) => m.content);

  it("the panel's next turn has the CLI's turn in its history, shows it, and saves nothing twice", async () => {
    server.push(turn().text('Hello.'));
    await cli('Hi.');
    const id = readdirSync(storage)
      .find((f) => f.endsWith('.jsonl'))!
      .slice(0, -'.jsonl'.length);

    // The panel opens it and keeps it in memory.
    const store = new TranscriptStore(storage);
    const open = store.open(id);

    server.push(turn().text('Answered in the terminal.'));
    await cli('From the terminal.', '--continue', id);

    const layers: Record<string, SettingLayers> = {
      provider: { user: 'openai-compatible' },
      model: { user: 'qwen2.5-coder:7b' },
      baseURL: { user: server.url },
    };
    const config = resolveEngineConfig((k) => layers[k], { trusted: false }).config;
    const shown: TranscriptEvent[] = [];
    const chat = chatTurnsWith(config, runtime, { onEvent: (e) => shown.push(e) });
    server.push(turn().text('Answered in the panel.'));
    const r = await chat(open, 'From the panel.');
    assert.equal(r.result?.status, 'completed', JSON.stringify(r.error));

    const sent = server.turns[server.turns.length - 1].body;
    assert.deepEqual(userWords(sent), ['Hi.', 'From the terminal.', 'From the panel.']);
    assert.ok(
      sent.messages.some((m: { role: string; content?: unknown }) => m.role === 'assistant' && m.content === 'Answered in the terminal.'),
      JSON.stringify(sent.messages),
    );
    // The panel is shown the terminal's turn (its markers and answer) before its own.
    const starts = shown.filter((e) => e.type === 'codeact.turn.started').map((e) => (e as { prompt: string }).prompt);
    assert.deepEqual(starts, ['From the terminal.', 'From the panel.']);

    // Nothing saved twice: the next process sends each prompt once.
    server.push(turn().text('Done.'));
    await cli('And now?', '--continue', id);
    assert.deepEqual(userWords(server.turns[server.turns.length - 1].body), ['Hi.', 'From the terminal.', 'From the panel.', 'And now?']);
    const again = store.open(id);
    assert.equal(again.events.filter((e) => e.type === 'codeact.turn.started').length, 4);
  });
});
