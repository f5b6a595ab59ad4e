/**
 * An approval shows the whole truth. The panel's cards in headless Chromium, against
 * the shipped bundle (dist/webview.js, built by `node esbuild.mjs`): every argument reachable and on
 * screen before Allow, "… N more" that opens, deep nesting open, invisible and bidirectional characters
 * shown as markers in approval, code-review and code cards and in tool names (Trojan Source laid out in
 * the order Python reads it). And the modal dialog (the panel hidden): it says what it does not show and
 * opens the full arguments before anything is allowed.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator } from 'playwright-core';
import type { ApprovalRequest } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { Approvals } from '../../src/vscode/approvals';
import { FakeApprovalsApis, FakeLog } from '../vscode/fakes';
import { PanelPage, chromiumAvailable, launch, startServer, CHROMIUM, THEMES, type PanelServer } from '../webview/support/browser';
import { ev, hostState } from '../webview/support/fixtures';
import { TROJAN_SOURCE } from './support/trojanSource';

const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'dist');
const ARTIFACTS = join(ROOT, 'test-artifacts');
const BIDI = /[\u202a-\u202e\u2066-\u2069]/;
const IBAN = 'IBAN-DE89-3704-0044-0532-0130-00';

/** 200 harmless arguments, then the one that matters, last. */
function twoHundredAndOne(): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (let i = 0; i < 200; i++) args[`memo_${String(i).padStart(3, '0')}`] = `invoice line ${i}`;
  args.to = IBAN;
  return args;
}

/** The newest file under `dir` (recursively), to tell a stale bundle. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Where the character at `needle` (first or last occurrence in the element's text) is drawn. */
async function xOf(el: Locator, needle: string, last = false): Promise<{ x: number; y: number }> {
  return el.evaluate(
    (root, [n, fromEnd]) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      const nodes: Array<[Text, number]> = [];
      let text = '';
      while (walker.nextNode()) {
        const t = walker.currentNode as Text;
        nodes.push([t, text.length]);
        text += t.data;
      }
      const at = fromEnd ? text.lastIndexOf(n as string) : text.indexOf(n as string);
      if (at < 0) throw new Error(`${n} is not in the text`);
      let i = nodes.length - 1;
      while (nodes[i][1] > at) i--;
      const range = document.createRange();
      range.setStart(nodes[i][0], at - nodes[i][1]);
      range.setEnd(nodes[i][0], at - nodes[i][1] + 1);
      const r = range.getBoundingClientRect();
      return { x: r.left, y: Math.round(r.top) };
    },
    [needle, last] as const,
  );
}

