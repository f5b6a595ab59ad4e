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
    assert.ok(vscode.lm.tools.some((t) => t.name === 'execute_tool_code'), vscode.lm.tools.map((t) => t.name).join(', '));
  });

  it('reads the managed tools of the workspace (trusted)', () => {
    assert.equal(vscode.workspace.isTrusted, true);
    const tools = vscode.workspace.getConfiguration('codeact').get('tools');
    assert.ok(Array.isArray(tools) && tools.some((t) => t.name === 'search_catalog'), JSON.stringify(tools));
  });

  it('honours every codeact.sandbox.* setting (kind, network) side by side', async () => {
    const cfg = () => vscode.workspace.getConfiguration('codeact');
    await cfg().update('sandbox.kind', 'bubblewrap', vscode.ConfigurationTarget.Global);
    await cfg().update('sandbox.network', true, vscode.ConfigurationTarget.Global);
    try {
      assert.equal(cfg().get('sandbox.kind'), 'bubblewrap');
      assert.equal(cfg().get('sandbox.network'), true, 'codeact.sandbox.network set to true in the user settings reads back as true');
    } finally {
      await cfg().update('sandbox.network', undefined, vscode.ConfigurationTarget.Global);
      await cfg().update('sandbox.kind', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('opens the chat view', async () => {
    await vscode.commands.executeCommand('codeact.openChat');
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
    const stdout = item.outputs.filter((o) => o.type === 'logs' && o.stream !== 'stderr').map((o) => o.logs).join('');
    assert.match(stdout, /Quote Q-\d+ for Acme Robotics/);
  });
});
