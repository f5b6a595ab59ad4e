/**
 * Background jobs in a real VS Code (code-server) driven in headless Chromium, with a scripted model on loopback:
 * the model starts a 120-second job printing a numbered line every second; the person chats about something else
 * while it runs (the job strip shows it above the composer) and reloads the window in the middle (the job goes on in
 * the session host; its card comes back whole); a second job is stopped from the strip and its process
 * tree is gone (its managed-tool call a row of its card first); every one of the 120 lines is in the first job's card, in order; its end is a notification; and the
 * model's next request is told of both ends. Screenshots of the strip and the cards in four themes and a narrow sidebar.
 *
 * Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { turn } from '../support/wire/turn';
import { processesWith, waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { applyTheme, THEMES } from './support/themes';

const UI = 60_000;
/** The job runs 120 s; on a busy machine it may take longer to start and end. */
const JOB = 400_000;
const MODEL = 'qwen2.5-coder:7b';
const LINES = 120;
const COUNT = `import time\nfor i in range(1, ${LINES + 1}):\n    print(f"line {i}", flush=True)\n    time.sleep(1)\n"counted"`;
const MARK = `codeact-e2e-job-${process.pid}`;
const SLEEPER = `import subprocess, sys\nfound = await call_tool("search_catalog", query="chair")\nprint(f"found {len(found)} chairs", flush=True)\nsubprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", "${MARK}"]).wait()`;

