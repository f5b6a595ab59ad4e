/**
 * An MCP server's form (elicitation) in the CLI: asked in the terminal (a real pty, through script(1)),
 * each answer checked as it is typed; declined, saying so, when stdin is not a terminal. Against a real
 * MCP server on stdio (test/fixtures/mcp/elicitServer.mjs), with the built CLI.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, runCli, runCliOnPty, SCRIPT } from '../support/cli';

const fixture = path.join(ROOT, 'test/fixtures/mcp/elicitServer.mjs');

describe("codeact run: an MCP server's form in the terminal", function () {
  this.timeout(120_000);
  let ws: string;
  before(function () {
    if (!existsSync(CLI)) this.skip();
  });
  beforeEach(() => {
    ws = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-cli-elicit-')));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({ 'codeact.tools': [{ name: 'ask', mcp: { command: [process.execPath, fixture], tool: 'ask' } }] }),
    );
    writeFileSync(path.join(ws, 'ask.py'), 'r = await call_tool("ask", form="profile")\nreturn r\n');
  });
  afterEach(() => rmSync(ws, { recursive: true, force: true }));

  it('without a terminal the form is declined, and stderr says why', async () => {
    const r = await runCli(['run', path.join(ws, 'ask.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /asked for input while running the tool "ask", and declined it: stdin is not a terminal/);
    const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { item: { value: unknown } };
    assert.deepEqual(last.item.value, { action: 'decline' });
  });

  (existsSync(SCRIPT) ? it : it.skip)('in a terminal: the message, one question per field, a bad value asked again, the answer sent', async () => {
    const cli = runCliOnPty(['run', path.join(ws, 'ask.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    const expect = (text: string | RegExp, answer?: string) => cli.expect(text, answer);
    try {
      await expect('asks for input while running the tool "ask"');
      await expect('Who should the report go to?');
      await expect('Fill in the form (f), decline (d) or cancel (c)?', 'f');
      await expect('Name *', 'Ada');
      await expect('Email *', 'not-an-email');
      await expect('Email must match format "email".');
      await expect('Email *', 'ada@example.com');
      await expect('Age', '');
      await expect('Urgent', 'y');
      await expect('1) Engineering');
      await expect('Team', '1');
      await expect('Site', '');
      await expect('Due', '');
      assert.equal(await cli.exited, 0, cli.output);
      assert.match(cli.output, /"action":"accept","content":\{"name":"Ada","email":"ada@example\.com","urgent":true,"team":"eng"\}/);
    } finally {
      cli.kill();
    }
  });
});
