/**
 * Multi-root workspaces in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven in
 * headless Chromium: a `.code-workspace` with two folders, alpha and beta, each declaring its own
 * `where_am_i` command tool in its folder settings (a script of the folder's own that says its name and its
 * working directory). The panel's folder bar picks the folder of a chat turn; a new conversation takes the
 * active editor's folder; each turn's card shows that folder's tool and output, and the model was offered
 * that folder's tool. Run with Tools on a file of each folder runs that folder's tool. A conversation
 * remembers its folder when reopened; a folder removed from the workspace is said plainly, and its turn is
 * refused with what to do. The folder bar reads in every theme (WCAG AA) and at 240 px.
 *
 * One code-server start; the model is a scripted loopback server speaking the OpenAI Chat Completions
 * streaming format (the `openai-compatible` provider). Screenshots go to test-artifacts/e2e/ (97-…).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import { textContrast } from './support/contrast';
import { artifactPath } from './support/env';
import { narrowLayoutProblems } from './support/layout';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { THEMES, applyTheme } from './support/themes';
import type { Workspace } from './support/workspace';

const UI = 60_000;
const RUN = 180_000;
const MODEL = 'qwen2.5-coder:7b';
const FOLDERS = ['alpha', 'beta'] as const;

const TOOL_PY = (name: string) => `import json, os, sys
json.load(sys.stdin)
json.dump({"folder": ${JSON.stringify(name)}, "cwd": os.path.basename(os.getcwd()), "path": os.getcwd()}, sys.stdout)
`;

const RUN_FILE = `# %% Where am I
r = await call_tool("where_am_i")
return r["folder"] + "@" + r["cwd"]
`;

// The guest sees its folder's files only where that folder mounts it (beta: codeact.sandbox.mountWorkspace "readonly").
const CHAT_CODE = `import os
r = await call_tool("where_am_i")
print("tool says", r["folder"], "in", r["cwd"])
print("sees its files:", os.path.exists(os.path.join(r["path"], "tools", "where.py")))
return r["folder"]`;

let workspaceFile = '';

/** `<tmp>/multi.code-workspace` with the folders alpha and beta, each with its own codeact.tools. */
function makeMultiRoot(): Workspace {
  const parent = mkdtempSync(join(tmpdir(), 'codeact-e2e-multiroot-'));
  for (const name of FOLDERS) {
    const folder = join(parent, name);
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    mkdirSync(join(folder, 'tools'), { recursive: true });
    writeFileSync(join(folder, 'tools', 'where.py'), TOOL_PY(name));
    writeFileSync(join(folder, `${name}_run.py`), RUN_FILE);
    const tool = {
      name: 'where_am_i',
      description: `Says which folder it runs in (the ${name} folder's own tool).`,
      command: ['python3', 'tools/where.py'],
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    };
    // A folder-scoped setting other than the tools: beta mounts its folder in the sandbox, alpha does not.
    const own = name === 'beta' ? { 'codeact.sandbox.mountWorkspace': 'readonly' } : {};
    writeFileSync(join(folder, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool], ...own }, null, 2));
  }
  workspaceFile = join(parent, 'multi.code-workspace');
  writeFileSync(workspaceFile, JSON.stringify({ folders: FOLDERS.map((path) => ({ path })), settings: {} }, null, 2));
  return { folder: workspaceFile, dispose: () => rmSync(parent, { recursive: true, force: true }) };
}

interface Bar {
  shown: boolean;
  text: string;
  selected: string;
  options: string[];
}

