/**
 * "Keep running in background" in a real VS Code (code-server) driven in headless Chromium, with a scripted model
 * on loopback: the model's run waits on a child process (the barrier: the test ends it); the person clicks "Keep
 * running in background" on the running card; the model's next request has the honest observation and the turn
 * ends; the job strip shows the run as job 1; the child ends, the run prints its last lines and ends: a
 * notification, the job's card has its whole output, and the model's next request is told of the end.
 *
 * Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { turn } from '../support/wire/turn';
import { processesWith, waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';

const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';
const MARK = `codeact-e2e-detach-${process.pid}`;
const RUN =
  `import subprocess, sys\nfor i in range(1, 4):\n    print(f"line {i}", flush=True)\n` +
  `subprocess.run([sys.executable, "-c", "import time; time.sleep(900)", "${MARK}"])\n` +
  `for i in range(4, 7):\n    print(f"line {i}", flush=True)\n"counted"`;

describe('e2e: Keep running in background — a running card sent to the background, the turn goes on, the model told of its end', function () {
  this.timeout(600_000);
  const e2e = useCodeServer({
    name: 'detachRun',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL }),
    minWaitMs: UI,
  });

  it('sends the running execution to the background, the model goes on, and its end reaches the panel and the model', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(turn().call('execute_tool_code', { code: RUN }), turn().text('It goes on in the background.'));
    await e2e.panel.send('Count to 6, waiting in the middle.');
    await waitUntil(
      async () => processesWith(MARK).length === 1,
      UI,
      () => "the run's child process never started",
      250,
    );
    const frame = await e2e.panel.frame();
    const button = frame.locator('.card.exec').last().getByRole('button', { name: 'Keep running in background' });
    await button.waitFor({ state: 'visible', timeout: UI });
    await e2e.wb.screenshot('80-detach-button');
    await button.click();
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], UI), 'completed', await e2e.panel.text());
    const told = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.match(told, /line 1\\\\nline 2\\\\nline 3/);
    assert.match(told, /the person sent execution \d+ to the background: it goes on as background job 1/);
    const row = frame.locator('.job-strip .job-row[data-job="1"]');
    await row.waitFor({ state: 'visible', timeout: UI });
    assert.equal(processesWith(MARK).length, 1, 'the run goes on');
    await e2e.wb.screenshot('81-detach-strip');

    // The barrier opens: the run prints its last lines and ends as job 1.
    for (const p of processesWith(MARK)) process.kill(p.pid, 'SIGTERM');
    await e2e.wb.waitForNotification(/Background job 1 \(execution \d+, sent to the background\) finished after/, UI);
    const card = frame.locator('.job-card[data-job="1"]').last();
    await waitUntil(
      async () => /Finished/.test(await card.innerText()),
      UI,
      () => 'the job card never said Finished',
      250,
    );
    assert.match(await card.locator('pre.job-output').innerText(), /line 1\nline 2\nline 3\n[^]*line 4\nline 5\nline 6/);
    await e2e.wb.screenshot('82-detach-job-ended');

    e2e.wire.push(turn().text('It finished.'));
    await e2e.panel.send('Anything new?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], UI), 'completed');
    assert.match(
      JSON.stringify(e2e.wire.turns.at(-1)!.body),
      /Background job 1 \(execution \d+, sent to the background\) finished after [^"]*; its value: \\"counted\\"/,
    );
  });
});
