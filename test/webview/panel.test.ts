/**
 * The chat panel in a real browser: the built bundle in headless Chromium, fed a scripted event stream
 * through the real batcher and protocol, asserting the DOM and what the page posts back to the host.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { WebviewToHost } from '../../src/common/protocol';
import { OUTPUT_TAIL_MAX_LINES } from '../../src/common/transcript';
import { RUNTIMES } from '../../src/common/runtimes';
import { PanelPage } from './support/browser';
import { DEMO_CODE, demoTurn, ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('chat panel in headless Chromium', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ artifacts: ARTIFACTS });

  const open = (viewport?: { width: number; height: number }) => PanelPage.open(ui.browser, ui.dark.url, viewport);
  const last = (posted: WebviewToHost[], type: WebviewToHost['type']) => [...posted].reverse().find((m) => m.type === type);

  it('says ready, then shows an empty state whose buttons post host commands', async () => {
    const p = await open();
    assert.deepEqual((await p.posted())[0], { type: 'ready', protocol: 1, seq: 0 });
    await p.send({
      type: 'init',
      protocol: 1,
      state: hostState({ providers: hostState().providers.map((x) => ({ ...x, hasKey: false })), model: undefined, tools: [] }),
    });
    const empty = p.page.locator('.empty-state');
    assert.ok(await empty.isVisible());
    assert.match(await empty.innerText(), /Set an API key for OpenAI/);
    assert.match(await empty.innerText(), /Choose a provider and model/);
    assert.match(await empty.innerText(), /Declare the tools the code may call/);
    await p.page.getByRole('button', { name: 'Set API Key…' }).click();
    await p.page.getByRole('button', { name: 'Select Model…' }).click();
    await p.page.getByRole('button', { name: 'Declare Tools…' }).click();
    const commands = (await p.posted()).filter((m) => m.type === 'command').map((m) => (m as { command: string }).command);
    assert.deepEqual(commands, ['setApiKey', 'selectModel', 'declareTools']);

    // Untrusted workspace: the restriction and its action.
    await p.send({ type: 'state', state: { trusted: false } });
    assert.match(await empty.innerText(), /not trusted/);
    await p.page.getByRole('button', { name: 'Manage Workspace Trust' }).click();
    assert.deepEqual(last(await p.posted(), 'command'), { type: 'command', command: 'manageTrust' });

    // Ready state: everything set.
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    assert.match(await empty.innerText(), /API key for OpenAI is set/);
    assert.match(await empty.innerText(), /3 tools ready/);
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-empty-dark.png') });
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });

  it("names where the code runs from the runtime catalogue: the empty state's sentence and the card's badge", async () => {
    const p = await open();
    const empty = p.page.locator('.empty-state');
    await p.send({ type: 'init', protocol: 1, state: hostState({ runtime: 'jupyter' }) });
    assert.match(await empty.innerText(), new RegExp(`runs it ${RUNTIMES.jupyter.where}`));
    await p.send({ type: 'state', state: { runtime: 'local' } });
    assert.match(await empty.innerText(), /runs it in a local Python sandbox/);
    await p.send({ type: 'state', state: { mode: 'hosted', provider: 'anthropic', runtime: 'anthropic' } });
    assert.match(await empty.innerText(), /runs it in the Anthropic sandbox/);
    await p.sendEvents([ev.turn('t', 'hi'), ev.codeStart('c', 'jupyter')]);
    const badge = p.page.locator('.card.exec .badge.runtime');
    assert.equal(await badge.getAttribute('title'), `Runtime: ${RUNTIMES.jupyter.label}`);
    assert.equal(await badge.innerText(), 'jupyter');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it("heads each turn's prompt with who asked: you, Run with Tools, or an MCP client (never as you)", async () => {
    const p = await open();
    await p.sendEvents([
      ev.turn('a', 'Which orders are late?', { source: 'chat' }),
      ev.turnEnd('a'),
      ev.turn('b', 'orders.py, lines 3-20', { source: 'run_with_tools' }),
      ev.turnEnd('b'),
      ev.turn('c', 'Claude Code: execute_tool_code', { source: 'mcp' }),
      ev.turnEnd('c'),
    ]);
    const who = await p.page.locator('.turn .user-msg .who').allInnerTexts();
    assert.deepEqual(who, ['You', 'Run with Tools', 'MCP client']);
    assert.match(await p.page.locator('.turn').nth(2).innerText(), /Claude Code: execute_tool_code/);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('renders a streamed turn: code card, tool timeline, ANSI output, image, result, markdown answer, usage', async () => {
    const p = await open({ width: 560, height: 1700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const events = demoTurn();
    // Stop half-way through the code to look at the card while the model is still writing.
    const codeStart = events.findIndex((e) => e.type === 'response.code_interpreter_call_code.delta');
    await p.sendEvents(events.slice(0, codeStart + 12));
    const card = p.page.locator('.card.exec');
    assert.equal(await card.getAttribute('data-status'), 'writing');
    assert.match(await card.locator('.status-chip').innerText(), /Writing code/);
    assert.match(await p.page.locator('.status-line').innerText(), /Writing code/);
    assert.ok(await p.page.locator('.stop-button').isVisible(), 'Stop is offered while the turn runs');
    assert.ok((await card.locator('pre.code .hljs-keyword').count()) > 0, 'code is highlighted while it streams');
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-streaming-dark.png'), clip: { x: 0, y: 0, width: 560, height: 560 } });

    await p.page.locator('.stop-button').click();
    assert.deepEqual(last(await p.posted(), 'stop'), { type: 'stop' });

    await p.sendEvents(events.slice(codeStart + 12));
    assert.equal(await card.getAttribute('data-status'), 'done');
    assert.equal((await card.locator('pre.code').innerText()).trim(), DEMO_CODE.trim());
    assert.equal(await card.locator('.gutter span').count(), DEMO_CODE.trimEnd().split('\n').length);
    assert.match(await card.locator('.badges').innerText(), /local/);
    assert.match(await card.locator('.badges').innerText(), /bubblewrap/);

    // Tool timeline: four calls, one failed, each expandable to its arguments and result.
    const rows = card.locator('.tool-call');
    assert.equal(await rows.count(), 4);
    assert.deepEqual(await rows.locator('.tool-name').allInnerTexts(), ['list_orders', 'get_order', 'get_order', 'get_order']);
    assert.equal(await rows.nth(2).getAttribute('data-status'), 'error');
    assert.match(await card.locator('.tools-section .section-label').innerText(), /4 · 1 failed/i);
    assert.match(await rows.nth(0).locator('.tool-args').innerText(), /customer="ACME", status="open"/);
    assert.match(await rows.nth(0).locator('.tool-duration').innerText(), /182 ms/);
    await rows.nth(0).locator('summary').click();
    await rows.nth(0).locator('.tool-body .json-tree').first().waitFor(); // details render on their toggle event
    assert.match(await rows.nth(0).locator('.tool-body').innerText(), /A-1002/);
    await rows.nth(2).locator('summary').click();
    await rows.nth(2).locator('.tool-error').waitFor();
    assert.match(await rows.nth(2).locator('.tool-error').innerText(), /HTTP 503/);

    // Output with ANSI colours, stderr apart.
    const out = card.locator('pre.output').first();
    assert.match((await out.textContent()) ?? '', /Found 3 open orders\nlate {2}A-1001 {2}\+4d\nwarning: A-1002 unavailable, retried\nlate {2}A-1003 {2}\+1d/);
    assert.equal(await out.locator('.ansi-bold').first().innerText(), 'Found 3 open orders');
    assert.equal(await out.locator('.ansi-yellow-fg').count(), 2);
    assert.match(await out.locator('.stderr').innerText(), /warning: A-1002/);

    // Image, collapsible JSON result.
    assert.equal(await card.locator('img').count(), 1);
    assert.ok(await card.locator('img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0), 'the image loads under the CSP');
    const result = card.locator('.result-section');
    assert.match(await result.innerText(), /checked/);
    assert.match(await result.innerText(), /late/);

    // The answer: markdown with a table, a highlighted code fence, a link.
    const answer = p.page.locator('.msg.assistant').last();
    assert.equal(await answer.locator('table tr').count(), 3);
    assert.equal(await answer.locator('td.align-right').count(), 4);
    assert.ok((await answer.locator('.md-code .hljs-string').count()) > 0);
    assert.equal(await answer.getAttribute('aria-busy'), null);
    await answer.locator('a').click();
    assert.deepEqual(last(await p.posted(), 'openLink'), { type: 'openLink', href: 'https://example.com/runbook' });
    await answer.locator('.md-code [data-md-action="copy"]').click();
    assert.match((last(await p.posted(), 'copy') as { text: string }).text, /refund_order/);

    // Usage and status per turn.
    const footer = p.page.locator('.turn-footer');
    assert.match(await footer.innerText(), /1\.2k in · 340 out/);
    assert.match(await footer.innerText(), /Done/);
    assert.ok(!(await p.page.locator('.stop-button').isVisible()), 'Stop goes away when the turn ends');

    // Card buttons post to the host.
    await card.getByRole('button', { name: 'Copy code' }).click();
    await card.getByRole('button', { name: 'Insert into editor' }).click();
    await card.getByRole('button', { name: 'Run again with tools' }).click();
    const posted = await p.posted();
    assert.equal((last(posted, 'copy') as { text: string }).text, DEMO_CODE);
    assert.deepEqual(last(posted, 'insertCode'), { type: 'insertCode', code: DEMO_CODE });
    assert.deepEqual(last(posted, 'runCode'), { type: 'runCode', code: DEMO_CODE, itemId: 'ci_1' });

    // The whole conversation in one picture: grow the viewport to the transcript's height.
    const height = await p.page.evaluate(() => {
      (document.activeElement as HTMLElement | null)?.blur();
      const s = document.querySelector('.scroller')!;
      return s.scrollHeight + (document.body.clientHeight - s.clientHeight);
    });
    await p.page.mouse.move(1, 1);
    await p.page.setViewportSize({ width: 560, height: Math.min(height + 4, 4000) });
    await p.settle();
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-turn-dark.png') });
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });

  it('asks for approvals and posts the decision; code review can edit the code before running it', async () => {
    const p = await open({ width: 560, height: 1100 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([
      ev.turn('t1', 'Refund A-1001'),
      ev.approval('ap_code', 'code', { item_id: 'ci_9', code: 'await call_tool("refund_order", order_id="A-1001")\n' }),
    ]);
    const codeCard = p.page.locator('[data-approval-id="ap_code"]');
    assert.deepEqual(await codeCard.locator('.approval-actions button').allInnerTexts(), ['Run', 'Edit', 'Deny']);
    assert.match(await p.page.locator('.status-line').innerText(), /Waiting for your approval/);
    await codeCard.getByRole('button', { name: 'Edit' }).click();
    const editor = codeCard.locator('textarea.code-editor');
    await editor.fill('await call_tool("refund_order", order_id="A-1001", amount=100)\n');
    await codeCard.getByRole('button', { name: 'Run' }).click();
    assert.deepEqual(last(await p.posted(), 'approval'), {
      type: 'approval',
      approvalId: 'ap_code',
      decision: 'allow_once',
      code: 'await call_tool("refund_order", order_id="A-1001", amount=100)\n',
    });
    assert.ok(await codeCard.getByRole('button', { name: 'Deny' }).isDisabled(), 'buttons are disabled once a decision is sent');

    await p.sendEvents([
      ev.approved('ap_code', 'allow_once'),
      ev.codeStart('ci_9', 'local'),
      ev.code('ci_9', 'await call_tool("refund_order", order_id="A-1001", amount=100)\n'),
      ev.interpreting('ci_9'),
      ev.toolStart('ci_9', 'c1', 'refund_order', { order_id: 'A-1001', amount: 100 }),
      ev.approval('ap_tool', 'tool', { item_id: 'ci_9', name: 'refund_order', arguments: { order_id: 'A-1001', amount: 100 } }),
    ]);
    assert.match(await codeCard.locator('.approval-outcome').innerText(), /Allowed once/);
    const toolCard = p.page.locator('[data-approval-id="ap_tool"]');
    assert.match(await toolCard.locator('.approval-title').innerText(), /Allow refund_order to run\?/);
    assert.match(await toolCard.locator('.json-tree').innerText(), /"A-1001"/);
    assert.deepEqual(await toolCard.locator('.approval-actions button').allInnerTexts(), ['Allow once', 'Allow for this session', 'Always allow', 'Deny']);
    const exec = p.page.locator('.card.exec[data-item-id="ci_9"]');
    assert.equal(await exec.getAttribute('data-status'), 'waiting');
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-approval-dark.png') });

    await toolCard.getByRole('button', { name: 'Allow for this session' }).click();
    assert.deepEqual(last(await p.posted(), 'approval'), { type: 'approval', approvalId: 'ap_tool', decision: 'allow_session' });
    await p.sendEvents([ev.approved('ap_tool', 'allow_session'), ev.toolDone('ci_9', 'c1', 'refund_order', { output: { refunded: 100 } }, 40)]);
    assert.match(await toolCard.locator('.approval-outcome').innerText(), /Allowed for this session/);
    assert.equal(await toolCard.locator('.approval-actions').isVisible(), false);
    assert.equal(await exec.getAttribute('data-status'), 'running');

    // A denial, and an approval left pending when the turn ends.
    await p.sendEvents([ev.approval('ap_3', 'tool', { item_id: 'ci_9', name: 'delete_customer', arguments: { id: 7 } })]);
    await p.page.locator('[data-approval-id="ap_3"]').getByRole('button', { name: 'Deny' }).click();
    assert.deepEqual(last(await p.posted(), 'approval'), { type: 'approval', approvalId: 'ap_3', decision: 'deny' });
    await p.sendEvents([ev.approved('ap_3', 'deny'), ev.approval('ap_4', 'tool', { name: 'x', arguments: {} }), ev.turnEnd('t1', 'stopped')]);
    assert.match(await p.page.locator('[data-approval-id="ap_3"] .approval-outcome').innerText(), /Denied/);
    assert.match(await p.page.locator('[data-approval-id="ap_4"] .approval-outcome').innerText(), /No longer needed/);
    assert.equal(await exec.getAttribute('data-status'), 'stopped');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('shows a failure with its traceback and marks the failing line', async () => {
    const p = await open({ width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const code = 'total = 0\nfor o in []:\n    total += o\nprint(total / 0)\n';
    await p.sendEvents([
      ev.turn('t', 'divide'),
      ev.codeStart('c', 'jupyter'),
      ev.codeDone('c', code),
      ev.out('c', '\x1b[31mabout to fail\x1b[0m\n', 'stderr'),
      ev.itemDone({
        id: 'c',
        status: 'failed',
        code,
        runtime: 'jupyter',
        error: {
          type: 'ZeroDivisionError',
          message: 'division by zero',
          line: 4,
          traceback: 'Traceback (most recent call last):\n  File "<code>", line 4, in <module>\n    print(total / 0)\nZeroDivisionError: division by zero\n',
        },
        duration_ms: 12,
      }),
      ev.error('The model stopped: the code failed twice.', 'code_failed'),
      ev.turnEnd('t', 'failed'),
    ]);
    const card = p.page.locator('.card.exec');
    assert.equal(await card.getAttribute('data-status'), 'failed');
    assert.match(await card.locator('.exec-error .error-title').innerText(), /ZeroDivisionError: division by zero/);
    assert.match((await card.locator('.traceback').textContent()) ?? '', /line 4, in <module>/);
    assert.equal(await card.locator('.gutter .error-line').innerText(), '4');
    assert.equal(await card.locator('pre.output .ansi-red-fg').count(), 1);
    assert.match(await p.page.locator('.error-card').innerText(), /code failed twice/);
    await p.page.getByRole('button', { name: 'Show Log' }).click();
    assert.deepEqual(last(await p.posted(), 'command'), { type: 'command', command: 'showLog' });
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it("offers Rewind to here on an ended turn's message (not while it runs), on hover or keyboard focus, and posts the turn", async () => {
    const p = await open({ width: 560, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([ev.turn('t1', 'Load the orders'), ev.text('m1', 'Loaded.'), ev.textDone('m1', 'Loaded.'), ev.turn('t2', 'Drop the columns')]);
    const rewind = (turn: string) => p.page.locator(`.turn[data-turn-id="${turn}"] .user-msg button.turn-rewind`);
    assert.equal(await rewind('t1').count(), 1);
    assert.ok(await rewind('t2').isHidden(), 'not while its turn runs');
    await p.sendEvents([ev.turnEnd('t2')]);
    const button = rewind('t2');
    await button.waitFor({ state: 'attached' });
    assert.equal(await button.getAttribute('aria-label'), 'Rewind to here: back to before this message (you choose the conversation, the code, or both)');
    const opacity = () => button.evaluate((b) => getComputedStyle(b).opacity);
    assert.equal(await opacity(), '0', 'out of the way until the message is hovered');
    await p.page.locator('.turn[data-turn-id="t2"] .user-text').hover();
    assert.equal(await opacity(), '1');
    await button.click();
    assert.deepEqual(last(await p.posted(), 'turn.rewind'), { type: 'turn.rewind', turnId: 't2' });
    await p.page.mouse.move(0, 0);
    await button.focus();
    await p.page.keyboard.press('Enter');
    assert.equal((await p.posted()).filter((m) => m.type === 'turn.rewind').length, 2);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('a card a reload let go of runs again when watched, and its real end replaces the earlier error', async () => {
    const p = await open({ width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const code = 'for i in range(2):\n    print(i)\nreturn 7\n';
    const left = { id: 'c', code, status: 'failed' as const, error: { type: 'SessionHostError', message: 'This window let go of the run.' } };
    await p.sendEvents([ev.turn('t', 'count'), ev.codeStart('c'), ev.codeDone('c', code), ev.itemDone(left), ev.turnEnd('t', 'stopped')]);
    const card = p.page.locator('.card.exec');
    assert.match(await card.locator('.exec-error').innerText(), /let go of the run/);
    await p.sendEvents([
      { type: 'response.output_item.added', item: { type: 'code_interpreter_call', id: 'c', status: 'interpreting', code, runtime: 'local', outputs: [] } },
      ev.out('c', '0\n1\n'),
    ]);
    assert.equal(await card.getAttribute('data-status'), 'running');
    assert.equal(await card.locator('.exec-error').count(), 0, 'its earlier end was not one');
    await p.sendEvents([ev.itemDone({ id: 'c', code, value: 7, outputs: [{ type: 'logs', logs: '0\n1\n' }] })]);
    assert.equal(await card.getAttribute('data-status'), 'done');
    assert.equal(await card.locator('.exec-error').count(), 0);
    assert.match(await card.locator('.result-section').innerText(), /7/);
    assert.equal((await card.locator('pre.output').innerText()).trim(), '0\n1');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('a model that stopped sending offers Retry and the stream timeouts', async () => {
    const p = await open({ width: 560, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([
      ev.turn('t', 'summarise'),
      ev.error(
        'The model stopped sending for 90 s after the response started. Try again, or raise codeact.modelStream.idleTimeoutSeconds (now 90 s) if the model pauses longer.',
        'stream_stalled',
      ),
      ev.turnEnd('t', 'failed'),
    ]);
    const card = p.page.locator('section.error-card');
    assert.deepEqual(
      (await card.locator('button').allInnerTexts()).map((b) => b.trim()),
      ['Retry', 'Open Settings: Stream Timeouts', 'Show Log'],
    );
    await card.getByRole('button', { name: 'Open Settings: Stream Timeouts' }).click();
    assert.deepEqual(last(await p.posted(), 'command'), { type: 'command', command: 'openSettings', setting: 'codeact.modelStream' });
    await card.getByRole('button', { name: 'Retry' }).click();
    assert.deepEqual(last(await p.posted(), 'send'), { type: 'send', text: 'summarise' });
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('caps long output, offers the full output, and keeps appending without re-rendering', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const lines = 12_000;
    const events = [ev.turn('t', 'print a lot'), ev.codeStart('c', 'local'), ev.codeDone('c', 'for i in range(12000): print(i)'), ev.interpreting('c')];
    for (let i = 0; i < lines; i++) events.push(ev.out('c', `line ${i}\n`));
    await p.sendEvents(events, 500);
    const pane = p.page.locator('pre.output');
    // The same <pre> keeps receiving text: mark it and check the mark survives more output.
    await pane.evaluate((el) => el.setAttribute('data-mark', 'same-node'));
    await p.sendEvents([ev.out('c', '\x1b[32mdone\x1b[0m\n'), ev.completed('c'), ev.turnEnd('t')], 500);
    assert.equal(await pane.getAttribute('data-mark'), 'same-node');
    const text = (await pane.textContent()) ?? '';
    const shown = text.trimEnd().split('\n');
    assert.ok(shown.length <= OUTPUT_TAIL_MAX_LINES + 600, `at most about the cap is shown (${shown.length})`);
    assert.equal(shown[shown.length - 1], 'done');
    assert.equal(shown[shown.length - 2], `line ${lines - 1}`);
    assert.equal(await p.page.locator('.output-pane').getAttribute('data-total-lines'), String(lines + 1));
    const banner = p.page.locator('.output-banner');
    assert.match(await banner.innerText(), /earlier lines not shown/);
    await banner.getByRole('button', { name: 'Open full output' }).click();
    assert.deepEqual(last(await p.posted(), 'openFullOutput'), { type: 'openFullOutput', itemId: 'c' });
    await p.page.close();
  });

  it('highlights code incrementally while it streams, including strings that span lines', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const body = Array.from({ length: 40 }, (_, i) => `    inside string line ${i}`).join('\n');
    const code = `REPORT = """\n${body}\n"""\n\ndef total(orders):\n    return sum(o["total"] for o in orders)  # all of them\n` + 'x = 1\n'.repeat(120);
    const events = [ev.turn('t', 'stream code'), ev.codeStart('c', 'local')];
    for (let i = 0; i < code.length; i += 7) events.push(ev.code('c', code.slice(i, i + 7)));
    await p.sendEvents(events, 6);
    const card = p.page.locator('.card.exec');
    assert.equal(await card.getAttribute('data-status'), 'writing', 'still streaming: no final re-highlight yet');
    assert.equal(await card.locator('pre.code').textContent(), code);
    // Every line of the multi-line string is inside a string token, even though the code was cut into pieces.
    const unstyled = await card.locator('pre.code').evaluate((pre) => {
      const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      const bad: string[] = [];
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (/inside string line/.test(n.textContent ?? '') && !n.parentElement?.closest('.hljs-string')) bad.push(n.textContent ?? '');
      }
      return bad;
    });
    assert.deepEqual(unstyled, []);
    assert.ok((await card.locator('pre.code .hljs-keyword', { hasText: 'def' }).count()) >= 1);
    assert.ok((await card.locator('pre.code .hljs-comment', { hasText: '# all of them' }).count()) === 1);
    await p.sendEvents([ev.codeDone('c', code), ev.interpreting('c')]);
    assert.equal(await card.locator('pre.code').textContent(), code);
    assert.equal(await card.locator('.gutter span').count(), code.split('\n').length - 1);
    await p.page.close();
  });

  it('renders carriage-return progress lines and ANSI escapes split across deltas', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([ev.turn('t', 'progress'), ev.codeStart('c', 'local'), ev.codeDone('c', 'work()'), ev.interpreting('c')]);
    // One delta per frame, so the pane receives each piece on its own.
    for (const delta of ['start\nprogress 10%', '\rprogress 50%', '\rprogress 100%\n', 'colour: \x1b[3', '1mred', ' still red\x1b[0m plain\n']) {
      await p.sendEvents([ev.out('c', delta)]);
    }
    await p.sendEvents([ev.turnEnd('t')]);
    const pane = p.page.locator('pre.output');
    assert.equal(await pane.textContent(), 'start\nprogress 100%\ncolour: red still red plain\n');
    assert.deepEqual(await pane.locator('.ansi-red-fg').allTextContents(), ['red', ' still red']);
    await p.page.close();
  });

  it('keeps its state across a reload, catches up by seq, and asks for a resync on a gap', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const batches = await p.sendEvents(demoTurn(), 1000);
    const seq = batches[batches.length - 1].seq;
    await p.page.locator('.prompt-input').fill('draft that should survive');
    // The page saves its state at most once a second: wait until the draft is in it.
    await p.page.waitForFunction(() => (sessionStorage.getItem('__state') ?? '').includes('draft that should survive'), undefined, { timeout: 30_000 });
    await p.page.reload();
    await p.page.waitForSelector('.card.exec');
    assert.deepEqual((await p.posted())[0], { type: 'ready', protocol: 1, seq, conversationId: 'conv-1' });
    assert.equal(await p.page.locator('.card.exec').count(), 1, 'the transcript is back without the host re-sending it');
    assert.equal(await p.page.locator('.tool-call').count(), 4);
    assert.equal(await p.page.locator('.prompt-input').inputValue(), 'draft that should survive');
    assert.match((await p.page.locator('pre.output').textContent()) ?? '', /late {2}A-1003/);

    // A duplicate batch is ignored; a gap asks for a resync.
    await p.send({ type: 'events', conversationId: 'conv-1', seq, events: [ev.text('zzz', 'dup')] });
    assert.equal(await p.page.locator('.msg.assistant').count(), 2);
    await p.send({ type: 'events', conversationId: 'conv-1', seq: seq + 5, events: [ev.text('zzz', 'gap')] });
    assert.deepEqual(last(await p.posted(), 'resync'), { type: 'resync', seq, conversationId: 'conv-1' });

    // A reset (reopened conversation) replaces the transcript.
    await p.send({
      type: 'reset',
      conversationId: 'conv-2',
      title: 'Another one',
      seq: 1,
      events: [ev.turn('x', 'hello again'), ev.text('m', 'Hi!'), ev.turnEnd('x')],
    });
    assert.equal(await p.page.locator('.turn').count(), 1);
    assert.equal(await p.page.locator('.conv-title').innerText(), 'Another one');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('sends prompts, recalls them with Up/Down, switches models, and manages history and export', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const input = p.page.locator('.prompt-input');
    await input.fill('first question');
    await input.press('Enter');
    await input.fill('second\nquestion');
    await input.press('Enter');
    await input.fill('unsent draft');
    assert.deepEqual(
      (await p.posted()).filter((m) => m.type === 'send'),
      [
        { type: 'send', text: 'first question' },
        { type: 'send', text: 'second\nquestion' },
      ],
    );
    await input.press('ArrowUp');
    assert.equal(await input.inputValue(), 'second\nquestion');
    await p.page.keyboard.press('Home');
    await p.page.keyboard.press('ArrowUp'); // caret moves to the first line
    await p.page.keyboard.press('ArrowUp');
    assert.equal(await input.inputValue(), 'first question');
    await input.press('ArrowDown');
    assert.equal(await input.inputValue(), 'second\nquestion');
    await p.page.keyboard.press('ArrowDown'); // the caret is at the end of a recalled prompt
    assert.equal(await input.inputValue(), 'unsent draft', 'the draft comes back after the newest entry');

    // Provider and model picker.
    assert.deepEqual(await p.page.locator('select.model option').allInnerTexts(), ['GPT-5 mini', 'GPT-5']);
    await p.page.getByRole('combobox', { name: 'Model' }).selectOption('gpt-5');
    assert.deepEqual(last(await p.posted(), 'selectModel'), { type: 'selectModel', provider: 'openai', model: 'gpt-5' });
    await p.page.getByRole('combobox', { name: 'Provider' }).selectOption('anthropic');
    assert.deepEqual(last(await p.posted(), 'selectModel'), { type: 'selectModel', provider: 'anthropic', model: 'claude-sonnet-4-5' });

    // History: list, reopen, delete, clear (with confirmation), export.
    await p.page.getByRole('button', { name: 'Conversation history' }).click();
    assert.deepEqual(last(await p.posted(), 'history.list'), { type: 'history.list' });
    const now = Date.now();
    await p.send({
      type: 'history',
      conversations: [
        { id: 'conv-1', title: 'Late orders for ACME', updatedAt: now - 5 * 60_000, turns: 3, model: 'gpt-5-mini' },
        { id: 'conv-0', title: 'Refund policy check', updatedAt: now - 26 * 3_600_000, turns: 1, model: 'claude-sonnet-4-5' },
      ],
    });
    const dialog = p.page.getByRole('dialog', { name: 'Conversation history' });
    assert.match(await dialog.innerText(), /Refund policy check/);
    assert.match(await dialog.innerText(), /5 min ago · 3 turns · gpt-5-mini/);
    await p.page.screenshot({ path: join(ARTIFACTS, 'webview-history-dark.png') });
    await dialog.getByRole('button', { name: 'Delete “Refund policy check”' }).click();
    assert.deepEqual(last(await p.posted(), 'history.delete'), { type: 'history.delete', conversationId: 'conv-0' });
    await dialog.getByRole('button', { name: 'Clear history…' }).click();
    assert.deepEqual(last(await p.posted(), 'history.clear'), { type: 'history.clear' }, 'the host confirms with a modal');
    await dialog
      .getByRole('button', { name: /Refund policy check/ })
      .first()
      .click();
    assert.deepEqual(last(await p.posted(), 'history.open'), { type: 'history.open', conversationId: 'conv-0' });
    assert.equal(await dialog.isVisible(), false);
    await p.page.getByRole('button', { name: 'Conversation history' }).click();
    await dialog.getByRole('button', { name: 'From the terminal…' }).click();
    assert.deepEqual(last(await p.posted(), 'history.fromCli'), { type: 'history.fromCli' }, "the host's picker lists codeact chat's conversations");
    assert.equal(await dialog.isVisible(), false);
    await p.page.getByRole('button', { name: 'Export as notebook (.ipynb)' }).click();
    assert.deepEqual(last(await p.posted(), 'exportNotebook'), { type: 'exportNotebook', conversationId: 'conv-1' });
    await p.page.getByRole('button', { name: 'New conversation' }).click();
    assert.deepEqual(last(await p.posted(), 'newConversation'), { type: 'newConversation' });

    // Host-driven input.
    await p.send({ type: 'setInput', text: 'Explain the selection' });
    assert.equal(await input.inputValue(), 'Explain the selection');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('is accessible: named controls, live regions, landmarks', async () => {
    const p = await open();
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(demoTurn());
    await p.sendEvents([ev.turn('t2', 'again'), ev.approval('a', 'tool', { name: 'refund_order', arguments: {} })]);
    const unnamed = await p.page.evaluate(() =>
      Array.from(document.querySelectorAll('button, select, textarea, [role="button"]'))
        .filter((el) => !(el as HTMLElement).hidden && (el as HTMLElement).offsetParent !== null)
        .filter((el) => !(el.getAttribute('aria-label') || el.textContent?.trim() || el.getAttribute('title')))
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    assert.deepEqual(unnamed, []);
    assert.equal(await p.page.locator('[role="log"][aria-label="Conversation"]').count(), 1);
    assert.equal(await p.page.locator('.status-line[aria-live="polite"]').count(), 1);
    assert.match(await p.page.locator('.sr-only[aria-live="assertive"]').innerText(), /Approval needed: allow the tool refund_order/);
    assert.equal(await p.page.locator('main').count(), 1);
    // Tab from the input reaches the picker and then Stop/Send (focus order follows the layout).
    await p.page.locator('.prompt-input').focus();
    await p.page.keyboard.press('Tab');
    assert.equal(await p.page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Provider');
    await p.page.close();
  });
});
