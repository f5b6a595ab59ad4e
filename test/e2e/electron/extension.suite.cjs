// The extension tests that run inside a real VS Code (desktop via @vscode/test-electron, or the
// server's extension host). Plain CommonJS so VS Code loads it without a build step. The workspace
// is a copy of examples/orders (CODEACT_E2E_WORKSPACE), opened trusted.
/* global describe, before, it */
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');
const vscode = require('vscode');

const EXTENSION_ID = 'codeact.codeact';

describe('CodeAct inside VS Code', function () {
  let ext;

  before(async () => {
    ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `the extension ${EXTENSION_ID} is installed`);
  });

  it('activates and reports its activation time', async () => {
    const api = await ext.activate();
    assert.ok(ext.isActive);
    assert.equal(typeof api?.activationMs, 'number');
    console.log(`      activate() took ${api.activationMs} ms`);
  });

  it('registers every command of its manifest', async () => {
    const all = new Set(await vscode.commands.getCommands(true));
    const missing = ext.packageJSON.contributes.commands.map((c) => c.command).filter((id) => !all.has(id));
    assert.deepEqual(missing, [], 'commands declared in package.json but not registered');
  });

  it('registers the execute_tool_code language-model tool', () => {
    assert.ok(
      vscode.lm.tools.some((t) => t.name === 'execute_tool_code'),
      vscode.lm.tools.map((t) => t.name).join(', '),
    );
  });

  it("the execute_tool_code language-model tool returns the code's plot as an image part", async function () {
    if (typeof vscode.LanguageModelDataPart !== 'function') {
      console.log(`      VS Code ${vscode.version} has no LanguageModelDataPart: the tool's result is text only`);
      this.skip();
    }
    // Outside a chat VS Code asks the person with the tool's confirmation (an extension test run confirms it by itself).
    const code = 'import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2))\nplt.plot([1, 3, 2])\nplt.show()\nprint("plotted")';
    const result = await vscode.lm.invokeTool('execute_tool_code', { input: { code }, toolInvocationToken: undefined });
    const images = result.content.filter((p) => p instanceof vscode.LanguageModelDataPart && p.mimeType.startsWith('image/'));
    const texts = result.content.filter((p) => p instanceof vscode.LanguageModelTextPart).map((p) => p.value);
    assert.equal(images.length, 1, `one image part: ${JSON.stringify(result.content.map((p) => p.value ?? p.mimeType))}`);
    assert.equal(images[0].mimeType, 'image/png');
    assert.deepEqual([...images[0].data.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'PNG bytes');
    assert.match(texts.join('\n'), /plotted/);
  });

  it("VS Code's agent, given the panel's open conversation, runs its code there through CodeAct's MCP server (VS Code's own MCP client)", async function () {
    if (typeof vscode.McpHttpServerDefinition !== 'function') {
      console.log(`      VS Code ${vscode.version} has no HTTP MCP server definitions: its agent gets sessions of its own`);
      this.skip();
    }
    this.timeout(120_000);
    await vscode.commands.executeCommand('codeact.mcp.chooseAgentSession', 'panel');
    try {
      // VS Code starts the definition it was given (the extension host's loopback server, with its token) and lists its tools.
      let tool;
      for (let i = 0; i < 60 && !tool; i++) {
        await Promise.resolve(vscode.commands.executeCommand('workbench.mcp.startServer', '*', { waitForLiveTools: true })).catch(() => {});
        tool = vscode.lm.tools.find((t) => t.name !== 'execute_tool_code' && /execute_tool_code$/.test(t.name));
        if (!tool) await new Promise((r) => setTimeout(r, 1000));
      }
      assert.ok(tool, `VS Code never listed the shared server's execute_tool_code: ${vscode.lm.tools.map((t) => t.name).join(', ')}`);
      const viaMcp = await vscode.lm.invokeTool(tool.name, {
        input: { code: 'shared_by_agent = 7\nreturn shared_by_agent * 6' },
        toolInvocationToken: undefined,
      });
      const text = viaMcp.content.map((p) => p.value ?? '').join('\n');
      assert.match(text, /42/, text);
      // The panel's own door (the language-model tool runs in the panel's open conversation) finds what the agent defined.
      const viaPanel = await vscode.lm.invokeTool('execute_tool_code', { input: { code: 'return shared_by_agent + 1' }, toolInvocationToken: undefined });
      assert.match(viaPanel.content.map((p) => p.value ?? '').join('\n'), /\b8\b/);
    } finally {
      await vscode.commands.executeCommand('codeact.mcp.chooseAgentSession', 'own');
    }
  });

  it('reads the managed tools of the workspace (trusted)', () => {
    assert.equal(vscode.workspace.isTrusted, true);
    const tools = vscode.workspace.getConfiguration('codeact').get('tools');
    assert.ok(Array.isArray(tools) && tools.some((t) => t.name === 'search_catalog'), JSON.stringify(tools));
  });

  it('honours every codeact.sandbox.* setting side by side: they reach the runtime that runs the code', async () => {
    const cfg = () => vscode.workspace.getConfiguration('codeact');
    await cfg().update('sandbox.network', true, vscode.ConfigurationTarget.Global);
    await cfg().update('sandbox.limits', { memory: '1g', cpuSeconds: 60 }, vscode.ConfigurationTarget.Global);
    try {
      const doc = await vscode.workspace.openTextDocument({ language: 'python', content: 'return 6 * 7\n' });
      await vscode.window.showTextDocument(doc);
      const item = await vscode.commands.executeCommand('codeact.runWithTools');
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.value, 42);
      assert.equal(item.sandbox.limits.memory, '1g', JSON.stringify(item.sandbox));
      assert.equal(item.sandbox.limits.cpuSeconds, 60);
      // Without bubblewrap there is no network namespace to open; with it, the setting opens it.
      if (item.sandbox.kind === 'bubblewrap') assert.equal(item.sandbox.network, true, JSON.stringify(item.sandbox));
    } finally {
      await cfg().update('sandbox.network', undefined, vscode.ConfigurationTarget.Global);
      await cfg().update('sandbox.limits', undefined, vscode.ConfigurationTarget.Global);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    }
  });

  it("never takes a first-party provider's base URL from the workspace: only from the user", async () => {
    const api = await ext.activate();
    const cfg = () => vscode.workspace.getConfiguration('codeact');
    await cfg().update('provider', 'openai', vscode.ConfigurationTarget.Global);
    await cfg().update('baseURL', 'http://attacker.invalid/v1', vscode.ConfigurationTarget.Workspace);
    try {
      assert.equal(api.settings().provider, 'openai');
      assert.equal(api.settings().baseURL, undefined, "the workspace's base URL would receive the OpenAI key");
      await cfg().update('baseURL', 'https://proxy.example/v1', vscode.ConfigurationTarget.Global);
      assert.equal(api.settings().baseURL, 'https://proxy.example/v1', "the user's own base URL is used");
      // An OpenAI-compatible server's URL may come from a trusted workspace.
      await cfg().update('provider', 'openai-compatible', vscode.ConfigurationTarget.Global);
      assert.equal(api.settings().baseURL, 'http://attacker.invalid/v1');
    } finally {
      await cfg().update('baseURL', undefined, vscode.ConfigurationTarget.Workspace);
      await cfg().update('baseURL', undefined, vscode.ConfigurationTarget.Global);
      await cfg().update('provider', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('opens the chat view', async () => {
    const api = await ext.activate();
    await vscode.commands.executeCommand('codeact.openChat');
    const deadline = Date.now() + 60000;
    while (!api.chatVisible() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(api.chatVisible(), true, 'the chat view is visible after CodeAct: Open Chat');
  });

  it('"Run with Tools" runs order_desk.py with the managed tools and returns the quote', async () => {
    const folder = process.env.CODEACT_E2E_WORKSPACE || vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'a workspace folder is open');
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(folder, 'order_desk.py')));
    await vscode.window.showTextDocument(doc);
    const item = await vscode.commands.executeCommand('codeact.runWithTools');
    assert.ok(item, 'the command returns the execution item');
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    assert.match(String(item.value?.quote_id), /^Q-\d+$/);
    const stdout = item.outputs
      .filter((o) => o.type === 'logs' && o.stream !== 'stderr')
      .map((o) => o.logs)
      .join('');
    assert.match(stdout, /Quote Q-\d+ for Acme Robotics/);
  });
});
