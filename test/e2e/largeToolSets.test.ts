/**
 * A workspace with 300 managed tools in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in
 * headless Chromium. The tools are those of a real stdio MCP server (test/fixtures/mcp/manyTools.mjs,
 * schemas from its tools/list). Above the inline limit the model is shown names only, and the code finds
 * what it needs itself: `await search_tools(query)`, `await describe_tool(name)`, and `from tools import …`
 * (async functions with real signatures: a wrong keyword raises TypeError before anything is sent).
 *
 * - Run with Tools: a file of `# %%` cells run from their CodeLens; values inline, runs in the panel.
 * - The chat panel: the model (a loopback OpenAI-compatible wire server, real OpenAI SDK) sends code that
 *   does the same; the first request's tool description stays within its budget.
 * In both, `search_tools` ranks the right tool first for 10 everyday queries, and the panel shows the
 * lookups as quiet rows, apart from the real tool calls.
 *
 * Screenshots go to test-artifacts/e2e/ (50-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPACT_TOKEN_BUDGET, estimateTextTokens } from '../../src/core/tools/modelTools';
import { manyTools } from '../fixtures/mcp/manyToolsCatalog.mjs';
import { SEARCH_CASES } from '../support/manyTools';
import { turn } from '../support/wire/turn';
import { ROOT, artifactPath } from './support/env';
import { execCards, wheelTo, type ExecCardView } from './support/execCards';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';

/** UI conditions get at least a minute: the machine is small and shared. */
const UI = 60_000;
/** A run starts a session (and the MCP server, the sandbox): give it more. */
const RUN = 180_000;
const MODEL = 'qwen2.5-coder:7b';

/** Ten everyday queries and the tool that must come first. */
const CASES = SEARCH_CASES.slice(0, 10);

/** Python that searches for each case and prints one line per query ("ok" or "MISS"). */
const SEARCH_LOOP = `cases = ${JSON.stringify(CASES)}
misses = []
for query, want in cases:
    hits = await search_tools(query, limit=3)
    top = hits[0]["name"] if hits else None
    print("ok  " if top == want else "MISS", query, "->", top)
    if top != want:
        misses.append([query, top, want])`;

const FILE = 'find_tools.py';
// Lines are 1-based below, as the editor shows them.
const CELLS = `# %% Which tool does what? search_tools ranks the catalogue
${SEARCH_LOOP}
f"{len(cases) - len(misses)} of {len(cases)} ranked first"

# %% Look one up, import it from tools, call it
info = await describe_tool("k8s_scale_deployment")
print(info["signature"])
from tools import k8s_scale_deployment
try:
    await k8s_scale_deployment(deployment="web", replica=5)
except TypeError as e:
    print("TypeError:", e)
await k8s_scale_deployment(deployment="web", replicas=5)
`;
const CELL1_MARKER = 1;
const CELL1_LAST = 10;
const CELL2_MARKER = 12;
const CELL2_LAST = 20;
const SCALE_SIGNATURE = "k8s_scale_deployment(*, deployment: str, replicas: int, namespace: str = 'default')";
const SCALE_TYPE_ERROR = `k8s_scale_deployment() got an unexpected keyword argument 'replica' (did you mean 'replicas'?). Signature: ${SCALE_SIGNATURE}`;

/** What the model's code does in the panel. */
const PANEL_CODE = `${SEARCH_LOOP}
from tools import k8s_rollback_deployment
try:
    await k8s_rollback_deployment(deploymnt="web")
except TypeError as e:
    err = str(e)
done = await k8s_rollback_deployment(deployment="web")
return {"misses": misses, "err": err, "done": done}
`;
const ROLLBACK_TYPE_ERROR =
  "k8s_rollback_deployment() got an unexpected keyword argument 'deploymnt' (did you mean 'deployment'?). Signature: k8s_rollback_deployment(*, deployment: str, namespace: str = 'default', revision: int = ...)";
const DURATION = / · (\d+ ms|\d+\.\d\d? s)$/;

interface ToolsWorkspace {
  folder: string;
  dispose(): void;
}