describe('security: an approval shows the whole truth', function () {
  this.timeout(180_000);

  describe('the panel, in headless Chromium, with the shipped bundle', () => {
    let browser: Browser | undefined;
    const servers: Partial<Record<'dark' | 'light', PanelServer>> = {};

    before(async function () {
      if (!chromiumAvailable()) {
        console.log(`      skipping the browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
        this.skip();
      }
      const bundle = join(DIST, 'webview.js');
      if (!existsSync(bundle)) throw new Error('dist/webview.js is missing: run `node esbuild.mjs` (npm test does it) first.');
      const sources = Math.max(newest(join(ROOT, 'src/webview')), newest(join(ROOT, 'src/common')));
      if (statSync(bundle).mtimeMs < sources) throw new Error('dist/webview.js is older than src/webview or src/common: run `node esbuild.mjs` first.');
      servers.dark = await startServer(DIST, THEMES.dark.css, THEMES.dark.kind);
      servers.light = await startServer(DIST, THEMES.light.css, THEMES.light.kind);
      browser = await launch();
      mkdirSync(ARTIFACTS, { recursive: true });
    });

    after(async () => {
      await browser?.close();
      await servers.dark?.close();
      await servers.light?.close();
    });

    const open = async (theme: 'dark' | 'light' = 'dark', viewport = { width: 560, height: 1000 }) => {
      const p = await PanelPage.open(browser!, servers[theme]!.url, viewport, theme);
      await p.send({ type: 'init', protocol: 1, state: hostState() });
      return p;
    };
    /** A screenshot of the whole card: the viewport made tall enough for the transcript to need no scrolling. */
    const shoot = async (p: PanelPage, card: Locator, file: string) => {
      const width = p.page.viewportSize()!.width;
      const height = await p.page.evaluate(() => Math.max(...Array.from(document.querySelectorAll('*'), (el) => el.scrollHeight)));
      await p.page.setViewportSize({ width, height: Math.min(6000, height + 200) });
      await p.settle();
      await card.screenshot({ path: join(ARTIFACTS, file) });
    };
    const lastApproval = async (p: PanelPage) => [...(await p.posted())].reverse().find((m) => m.type === 'approval');

    it('shows all 201 arguments, the 201st (to=IBAN) on screen before Allow', async () => {
      for (const theme of ['dark', 'light'] as const) {
        const p = await open(theme, { width: 560, height: 900 });
        await p.sendEvents([
          ev.turn('t1', 'Pay the invoice'),
          ev.approval('ap_pay', 'tool', { item_id: 'ci_1', name: 'send_payment', arguments: twoHundredAndOne() }),
        ]);
        const card = p.page.locator('[data-approval-id="ap_pay"]');
        const tree = card.locator('.json-tree');
        assert.equal(await tree.locator('.json-more').count(), 0, 'no "… N more" left folded');
        assert.equal(await tree.locator('.json-leaf').count(), 201);
        const to = tree.locator('.json-leaf', { has: p.page.locator('.json-key', { hasText: /^"to":$/ }) });
        await to.scrollIntoViewIfNeeded();
        assert.ok(await to.isVisible());
        assert.equal(await to.locator('.json-string').innerText(), JSON.stringify(IBAN));
        await shoot(p, card, `approval-201-args-${theme}.png`);
        if (theme === 'dark') {
          await card.getByRole('button', { name: 'Allow once' }).click();
          assert.deepEqual(await lastApproval(p), { type: 'approval', approvalId: 'ap_pay', decision: 'allow_once' });
        }
        assert.deepEqual(p.errors, []);
        assert.deepEqual(await p.cspViolations(), []);
        await p.page.close();
      }
    });

    it('opens deep nesting at once; past 2,000 values says what is folded and opens it all', async () => {
      const p = await open();
      let deep: Record<string, unknown> = { to: IBAN };
      for (let i = 0; i < 40; i++) deep = { level: deep };
      const big: Record<string, unknown> = {};
      for (let i = 0; i < 3000; i++) big[`k${i}`] = i;
      big.to = IBAN;
      await p.sendEvents([
        ev.turn('t1', 'x'),
        ev.approval('ap_deep', 'tool', { name: 'nested', arguments: deep }),
        ev.approval('ap_big', 'tool', { name: 'big', arguments: big }),
      ]);
      const deepCard = p.page.locator('[data-approval-id="ap_deep"]');
      assert.equal(await deepCard.locator('details.json-node:not([open])').count(), 0, 'every level is open');
      assert.ok(await deepCard.locator('.json-string', { hasText: IBAN }).isVisible());

      const bigCard = p.page.locator('[data-approval-id="ap_big"]');
      const note = bigCard.locator('.approval-note');
      assert.match(await note.innerText(), /part of them is folded\. Allowing approves all of it/);
      const lastKey = bigCard.locator('.json-key', { hasText: /^"to":$/ });
      assert.equal(await lastKey.count(), 0, 'the 3,001st is folded at first');
      await bigCard.getByRole('button', { name: 'Show all arguments' }).click();
      assert.equal(await note.count(), 0, 'the note goes once everything is shown');
      await lastKey.scrollIntoViewIfNeeded();
      assert.ok(await lastKey.isVisible());
      assert.equal(await bigCard.locator('.json-leaf').count(), 3001);
      assert.deepEqual(p.errors, []);
      await p.page.close();
    });

    it('"… N more" in a tool result opens the next page, then all the rest', async () => {
      const p = await open();
      const rows = Array.from({ length: 450 }, (_, i) => ({ row: i }));
      await p.sendEvents([
        ev.turn('t1', 'x'),
        ev.codeStart('ci_1', 'local'),
        ev.code('ci_1', 'await call_tool("list_rows")\n'),
        ev.interpreting('ci_1'),
        ev.toolStart('ci_1', 'c1', 'list_rows', {}),
        ev.toolDone('ci_1', 'c1', 'list_rows', { output: rows }, 12),
      ]);
      const row = p.page.locator('li.tool-call[data-name="list_rows"]');
      await row.locator('summary').first().click();
      const result = row.locator('.json-tree').nth(1);
      const more = result.locator('.json-more');
      assert.match(await more.innerText(), /… 250 more/);
      await more.getByRole('button', { name: 'Show 200 more' }).click();
      assert.match(await more.innerText(), /… 50 more/);
      await more.getByRole('button', { name: 'Show 50 more' }).click();
      assert.equal(await result.locator('.json-more').count(), 0);
      assert.ok(await result.locator('.json-index', { hasText: /^449:$/ }).isVisible());
      assert.deepEqual(p.errors, []);
      await p.page.close();
    });

    it('Trojan Source reads as Python reads it, in code cards and code-review cards; invisible characters in tool names and arguments are marked', async () => {
      for (const theme of ['dark', 'light'] as const) {
        const p = await open(theme, { width: 760, height: 1100 });
        await p.sendEvents([
          ev.turn('t1', 'Check access'),
          ev.approval('ap_review', 'code', { item_id: 'ci_1', code: TROJAN_SOURCE }),
          ev.approved('ap_review', 'allow_once'),
          ev.codeStart('ci_1', 'local'),
          ev.code('ci_1', TROJAN_SOURCE),
          ev.codeDone('ci_1', TROJAN_SOURCE),
          ev.interpreting('ci_1'),
          ev.toolStart('ci_1', 'c1', 'refund\u202eredro', { order: 'A-1\u200b001', to: `acct\u2066${IBAN}\u2069` }),
          ev.approval('ap_tool', 'tool', { item_id: 'ci_1', name: 'refund\u202eredro', arguments: { order: 'A-1\u200b001', to: `acct\u2066${IBAN}\u2069` } }),
        ]);
        const review = p.page.locator('[data-approval-id="ap_review"]');
        const exec = p.page.locator('.card.exec[data-item-id="ci_1"]');
        for (const [card, code] of [
          [review, review.locator('pre.approval-code')],
          [exec, exec.locator('pre.code')],
        ] as const) {
          const text = await code.evaluate((el) => el.textContent ?? '');
          assert.ok(!BIDI.test(text), 'no bidirectional control reaches the DOM');
          assert.match(text, /if access_level != 'user<U\+202E> <U\+2066># Check if admin<U\+2069> <U\+2066>':/);
          assert.equal(await code.locator('.uc-mark.uc-bidi').count(), 4);
          // Laid out left to right as read: the string's closing quote and colon come after the comment text.
          const admin = await xOf(code, 'admin');
          const closing = await xOf(code, "':", true);
          assert.equal(closing.y, admin.y, 'one line');
          assert.ok(closing.x > admin.x, `the closing quote is drawn after "admin" (${closing.x} > ${admin.x})`);
          void card;
        }
        assert.match(await review.locator('.approval-warning').innerText(), /4 bidirectional controls, shown as <U\+…> boxes/);

        const toolCard = p.page.locator('[data-approval-id="ap_tool"]');
        const title = await toolCard.locator('.approval-title').evaluate((el) => el.textContent ?? '');
        assert.equal(title, 'Allow refund<U+202E>redro to run?');
        assert.match(await toolCard.locator('.approval-warning').innerText(), /The arguments contain 2 bidirectional controls and 1 invisible character/);
        const treeText = await toolCard.locator('.json-tree').evaluate((el) => el.textContent ?? '');
        assert.ok(treeText.includes('"A-1<U+200B>001"') && treeText.includes(`"acct<U+2066>${IBAN}<U+2069>"`), treeText);
        const toolRow = exec.locator('li.tool-call');
        const rowText = await toolRow.locator('summary').evaluate((el) => el.textContent ?? '');
        assert.ok(rowText.includes('refund<U+202E>redro(') && !BIDI.test(rowText) && !rowText.includes('\u200b'), rowText);
        assert.equal(await toolRow.locator('.tool-name').getAttribute('title'), 'refund<U+202E>redro');

        await shoot(p, exec, `trojan-source-code-card-${theme}.png`);
        await shoot(p, review, `trojan-source-review-card-${theme}.png`);
        assert.deepEqual(p.errors, []);
        assert.deepEqual(await p.cspViolations(), []);
        await p.page.close();
      }
    });
  });

  describe('the modal dialog (the panel hidden)', () => {
    const tool = (name: string): ManagedTool => ({
      name,
      description: '',
      inputSchema: { type: 'object' },
      approval: 'ask',
      expose: 'code',
      source: 'command',
      invoke: async () => null,
    });
    const request = (name: string, args: Record<string, unknown>): ApprovalRequest => ({
      tool: tool(name),
      arguments: args,
      itemId: 'exec_1',
      callId: 'call_1',
      signal: new AbortController().signal,
    });
    const setup = () => {
      const apis = new FakeApprovalsApis();
      return { apis, approvals: new Approvals({ apis, emit: () => undefined, log: new FakeLog(), panelVisible: () => false }) };
    };

    it('says how much it does not show, and opens the full arguments before asking again', async () => {
      const { apis, approvals } = setup();
      const args = twoHundredAndOne();
      apis.answers = ['Open Full Arguments', 'Allow Once'];
      assert.equal(await approvals.approveTool(request('send_payment', args)), 'allowed');
      const [first, second] = apis.dialogs;
      assert.equal(first.items[0], 'Open Full Arguments');
      assert.deepEqual(first.items.slice(1), ['Allow Once', 'Allow for This Session', 'Always Allow']);
      assert.ok(!first.detail!.includes(IBAN), 'the 201st argument does not fit in the dialog');
      const notShown =
        /NOT SHOWN HERE: (\d+) arguments \(all or part of each\), (\d+) lines, ([\d,]+) characters\. "Open Full Arguments" shows all of them in an editor before you decide\. Allowing here approves all of them, the part not shown included\./.exec(
          first.detail!,
        );
      assert.ok(notShown, first.detail);
      const inFull = Number(/Arguments \(the first [\d,]+ characters; (\d+) of 201 arguments in full\)/.exec(first.detail!)?.[1]);
      assert.ok(inFull > 10, first.detail);
      assert.equal(inFull + Number(notShown[1]), 201);
      const lastWhole = /^ {2}"(memo_\d+)": "invoice line \d+",$/gm;
      const whole = [...first.detail!.matchAll(lastWhole)].map((m) => m[1]);
      assert.ok(whole.length >= inFull, 'every argument counted as shown in full is in the dialog whole');
      assert.deepEqual(
        apis.documents.map((d) => d.language),
        ['json'],
      );
      assert.deepEqual(JSON.parse(apis.documents[0].content), args, 'the editor shows every argument');
      assert.equal(second.modal, false, 'asked again in a notification, so the editor can be read');
      assert.match(second.message, /All of its arguments are open in the editor/);
      assert.deepEqual(second.items, ['Allow Once', 'Allow for This Session', 'Always Allow', 'Deny']);
    });

    it('shows short arguments whole, with no extra button; marks invisible characters in the name and the arguments', async () => {
      const { apis, approvals } = setup();
      apis.answers = [undefined];
      assert.equal(await approvals.approveTool(request('pay\u202eyap', { to: `x\u2066${IBAN}\u2069` })), 'denied');
      const [d] = apis.dialogs;
      assert.deepEqual(d.items, ['Allow Once', 'Allow for This Session', 'Always Allow']);
      assert.equal(d.message, 'CodeAct: allow the tool "pay<U+202E>yap"?');
      assert.equal(d.detail, `Arguments:\n{\n  "to": "x<U+2066>${IBAN}<U+2069>"\n}`);
      assert.ok(!BIDI.test(d.message + d.detail));
    });

    it('names a waiting tool with its markers where VS Code shows it (status bar, Run with Tools)', async () => {
      const apis = new FakeApprovalsApis();
      const approvals = new Approvals({ apis, emit: () => undefined, log: new FakeLog(), panelVisible: () => true });
      const waiting = approvals.approveTool(request('pay\u202eyap', {}));
      assert.deepEqual(
        approvals.pendingList().map((p) => p.name),
        ['pay<U+202E>yap'],
      );
      approvals.expirePending('no answer: the run ended');
      assert.deepEqual(await waiting, { unanswered: 'no answer: the run ended' });
    });

    it('a long code review says how much code it does not show, and opens all of it', async () => {
      const { apis, approvals } = setup();
      const code = Array.from({ length: 300 }, (_, i) => `x_${i} = ${i}`).join('\n') + '\nsend_payment(to="' + IBAN + '")\n';
      apis.answers = ['Open Full Code', 'Run'];
      const r = await approvals.request({ kind: 'code', code });
      assert.equal(r.decision, 'allow_once');
      const [first, second] = apis.dialogs;
      assert.deepEqual(first.items, ['Open Full Code', 'Run']);
      assert.ok(!first.detail!.includes(IBAN));
      assert.match(first.detail!, /NOT SHOWN HERE: \d+ lines, [\d,]+ characters of the code\. .*Running it here runs all of it, the part not shown included\./);
      assert.deepEqual(apis.documents, [{ content: code, language: 'python' }]);
      assert.equal(second.modal, false);
      assert.deepEqual(second.items, ['Run', 'Deny']);
    });
  });
});