describe('e2e: background jobs — the job strip, the job card, Stop, the notification, the model told', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'backgroundJobs',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.jobs.maxMinutes': 10 }),
    minWaitMs: UI,
  });
  const cardOf = async (n: number) => (await e2e.panel.frame()).locator(`.job-card[data-job="${n}"]`).last();
  const stripRow = async (n: number) => (await e2e.panel.frame()).locator(`.job-strip .job-row[data-job="${n}"]`);

  it('runs a 120-line job while the person chats, stops a second one from the strip, and tells the model of both', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(turn().call('execute_tool_code', { code: COUNT, background: true }), turn().text('Job 1 counts to 120 in the background.'));
    await e2e.panel.send('Count to 120 in the background, one line a second.');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], UI), 'completed', await e2e.panel.text());
    // The barrier: the job's own output on screen, in the strip and on its card, while it runs.
    await waitUntil(
      async () => /line [3-9]\b|line \d\d/.test(await (await stripRow(1)).innerText().catch(() => '')),
      UI,
      () => 'the strip never showed the job printing',
      250,
    );
    assert.match(await (await cardOf(1)).innerText(), /Background job 1[^]*Running/);

    // The person chats about something else while it runs.
    e2e.wire.push(turn().text('Paris.'));
    await e2e.panel.send('What is the capital of France?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], UI), 'completed');
    assert.ok(!JSON.stringify(e2e.wire.turns.at(-1)!.body).includes('Background job 1 finished'), 'no request says the job ended before it did');

    // The window reloads in the middle: the job goes on in the session host; the card comes back with everything it
    // printed meanwhile, whole and in order (the host's journal), then goes on live.
    const lastLine = async () => Math.max(0, ...[...(await (await cardOf(1)).innerText()).matchAll(/line (\d+)/g)].map((m) => Number(m[1])));
    const seen = await lastLine();
    await e2e.wb.page.reload();
    await e2e.wb.page.waitForSelector('.monaco-workbench', { timeout: UI });
    if (!(await e2e.panel.sidebar.isVisible())) await e2e.wb.runCommand('CodeAct: Open Chat');
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 2,
      UI,
      () => 'the conversation did not come back with its 2 turns',
      250,
    );
    await waitUntil(
      async () => (await lastLine().catch(() => 0)) > seen + 1,
      UI,
      () => `after the reload, job 1's card never went past line ${seen + 1}`,
      250,
    );
    const since = (await (await cardOf(1)).locator('pre.job-output').innerText()).trim().split('\n');
    assert.deepEqual(
      since,
      Array.from({ length: since.length }, (_, i) => `line ${i + 1}`),
      'after the reload the card shows every line from the first, in order',
    );
    assert.match(await (await stripRow(1)).innerText(), /line \d+/, 'the strip shows the job running again');

    // A second job, stopped from the strip: its whole process tree goes.
    e2e.wire.push(turn().call('execute_tool_code', { code: SLEEPER, background: true }), turn().text('Job 2 started.'));
    await e2e.panel.send('Start the sleeper in the background.');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], UI), 'completed');
    await waitUntil(
      async () => processesWith(MARK).length === 1,
      UI,
      () => "job 2's child process never started",
      250,
    );
    await (await stripRow(2)).waitFor({ state: 'visible', timeout: UI });
    // Its managed-tool call is a row of its card, as on an execution's card.
    const call = (await cardOf(2)).locator('li.tool-call[data-name="search_catalog"]');
    await call.waitFor({ state: 'visible', timeout: UI });
    await waitUntil(
      async () => (await call.getAttribute('data-status')) === 'ok',
      UI,
      () => "job 2's tool call never showed ok",
      250,
    );
    // (A narrow sidebar shows the arguments in the call's details only.)
    assert.equal(await call.locator('.tool-args').textContent(), '(query="chair")');
    await e2e.wb.screenshot('70-jobs-strip-dark');
    for (const theme of THEMES.slice(1)) {
      await applyTheme(e2e.panel, theme);
      await e2e.wb.screenshot(`70-jobs-strip-${theme.slug}`);
    }
    await applyTheme(e2e.panel, THEMES[0]);
    const before = await e2e.wb.sidebarWidth();
    await e2e.wb.setSidebarWidth(260);
    await e2e.wb.screenshot('71-jobs-strip-260px');
    await e2e.wb.setSidebarWidth(before);
    await (await stripRow(2)).getByRole('button', { name: 'Stop background job 2' }).click();
    await waitUntil(
      async () => processesWith(MARK).length === 0,
      UI,
      () => "job 2's process tree is still there after Stop",
      250,
    );
    await waitUntil(
      async () => /Stopped/.test(await (await cardOf(2)).innerText()),
      UI,
      () => 'job 2 card never said Stopped',
      250,
    );
    assert.equal(await (await stripRow(2)).count(), 0, 'a stopped job leaves the strip');

    // Job 1 ends: a notification, its card has every line in order, and the strip is gone.
    await e2e.wb.waitForNotification(/Background job 1 finished after/, JOB);
    const card = await cardOf(1);
    await waitUntil(
      async () => /Finished/.test(await card.innerText()),
      UI,
      () => 'job 1 card never said Finished',
      250,
    );
    const shown = (await card.locator('pre.job-output').innerText()).trim().split('\n');
    assert.deepEqual(
      shown,
      Array.from({ length: LINES }, (_, i) => `line ${i + 1}`),
    );
    assert.ok(await (await e2e.panel.frame()).locator('.job-strip').isHidden(), 'no job runs: no strip');
    await card.scrollIntoViewIfNeeded();
    await e2e.wb.screenshot('72-jobs-card-ended-dark');

    // The model's next request is told of both ends; the panel shows what it was told as a card of its own.
    e2e.wire.push(turn().text('Both jobs are over.'));
    await e2e.panel.send('Anything new?');
    assert.equal(await e2e.panel.waitForTurn(3, ['completed'], UI), 'completed');
    const body = JSON.stringify(e2e.wire.turns.at(-1)!.body);
    assert.match(body, /Background job 1 finished after [^"]*; its value: \\"counted\\"/);
    assert.match(body, /Background job 2 was stopped after/);
    await waitUntil(
      async () => (await (await e2e.panel.frame()).locator('.job-notes').count()) === 1,
      UI,
      () => 'no card says what the model was told',
      250,
    );
    await e2e.wb.screenshot('73-jobs-notes-card');
  });
});
