/**
 * Tool-discovery calls in the execution card, in headless Chromium: `search_tools` and `describe_tool`
 * (the reserved calls `codeact.*`) show as quiet rows ("searched tools: …", "looked up …": muted, smaller,
 * a magnifier instead of the green tick) and are not counted as tool calls; real tool calls keep their look.
 * Screenshots in the dark and light themes go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Locator } from 'playwright-core';
import { DESCRIBE_TOOL, SEARCH_TOOLS } from '../../src/common/tools';
import type { TranscriptEvent } from '../../src/common/transcript';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

const CODE = `hits = await search_tools("roll back a deployment to the previous revision", limit=3)
info = await describe_tool(hits[0]["name"])
from tools import k8s_rollback_deployment
try:
    await k8s_rollback_deployment(deployment="web", revision=0)
except Exception as e:
    print("retrying:", e)
done = await k8s_rollback_deployment(deployment="web")
await describe_tool("k8s_rollback")
`;

const HITS = [
  {
    name: 'k8s_rollback_deployment',
    description: 'Roll a deployment back to an earlier revision.',
    signature: "k8s_rollback_deployment(*, deployment: str, namespace: str = 'default', revision: int = ...)",
    group: 'MCP server "manyTools.mjs"',
    score: 14.2,
  },
  {
    name: 'k8s_get_deployment',
    description: 'Get one deployment.',
    signature: 'k8s_get_deployment(*, deployment: str)',
    group: 'MCP server "manyTools.mjs"',
    score: 6.1,
  },
  {
    name: 'k8s_update_deployment',
    description: 'Update a deployment.',
    signature: 'k8s_update_deployment(*, deployment: str)',
    group: 'MCP server "manyTools.mjs"',
    score: 5.3,
  },
];
const SIGNATURE = HITS[0].signature;

type Call = Extract<TranscriptEvent, { type: 'codeact.tool_call.started' }>;
type Done = Extract<TranscriptEvent, { type: 'codeact.tool_call.completed' }>;
/** Tool-call events as the runtime sends them: discovery calls carry `kind: "discovery"`. */
const started = (item_id: string, call_id: string, name: string, args: unknown): Call => ({
  type: 'codeact.tool_call.started',
  item_id,
  call_id,
  name,
  arguments: args,
  ...(name.startsWith('codeact.') ? { kind: 'discovery' as const } : {}),
});
const completed = (item_id: string, call_id: string, name: string, result: { output?: unknown; error?: string }, duration_ms: number): Done => ({
  type: 'codeact.tool_call.completed',
  item_id,
  call_id,
  name,
  duration_ms,
  ...result,
  ...(name.startsWith('codeact.') ? { kind: 'discovery' as const } : {}),
});

/** A turn whose code searches, looks a tool up, calls it (failing once), and looks up a name that does not exist. */
function discoveryTurn(): TranscriptEvent[] {
  const x = 'ci_d';
  return [
    ev.turn('t-d', 'Roll the web deployment back.', { provider: 'openai-compatible', model: 'qwen2.5-coder:7b', runtime: 'local' }),
    ev.codeStart(x, 'local'),
    ev.code(x, CODE),
    ev.codeDone(x, CODE),
    ev.interpreting(x),
    started(x, 'c1', SEARCH_TOOLS, { query: 'roll back a deployment to the previous revision', limit: 3 }),
    completed(x, 'c1', SEARCH_TOOLS, { output: HITS }, 4),
    started(x, 'c2', DESCRIBE_TOOL, { name: 'k8s_rollback_deployment' }),
    completed(
      x,
      'c2',
      DESCRIBE_TOOL,
      { output: { name: 'k8s_rollback_deployment', signature: SIGNATURE, approval: 'auto', input_schema: { type: 'object' } } },
      2,
    ),
    started(x, 'c3', 'k8s_rollback_deployment', { deployment: 'web', revision: 0 }),
    completed(x, 'c3', 'k8s_rollback_deployment', { error: 'Invalid arguments for "k8s_rollback_deployment": /revision must be >= 1' }, 31),
    ev.out(x, 'retrying: Invalid arguments for "k8s_rollback_deployment": /revision must be >= 1\n'),
    started(x, 'c4', 'k8s_rollback_deployment', { deployment: 'web' }),
    completed(x, 'c4', 'k8s_rollback_deployment', { output: { ok: true, message: 'k8s_rollback_deployment done' } }, 212),
    started(x, 'c5', DESCRIBE_TOOL, { name: 'k8s_rollback' }),
    completed(x, 'c5', DESCRIBE_TOOL, { error: 'No managed tool is named "k8s_rollback". Closest: k8s_rollback_deployment' }, 1),
    ev.completed(x),
    ev.itemDone({
      id: x,
      code: CODE,
      runtime: 'local',
      status: 'failed',
      error: { type: 'RuntimeError', message: 'No managed tool is named "k8s_rollback". Closest: k8s_rollback_deployment', line: 9 },
      duration_ms: 640,
    }),
    ev.text('m-d', 'Rolled **web** back to its previous revision.'),
    ev.textDone('m-d', 'Rolled **web** back to its previous revision.'),
    ev.turnEnd('t-d', 'completed', 2100),
  ];
}