describe("e2e: multi-root — each folder's tools for the turns and the Run with Tools of that folder", function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'multi-root',
    workspace: makeMultiRoot,
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({ 'codeact.provider': 'openai-compatible', 'codeact.baseURL': url, 'codeact.model': MODEL, 'codeact.timeoutSeconds': 90 }),
    minWaitMs: UI,
  });

  async function bar(): Promise<Bar> {
    const f = await e2e.panel.frame();
    return f.evaluate(() => {
      const el = document.querySelector<HTMLElement>('.workspace-bar');
      const select = el?.querySelector<HTMLSelectElement>('select');
      return {
        shown: Boolean(el && !el.hidden && el.getBoundingClientRect().height > 0),
        text: el?.innerText.replace(/\s+/g, ' ').trim() ?? '',
        selected: select?.selectedOptions[0]?.textContent ?? '',
        options: Array.from(select?.options ?? [])
          .filter((o) => !o.disabled)
          .map((o) => o.textContent ?? ''),
      };
    });
  }

  async function waitForBar(check: (b: Bar) => boolean, what: string): Promise<Bar> {
    let last: Bar | undefined;
    await waitUntil(
      async () => check((last = await bar().catch(() => last!))),
      UI,
      () => `the folder bar never ${what}: ${JSON.stringify(last)}`,
      200,
    );
    return last!;
  }

  /** Sends a prompt whose one execution calls where_am_i; returns the card's tool calls and output. */
  async function chatTurn(prompt: string): Promise<{ tools: string[]; output: string; offered: string }> {
    e2e.wire.push(turn().call('execute_tool_code', { code: CHAT_CODE }, { chunkSize: 24 }), turn().text('Done.'));
    const before = e2e.wire.turns.length;
    const index = await e2e.panel.turnCount();
    await e2e.panel.send(prompt);
    assert.equal(await e2e.panel.waitForTurn(index, ['completed'], RUN), 'completed', await e2e.panel.text());
    const tools = (await e2e.panel.lastToolCalls()).map((t) => `${t.name}:${t.status}`);
    const output = await e2e.panel.lastOutput();
    return { tools, output, offered: JSON.stringify(e2e.wire.turns[before].body) };
  }

  it("the folder bar lists both folders; a turn in the picked folder runs that folder's tool, in that folder", async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    const first = await waitForBar((b) => b.shown && b.options.length === 2, 'showed both folders');
    assert.deepEqual(first.options, ['alpha', 'beta']);
    assert.equal(first.selected, 'alpha', 'no editor open: the first folder');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('97-multiroot-folder-bar') });

    await (await e2e.panel.frame()).locator('.workspace-bar select').selectOption({ label: 'beta' });
    await waitForBar((b) => b.selected === 'beta', 'showed beta after the pick');
    const beta = await chatTurn('Where does this run?');
    assert.deepEqual(beta.tools, ['where_am_i:ok']);
    assert.match(beta.output, /tool says beta in beta/, "beta's own tool ran, in the beta folder");
    assert.match(beta.output, /sees its files: True/, "beta's folder setting mounts beta in the sandbox");
    assert.match(beta.offered, /the beta folder's own tool/, "the model was offered beta's tool");
    assert.doesNotMatch(beta.offered, /the alpha folder's own tool/);
    assert.equal((await bar()).selected, 'beta');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('97-multiroot-turn-in-beta') });
  });

  it("a new conversation takes the active editor's folder, and its turn runs alpha's tool", async () => {
    await e2e.wb.openFile('alpha_run.py');
    await e2e.wb.runCommand('CodeAct: New Conversation');
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => -1)) === 0,
      UI,
      () => 'the new conversation did not start empty',
      250,
    );
    await waitForBar((b) => b.selected === 'alpha', "followed the active editor's folder (alpha)");
    const alpha = await chatTurn('And this one?');
    assert.deepEqual(alpha.tools, ['where_am_i:ok']);
    assert.match(alpha.output, /tool says alpha in alpha/);
    assert.match(alpha.output, /sees its files: False/, "alpha mounts nothing (beta's setting is beta's)");
    assert.match(alpha.offered, /the alpha folder's own tool/);
    assert.doesNotMatch(alpha.offered, /the beta folder's own tool/);
  });

  it("Run with Tools on a file of each folder runs that folder's tool, in that folder", async () => {
    for (const name of FOLDERS) {
      await e2e.wb.openFile(`${name}_run.py`);
      await e2e.editor.focus();
      await e2e.editor.clickCodeLens(1, '▶ Run with Tools', UI);
      const mark = await e2e.editor.waitForDecoration(/^[✓✗]/, RUN);
      assert.match(mark.text, new RegExp(`^✓ "${name}@${name}"`), `${name}_run.py ran ${name}'s tool in ${name}: ${mark.text}`);
    }
    await e2e.wb.screenshot('97-multiroot-run-with-tools-beta');
  });

  it('a reopened conversation keeps its folder; a folder gone from the workspace is said, and its turn refused', async () => {
    const f = await e2e.panel.frame();
    await e2e.panel.history();
    await f.locator('button.history-open', { hasText: 'Where does this run?' }).first().click();
    await waitUntil(
      async () => (await e2e.panel.turnCount().catch(() => 0)) === 1,
      UI,
      () => 'the reopened conversation did not show its turn',
      250,
    );
    // The active editor is alpha's: the conversation keeps its own folder.
    await waitForBar((b) => b.selected === 'beta', "showed the reopened conversation's folder (beta)");

    // beta leaves the workspace (the .code-workspace file is edited, as another window or a person would).
    writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: 'alpha' }], settings: {} }, null, 2));
    const gone = await waitForBar((b) => /beta is not open in this window/.test(b.text), 'said beta is gone');
    assert.deepEqual(gone.options, ['alpha'], 'the bar offers the folders that are open');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('97-multiroot-folder-gone') });
    const turns = await e2e.panel.turnCount();
    await e2e.panel.send('Once more?');
    let notices: Array<{ text: string }> = [];
    await waitUntil(
      async () =>
        (notices = await e2e.panel.notices()).some((n) => /worked in the folder .*beta, which is not open in this window.*pick one of "alpha"/.test(n.text)),
      UI,
      () => `no notice says the folder is gone: ${JSON.stringify(notices)}`,
      250,
    );
    assert.equal(await e2e.panel.turnCount(), turns, 'no turn ran in another folder');

    // Picking alpha in the bar continues the conversation there.
    await f.locator('.workspace-bar select').selectOption({ label: 'alpha' });
    // alpha is the one folder now and nothing is gone: the bar's folder row goes (its Python row, when known, stays).
    await waitForBar(
      (b) => b.options.length === 0 && !/Folder|not open/.test(b.text),
      'dropped its folder row once the conversation moved to alpha, the one folder',
    );
    const moved = await chatTurn('Continue in alpha.');
    assert.match(moved.output, /tool says alpha in alpha/);
    writeFileSync(workspaceFile, JSON.stringify({ folders: FOLDERS.map((path) => ({ path })), settings: {} }, null, 2));
    await waitForBar((b) => b.options.length === 2, 'listed both folders again');
  });

  it('the folder bar reads in every theme (WCAG AA) and at 240 px', async () => {
    const failures: string[] = [];
    for (const theme of THEMES) {
      await applyTheme(e2e.panel, theme);
      const f = await e2e.panel.frame();
      const bad = (await f.evaluate(textContrast)).filter((x) => x.ratio < x.needed && /workspace|select|Folder/.test(x.what));
      if (bad.length) failures.push(`${theme.label}:\n${bad.map((x) => `${x.what}: ${x.ratio}:1 (${x.fg} on ${x.bg}, needs ${x.needed}:1)`).join('\n')}`);
      await e2e.panel.sidebar.screenshot({ path: artifactPath(`97-multiroot-bar-${theme.slug}`) });
    }
    await applyTheme(e2e.panel, THEMES[0]);
    const f = await e2e.panel.frame();
    const before = await e2e.wb.sidebarWidth();
    await e2e.wb.setSidebarWidth(240);
    await waitUntil(
      async () => (await f.evaluate(() => document.documentElement.clientWidth).catch(() => 999)) <= 240,
      UI,
      () => 'the webview never got 240 px wide',
      200,
    );
    const problems = await (await e2e.panel.frame()).evaluate(narrowLayoutProblems);
    const b = await bar();
    await e2e.panel.sidebar.screenshot({ path: artifactPath('97-multiroot-bar-240px') });
    await e2e.wb.setSidebarWidth(before);
    assert.ok(b.shown && b.selected, 'the bar shows its folder at 240 px');
    assert.deepEqual(failures, [], `texts below WCAG AA contrast:\n${failures.join('\n\n')}`);
    assert.deepEqual(problems, [], 'layout problems of the narrow panel');
  });
});
