/**
 * MCP sign-in from the built CLI (dist/cli.js): `codeact tools` against a real OAuth-protected MCP
 * server prints the sign-in link, the test plays the browser, the tokens land in a 0600 file in the
 * config folder and are reused; `codeact mcp list` and `codeact mcp sign-out`.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, type CliResult } from '../support/cli';
import { browse, startOAuthMcpServer, type OAuthMcpServer } from '../support/mcpOAuthServer';

describe('CLI: MCP sign-in', function () {
  this.timeout(120_000);
  let server: OAuthMcpServer;
  let home: string;
  let ws: string;

  /** Runs the CLI; when it prints a sign-in link, opens it (the "browser"). */
  function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult & { links: string[] }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '1', CODEACT_NO_BROWSER: '1', ...env },
      });
      let stdout = '';
      let stderr = '';
      const links: string[] = [];
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => {
        stderr += d;
        for (const m of stderr.matchAll(/^ {2}(http\S+\/authorize\?\S+)$/gm)) {
          if (links.includes(m[1])) continue;
          links.push(m[1]);
          void browse(new URL(m[1])).catch(() => {});
        }
      });
      child.on('close', (code) => resolve({ code, stdout, stderr, links }));
      child.stdin.end();
    });
  }

  before(async () => {
    server = await startOAuthMcpServer();
    home = mkdtempSync(path.join(tmpdir(), 'codeact-cli-mcp-home-'));
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-cli-mcp-ws-'));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [{ name: 'add', mcp: { url: server.url, tool: 'add' } }] }));
  });
  after(() => server.close());

  it('without a terminal it does not wait for a browser: it says how to sign in', async () => {
    const r = await cli(['tools', '--workspace', ws, '--json']);
    assert.equal(r.code, 2, r.stderr);
    const out = JSON.parse(r.stdout) as { errors: Array<{ message: string }> };
    assert.match(
      out.errors[0].message,
      /could not sign in to the MCP server at .*: it needs you to sign in in a browser, and this command has no terminal to ask from\. Run it in a terminal once/,
    );
    assert.equal(server.authorizeRequests.length, 0);
  });

  it('prints the link, signs in through the loopback redirect, keeps the tokens in a 0600 file, and reuses them', async () => {
    const r = await cli(['tools', '--workspace', ws, '--json'], { CODEACT_MCP_SIGN_IN: '1' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.links.length, 1);
    assert.match(r.stderr, /The MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp needs you to sign in\. Open this link in a browser/);
    const out = JSON.parse(r.stdout) as { tools: Array<{ name: string; description: string }> };
    assert.deepEqual(
      out.tools.map((t) => [t.name, t.description]),
      [['add', 'Adds two numbers.']],
    );
    const file = path.join(home, 'mcp-auth.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);

    const again = await cli(['tools', '--workspace', ws, '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.links.length, 0);
    assert.equal(server.authorizeRequests.length, 1);
  });

  it('codeact mcp list and codeact mcp sign-out', async () => {
    const list = await cli(['mcp', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim(), server.url);
    const out = await cli(['mcp', 'sign-out', server.url]);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.trim(), `Signed out of ${server.url}.`);
    assert.equal((await cli(['mcp', 'list'])).stdout.trim(), 'Not signed in to any MCP server.');
    const none = await cli(['mcp', 'sign-out', server.url]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /not signed in to http:\/\/127\.0\.0\.1:\d+\/mcp\. See codeact mcp list\./);
  });
});
