/**
 * Background jobs in the panel (the built bundle in headless Chromium, fed events through the real batcher and
 * protocol): the job card after the execution that started it, its live output, the job strip above the composer
 * with Stop, the card at the job's end (status, duration, value, output whole or cut), the card of what the model
 * was told, a restarted session's job 1 as a card of its own, and the notification's "Show" (`revealJob`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { JobChanged, JobToolCall } from '../../src/common/events';
import { applyEvent, createTranscript, jobCodeLine, jobsLeftRunning, runningJobs, type JobView, type TranscriptEvent } from '../../src/common/transcript';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';
import { narrowLayoutProblems } from '../e2e/support/layout';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');
const SESSION = 'conv-1';

const job = (n: number, state: JobChanged['state'], extra: Partial<JobChanged> = {}): TranscriptEvent => ({
  type: 'codeact.job',
  session_id: SESSION,
  job: n,
  state,
  message:
    state === 'running' ? `Background job ${n} is running.` : `Background job ${n} finished after 2.00 min; its value: 120\nThe end of its output:\nline 120`,
  ...extra,
});
const out = (n: number, delta: string, skipped?: number): TranscriptEvent => ({
  type: 'codeact.job.output',
  session_id: SESSION,
  job: n,
  delta,
  ...(skipped ? { skipped } : {}),
});
const tool = (n: number, t: JobToolCall): TranscriptEvent => ({ type: 'codeact.job.output', session_id: SESSION, job: n, delta: '', tool: t });
const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');

/** A turn whose execution starts job 1 (printing lines 1-5 so far) and job 2. */
function startedTurn(): TranscriptEvent[] {
  return [
    ev.turn('t1', 'Count to 120 in the background'),
    ev.codeStart('ci_1', 'local'),
    ev.codeDone('ci_1', 'for i in range(1, 121):\n    print(f"line {i}")\n    time.sleep(1)\n120'),
    ev.interpreting('ci_1'),
    job(1, 'running', { item_id: 'ci_1', started_at: Date.now() - 65_000 }),
    ev.completed('ci_1'),
    ev.codeStart('ci_2', 'local'),
    ev.codeDone('ci_2', 'import subprocess\nsubprocess.run(["sleep", "600"])'),
    ev.interpreting('ci_2'),
    job(2, 'running', { item_id: 'ci_2', started_at: Date.now() - 3_000 }),
    ev.completed('ci_2'),
    out(1, lines(1, 5)),
    ev.text('m1', 'Both jobs are running; ask me anything meanwhile.'),
    ev.textDone('m1', 'Both jobs are running; ask me anything meanwhile.'),
    ev.turnEnd('t1', 'completed', 900),
  ];
}

