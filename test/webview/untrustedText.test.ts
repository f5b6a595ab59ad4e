/**
 * Text from outside in the real panel bundle, in headless Chromium: a tool name, a file name and an MCP
 * server's form (made by core's `elicitationForm`, as the host makes it) carry a line break, a
 * RIGHT-TO-LEFT OVERRIDE and a ZERO WIDTH SPACE. The panel draws each invisible character as a marker box
 * (src/webview/reveal.ts, on src/common/untrusted.ts), a name or title keeps to one line (`⏎`), and none
 * of the characters reaches the page's text or its labels.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { TranscriptEvent } from '../../src/common/transcript';
import { elicitationForm } from '../../src/core/tools/sources/mcp/elicitation';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

/** A line break, bidi and zero width: what each string below carries. */
const HOSTILE = 'A\nB\u202eC\u200bD';
const SHOWN = 'A⏎B<U+202E>C<U+200B>D';

const { form } = elicitationForm(
  {
    message: `Message ${HOSTILE}`,
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', title: `Title ${HOSTILE}` },
        pick: { type: 'string', title: 'Pick', oneOf: [{ const: 'v1', title: `Label ${HOSTILE}` }] },
        many: { type: 'array', title: 'Many', items: { anyOf: [{ const: 'm1', title: `Choice ${HOSTILE}` }] } },
      },
    },
  },
  `MCP server ${HOSTILE}`,
);

function turn(): TranscriptEvent[] {
  return [
    ev.turn('t1', 'Go'),
    ev.codeStart('ci_1', 'local'),
    ev.codeDone('ci_1', 'await call_tool(name)\n'),
    ev.interpreting('ci_1'),
    ev.toolStart('ci_1', 'ci_1:1', `tool ${HOSTILE}`, {}),
    ev.toolDone('ci_1', 'ci_1:1', `tool ${HOSTILE}`, { output: 'ok' }, 12),
    { type: 'codeact.elicitation.requested', elicitation_id: 'elicit_1', item_id: 'ci_1', call_id: 'ci_1:1', tool: `tool ${HOSTILE}`, form },
    ev.itemDone({
      id: 'ci_1',
      status: 'in_progress' as never,
      outputs: [{ type: 'file', filename: `report ${HOSTILE}.txt`, path: `/tmp/s/report ${HOSTILE}.txt`, bytes: 10 }],
    }),
  ];
}

describe('text from outside in the panel (headless Chromium)', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ artifacts: ARTIFACTS });

  it('a tool name, a file name and a server form show markers, names keep to one line, and no invisible character reaches the page', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 1300 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(turn());
    const card = p.page.locator('.card.exec[data-item-id="ci_1"]');
    await card.locator('.file-chip').waitFor();

    // The tool's name in the code card: marker boxes, one line.
    const tool = card.locator('li.tool-call .tool-name').first();
    assert.equal(await tool.innerText(), `tool ${SHOWN}`);
    assert.equal(await tool.locator('.uc-mark.uc-bidi').count(), 1, 'the bidi control is a marker box of its own');
    assert.equal(await tool.getAttribute('title'), `tool ${SHOWN}`);

    // The file chip: its name, its label and its tooltip.
    const chip = card.locator('.file-chip');
    assert.equal(await chip.locator('.file-name').innerText(), `report ${SHOWN}.txt`);
    assert.equal(await chip.locator('.file-name .uc-mark').count(), 2);
    assert.equal(await chip.getAttribute('aria-label'), `File report ${SHOWN}.txt`);
    assert.equal(await chip.locator('.file-name').getAttribute('title'), `/tmp/s/report ${SHOWN}.txt`);

    // The server's form: its name, the tool, the message (a message keeps its line break), a field's title, the choices.
    const form = card.locator('.elicitation[data-elicitation-id="elicit_1"]');
    assert.equal(await form.locator('.elicitation-server').innerText(), `MCP server ${SHOWN}`);
    assert.equal(await form.locator('.elicitation-from code').innerText(), `tool ${SHOWN}`);
    assert.equal(await form.locator('.elicitation-message').innerText(), 'Message A\nB<U+202E>C<U+200B>D');
    assert.equal(await form.locator('.elicit-field[data-key="name"] .elicit-label').innerText(), `Title ${SHOWN}`);
    assert.deepEqual(await form.locator('select[name="pick"] option').allInnerTexts(), ['(none)', `Label ${SHOWN}`]);
    assert.equal(await form.locator('.elicit-field[data-key="many"] .elicit-choice').innerText(), `Choice ${SHOWN}`);

    // Nowhere on the page, in its text or in an attribute that is shown or read out (data-* are not), is
    // there a bidi control or a zero-width space.
    const raw = await p.page.evaluate(() => {
      const attrs = Array.from(document.querySelectorAll('*')).flatMap((el) =>
        Array.from(el.attributes)
          .filter((a) => !a.name.startsWith('data-'))
          .map((a) => `${el.tagName} ${a.name}=${a.value}`),
      );
      return [`text=${document.body.textContent ?? ''}`, ...attrs].filter((t) => /[\u202e\u200b]/.test(t));
    });
    assert.deepEqual(raw, [], 'a bidi control or a zero-width space reached the page');
    await card.screenshot({ path: join(ARTIFACTS, 'webview-untrusted-text.png') });
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
