/**
 * The CLI under the one policy: folder trust (`codeact trust`), a first-party base URL only from the
 * user, the approval default, `supportsTools`, and MCP schemas in `codeact run`. Each of these behaved
 * differently in the CLI than in the extension before the one resolver.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { ROOT, runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';
import { REFUSALS } from '../../src/core/gateway/gateway';
import { IGNORED_SETTINGS } from '../../src/cli/workspace';

const ECHO_TOOL = {
  name: 'echo',
  description: 'Echo.',
  command: { argv: ['python3', '-c', 'import sys, json; print(json.dumps(json.load(sys.stdin)))'] },
  inputSchema: { type: 'object' },
};

function folder(settings: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'codeact-trust-'));
  mkdirSync(path.join(dir, '.vscode'));
  writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
  return dir;
}

function lastItem(stdout: string): CodeInterpreterCallItem {
  const events = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CodeActEvent);
  const done = events.filter((e) => e.type === 'response.output_item.done').at(-1) as { item: CodeInterpreterCallItem };
  return done.item;
}

describe('codeact CLI: folder trust and the one settings policy', function () {
  this.timeout(120_000);
  let home: string;
  const dirs: string[] = [];
  beforeEach(() => (home = mkdtempSync(path.join(tmpdir(), 'codeact-trust-home-'))));
  afterEach(() => {
    rmSync(home, { recursive: true, force: true });
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  // Each command gets a private config folder and no blanket trust.
  const cli = (args: string[], input = '', env: Record<string, string> = {}) =>
    runCli(args, { CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '', ...env }, input);

  it('refuses to run a trusted folder with review mode on when no one can review the staged writes (no terminal, no --staged), saying what to do; nothing is written', async () => {
    const dir = folder({ 'codeact.sandbox.mountWorkspace': 'readwrite', 'codeact.sandbox.reviewWrites': true });
    dirs.push(dir);
    assert.equal((await cli(['trust', dir])).code, 0);
    const r = await cli(['run', '-', '--workspace', dir], 'open("x.txt", "w").write("1")\nreturn 1');
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /codeact\.sandbox\.reviewWrites is on for this folder, .*and stdin is not a terminal to ask about them: pass --staged keep or --staged revert/,
    );
    assert.ok(!existsSync(path.join(dir, 'x.txt')), 'no code ran');
  });

  it("obeys an untrusted folder's safe settings only, says once what it ignored and how to trust it; codeact trust makes it count until the file changes", async () => {
    const dir = folder({ 'codeact.tools': [ECHO_TOOL], 'codeact.sandbox.kind': 'none', 'codeact.timeoutSeconds': 30 });
    dirs.push(dir);
    const code = 'import os\ntry:\n    r = await call_tool("echo", x=1)\nexcept RuntimeError as e:\n    r = str(e)\nreturn r';

    const untrusted = await cli(['run', '-', '--json', '--workspace', dir], code);
    assert.equal(untrusted.code, 0, untrusted.stderr);
    assert.ok((lastItem(untrusted.stdout).value as string).includes(REFUSALS.unknownTool('echo')));
    const notices = untrusted.stderr.split('\n').filter((l) => l.includes('ignoring'));
    assert.equal(notices.length, 1, untrusted.stderr);
    assert.ok(
      notices[0].includes(
        IGNORED_SETTINGS.ignoring('codeact.sandbox.kind, codeact.tools', path.join(dir, '.vscode', 'settings.json'), IGNORED_SETTINGS.notTrusted),
      ),
      notices[0],
    );
    assert.ok(notices[0].includes(`codeact trust ${JSON.stringify(dir)}`), notices[0]);
    const tools = await cli(['tools', '--json', '--workspace', dir]);
    assert.deepEqual(JSON.parse(tools.stdout).tools, []);
    assert.equal(JSON.parse(tools.stdout).trusted, false);

    const trust = await cli(['trust', dir]);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /Trusted: .*\nThe CLI now obeys its codeact\.sandbox\.kind, codeact\.tools/);
    const trusted = await cli(['run', '-', '--json', '--workspace', dir], code);
    assert.deepEqual(lastItem(trusted.stdout).value, { x: 1 });
    assert.equal(lastItem(trusted.stdout).sandbox?.kind, 'none');
    assert.doesNotMatch(trusted.stderr, /ignoring/);
    assert.match((await cli(['trust', '--list'])).stdout, new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));

    // A changed settings file needs trust again.
    writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [ECHO_TOOL, { ...ECHO_TOOL, name: 'echo2' }] }));
    const changed = await cli(['run', '-', '--json', '--workspace', dir], code);
    assert.ok((lastItem(changed.stdout).value as string).includes(REFUSALS.unknownTool('echo')));
    assert.ok(changed.stderr.includes(IGNORED_SETTINGS.folderChanged(path.join(dir, '.vscode', 'settings.json'))), changed.stderr);
    assert.match((await cli(['trust', '--list'])).stdout, /settings changed since: trust it again/);

    // --trust-workspace and CODEACT_TRUST_WORKSPACE=1 trust it for one command; --revoke forgets it.
    assert.deepEqual(lastItem((await cli(['run', '-', '--json', '--trust-workspace', '--workspace', dir], code)).stdout).value, { x: 1 });
    assert.deepEqual(lastItem((await cli(['run', '-', '--json', '--workspace', dir], code, { CODEACT_TRUST_WORKSPACE: '1' })).stdout).value, { x: 1 });
    assert.match((await cli(['trust', '--revoke', dir])).stdout, /No longer trusted/);
    assert.match((await cli(['trust', '--list'])).stdout, /No trusted folders/);
  });

  // codeact.baseUrl is the setting's older name, still read under the same policy.
  for (const key of ['codeact.baseURL', 'codeact.baseUrl'])
    it(`never sends a first-party API key to a base URL from the folder's settings, trusted or not (${key})`, async () => {
      const attacker = await startServerFor('openai');
      const mine = await startServerFor('openai');
      try {
        mine.push(turn().text('Hello from your own server.'));
        const dir = folder({ [key]: attacker.url, 'codeact.provider': 'openai' });
        dirs.push(dir);
        writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ [key]: mine.url }));
        const r = await cli(['chat', 'hi', '--model', 'gpt-5', '--workspace', dir, '--trust-workspace', '--storage', path.join(home, 'c')], '', {
          OPENAI_API_KEY: 'sk-test-secret',
        });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(attacker.turns.length, 0, "the folder's server got a request");
        assert.equal(mine.turns.length, 1);
        assert.equal(mine.turns[0].headers.authorization, 'Bearer sk-test-secret');
        assert.ok(
          r.stderr.includes(`${key} from the folder settings is ignored: a workspace cannot send your openai API key to a server of its choosing`),
          r.stderr,
        );
      } finally {
        await attacker.close();
        await mine.close();
      }
    });

  it('applies codeact.approval.default: "deny" to the folder\'s tools in codeact run', async () => {
    const dir = folder({ 'codeact.tools': [ECHO_TOOL], 'codeact.approval.default': 'deny' });
    dirs.push(dir);
    const r = await cli(['run', '-', '--json', '--trust-workspace', '--workspace', dir], 'await call_tool("echo", x=1)');
    assert.equal(r.code, 1);
    assert.match(lastItem(r.stdout).error!.message, /The tool "echo" is denied by its approval policy/);
  });

  it('applies codeact.openaiCompatible.supportsTools: false in codeact chat (no tools in any request)', async () => {
    const server = await startServerFor('openai-compatible', 'llamacpp');
    try {
      server.push(turn().text('No tools needed.'));
      const dir = folder({ 'codeact.openaiCompatible.supportsTools': false, 'codeact.provider': 'openai-compatible' });
      dirs.push(dir);
      const r = await cli(['chat', 'hi', '--model', 'local', '--base-url', server.url, '--workspace', dir, '--storage', path.join(home, 'c')]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(server.turns.length, 1);
      assert.equal(server.turns[0].body.tools, undefined);
    } finally {
      await server.close();
    }
  });

  it("checks arguments against an MCP server's own schema in codeact run (caught by the gateway, not the server)", async () => {
    const fixture = path.join(ROOT, 'test/fixtures/mcp/server.mjs');
    const dir = folder({ 'codeact.tools': [{ name: 'say', mcp: { command: [process.execPath, fixture], tool: 'echo_text' } }] });
    dirs.push(dir);
    const r = await cli(['run', '-', '--json', '--trust-workspace', '--sandbox', 'none', '--workspace', dir], 'await call_tool("say", text=42)');
    assert.equal(r.code, 1, r.stderr);
    assert.ok(lastItem(r.stdout).error!.message.includes(`${REFUSALS.invalidArguments('say')} $.text must be string`), lastItem(r.stdout).error!.message);
  });
});
