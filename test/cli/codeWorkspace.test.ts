/**
 * A `.code-workspace` file as the CLI's `--workspace`: its folders read as VS Code reads
 * them, `--folder NAME|PATH` (else the folder holding the current directory, else the first) picks the one a
 * command works in, with that folder's settings and tools (real command tools, run in that folder); the file's
 * own `settings` are the workspace layer, their restricted keys obeyed only once the file itself is trusted.
 * `--workspace DIR` keeps its meaning.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { MAX_WORKSPACE_FOLDERS, pickWorkspaceFolder, readCodeWorkspace } from '../../src/core/config/codeWorkspace';
import { runCli } from '../support/cli';
import { IGNORED_SETTINGS } from '../../src/cli/workspace';
import { SETTINGS_FILE_ERRORS } from '../../src/core/config/workspaceFile';

const where = (folder: string, name = 'where_am_i') => ({
  name,
  description: `the ${folder} folder's tool`,
  command: ['python3', '-c', `import json, os, sys; json.dump({"declared_in": ${JSON.stringify(folder)}, "cwd": os.getcwd()}, sys.stdout)`],
  inputSchema: { type: 'object' },
});

const CODE = 'r = await call_tool("where_am_i")\nreturn r';

function lastItem(stdout: string): CodeInterpreterCallItem {
  const events = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CodeActEvent);
  return (events.filter((e) => e.type === 'response.output_item.done').at(-1) as { item: CodeInterpreterCallItem }).item;
}

describe('codeact CLI: a .code-workspace file as --workspace', function () {
  this.timeout(120_000);
  let root: string;
  let home: string;
  let file: string;
  let alpha: string;
  let beta: string;
  beforeEach(() => {
    root = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-cws-')));
    home = mkdtempSync(path.join(tmpdir(), 'codeact-cws-home-'));
    alpha = path.join(root, 'alpha');
    beta = path.join(root, 'projects', 'beta');
    for (const [dir, name] of [
      [alpha, 'alpha'],
      [beta, 'beta'],
    ] as const) {
      mkdirSync(path.join(dir, '.vscode'), { recursive: true });
      mkdirSync(path.join(dir, 'src'), { recursive: true });
      writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [where(name)] }));
    }
    file = path.join(root, 'app.code-workspace');
    // JSONC, as VS Code writes it: comments, trailing commas, a relative path, a file: URI with a name.
    writeFileSync(
      file,
      `{\n  // two folders\n  "folders": [\n    { "path": "alpha" },\n    { "uri": "${pathToFileURL(beta).href}", "name": "Beta" },\n  ],\n  "settings": { "codeact.timeoutSeconds": 7, "codeact.tools": [${JSON.stringify(where('workspace-file', 'from_file'))}] },\n}\n`,
    );
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });
  const cli = (args: string[], o: { input?: string; cwd?: string; trustAll?: boolean } = {}) =>
    runCli(args, { CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: o.trustAll ? '1' : '' }, o.input ?? '', o.cwd);

  it('reads the folders as VS Code does, and picks one by name, by path, by the current directory, else the first', () => {
    const ws = readCodeWorkspace(file);
    assert.deepEqual(ws.folders, [
      { name: 'alpha', path: alpha },
      { name: 'Beta', path: beta },
    ]);
    assert.equal(ws.settings['codeact.timeoutSeconds'], 7);
    assert.equal(pickWorkspaceFolder(ws, 'Beta', '/').path, beta);
    assert.equal(pickWorkspaceFolder(ws, 'projects/beta', root).path, beta, 'a path, relative to the current directory');
    assert.equal(pickWorkspaceFolder(ws, undefined, path.join(beta, 'src')).path, beta, 'the folder holding the current directory');
    assert.equal(pickWorkspaceFolder(ws, undefined, tmpdir()).path, alpha, 'outside every folder: the first');
    assert.throws(
      () => pickWorkspaceFolder(ws, 'gamma', root),
      /has no folder "gamma"\. Its folders: "alpha", "Beta"\. Pass one of them \(a name or a path\) as --folder\./,
    );
  });

  it('says clearly what is wrong with a workspace file', () => {
    const bad = (text: string) => {
      writeFileSync(file, text);
      return () => readCodeWorkspace(file);
    };
    assert.throws(bad('{ "folders": [] }'), /lists no folders/);
    assert.throws(
      bad('{ "folders": [{ "uri": "vscode-remote://ssh-remote+box/home/me/app" }] }'),
      /folder 1 is vscode-remote: \(a remote folder\); the CLI works only in local folders/,
    );
    assert.throws(bad('{ "folders": [{ "name": "x" }] }'), /folder 1 has no "path"/);
    assert.throws(
      bad(JSON.stringify({ folders: Array.from({ length: MAX_WORKSPACE_FOLDERS + 1 }, (_, i) => ({ path: `f${i}` })) })),
      /lists 257 folders; CodeAct reads at most 256/,
    );
    assert.throws(
      bad('{ "folders": [ { "path": "a" }'),
      (e: Error) => /app\.code-workspace:1:\d+: /.test(e.message) && e.message.endsWith(SETTINGS_FILE_ERRORS.fixTheJson),
    );
    assert.throws(() => readCodeWorkspace(path.join(root, 'missing.code-workspace')), /does not exist/);
  });

  it("codeact tools and codeact run work in the picked folder, with that folder's tools running in it", async () => {
    const tools = await cli(['tools', '--json', '--workspace', file, '--folder', 'Beta'], { trustAll: true });
    assert.equal(tools.code, 0, tools.stderr);
    const listed = JSON.parse(tools.stdout) as { workspace: string; tools: Array<{ name: string; description: string }> };
    assert.equal(listed.workspace, beta);
    assert.deepEqual(
      listed.tools.map((t) => `${t.name}: ${t.description}`),
      ["where_am_i: the beta folder's tool"],
      "the folder's tools replace the workspace file's (as VS Code's folder layer does)",
    );

    const inAlpha = await cli(['run', '-', '--json', '--workspace', file, '--folder', 'alpha'], { input: CODE, trustAll: true });
    assert.equal(inAlpha.code, 0, inAlpha.stderr);
    assert.deepEqual(lastItem(inAlpha.stdout).value, { declared_in: 'alpha', cwd: alpha });

    const fromCwd = await cli(['run', '-', '--json', '--workspace', file], { input: CODE, trustAll: true, cwd: path.join(beta, 'src') });
    assert.equal(fromCwd.code, 0, fromCwd.stderr);
    assert.deepEqual(lastItem(fromCwd.stdout).value, { declared_in: 'beta', cwd: beta }, "no --folder: the current directory's folder");

    const unknown = await cli(['run', '-', '--workspace', file, '--folder', 'gamma'], { input: CODE });
    assert.equal(unknown.code, 2, unknown.stderr);
    assert.match(unknown.stderr, /has no folder "gamma"\. Its folders: "alpha", "Beta"/);
    const notAFile = await cli(['run', '-', '--workspace', alpha, '--folder', 'alpha'], { input: CODE });
    assert.equal(notAFile.code, 2);
    assert.match(notAFile.stderr, /--folder picks a folder of a \.code-workspace file/);
  });

  it("each folder's trust, and the workspace file's own, apply to their own settings", async () => {
    // A folder without settings of its own: the workspace file's settings are the ones that count.
    rmSync(path.join(alpha, '.vscode'), { recursive: true });
    const json = (r: { stdout: string }) => JSON.parse(r.stdout) as { trusted: boolean; tools: Array<{ name: string }> };
    const first = await cli(['tools', '--json', '--workspace', file, '--folder', 'alpha']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(json(first).tools, [], 'nothing trusted: no tools');
    assert.match(
      first.stderr,
      new RegExp(
        `ignoring codeact\\.tools from the settings of .*app\\.code-workspace: it is not trusted\\. To trust the workspace file: codeact trust "${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`,
      ),
    );

    const trustFile = await cli(['trust', file]);
    assert.equal(trustFile.code, 0, trustFile.stderr);
    assert.match(
      trustFile.stdout,
      /Trusted: .*app\.code-workspace\nThe CLI now obeys its codeact\.tools \(the "settings" of .*\)\.\nIts folders' own \.vscode\/settings\.json count only in folders you trust/,
    );
    const second = await cli(['tools', '--json', '--workspace', file, '--folder', 'alpha']);
    assert.deepEqual(
      json(second).tools.map((t) => t.name),
      ['from_file'],
      "the trusted workspace file's tools",
    );
    // beta's own settings still need beta's trust: its tools are ignored, and meanwhile the trusted workspace file's apply.
    const betaUntrusted = await cli(['tools', '--json', '--workspace', file, '--folder', 'Beta']);
    assert.equal(json(betaUntrusted).trusted, false);
    assert.deepEqual(
      json(betaUntrusted).tools.map((t) => t.name),
      ['from_file'],
    );
    assert.ok(
      betaUntrusted.stderr.includes(IGNORED_SETTINGS.ignoring('codeact.tools', path.join(beta, '.vscode', 'settings.json'), IGNORED_SETTINGS.notTrusted)),
      betaUntrusted.stderr,
    );
    await cli(['trust', beta]);
    const betaTrusted = await cli(['tools', '--json', '--workspace', file, '--folder', 'Beta']);
    assert.deepEqual(
      json(betaTrusted).tools.map((t) => t.name),
      ['where_am_i'],
    );

    // The workspace file changes: its trust is gone until it is trusted again.
    writeFileSync(file, JSON.stringify({ folders: [{ path: 'alpha' }], settings: { 'codeact.tools': [where('changed', 'changed_tool')] } }));
    const changed = await cli(['tools', '--json', '--workspace', file]);
    assert.deepEqual(json(changed).tools, []);
    assert.ok(changed.stderr.includes(IGNORED_SETTINGS.ignoring('codeact.tools', `the settings of ${file}`, IGNORED_SETTINGS.fileChanged)), changed.stderr);
  });

  it('--workspace DIR keeps its meaning', async () => {
    const r = await cli(['run', '-', '--json', '--workspace', beta], { input: CODE, trustAll: true });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(lastItem(r.stdout).value, { declared_in: 'beta', cwd: beta });
  });
});
