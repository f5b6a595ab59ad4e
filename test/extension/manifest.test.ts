import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));

describe('extension manifest', () => {
  it('declares the engine, the CLI binary and the entry points', () => {
    assert.equal(pkg.name, 'codeact');
    assert.equal(pkg.engines.vscode, '^1.100.0');
    assert.equal(pkg.bin.codeact, 'dist/cli.js');
    assert.equal(pkg.main, './dist/extension.js');
    for (const s of ['build', 'watch', 'test', 'lint', 'bench', 'package']) assert.ok(pkg.scripts[s], `script ${s}`);
  });

  it('contributes the commands with their "CodeAct:" titles', () => {
    const titles = Object.fromEntries(
      pkg.contributes.commands.map((c: { command: string; title: string; category: string }) => [c.command, `${c.category}: ${c.title}`]),
    );
    assert.equal(titles['codeact.openChat'], 'CodeAct: Open Chat');
    assert.equal(titles['codeact.runWithTools'], 'CodeAct: Run with Tools');
    assert.equal(titles['codeact.askWithTools'], 'CodeAct: Ask Agent with Tools…');
    assert.equal(titles['codeact.stop'], 'CodeAct: Stop');
    assert.equal(titles['codeact.setApiKey'], 'CodeAct: Set API Key…');
    assert.equal(titles['codeact.selectModel'], 'CodeAct: Select Provider and Model…');
    assert.equal(titles['codeact.showLog'], 'CodeAct: Show Log');
    assert.equal(titles['codeact.mcpSignOut'], 'CodeAct: Sign Out of MCP Server…');
  });

  it('has Python menus, keybindings, a view container with the chat webview, and a walkthrough', () => {
    assert.ok(
      pkg.contributes.menus['editor/context'].some((m: { command: string; when: string }) => m.command === 'codeact.runWithTools' && /python/.test(m.when)),
    );
    assert.ok(
      pkg.contributes.menus['editor/title'].some((m: { command: string; when: string }) => m.command === 'codeact.runWithTools' && /python/.test(m.when)),
    );
    assert.ok(pkg.contributes.keybindings.some((k: { command: string }) => k.command === 'codeact.runWithTools'));
    assert.equal(pkg.contributes.viewsContainers.activitybar[0].id, 'codeact');
    assert.equal(pkg.contributes.views.codeact[0].type, 'webview');
    assert.equal(pkg.contributes.views.codeact[0].id, 'codeact.chat');
    assert.equal(pkg.contributes.walkthroughs[0].steps.length, 4);
  });

  it("binds Ask Agent with Tools to Ctrl+Alt+J, leaving VS Code's own Ctrl+Alt+I (Open Chat) and ⌘⌥I (developer tools) alone", () => {
    const keys = pkg.contributes.keybindings as { command: string; key: string; mac?: string; when?: string }[];
    const ask = keys.find((k) => k.command === 'codeact.askWithTools');
    assert.ok(ask, 'Ask Agent with Tools has a keybinding');
    assert.equal(ask.key, 'ctrl+alt+j');
    assert.equal(ask.mac, 'cmd+alt+j');
    for (const k of keys) {
      assert.notEqual(k.key, 'ctrl+alt+i', `${k.command} hides VS Code's Open Chat`);
      assert.notEqual(k.mac, 'cmd+alt+i', `${k.command} hides the developer tools on macOS`);
    }
  });

  it('runs on the remote side (Remote-SSH, WSL, dev containers): a workspace extension, its webview loading only through asWebviewUri', () => {
    // The guest, bubblewrap, the workspace's files and tools are on the remote machine: so is the extension host that runs them.
    assert.deepEqual(pkg.extensionKind, ['workspace']);
    const panel = readFileSync(path.resolve(__dirname, '../../src/vscode/chatPanel.ts'), 'utf8');
    assert.match(panel, /asWebviewUri\(/);
    assert.doesNotMatch(panel, /vscode-resource:|file:\/\//);
  });

  it('uses specific activation events, never "*"', () => {
    assert.ok(pkg.activationEvents.length > 0);
    assert.ok(!pkg.activationEvents.includes('*'));
    assert.ok(!pkg.activationEvents.includes('onStartupFinished'));
  });

  it('supports untrusted workspaces only in a limited way, restricting tools, runtime and interpreter settings', () => {
    const u = pkg.capabilities.untrustedWorkspaces;
    assert.equal(u.supported, 'limited');
    for (const key of ['codeact.tools', 'codeact.runtime', 'codeact.python', 'codeact.jupyter.serverURL', 'codeact.jupyter.url', 'codeact.sandbox.kind'])
      assert.ok(u.restrictedConfigurations.includes(key), key);
  });

  it('gives every setting a markdownDescription, and a full schema for codeact.tools', () => {
    const props = pkg.contributes.configuration.properties;
    for (const [k, v] of Object.entries(props)) assert.ok((v as { markdownDescription?: string }).markdownDescription, `${k} has no markdownDescription`);
    for (const k of [
      'codeact.provider',
      'codeact.model',
      'codeact.baseURL',
      'codeact.mode',
      'codeact.runtime',
      'codeact.timeoutSeconds',
      'codeact.approval.default',
    ])
      assert.ok(props[k], k);
    const tool = props['codeact.tools'].items;
    assert.deepEqual(tool.required, ['name']);
    for (const k of ['name', 'description', 'inputSchema', 'outputSchema', 'approval', 'command', 'http', 'mcp', 'lmTool', 'expose'])
      assert.ok(tool.properties[k], k);
    assert.deepEqual(tool.properties.approval.enum, ['auto', 'ask', 'deny']);
  });

  it('contributes the execute_tool_code language-model tool and the @codeact participant', () => {
    const t = pkg.contributes.languageModelTools.find((x: { name: string }) => x.name === 'execute_tool_code');
    assert.ok(t && t.inputSchema.required.includes('code'));
    assert.ok(pkg.activationEvents.includes('onLanguageModelTool:execute_tool_code'));
    const p = pkg.contributes.chatParticipants[0];
    assert.equal(p.name, 'codeact');
    assert.ok(pkg.activationEvents.includes(`onChatParticipant:${p.id}`));
  });

  it('keeps sources, tests and maps out of the .vsix', () => {
    const ignore = readFileSync(path.resolve(__dirname, '../../.vscodeignore'), 'utf8');
    assert.match(ignore, /^\*\*$/m);
    assert.match(ignore, /^dist\/\*\*\/\*\.map$/m);
    assert.doesNotMatch(ignore, /^!src/m);
    assert.doesNotMatch(ignore, /^!test/m);
    // The session host the extension and the CLI start (codeact.session.host) is its own bundle.
    assert.match(ignore, /^!dist\/sessionHost\.js$/m);
  });
});
