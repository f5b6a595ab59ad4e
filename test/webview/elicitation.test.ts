/**
 * An MCP server's form (elicitation) in the chat panel, in headless Chromium: inside the card of the
 * execution whose tool call asked for it, fields from the requested schema (made by core's
 * `elicitationForm`, as the host makes them), Accept / Decline / Cancel posting the answer, the host's
 * problems shown field by field, and the server's text shown as text, never as HTML. Dark and light themes.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import type { TranscriptEvent } from '../../src/common/transcript';
import type { ElicitationReplyMessage } from '../../src/common/protocol';
import { elicitationForm } from '../../src/core/tools/sources/mcp/elicitation';
import { PanelPage, buildBundle, chromiumAvailable, cleanup, launch, startServer, THEMES, CHROMIUM, type PanelServer } from './support/browser';
import { ev, hostState } from './support/fixtures';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

const { form } = elicitationForm(
  {
    message: 'Who should the report go to? <img src=x onerror="window.__pwned=1"> \u202Ereversed\u202C',
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', title: 'Name', description: 'Full name, as on the badge', minLength: 2 },
        email: { type: 'string', title: 'Email', format: 'email' },
        age: { type: 'integer', title: 'Age', minimum: 18, maximum: 130 },
        urgent: { type: 'boolean', title: 'Urgent', default: false },
        team: {
          type: 'string',
          title: 'Team',
          oneOf: [
            { const: 'eng', title: 'Engineering' },
            { const: 'ops', title: 'Operations' },
          ],
        },
        site: { type: 'string', title: 'Site', enum: ['ber', 'nyc'], enumNames: ['Berlin', 'New York'], default: 'nyc' },
        due: { type: 'string', title: 'Due', format: 'date' },
      },
      required: ['name', 'email'],
    },
  },
  'MCP server "node reports-server.js"',
);

function turn(): TranscriptEvent[] {
  return [
    ev.turn('turn-1', 'Send the report'),
    ev.codeStart('ci_1', 'local'),
    ev.codeDone('ci_1', 'r = await call_tool("send_report", week=48)\nprint(r)'),
    ev.interpreting('ci_1'),
    ev.toolStart('ci_1', 'ci_1:1', 'send_report', { week: 48 }),
    { type: 'codeact.elicitation.requested', elicitation_id: 'elicit_1', item_id: 'ci_1', call_id: 'ci_1:1', tool: 'send_report', form },
  ];
}

describe('an MCP elicitation form in the panel (headless Chromium)', function () {
  this.timeout(120_000);
  let bundle = '';
  const servers: PanelServer[] = [];
  let browser: Browser | undefined;

  before(async function () {
    if (!chromiumAvailable()) {
      console.log(`      skipping the browser tests: no Chromium at ${CHROMIUM}`);
      this.skip();
    }
    bundle = await buildBundle();
    browser = await launch();
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    for (const s of servers) await s.close();
    if (bundle) cleanup(bundle);
  });

  for (const theme of ['dark', 'light'] as const) {
    it(`${theme}: the form in the code card; Accept posts typed values; problems shown per field; Decline; the outcome`, async () => {
      const server = await startServer(bundle, THEMES[theme].css, THEMES[theme].kind);
      servers.push(server);
      const p = await PanelPage.open(browser!, server.url, { width: 560, height: 1300 }, theme);
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      await p.sendEvents(turn());
      const card = p.page.locator('.card.exec[data-item-id="ci_1"] .elicitation[data-elicitation-id="elicit_1"]');
      assert.ok(await card.isVisible(), 'the form is inside the code card');
      const text = await card.innerText();
      assert.match(text, /MCP server "node reports-server\.js" asks for input/);
      assert.match(text, /While running the tool send_report/);
      assert.match(text, /<img src=x onerror="window.__pwned=1">/, "the server's markup is shown as text");
      assert.match(text, /<U\+202E>reversed<U\+202C>/, 'invisible characters revealed');
      assert.equal(await card.locator('img').count(), 0);
      assert.equal(await p.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);

      // Fields: kinds, required marks, defaults, choices with their titles.
      assert.equal(await card.locator('input[name="email"]').getAttribute('type'), 'email');
      assert.equal(await card.locator('input[name="age"]').getAttribute('type'), 'number');
      assert.equal(await card.locator('input[name="age"]').getAttribute('min'), '18');
      // The range fits a narrow panel whole (a sentence-long placeholder was cut to "from 18 to 13").
      assert.equal(await card.locator('input[name="age"]').getAttribute('placeholder'), '18–130');
      assert.equal(await card.locator('input[name="due"]').getAttribute('type'), 'date');
      assert.equal(await card.locator('.elicit-required').count(), 2);
      assert.deepEqual(await card.locator('select[name="team"] option').allInnerTexts(), ['(none)', 'Engineering', 'Operations']);
      assert.equal(await card.locator('select[name="site"]').inputValue(), 'nyc', 'the default is chosen');
      assert.equal(await card.getByLabel('Name').getAttribute('aria-required'), 'true');

      // A first answer the host finds wrong: it says so field by field, and the inputs keep what was typed.
      await card.getByLabel('Name').fill('A');
      await card.getByLabel('Email').fill('not-an-email');
      await card.getByLabel('Age').fill('500');
      await card.getByLabel('Urgent').check();
      await card.locator('select[name="team"]').selectOption('eng');
      await p.clearPosted();
      await card.getByRole('button', { name: 'Accept' }).click();
      const first = (await p.posted()).find((m) => m.type === 'elicitation') as ElicitationReplyMessage;
      assert.deepEqual(first, {
        type: 'elicitation',
        elicitationId: 'elicit_1',
        action: 'accept',
        content: { name: 'A', email: 'not-an-email', age: 500, urgent: true, team: 'eng', site: 'nyc' },
      });
      assert.equal(await card.getByRole('button', { name: 'Accept' }).isDisabled(), true, 'one answer at a time');
      await p.sendEvents([
        {
          type: 'codeact.elicitation.requested',
          elicitation_id: 'elicit_1',
          item_id: 'ci_1',
          form,
          problems: { name: 'must NOT have fewer than 2 characters', email: 'must match format "email"', age: 'must be <= 130' },
        },
      ]);
      const problems = await card.locator('.elicit-problem:not([hidden])').allInnerTexts();
      assert.deepEqual(problems, ['Name must NOT have fewer than 2 characters.', 'Email must match format "email".', 'Age must be <= 130.']);
      assert.equal(await card.getByLabel('Email').getAttribute('aria-invalid'), 'true');
      assert.equal(await card.getByLabel('Email').inputValue(), 'not-an-email', 'what was typed is kept');
      assert.equal(await card.getByRole('button', { name: 'Accept' }).isEnabled(), true, 'the form takes input again');
      await p.page.screenshot({ path: join(ARTIFACTS, `elicitation-problems-${theme}.png`), fullPage: true });

      // Decline: only the action goes back; the host's resolution shows the outcome and locks the form.
      await p.clearPosted();
      await card.getByRole('button', { name: 'Decline' }).click();
      assert.deepEqual(
        (await p.posted()).filter((m) => m.type === 'elicitation'),
        [{ type: 'elicitation', elicitationId: 'elicit_1', action: 'decline' }],
      );
      await p.sendEvents([{ type: 'codeact.elicitation.resolved', elicitation_id: 'elicit_1', item_id: 'ci_1', action: 'decline' }]);
      assert.match(await card.locator('.approval-outcome').innerText(), /Declined/);
      assert.equal(await card.getByLabel('Email').isDisabled(), true);
      assert.equal(await card.getByRole('button', { name: 'Accept' }).isVisible(), false);
      await p.page.screenshot({ path: join(ARTIFACTS, `elicitation-declined-${theme}.png`), fullPage: true });
      assert.deepEqual(p.errors, []);
      assert.deepEqual(await p.cspViolations(), []);
      await p.page.close();
    });
  }

  it('a form still open when the run ends says it is no longer needed', async () => {
    const server = servers[0];
    const p = await PanelPage.open(browser!, server.url);
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([...turn(), ev.completed('ci_1'), ev.turnEnd('turn-1', 'stopped')]);
    const card = p.page.locator('.elicitation[data-elicitation-id="elicit_1"]');
    assert.match(await card.locator('.approval-outcome').innerText(), /No longer needed/);
    assert.equal(await card.getByRole('button', { name: 'Accept' }).isVisible(), false);
    await p.page.close();
  });
});