describe('background jobs in the panel', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ light: true, artifacts: ARTIFACTS });

  it('the reducer: a card per job in the turn that started it, live output in order, the strip lists the running ones, a restarted session gets a new card', () => {
    const m = createTranscript();
    for (const e of startedTurn()) applyEvent(m, e);
    for (let i = 6; i <= 120; i++) applyEvent(m, out(1, `line ${i}\n`));
    const cards = () => m.turns.flatMap((t) => t.itemKeys.map((k) => m.items[k])).filter((i): i is JobView => i?.kind === 'job');
    assert.deepEqual(
      cards().map((c) => [c.job, c.itemId, c.turnId, c.status]),
      [
        [1, 'ci_1', 't1', 'running'],
        [2, 'ci_2', 't1', 'running'],
      ],
    );
    assert.deepEqual(
      cards().map((c) => c.what),
      ['for i in range(1, 121):', 'subprocess.run(["sleep", "600"])'],
      'what started it: the first line that does something (not an import)',
    );
    assert.equal(jobCodeLine('# background\nimport os\n\n# comment\nos.system("x")'), 'os.system("x")');
    assert.equal(jobCodeLine('# background\nimport os'), 'import os', 'only imports: the first line, not the marker');
    assert.equal(m.turns[0].itemKeys.indexOf(cards()[0].key), m.turns[0].itemKeys.indexOf('x:ci_1') + 1, 'right after the execution that started it');
    assert.equal(
      cards()[0]
        .output.chunks.map((c) => c.text)
        .join(''),
      lines(1, 120),
    );
    assert.deepEqual(
      runningJobs(m).map((j) => j.job),
      [1, 2],
    );
    // Its calls of managed tools: a row each, its start then its end; one still waiting at the job's end never returns.
    applyEvent(m, tool(1, { call_id: 'c1', name: 'lookup', status: 'running', arguments: { q: 1 } }));
    applyEvent(m, tool(1, { call_id: 'c2', name: 'send', status: 'running', arguments: {} }));
    applyEvent(m, tool(1, { call_id: 'c1', name: 'lookup', status: 'ok', output: { n: 7 }, duration_ms: 12 }));
    for (let i = 0; i < 60; i++) applyEvent(m, tool(2, { call_id: `k${i}`, name: 'ping', status: 'error', error: 'no' }));
    assert.deepEqual(
      cards()[0].tools?.map((t) => [t.callId, t.name, t.status, t.output, t.durationMs]),
      [
        ['c1', 'lookup', 'ok', { n: 7 }, 12],
        ['c2', 'send', 'running', undefined, undefined],
      ],
    );
    assert.equal(cards()[1].tools?.length, 50, 'the last 50 calls of a job are kept');
    assert.equal(cards()[1].tools?.[0].callId, 'k10');
    assert.equal(
      cards()[0]
        .output.chunks.map((c) => c.text)
        .join(''),
      lines(1, 120),
      'a call is not output',
    );
    applyEvent(m, job(1, 'done', { seconds: 120, output: lines(1, 120) }));
    assert.deepEqual(
      cards()[0].tools?.map((t) => t.status),
      ['ok', 'stopped'],
    );
    applyEvent(m, out(1, 'after its end\n'));
    assert.equal(cards()[0].status, 'done');
    assert.equal(
      cards()[0]
        .output.chunks.map((c) => c.text)
        .join(''),
      lines(1, 120),
      'nothing after its end',
    );
    assert.deepEqual(
      runningJobs(m).map((j) => j.job),
      [2],
    );
    // The session restarted: its jobs are numbered from 1 again, and the new job 1 is a card of its own.
    applyEvent(m, ev.turn('t2', 'again'));
    applyEvent(m, job(1, 'running', { started_at: Date.now() }));
    assert.equal(cards().length, 3);
    assert.equal(cards()[2].turnId, 't2');
    assert.equal(cards()[0].status, 'done', 'the earlier job 1 keeps its end');
    // A conversation saved with jobs shown running (VS Code closed): those are the ones that get an end on reopen.
    const saved = [...startedTurn(), job(1, 'done', { seconds: 120 }), job(1, 'running')];
    assert.deepEqual(jobsLeftRunning(saved), [
      { session_id: SESSION, job: 2 },
      { session_id: SESSION, job: 1 },
    ]);
  });

  it('shows the strip and the cards live, Stop posts stopJob, the end fills the card, the notes get their own card, and Show reveals the card', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(startedTurn());
    await p.whenIdle();
    const strip = p.page.locator('.job-strip');
    assert.ok(await strip.isVisible());
    const rows = strip.locator('.job-row');
    assert.equal(await rows.count(), 2);
    assert.match(await rows.nth(0).innerText(), /Job 1[^]*for i in range\(1, 121\):[^]*1 min 5 s[^]*line 4\nline 5/);
    // The card follows the output as it comes: every line, in order.
    for (let i = 6; i <= 120; i += 10) await p.sendEvents([out(1, lines(i, Math.min(120, i + 9)))]);
    await p.whenIdle();
    const card1 = p.page.locator('.job-card[data-job="1"]');
    assert.equal((await card1.locator('pre.job-output').innerText()).trimEnd(), lines(1, 120).trimEnd());
    assert.match(await rows.nth(0).innerText(), /line 119\nline 120/);
    // Stop on the strip's second row and on the card: the host is asked to stop job 2 (the host kills its tree).
    await rows.nth(1).getByRole('button', { name: 'Stop background job 2' }).click();
    await p.page.locator('.job-card[data-job="2"]').getByRole('button', { name: 'Stop background job 2' }).click();
    const stops = (await p.posted()).filter((m) => m.type === 'stopJob');
    assert.deepEqual(stops, [
      { type: 'stopJob', sessionId: SESSION, job: 2 },
      { type: 'stopJob', sessionId: SESSION, job: 2 },
    ]);
    // Its tool calls: a row each on its card (name, arguments, status), opened to read the result.
    await p.sendEvents([
      tool(1, { call_id: 'c1', name: 'lookup', status: 'running', arguments: { q: 'orders' } }),
      tool(1, { call_id: 'c1', name: 'lookup', status: 'ok', output: { rows: 3 }, duration_ms: 41 }),
      tool(1, { call_id: 'c2', name: 'send_note', status: 'running', arguments: { text: 'hi' } }),
    ]);
    await p.whenIdle();
    const calls = card1.locator('.tool-list .tool-call');
    assert.equal(await calls.count(), 2);
    assert.equal(await calls.nth(0).getAttribute('data-status'), 'ok');
    assert.match(await calls.nth(0).innerText(), /lookup[^]*orders/);
    assert.equal(await calls.nth(1).getAttribute('data-status'), 'running');
    await calls.nth(0).locator('summary').click();
    await calls.nth(0).locator('.tool-body .kv-label', { hasText: 'Result' }).waitFor({ timeout: 30_000 });
    assert.match(await calls.nth(0).locator('.tool-body').innerText(), /Result[^]*"rows": 3/i);
    assert.match(await card1.locator('.tools-section .section-label').innerText(), /^Tool calls · 2$/i);
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-jobs-running-dark.png') });
    // The ends: the strip empties, each card says how it ended.
    await p.sendEvents([
      job(2, 'stopped', { seconds: 4, message: 'Background job 2 was stopped after 4.00 s.' }),
      job(1, 'done', { seconds: 120, output: lines(1, 120) }),
      ev.turn('t2', 'What is 2 + 2?'),
      {
        type: 'codeact.job.notes',
        session_id: SESSION,
        jobs: [2, 1],
        text: '[codeact] Background jobs ended since your last step:\n\nBackground job 2 was stopped after 4.00 s.\n\nBackground job 1 finished after 2.00 min; its value: 120',
      },
      ev.text('m2', '4.'),
      ev.textDone('m2', '4.'),
      ev.turnEnd('t2'),
    ]);
    await p.whenIdle();
    assert.ok(await strip.isHidden(), 'no job runs: no strip');
    assert.match(await card1.locator('.card-head').innerText(), /Background job 1[^]*Finished[^]*2 min 0 s/);
    assert.match(await card1.locator('.job-note').innerText(), /^Background job 1 finished after 2\.00 min; its value: 120$/);
    assert.equal(await card1.getByRole('button', { name: 'Stop background job 1' }).isHidden(), true);
    assert.match(await p.page.locator('.job-card[data-job="2"] .card-head').innerText(), /Stopped/);
    const notes = p.page.locator('.job-notes');
    assert.match(await notes.innerText(), /The model was told: jobs 2, 1 ended[^]*Background job 2 was stopped after 4\.00 s\./);
    assert.equal(await p.page.locator('.msg.user-note').count(), 0, 'not a message of the person');
    // The notification's Show: the card comes into view.
    await p.page.evaluate(() => document.querySelector('.scroller')?.scrollTo(0, 0));
    await p.send({ type: 'revealJob', sessionId: SESSION, job: 2 });
    assert.ok(await p.page.locator('.job-card[data-job="2"]').isVisible());
    assert.ok(
      await p.page.evaluate(() => {
        const r = document.querySelector('.job-card[data-job="2"]')!.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight;
      }),
    );
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-jobs-ended-dark.png') });
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });

  it('"Keep running in background" shows on a running card that offers it (keyboard reachable), posts detachRun, and leaves with the run', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const offer: TranscriptEvent = { type: 'response.code_interpreter_call.interpreting', item_id: 'ci_9', detach: { session_id: SESSION, max_jobs: 4 } };
    await p.sendEvents([
      ev.turn('t9', 'Train the model'),
      ev.codeStart('ci_8', 'jupyter'),
      ev.codeDone('ci_8', 'train()'),
      ev.interpreting('ci_8'),
      ev.codeStart('ci_9', 'local'),
      ev.codeDone('ci_9', 'train()'),
      ev.interpreting('ci_9'),
      offer,
    ]);
    await p.whenIdle();
    const button = (id: string) => p.page.locator(`[data-item-id="${id}"]`).getByRole('button', { name: 'Keep running in background' });
    assert.equal(await button('ci_8').count(), 0, 'a run that did not offer it (a Jupyter kernel) has no button');
    assert.ok(await button('ci_9').isVisible());
    assert.match((await button('ci_9').getAttribute('title')) ?? '', /background job of its session/);
    // The session runs as many jobs as it may (4): no room for one more, no button; one ends, it is back.
    await p.sendEvents([1, 2, 3, 4].map((n) => job(n, 'running', { item_id: 'ci_8', started_at: Date.now() })));
    await p.whenIdle();
    assert.ok(await button('ci_9').isHidden(), 'the session has no room for one more job');
    await p.sendEvents([job(4, 'done', { seconds: 1 })]);
    await p.whenIdle();
    assert.ok(await button('ci_9').isVisible());
    await button('ci_9').focus();
    await p.page.keyboard.press('Enter');
    assert.deepEqual(
      (await p.posted()).filter((m) => m.type === 'detachRun'),
      [{ type: 'detachRun', sessionId: SESSION, itemId: 'ci_9' }],
    );
    await p.sendEvents([ev.completed('ci_9'), job(5, 'running', { item_id: 'ci_9', started_at: Date.now() })]);
    await p.whenIdle();
    assert.ok(await button('ci_9').isHidden(), 'the card is no longer running');
    assert.ok(await p.page.locator('.job-card[data-job="5"]').isVisible());
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('looks finished in the dark and light themes and in a 260 px sidebar', async () => {
    const shots: [string, string, { width: number; height: number }][] = [
      ['webview-jobs-strip-dark.png', ui.dark.url, { width: 520, height: 900 }],
      ['webview-jobs-strip-light.png', ui.light.url, { width: 520, height: 900 }],
      ['webview-jobs-strip-narrow-260-dark.png', ui.dark.url, { width: 260, height: 900 }],
    ];
    for (const [file, url, viewport] of shots) {
      const p = await PanelPage.open(ui.browser, url, viewport, url === ui.dark.url ? 'dark' : 'light');
      await p.page.evaluate('globalThis.__name = globalThis.__name || ((f) => f)');
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents([...startedTurn(), out(1, lines(6, 40))]);
      await p.whenIdle();
      if (viewport.width < 300) assert.deepEqual(await p.page.evaluate(narrowLayoutProblems), [], file);
      await p.page.screenshot({ path: join(ARTIFACTS, file) });
      assert.deepEqual(p.errors, []);
      await p.page.close();
    }
  });
});
