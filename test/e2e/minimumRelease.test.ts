/**
 * The smoke lane on the oldest VS Code that package.json's `engines.vscode` claims (code-server 4.100.3 = VS Code 1.100).
 * Every other suite runs on the current release; this one proves that the claim still holds where a user on 1.100
 * would first notice it: the extension activates, a chat turn runs code and answers, "Run with Tools" shows its
 * result inline, and a notebook cell runs on the CodeAct kernel. Features newer than 1.100 (the MCP server
 * definition, image parts in LM tool results) are detected at run time; activation here proves their absence
 * costs nothing else.
 */
import assert from 'node:assert/strict';
import { turn } from '../support/wire/turn';
import { NotebookDriver } from './support/notebook';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspaceWith, notebook } from './support/workspace';

const MODEL = 'qwen2.5-coder:7b';
const UI = 60_000;

describe('e2e: the smoke lane on the minimum VS Code (1.100)', function () {
  this.timeout(300_000);
  const e2e = useCodeServer({
    name: 'minimum-release',
    release: 'minimum',
    wire: ['openai-compatible', 'openai'],
    workspace: () => makeWorkspaceWith({ 'smoke.ipynb': notebook(['x = 6 * 7\nprint("cell says", x)']) }),
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 120,
    }),
    minWaitMs: UI,
  });

  it("activates: the chat opens from the command palette with the folder's tools; the missing MCP API is only logged", async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    const empty = await e2e.panel.emptyState();
    await empty.waitFor({ state: 'visible', timeout: e2e.wb.wait(UI) });
    assert.match(await empty.innerText(), /4 tools ready/);
    // What 1.100 lacks is said in the log, not thrown: the MCP definition provider is not there to register.
    await waitUntil(
      () => /CodeAct activated in [\d.]+ ms/.test(e2e.cs.extensionHostLogs()),
      e2e.wb.wait(UI),
      () => `the extension never logged its activation:\n${e2e.cs.extensionHostLogs().slice(-2000)}`,
    );
    assert.match(e2e.cs.extensionHostLogs(), /did not take CodeAct's MCP server|cannot take MCP servers from extensions/);
  });

  it('a chat turn: the model writes code, it runs in the local guest, the output and the answer show', async () => {
    e2e.wire.push(
      turn().call('execute_tool_code', { code: 'stock = await call_tool("check_inventory", sku="CHR-ERG-100")\nprint("on hand:", stock["on_hand"])' }),
      turn().text('There are 12 on hand.'),
    );
    await e2e.panel.send('How many CHR-ERG-100 are on hand?');
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], e2e.wb.wait(120_000)), 'completed', await e2e.panel.text());
    assert.match(await e2e.panel.lastOutput(), /on hand: 12/);
    assert.match(await e2e.panel.lastAnswer(), /12 on hand/);
    await e2e.wb.screenshot('minimum-chat-turn');
  });

  it('"CodeAct: Run with Tools" on order_desk.py shows its value inline', async () => {
    await e2e.wb.openFile('order_desk.py');
    await e2e.editor.focus();
    await e2e.wb.runCommand('CodeAct: Run with Tools');
    const deco = await e2e.editor.waitForDecoration(/✓|✗/, e2e.wb.wait(120_000));
    assert.match(deco.text, /^✓ .*"quote_id"/, `the run failed: ${deco.text}`);
  });

  it('a notebook cell runs on the CodeAct kernel', async () => {
    const nb = new NotebookDriver(e2e.wb);
    await nb.open('smoke.ipynb');
    await nb.selectKernel('CodeAct');
    const before = await nb.cells();
    await nb.runAll();
    const after = await nb.waitForRun({ before, timeoutMs: e2e.wb.wait(180_000) });
    assert.deepEqual(
      after.map((c) => c.state),
      ['success'],
    );
    assert.match(await nb.streamText(0, /cell says 42/), /^cell says 42\s*$/);
    await e2e.wb.screenshot('minimum-notebook-cell');
  });
});
