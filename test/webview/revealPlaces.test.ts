/**
 * Every place of the panel that shows text from outside draws invisible and bidirectional characters as
 * marker boxes (src/webview/reveal.ts), in the real bundle in headless Chromium: the model's answer (while
 * it streams and once it is done: a paragraph, inline code, a code block), a display's text, markdown and
 * HTML, a JSON tree's key and value, a notice, a function's result, a tool's error, a file chip's name and
 * type, the conversation's title, and an MCP server's form (its message, a field's title, a choice). Each
 * place is checked in the DOM: a `.uc-mark` box for each character (the bidi one as `.uc-bidi`), and
 * neither RIGHT-TO-LEFT OVERRIDE nor ZERO WIDTH SPACE in the page's text.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TranscriptEvent } from '../../src/common/transcript';
import { elicitationForm } from '../../src/core/tools/sources/mcp/elicitation';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

/** Where the screenshots go (the person looks at them): dark and light, the form and a message. */
const SHOTS = process.env.CODEACT_SHOTS ?? join(__dirname, '..', '..', 'test-artifacts');

/** A bidi control and a zero-width character: each string below carries both. */
const BAD = 'x\u202ey\u200bz';
const SHOWN = 'x<U+202E>y<U+200B>z';

interface Marks {
  /** Marker boxes, and how many of them are bidi controls. */
  boxes: number;
  bidi: number;
  /** The element's text holds a raw U+202E or U+200B. */
  raw: boolean;
  text: string;
}

/** The marker boxes in the element(s) `selector` finds (all of them together). */
async function marks(p: PanelPage, selector: string): Promise<Marks> {
  return p.page.evaluate((sel) => {
    const els = Array.from(document.querySelectorAll(sel));
    if (!els.length) throw new Error(`nothing matches ${sel}`);
    const text = els.map((e) => e.textContent ?? '').join('|');
    return {
      boxes: els.reduce((n, e) => n + e.querySelectorAll('.uc-mark').length, 0),
      bidi: els.reduce((n, e) => n + e.querySelectorAll('.uc-mark.uc-bidi').length, 0),
      raw: /[\u202e\u200b]/.test(text),
      text,
    };
  }, selector);
}

/** `selector` shows `count` copies of {@link BAD}: each character a box of its own, none raw. */
async function assertBoxes(p: PanelPage, selector: string, count = 1): Promise<void> {
  const m = await marks(p, selector);
  assert.equal(m.raw, false, `${selector}: a raw bidi or zero-width character reached the page: ${JSON.stringify(m.text)}`);
  assert.equal(m.boxes, 2 * count, `${selector}: ${m.boxes} marker boxes in ${JSON.stringify(m.text)}`);
  assert.equal(m.bidi, count, `${selector}: the bidi control is a box of its own`);
  assert.ok(m.text.includes(SHOWN), `${selector}: ${JSON.stringify(m.text)}`);
}

/** Nowhere on the page, in its text or an attribute that is shown or read out (data-* are not). */
async function assertNoneRaw(p: PanelPage): Promise<void> {
  const raw = await p.page.evaluate(() => {
    const attrs = Array.from(document.querySelectorAll('*')).flatMap((el) =>
      Array.from(el.attributes)
        .filter((a) => !a.name.startsWith('data-') && a.name !== 'value')
        .map((a) => `${el.tagName} ${a.name}=${a.value}`),
    );
    return [`text=${document.body.textContent ?? ''}`, ...attrs].filter((t) => /[\u202e\u200b]/.test(t));
  });
  assert.deepEqual(raw, [], 'a bidi control or a zero-width space reached the page');
}

const ANSWER = `Para ${BAD} with \`code ${BAD}\`.\n\n\`\`\`python\nprint("${BAD}")\n\`\`\`\n\nEnd.`;

const { form } = elicitationForm(
  {
    message: `Message ${BAD}`,
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', title: `Title ${BAD}` },
        many: { type: 'array', title: `Many ${BAD}`, items: { anyOf: [{ const: 'm1', title: `Choice ${BAD}` }] } },
      },
    },
  },
  `MCP server ${BAD}`,
);

