import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DECLARATION_PROBLEMS } from '../../src/core/tools/declarations';
import { formatDeclarationProblem } from '../../src/common/tools';
import { SETTINGS_FILE_ERRORS } from '../../src/core/config/workspaceFile';

const root = path.resolve(__dirname, '../..');
const cli = path.join(root, 'dist', 'cli.js');

// The test folders are trusted for each command; the CLI's user config is a private folder.
const home = mkdtempSync(path.join(tmpdir(), 'codeact-cli-test-home-'));
const baseEnv = { ...process.env, CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '1' };

function codeact(args: string[], input?: string, env: NodeJS.ProcessEnv = baseEnv) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, input, encoding: 'utf8', env, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('codeact CLI', function () {
  before(function () {
    if (!existsSync(cli)) throw new Error('dist/cli.js is missing: run `npm run build` (npm test does it) first.');
  });

  it('runs the orders example: streamed output, a line per tool call, the final value, exit 0', () => {
    const r = codeact(['run', 'examples/orders/order_desk.py', '--workspace', 'examples/orders']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /→ search_catalog\(\{"query":"ergonomic office chair","max_price":600\}\) ✓/);
    assert.match(r.stdout, /→ check_inventory\(\{"sku":"CHR-ERG-100"\}\) ✓/);
    assert.match(r.stdout, /→ create_quote\(/);
    assert.match(r.stdout, /Quote Q-\d{6} for Acme Robotics: 1771\.00 EUR/);
    assert.match(r.stdout, /⇒ \{\n  "quote_id": "Q-\d{6}"/);
  });

  it('--json prints the event vocabulary, one object a line, ending with the finished item', () => {
    const r = codeact(
      ['run', '-', '--json', '--workspace', 'examples/orders'],
      'import sys\nprint("hi")\nprint("oops", file=sys.stderr)\nx = await call_tool("check_inventory", sku="LMP-LED-010")\nreturn x["on_hand"]\n',
    );
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'response.code_interpreter_call.in_progress');
    assert.ok(types.includes('codeact.tool_call.started') && types.includes('codeact.tool_call.completed'));
    const last = events.at(-1);
    assert.equal(last.type, 'response.output_item.done');
    const item = last.item;
    assert.equal(item.type, 'code_interpreter_call');
    assert.equal(item.status, 'completed');
    assert.equal(item.value, 85);
    assert.match(item.code, /call_tool\("check_inventory"/);
    assert.deepEqual(item.outputs, [
      { type: 'logs', logs: 'hi\n' },
      { type: 'logs', logs: 'oops\n', stream: 'stderr' },
    ]);
    assert.equal(item.error, null);
  });

  it('exits 1 with the traceback when the code fails, and --json carries type, message and traceback', () => {
    const human = codeact(['run', '-'], 'x = 1\nraise KeyError("missing")\n');
    assert.equal(human.code, 1);
    assert.match(human.stderr, /File "<cell-1>", line 2, in <module>\n    raise KeyError\("missing"\)\nKeyError: 'missing'/);
    const json = codeact(['run', '-', '--json'], 'x = 1\nraise KeyError("missing")\n');
    const item = JSON.parse(json.stdout.trim().split('\n').at(-1)!).item;
    assert.equal(item.status, 'failed');
    assert.equal(item.error.type, 'KeyError');
    assert.equal(item.error.message, "'missing'");
    assert.match(item.error.traceback, /line 2/);
  });

  it('exits 1 on a timeout', () => {
    const r = codeact(['run', '-', '--timeout', '1'], 'while True:\n    pass\n');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Timeout: The code ran longer than the 1 s timeout/);
  });

  it('exits 2 for usage and configuration errors, saying what to do', () => {
    assert.equal(codeact(['run']).code, 2);
    assert.match(codeact(['run', 'no-such-file.py']).stderr, /Cannot read no-such-file\.py: no such file/);
    assert.match(codeact(['run', '-', '--timeout', 'soon'], '1').stderr, /--timeout must be a number, not "soon"/);
    assert.equal(codeact(['frobnicate']).code, 2);
    const noPython = codeact(['run', '-', '--python', '/nonexistent/python3'], 'return 1');
    assert.equal(noPython.code, 2, 'a run whose setup failed (no Python) is a configuration error');
    assert.match(noPython.stderr, /Python was not found/);
    const ws = mkdtempSync(path.join(tmpdir(), 'codeact-cli-'));
    try {
      mkdirSync(path.join(ws, '.vscode'));
      writeFileSync(path.join(ws, '.vscode', 'settings.json'), '{ "codeact.tools": [ }');
      const r = codeact(['run', '-', '--workspace', ws], 'return 1');
      assert.equal(r.code, 2);
      assert.match(r.stderr, /settings\.json:1:\d+: /);
      assert.ok(r.stderr.includes(`. ${SETTINGS_FILE_ERRORS.fixTheJson}`), r.stderr);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it('codeact tools lists the tools, and the declaration errors with exit 2', () => {
    const ok = codeact(['tools', '--workspace', 'examples/orders', '--json']);
    assert.equal(ok.code, 0);
    const listed = JSON.parse(ok.stdout);
    assert.deepEqual(
      listed.tools.map((t: { name: string }) => t.name),
      ['check_inventory', 'create_quote', 'search_catalog'],
    );
    const ws = mkdtempSync(path.join(tmpdir(), 'codeact-cli-'));
    try {
      mkdirSync(path.join(ws, '.vscode'));
      writeFileSync(
        path.join(ws, '.vscode', 'settings.json'),
        JSON.stringify({ 'codeact.tools': [{ name: 'good', command: ['true'] }, { name: 'bad name', command: ['true'] }, { name: 'x' }] }),
      );
      const r = codeact(['tools', '--workspace', ws]);
      assert.equal(r.code, 2);
      assert.match(r.stdout, /^good /m);
      assert.ok(r.stdout.includes(`codeact.tools[1] (bad name): ${formatDeclarationProblem(DECLARATION_PROBLEMS.invalidName('"bad name"'))}`), r.stdout);
      assert.ok(r.stdout.includes(`codeact.tools[2] (x): ${formatDeclarationProblem(DECLARATION_PROBLEMS.noSource)}`), r.stdout);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it("reads the user settings from $CODEACT_USER_SETTINGS when it is set (the extension's, for the MCP server VS Code starts)", () => {
    const ws = mkdtempSync(path.join(tmpdir(), 'codeact-cli-'));
    try {
      const file = path.join(ws, 'extension-user-settings.json');
      writeFileSync(file, JSON.stringify({ 'codeact.tools': [{ name: 'from_vscode_user', command: ['true'] }] }));
      const names = (env: NodeJS.ProcessEnv) => {
        const r = codeact(['tools', '--workspace', ws, '--json'], undefined, env);
        assert.equal(r.code, 0, r.stderr);
        return (JSON.parse(r.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
      };
      assert.deepEqual(names({ ...baseEnv, CODEACT_USER_SETTINGS: file }), ['from_vscode_user']);
      assert.deepEqual(names(baseEnv), [], "without it, the CLI's own user settings ($CODEACT_HOME/settings.json)");
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