/** A folder whose settings declare the 300 tools of the MCP fixture (schemas from the server), and the cells file. */
function makeToolsWorkspace(): ToolsWorkspace {
  const parent = mkdtempSync(join(tmpdir(), 'codeact-e2e-300-'));
  const folder = join(parent, 'ops-desk');
  mkdirSync(join(folder, '.vscode'), { recursive: true });
  const command = [process.execPath, join(ROOT, 'test', 'fixtures', 'mcp', 'manyTools.mjs')];
  const tools = manyTools().map((t) => ({ name: t.name, mcp: { command, tool: t.name } }));
  writeFileSync(join(folder, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': tools }, null, 2));
  writeFileSync(join(folder, FILE), CELLS);
  return { folder, dispose: () => rmSync(parent, { recursive: true, force: true }) };
}

/** "ok  query -> tool" lines of a run's output, one per case. */
function rankedLines(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => /^(ok|MISS) /.test(l))
    .map((l) => l.replace(/\s+/g, ' ').trim());
}
const EXPECTED_RANKING = CASES.map(([q, want]) => `ok ${q} -> ${want}`);

describe('e2e: 300 tools — discovery in Run with Tools and in the chat panel', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'tools-300',
    failureName: '300',
    workspace: makeToolsWorkspace,
    wire: ['openai-compatible', 'openai'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 120 }),
    minWaitMs: UI,
  });

  it('the chat view counts the 300 declared tools', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    const empty = await e2e.panel.emptyState();
    await empty.waitFor({ state: 'visible', timeout: UI });
    assert.match(await empty.innerText(), /300 tools ready/);
  });

  it('Run with Tools: a # %% cell ranks the right tool first for 10 queries; the next imports one from tools, trips over a wrong keyword and calls it', async () => {
    await e2e.wb.openFile(FILE);
    await e2e.editor.focus();
    await waitUntil(
      async () => (await e2e.editor.codeLenses().catch(() => [])).filter((l) => l.title === '▶ Run with Tools').length === 2,
      UI,
      () => 'the two "▶ Run with Tools" CodeLenses never showed',
      250,
    );
    const turns = await e2e.panel.turnCount();

    await e2e.editor.clickCodeLens(CELL1_MARKER, '▶ Run with Tools', UI);
    const first = await e2e.editor.waitForDecoration(/^[✓✗]/, RUN);
    assert.equal(first.text.replace(DURATION, ''), '✓ "10 of 10 ranked first"', `cell 1: ${first.text}`);
    assert.equal(first.line, CELL1_LAST);
    await e2e.panel.waitForTurn(turns, ['completed'], RUN);
    const [searchCard] = await execCards(e2e.panel, turns);
    assert.deepEqual(rankedLines(searchCard.output), EXPECTED_RANKING);
    assertLookups(searchCard, CASES.length, 0, []);
    assert.equal(searchCard.toolsLabel.toLowerCase(), 'tool lookups · 10', 'ten lookups and no tool call');
    await e2e.wb.screenshot('50-run-with-tools-search-cell');

    await e2e.editor.clickCodeLens(CELL2_MARKER, '▶ Run with Tools', UI);
    const second = await e2e.editor.waitForDecoration(/^[✓✗] \{/, RUN);
    assert.equal(second.text.replace(DURATION, ''), '✓ {"ok":true,"message":"k8s_scale_deployment done"}', `cell 2: ${second.text}`);
    assert.equal(second.line, CELL2_LAST);
    await e2e.panel.waitForTurn(turns + 1, ['completed'], RUN);
    const [callCard] = await execCards(e2e.panel, turns + 1);
    const lines = callCard.output
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    assert.deepEqual(lines, [SCALE_SIGNATURE, `TypeError: ${SCALE_TYPE_ERROR}`], 'describe_tool, then the TypeError of the wrong keyword');
    // The wrong keyword never reached the host: one lookup and one real call, which succeeded.
    assertLookups(callCard, 1, 1, [['k8s_scale_deployment', 'tool', 'ok']]);
    assert.equal(callCard.toolsLabel.toLowerCase(), 'tool calls · 1 · 1 lookup');

    const hover = await e2e.editor.hoverLine(CELL2_LAST);
    assert.match(hover, /did you mean 'replicas'/);
    await e2e.wb.page.keyboard.press('Escape');
    await e2e.wb.screenshot('51-run-with-tools-import-and-call');
    // From here on a wider sidebar, so the screenshots show the cards' rows.
    await e2e.wb.setSidebarWidth(560);
    // The first cell's run in the panel: ten quiet lookups; then the second's, with its one real call.
    await wheelTo(e2e.panel, '.tools-section', 0, turns);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('52-run-with-tools-panel-lookups') });
    await wheelTo(e2e.panel, '.tools-section', 0, turns + 1);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('52b-run-with-tools-panel-lookup-and-call') });
  });

  it("the panel: names only within the budget on the first request; the model's code searches, imports, trips over a keyword and calls the tool", async () => {
    const before = e2e.wire.turns.length;
    e2e.wire.push(turn().call('execute_tool_code', { code: PANEL_CODE }, { chunkSize: 80 }), turn().text('Rolled **web** back to its previous revision.'));
    const turns = await e2e.panel.turnCount();
    await e2e.panel.send('Roll the web deployment back to its previous revision.');
    assert.equal(await e2e.panel.waitForTurn(turns, ['completed'], RUN), 'completed', await e2e.panel.text());
    assert.equal(e2e.wire.turns.length - before, 2);

    // The first request: execute_tool_code lists names and short descriptions, no schema, within budget.
    const first = e2e.wire.turns[before].body;
    assert.deepEqual(
      first.tools.map((t: { function: { name: string } }) => t.function.name),
      ['execute_tool_code'],
    );
    const description: string = first.tools[0].function.description;
    const tokens = estimateTextTokens(description);
    console.log(
      `      execute_tool_code's description for 300 tools: ${description.length} characters, about ${tokens} tokens (listing budget ${COMPACT_TOKEN_BUDGET})`,
    );
    // The budget is the listing's; about 800 tokens on top are the fixed text (how to run code, the session, outputs, installs).
    // The listing's budget, plus the fixed prose around it (~130 tokens of it the background jobs paragraph).
    assert.ok(tokens <= COMPACT_TOKEN_BUDGET + 930, `${tokens} tokens`);
    assert.match(description, /MCP server ".*manyTools\.mjs" \(300\):/);
    assert.match(description, /- k8s_rollback_deployment/);
    assert.match(description, /await search_tools\("what you need", limit=10\)/);
    assert.doesNotMatch(description, /input schema:|"properties"/, 'no schema in the listing');
    assert.ok(JSON.stringify(first).length < 40_000, `the whole first request is small: ${JSON.stringify(first).length} characters`);

    // What the code returned, as the model read it on the second request.
    const tool = e2e.wire.turns[before + 1].body.messages.find((m: { role: string }) => m.role === 'tool');
    const summary = JSON.parse(tool.content) as { status: string; value: { misses: unknown[]; err: string; done: unknown }; stdout: string };
    assert.equal(summary.status, 'completed', tool.content);
    assert.deepEqual(summary.value.misses, [], 'search_tools ranked the right tool first for every query');
    assert.equal(summary.value.err, ROLLBACK_TYPE_ERROR);
    assert.deepEqual(summary.value.done, { ok: true, message: 'k8s_rollback_deployment done' });
    assert.deepEqual(rankedLines(summary.stdout), EXPECTED_RANKING);

    // The panel: ten quiet lookups, then the one real call; the answer.
    const [card] = await execCards(e2e.panel, turns);
    assert.equal(card.status, 'done');
    assert.deepEqual(rankedLines(card.output), EXPECTED_RANKING);
    assertLookups(card, CASES.length, 1, [['k8s_rollback_deployment', 'tool', 'ok']]);
    assert.equal(card.toolsLabel.toLowerCase(), 'tool calls · 1 · 10 lookups');
    assert.match(await e2e.panel.lastAnswer(), /Rolled web back to its previous revision\./);
    await e2e.wb.screenshot('53-panel-300-tools-answer');
    await wheelTo(e2e.panel, '.tools-section', 0);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('54-panel-300-tools-lookups') });
  });
});