describe('text from outside shows its invisible characters as marker boxes in every place of the panel (headless Chromium)', function () {
  this.timeout(180_000);
  const ui = usePanelBrowser({ light: true });

  it("the model's answer: a paragraph and inline code while it streams, and the whole once done (code block too)", async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    // Streaming: the first block is complete (frozen, rendered), the second is still open (the live text).
    await p.sendEvents([ev.turn('t1', 'Go'), ev.text('m1', `Para ${BAD} with \`code ${BAD}\`.\n\nLive ${BAD}`)]);
    await p.page.locator('.msg.assistant .md-live-text').waitFor();
    await assertBoxes(p, '.msg.assistant .md-frozen p', 2);
    await assertBoxes(p, '.msg.assistant .md-live-text');
    // It grows in place: the nodes already drawn stay (no redraw of what was shown), the new part is revealed
    // too, and only the marked characters are elements of their own (text, box, text, box, text, box, …).
    await p.page.evaluate(() => {
      (window as unknown as { firstLive?: Node }).firstLive = document.querySelector('.msg.assistant .md-live-text')?.firstChild ?? undefined;
    });
    await p.sendEvents([ev.text('m1', ` more ${BAD}`)]);
    await p.page.waitForFunction(() => document.querySelector('.msg.assistant .md-live-text')?.textContent?.includes('more'));
    await assertBoxes(p, '.msg.assistant .md-live-text', 2);
    const live = await p.page.evaluate(() => {
      const el = document.querySelector('.msg.assistant .md-live-text')!;
      return { same: el.firstChild === (window as unknown as { firstLive?: Node }).firstLive, nodes: el.childNodes.length };
    });
    assert.deepEqual(live, { same: true, nodes: 9 });
    // A message that opens with a code fence streams it as plain code.
    await p.sendEvents([ev.text('m0', `\`\`\`python\nprint("${BAD}")`)]);
    await p.page.locator('.msg.assistant .md-live-code code').waitFor();
    await assertBoxes(p, '.msg.assistant .md-live-code code');
    await p.sendEvents([ev.text('m0', `\nprint("${BAD}")`)]);
    await p.page.waitForFunction(() => (document.querySelector('.msg.assistant .md-live-code code')?.textContent?.match(/print/g) ?? []).length === 2);
    await assertBoxes(p, '.msg.assistant .md-live-code code', 2);
    await p.sendEvents([ev.textDone('m0', `\`\`\`python\nprint("${BAD}")\nprint("${BAD}")\n\`\`\``)]);

    await p.sendEvents([ev.textDone('m1', ANSWER), ev.turnEnd('t1')]);
    await p.page.waitForFunction(() => Array.from(document.querySelectorAll('.msg.assistant .md')).some((m) => m.textContent?.includes('End.')));
    await assertBoxes(p, '.msg.assistant p', 2);
    await assertBoxes(p, '.msg.assistant p code');
    await assertBoxes(p, '.msg.assistant .md-code pre', 3);
    await assertNoneRaw(p);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it("a display's text, markdown and HTML, and a JSON tree's key and value", async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 1200 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([
      ev.turn('t1', 'Go'),
      ev.codeStart('ci_1', 'local'),
      ev.codeDone('ci_1', 'display(x)\n'),
      ev.interpreting('ci_1'),
      ev.display('ci_1', { data: { 'text/plain': `plain ${BAD}` } }),
      ev.display('ci_1', { data: { 'text/markdown': `md ${BAD}` } }),
      ev.display('ci_1', { data: { 'text/html': `<b>html ${BAD}</b>` } }),
      ev.display('ci_1', { data: { 'application/json': { [`key ${BAD}`]: `value ${BAD}` } } }),
      ev.completed('ci_1'),
      ev.turnEnd('t1'),
    ]);
    const card = '.card.exec[data-item-id="ci_1"]';
    await p.page.locator(`${card} .json-tree`).waitFor();
    await assertBoxes(p, `${card} .display-text`);
    await assertBoxes(p, `${card} .display-md`);
    await assertBoxes(p, `${card} .display[data-mime="text/html"] b`);
    await assertBoxes(p, `${card} .json-tree .json-key`);
    await assertBoxes(p, `${card} .json-tree .json-leaf .json-string`);
    await assertNoneRaw(p);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it("a tool's error, a function's result, a notice, a file chip's name and type, and the conversation's title", async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 1400 });
    await p.send({ type: 'init', protocol: 1, state: hostState({ conversationTitle: `Title ${BAD}` }) });
    const events: TranscriptEvent[] = [
      ev.turn('t1', 'Go'),
      { type: 'response.output_item.added', item: { type: 'function_call', id: 'fc_1', call_id: 'call_9', name: 'get_weather' } },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_1', delta: '{"city":"Oslo"}' },
      { type: 'response.output_item.done', item: { type: 'function_call_output', call_id: 'call_9', output: `failed ${BAD}` } },
      { type: 'codeact.retry', attempt: 1, delay_ms: 1000, status: 500, message: `The provider said ${BAD}` },
      ev.codeStart('ci_1', 'local'),
      ev.codeDone('ci_1', 'await lookup()\n'),
      ev.interpreting('ci_1'),
      ev.toolStart('ci_1', 'ci_1:1', 'lookup', {}),
      ev.toolDone('ci_1', 'ci_1:1', 'lookup', { error: `refused ${BAD}` }, 5),
      ev.itemDone({
        id: 'ci_1',
        status: 'in_progress' as never,
        outputs: [{ type: 'file', filename: `report ${BAD}`, path: `/tmp/s/report ${BAD}`, bytes: 10, mime_type: `text/x-${BAD}` }],
      }),
    ];
    await p.sendEvents(events);
    const card = '.card.exec[data-item-id="ci_1"]';
    await p.page.locator(`${card} .file-chip`).waitFor();
    await p.page.locator(`${card} li.tool-call summary`).click();
    await p.page.locator(`${card} li.tool-call .tool-error`).waitFor();
    await assertBoxes(p, `${card} li.tool-call .tool-error`);
    await assertBoxes(p, '.card.function-call pre.plain');
    await assertBoxes(p, '.notice-line .notice-text');
    await assertBoxes(p, `${card} .file-chip .file-name`);
    await assertBoxes(p, `${card} .file-chip .file-detail`);
    await assertBoxes(p, '.conv-title');
    await assertNoneRaw(p);
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  for (const theme of ['dark', 'light'] as const) {
    it(`${theme}: an MCP server's form shows its message, a field's title and a choice with marker boxes (and a screenshot of the form and of a message)`, async () => {
      const server = theme === 'dark' ? ui.dark : ui.light;
      const p = await PanelPage.open(ui.browser, server.url, { width: 560, height: 1100 }, theme);
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents([
        ev.turn('t1', `Ask the server ${BAD}`),
        ev.textDone('m1', `Checking **the report** ${BAD} with \`lookup\` first.`),
        ev.codeStart('ci_1', 'local'),
        ev.codeDone('ci_1', 'await call_tool("ask")\n'),
        ev.interpreting('ci_1'),
        ev.toolStart('ci_1', 'ci_1:1', 'ask', {}),
        { type: 'codeact.elicitation.requested', elicitation_id: 'elicit_1', item_id: 'ci_1', call_id: 'ci_1:1', tool: 'ask', form },
      ]);
      const f = '.card.exec[data-item-id="ci_1"] .elicitation[data-elicitation-id="elicit_1"]';
      await p.page.locator(f).waitFor();
      await assertBoxes(p, `${f} .elicitation-server`);
      await assertBoxes(p, `${f} .elicitation-message`);
      await assertBoxes(p, `${f} .elicit-field[data-key="name"] .elicit-label`);
      await assertBoxes(p, `${f} .elicit-field[data-key="many"] .elicit-label`);
      await assertBoxes(p, `${f} .elicit-field[data-key="many"] .elicit-choice`);
      await assertBoxes(p, '.user-msg .user-text');
      await assertBoxes(p, '.msg.assistant p');
      await assertNoneRaw(p);
      assert.deepEqual(p.errors, []);
      mkdirSync(SHOTS, { recursive: true });
      await p.page.locator(f).screenshot({ path: join(SHOTS, `reveal-form-${theme}.png`) });
      await p.page
        .locator('.turn')
        .first()
        .screenshot({ path: join(SHOTS, `reveal-message-${theme}.png`) });
      await p.page.close();
    });
  }
});
