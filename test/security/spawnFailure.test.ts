/**
 * A command tool (or a stdio MCP server) whose program cannot be started gives a
 * clear error result, never an unhandled exception: a program that does not exist (ENOENT), one that is
 * not executable (EACCES), a working folder that does not exist, and a host out of file descriptors
 * (EMFILE, provoked in a child Node process under `ulimit -n`, which fills its own table).
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { loadTools } from '../../src/core/tools/declarations';
import { McpClientPool } from '../../src/core/tools/sources/mcp/pool';

const REPO = path.resolve(__dirname, '..', '..');

/** Fills the descriptor table, then starts a command tool and an MCP server; prints what each gave, and any uncaught error. */
const EMFILE_SCRIPT = String.raw`
const { openSync, closeSync } = require('node:fs');
const { runCommandTool } = require('${REPO}/src/core/tools/sources/command');
const { McpClientPool } = require('${REPO}/src/core/tools/sources/mcp/pool');
const uncaught = [];
process.on('uncaughtException', (e) => uncaught.push('uncaughtException: ' + (e && e.message)));
process.on('unhandledRejection', (e) => uncaught.push('unhandledRejection: ' + (e && e.message)));
(async () => {
  const pool = new McpClientPool({ connectTimeoutMs: 20000 });
  const fds = [];
  try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch (e) { if (e.code !== 'EMFILE') throw e; }
  // One free descriptor: not enough for the three pipes of a child.
  closeSync(fds.pop());
  const out = { filled: fds.length };
  try { out.command = { value: await runCommandTool('lookup', { argv: ['true'] }, {}, { workspace: process.cwd(), signal: new AbortController().signal }) }; }
  catch (e) { out.command = { error: e.message }; }
  try { out.mcp = { value: await pool.listTools({ kind: 'stdio', argv: ['true'], cwd: process.cwd(), env: { PATH: process.env.PATH } }) }; }
  catch (e) { out.mcp = { error: e.message }; }
  for (const fd of fds) closeSync(fd);
  // Give a late 'error' event the chance to surface as an uncaught exception.
  await new Promise((r) => setTimeout(r, 300));
  await pool.dispose();
  out.uncaught = uncaught;
  console.log(JSON.stringify(out));
})();
`;

describe('security: a program that cannot start gives a clear error', function () {
  this.timeout(60_000);
  let dir: string;
  const uncaught: string[] = [];
  const onUncaught = (e: unknown) => uncaught.push(String((e as Error)?.message ?? e));
  before(() => {
    process.on('unhandledRejection', onUncaught);
  });
  after(() => process.off('unhandledRejection', onUncaught));
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-spawn-'));
    uncaught.length = 0;
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(uncaught, [], 'an unhandled rejection escaped');
  });

  const callTool = async (decl: Record<string, unknown>) => {
    const { tools, errors } = loadTools([{ name: 'lookup', ...decl }], { workspace: dir });
    assert.deepEqual(errors, []);
    const gw = new ToolGateway(tools);
    return gw.call({ itemId: 'item_1', callId: 'call_1', name: 'lookup', arguments: {} }, new AbortController().signal).then(
      (value) => ({ value, error: undefined as string | undefined }),
      (e: Error) => ({ value: undefined, error: e.message }),
    );
  };

  it('a program that does not exist: "command not found", naming it and the setting to fix', async () => {
    const r = await callTool({ command: [path.join(dir, 'tools', 'missing.py')] });
    assert.match(
      String(r.error),
      /Tool "lookup" could not start ".*missing\.py": command not found \(".*missing\.py" is not on PATH or does not exist\)\. Check "command" in codeact\.tools\./,
    );
  });

  it('a file that is not executable: "permission denied", with how to fix it', async () => {
    const script = path.join(dir, 'inventory.sh');
    writeFileSync(script, '#!/bin/sh\necho {}\n');
    chmodSync(script, 0o644);
    const r = await callTool({ command: [script] });
    assert.match(
      String(r.error),
      /could not start ".*inventory\.sh": permission denied \(.* is not executable, or is a folder\)\. Make it executable \(chmod \+x\), or run it through its interpreter/,
    );
  });

  it('a working folder that does not exist is named as such, not as "command not found"', async () => {
    const r = await callTool({ command: { argv: ['true'], cwd: 'no-such-folder' } });
    assert.match(String(r.error), /could not start "true": its working folder ".*no-such-folder" does not exist\. Check "cwd" in codeact\.tools/);
  });

  it('an argument with a NUL byte is a clear error, not a thrown TypeError', async () => {
    const r = await callTool({ command: ['true', 'a\u0000b'] });
    assert.match(String(r.error), /Tool "lookup" could not start "true": .*null bytes.*Check "command" in codeact\.tools/);
  });

  it('an MCP server that is not executable: "permission denied" naming "mcp.command"', async () => {
    const script = path.join(dir, 'server.sh');
    writeFileSync(script, '#!/bin/sh\nexit 0\n');
    chmodSync(script, 0o644);
    const pool = new McpClientPool({ connectTimeoutMs: 20_000 });
    try {
      await assert.rejects(
        pool.listTools({ kind: 'stdio', argv: [script], cwd: dir, env: { PATH: process.env.PATH ?? '' } }),
        /could not start the MCP server ".*server\.sh": permission denied .*"mcp\.command"/,
      );
    } finally {
      await pool.dispose();
    }
  });

  it('out of file descriptors (EMFILE): a clear error for the command tool and the MCP server, and no uncaught exception', async () => {
    const script = path.join(dir, 'emfile.js');
    writeFileSync(script, EMFILE_SCRIPT);
    const child = spawn('/bin/sh', ['-c', 'ulimit -n 256 && exec "$0" --require tsx/cjs "$1"', process.execPath, script], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(status, 0, `the child crashed:\n${err}\n${out}`);
    const r = JSON.parse(out.trim().split('\n').pop()!) as { filled: number; command: { error?: string }; mcp: { error?: string }; uncaught: string[] };
    assert.ok(r.filled > 100, `the child filled only ${r.filled} descriptors`);
    assert.match(
      String(r.command.error),
      /Tool "lookup" could not start "true": the host has run out of file descriptors \(EMFILE: too many open files\)\. Nothing ran/,
    );
    assert.match(String(r.mcp.error), /could not start the MCP server "true": the host has run out of file descriptors \(EMFILE/);
    assert.deepEqual(r.uncaught, []);
  });
});
