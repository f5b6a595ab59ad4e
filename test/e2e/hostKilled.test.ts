/**
 * The extension host killed (SIGKILL) in the middle of a chat turn, in a real VS Code (code-server) driven in
 * headless Chromium: one execution had completed, the next was running (its code printed a line, then
 * slept: the kill waits for its output on screen, not a clock). After a reload the conversation reopens with the
 * completed execution's card and result, and the cut-off turn closed and marked interrupted; the next
 * request gives the model that execution's result, "result lost" for the cut-off call, and a note.
 *
 * Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { turn } from '../support/wire/turn';
import { killExtensionHosts, waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { INTERRUPTED_NOTE, RESULT_LOST } from '../../src/core/agent/turnJournal';

const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';

describe('e2e: the extension host killed mid-turn', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'hostKilled',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 300 }),
    minWaitMs: UI,
  });

  it('after a reload the conversation shows the completed execution and the turn marked interrupted', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(
      turn().call('execute_tool_code', { code: 'print("first step done")\nreturn "kept-result-42"' }),
      turn().call('execute_tool_code', { code: 'import time\nprint("second step started", flush=True)\ntime.sleep(600)' }),
    );
    await e2e.panel.send('Run the two steps');
    // The barrier: the second step's output, on screen (it runs, and sleeps).
    await e2e.panel.waitForText(/second step started/, UI);
    killExtensionHosts(e2e.cs.proc.pid!);

    await e2e.wb.page.reload();
    await e2e.wb.page.waitForSelector('.monaco-workbench', { timeout: UI });
    if (!(await e2e.panel.sidebar.isVisible())) await e2e.wb.runCommand('CodeAct: Open Chat');
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 1,
      UI,
      () => 'the conversation did not come back with its turn',
      250,
    );
    const f = await e2e.panel.frame();
    const last = f.locator('article.turn').last();
    await waitUntil(
      async () => (await last.getAttribute('data-interrupted')) === 'true',
      UI,
      () => 'the turn the kill cut off is not shown as interrupted',
    );
    assert.notEqual(await last.getAttribute('data-status'), 'running');
    const text = await last.innerText();
    assert.match(text, /kept-result-42/);
    assert.match(text, /first step done/);
    await e2e.wb.screenshot('60-host-killed-interrupted');

    // The model's history kept the completed execution and its result, the cut-off call answered "result lost", and a note.
    e2e.wire.push(turn().text('Done.'));
    await e2e.panel.send('And now?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], UI), 'completed', await e2e.panel.text());
    const messages = e2e.wire.turns.at(-1)!.body.messages as { role: string; content?: string }[];
    const tool = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    assert.equal(tool.length, 2, JSON.stringify(messages));
    assert.match(tool[0], /kept-result-42/);
    assert.ok(tool[1].includes(RESULT_LOST), tool[1]);
    assert.ok(
      messages.some((m) => m.role === 'assistant' && String(m.content).includes(INTERRUPTED_NOTE)),
      JSON.stringify(messages),
    );
  });
});