interface Row {
  name: string;
  kind: string;
  status: string;
  text: string;
  icon: string;
  fontSize: number;
  color: string;
  height: number;
  hasToolName: boolean;
}

async function rows(card: Locator): Promise<Row[]> {
  return card.locator('li.tool-call').evaluateAll((lis) =>
    lis.map((li) => {
      const summary = li.querySelector('summary')!;
      const cs = getComputedStyle(summary);
      return {
        name: (li as HTMLElement).dataset.name ?? '',
        kind: li.classList.contains('discovery') ? 'discovery' : 'tool',
        status: (li as HTMLElement).dataset.status ?? '',
        text: (summary as HTMLElement).innerText.replace(/\s+/g, ' ').trim(),
        icon: Array.from(li.querySelector('.tool-status svg')?.classList ?? []).find((c) => c.startsWith('icon-')) ?? '',
        fontSize: parseFloat(cs.fontSize),
        color: cs.color,
        height: summary.getBoundingClientRect().height,
        hasToolName: !!li.querySelector('.tool-name'),
      };
    }),
  );
}

describe('chat panel: tool-discovery calls in the execution card (headless Chromium)', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ light: true, artifacts: ARTIFACTS });

  it('shows search_tools and describe_tool as quiet lookups, never as tool calls; real calls keep their look', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 560, height: 1400 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(discoveryTurn());
    const card = p.page.locator('section.card.exec').last();
    const got = await rows(card);

    assert.deepEqual(
      got.map((r) => [r.name, r.kind, r.status, r.icon]),
      [
        [SEARCH_TOOLS, 'discovery', 'ok', 'icon-search'],
        [DESCRIBE_TOOL, 'discovery', 'ok', 'icon-search'],
        ['k8s_rollback_deployment', 'tool', 'error', 'icon-error'],
        ['k8s_rollback_deployment', 'tool', 'ok', 'icon-pass'],
        [DESCRIBE_TOOL, 'discovery', 'error', 'icon-error'],
      ],
    );
    const [search, describe, failedCall, call, unknown] = got;
    assert.equal(search.text, 'searched tools: "roll back a deployment to the previous revision" → k8s_rollback_deployment +2 4 ms');
    assert.equal(
      await card.locator('li.tool-call.discovery .discovery-outcome').first().getAttribute('title'),
      'Found: k8s_rollback_deployment, k8s_get_deployment, k8s_update_deployment',
    );
    assert.equal(describe.text, `looked up: k8s_rollback_deployment → ${SIGNATURE.slice('k8s_rollback_deployment'.length)} 2 ms`);
    assert.equal(unknown.text, 'looked up: k8s_rollback 1 ms', 'a failed lookup names what it looked for; its error is in the row body');
    assert.equal(call.text, 'k8s_rollback_deployment (deployment="web") 212 ms');
    assert.equal(failedCall.text, 'k8s_rollback_deployment (deployment="web", revision=0) 31 ms');

    // Never shown as if a managed tool ran: no tool name in the tool colour, no green tick, smaller and muted.
    for (const r of [search, describe, unknown]) {
      assert.equal(r.hasToolName, false, `${r.name} has no .tool-name`);
      assert.doesNotMatch(r.text, /codeact\./, 'the reserved name is not shown');
      assert.ok(r.fontSize < call.fontSize, `a lookup's text is smaller (${r.fontSize} < ${call.fontSize} px)`);
      assert.ok(r.height < call.height, `a lookup's row is more compact (${r.height} < ${call.height} px)`);
      assert.notEqual(r.color, call.color, 'a lookup is muted');
    }
    for (const r of [call, failedCall]) {
      assert.equal(r.hasToolName, true);
      const name = await card
        .locator(`li.tool-call:not(.discovery) .tool-name`)
        .first()
        .evaluate((el) => ({ weight: getComputedStyle(el).fontWeight }));
      assert.equal(name.weight, '600', 'a real call keeps its bold name');
    }
    const successIcon = await card.locator('li.tool-call:not(.discovery)[data-status="ok"] .tool-status').evaluate((el) => getComputedStyle(el).color);
    const lookupIcon = await card
      .locator('li.tool-call.discovery[data-status="ok"] .tool-status')
      .first()
      .evaluate((el) => getComputedStyle(el).color);
    assert.notEqual(lookupIcon, successIcon, 'a lookup has no green tick colour');
    assert.equal(lookupIcon, search.color, "the magnifier takes the row's muted colour");

    // The section counts the real calls and their failures; lookups apart.
    assert.equal(await card.locator('.tools-section .section-label').textContent(), 'Tool calls · 2 · 1 failed · 3 lookups');

    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: join(ARTIFACTS, 'webview-discovery-dark.png') });

    // A lookup still opens to show what it asked and what came back.
    await card.locator('li.tool-call.discovery > details > summary').first().click();
    await card.locator('li.tool-call.discovery > details > .tool-body', { hasText: 'Result' }).first().waitFor({ timeout: 10_000 });
    const body = await card.locator('li.tool-call.discovery > details > .tool-body').first().innerText();
    assert.match(body, /Arguments[\s\S]*roll back a deployment[\s\S]*Result[\s\S]*k8s_rollback_deployment/i);
    await card.locator('li.tool-call.discovery > details > summary').nth(2).click();
    await card.locator('li.tool-call.discovery > details > .tool-body', { hasText: 'Error' }).first().waitFor({ timeout: 10_000 });
    assert.match(
      await card.locator('li.tool-call.discovery > details > .tool-body').nth(2).innerText(),
      /Error[\s\S]*No managed tool is named "k8s_rollback"/i,
    );

    // The search's long result closed again; the failed lookup stays open for the picture.
    await card.locator('li.tool-call.discovery > details > summary').first().click();
    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: join(ARTIFACTS, 'webview-discovery-dark-open.png') });
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });

  it('a card with only lookups says "Tool lookups", and the status line says "searching tools" while one runs', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 520, height: 700 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    const x = 'ci_s';
    await p.sendEvents([
      ev.turn('t-s', 'Which tool posts to Slack?'),
      ev.codeStart(x, 'local'),
      ev.codeDone(x, 'print(await search_tools("post a message in a slack channel"))'),
      ev.interpreting(x),
      started(x, 's1', SEARCH_TOOLS, { query: 'post a message in a slack channel' }),
    ]);
    assert.equal(await p.page.locator('.status-line').innerText(), 'Running code · searching tools…');
    const card = p.page.locator('section.card.exec').last();
    assert.equal(await card.locator('.tools-section .section-label').textContent(), 'Tool lookups · 1');
    assert.equal(await card.locator('li.tool-call.discovery').getAttribute('data-status'), 'running');
    assert.match(await card.locator('li.tool-call.discovery > details > summary').innerText(), /^searched tools:\s+"post a message in a slack channel"\s*$/);

    await p.sendEvents([completed(x, 's1', SEARCH_TOOLS, { output: [] }, 3), ev.completed(x), ev.itemDone({ id: x, code: 'print(1)' }), ev.turnEnd('t-s')]);
    assert.match(
      await card.locator('li.tool-call.discovery > details > summary').innerText(),
      /searched tools:\s+"post a message in a slack channel"\s*→ nothing found/,
    );
    assert.equal(await card.locator('.tools-section .section-label').textContent(), 'Tool lookups · 1');
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });

  it('looks right in the light theme and at 300 px (screenshots in test-artifacts/)', async () => {
    const p = await PanelPage.open(ui.browser, ui.light.url, { width: 560, height: 900 }, 'light');
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents(discoveryTurn());
    const card = p.page.locator('section.card.exec').last();
    const got = await rows(card);
    const call = got.find((r) => r.kind === 'tool' && r.status === 'ok')!;
    for (const r of got.filter((x) => x.kind === 'discovery')) {
      assert.ok(r.fontSize < call.fontSize && r.height < call.height);
      assert.notEqual(r.color, call.color);
    }
    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: join(ARTIFACTS, 'webview-discovery-light.png') });

    // Narrow: the query and the outcome give way (ellipsis); nothing sticks out of the card.
    await p.page.setViewportSize({ width: 300, height: 900 });
    await p.whenIdle();
    const overflow = await card.evaluate((el) => {
      const box = el.getBoundingClientRect();
      return Array.from(el.querySelectorAll<HTMLElement>('li.tool-call summary > *'))
        .filter((c) => c.getBoundingClientRect().right > box.right + 0.5)
        .map((c) => `${c.className} "${c.textContent}"`);
    });
    assert.deepEqual(overflow, []);
    await card.screenshot({ path: join(ARTIFACTS, 'webview-discovery-light-300px.png') });
    assert.deepEqual(p.errors, []);
    await p.page.close();
  });
});