/**
 * The card's tool rows: `lookups` quiet search rows first (each "searched tools: <query> → <the expected
 * tool> +2", in the order of CASES when there are ten, or describe_tool's "looked up" row), then the real calls.
 */
function assertLookups(card: ExecCardView, lookups: number, real: number, realRows: [string, string, string][]): void {
  const discovery = card.tools.filter((t) => t.kind === 'discovery');
  const tools = card.tools.filter((t) => t.kind === 'tool');
  assert.equal(discovery.length, lookups, JSON.stringify(card.tools));
  assert.equal(tools.length, real, JSON.stringify(card.tools));
  assert.deepEqual(
    tools.map((t) => [t.name, t.kind, t.status]),
    realRows,
  );
  for (const [i, row] of discovery.entries()) {
    assert.equal(row.status, 'ok');
    assert.ok(row.name.startsWith('codeact.'), row.name);
    assert.doesNotMatch(row.text, /codeact\./, 'the reserved name is not shown');
    if (lookups === CASES.length) {
      const [query, want] = CASES[i];
      assert.ok(row.text.startsWith(`searched tools: "${query}" → ${want} +2 `), row.text);
    } else {
      assert.match(row.text, /^looked up: k8s_scale_deployment → \(\*, deployment: str, replicas: int/);
    }
  }
}
