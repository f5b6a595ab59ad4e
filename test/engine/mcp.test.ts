import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI } from '../support/cli';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ToolGateway, type ToolError } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { processesWithCmdline } from '../../src/core/util/processTree';
import type { ToolSet } from '../../src/core/gateway/toolSet';
import { loadTools, loadToolsAsync } from '../../src/core/tools/declarations';
import { McpClientPool } from '../../src/core/tools/sources/mcp/pool';
import { mcpResultValue } from '../../src/core/tools/sources/mcp/result';
import { MCP_PERMISSIVE_INPUT_SCHEMA } from '../../src/core/tools/sources/mcp/source';

const root = path.resolve(__dirname, '../..');
const fixture = path.join(root, 'test/fixtures/mcp/server.mjs');
// Every server of this run carries the tag, so the process scans ignore other runs of these tests.
const tag = `--tag=codeact-mcp-test-${process.pid}-${Date.now()}`;
const server = (...flags: string[]) => [process.execPath, fixture, tag, ...flags];
const ours = () => processesWithCmdline(tag);

function call(gw: ToolGateway, name: string, args: Record<string, unknown>, signal = new AbortController().signal) {
  return gw.call({ itemId: 'item_1', callId: `call_${name}`, name, arguments: args }, signal);
}

function decl(name: string, tool: string, extra: Record<string, unknown> = {}, mcp: Record<string, unknown> = {}) {
  return { name, mcp: { command: server(), tool, ...mcp }, ...extra };
}

function noErrors(set: ToolSet): ToolSet {
  assert.deepEqual(set.errors, [], JSON.stringify(set.errors));
  return set;
}

describe('mcp tools', function () {
  let ws: string;
  let pool: McpClientPool;
  beforeEach(() => {
    ws = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-mcp-')));
    pool = new McpClientPool({ connectTimeoutMs: 20_000 });
  });
  afterEach(async () => {
    await pool.dispose();
    rmSync(ws, { recursive: true, force: true });
  });
  after(() => {
    assert.deepEqual(ours(), [], 'a test left an MCP server running');
  });

  describe('declarations', () => {
    it('validates "mcp": tool required, exactly one of command and url, argv and env shapes', () => {
      const { tools, errors } = loadTools(
        [
          { name: 'ok', mcp: { command: ['node', 's.mjs'], tool: 'add' } },
          { name: 'notool', mcp: { command: ['node', 's.mjs'] } },
          { name: 'both', mcp: { command: ['node'], url: 'http://127.0.0.1:1/mcp', tool: 'add' } },
          { name: 'neither', mcp: { tool: 'add' } },
          { name: 'badargv', mcp: { command: 'node s.mjs', tool: 'add' } },
          { name: 'badurl', mcp: { url: 'ftp://x/mcp', tool: 'add' } },
          { name: 'envurl', mcp: { url: 'http://127.0.0.1:1/mcp', tool: 'add', env: ['X'] } },
          { name: 'notobj', mcp: ['node'] },
          { name: 'okurl', mcp: { url: 'http://127.0.0.1:1/mcp', tool: 'add' } },
        ],
        { workspace: ws, mcpPool: pool },
      );
      assert.deepEqual(
        tools.map((t) => [t.name, t.source]),
        [
          ['ok', 'mcp'],
          ['okurl', 'mcp'],
        ],
      );
      const byName = new Map(errors.map((e) => [e.name, e.message]));
      assert.match(byName.get('notool')!, /"mcp\.tool" is required/);
      assert.match(byName.get('both')!, /either "command" \(a stdio server\) or "url".*not both/);
      assert.match(byName.get('neither')!, /needs "command".*or "url"/);
      assert.match(byName.get('badargv')!, /"mcp\.command" must be a non-empty argv array/);
      assert.match(byName.get('badurl')!, /"mcp\.url" must be an http\(s\) URL/);
      assert.match(byName.get('envurl')!, /"mcp\.env" applies only to stdio servers/);
      assert.match(byName.get('notobj')!, /"mcp" must be an object/);
      // Nothing was started: loadTools contacts no server.
      assert.equal(pool.size, 0);
      assert.deepEqual(tools[0].inputSchema, MCP_PERMISSIVE_INPUT_SCHEMA);
    });

    it('fills description and schemas from tools/list, keeps what the declaration says, and shares one server', async () => {
      const set = noErrors(
        await loadToolsAsync(
          [
            decl('calc_add', 'add'),
            decl('say', 'echo_text', {
              description: 'Say it back.',
              inputSchema: { type: 'object', properties: { text: { type: 'string', maxLength: 5 } }, required: ['text'] },
            }),
            { name: 'plain', command: ['true'] },
          ],
          { workspace: ws, mcpPool: pool },
        ),
      );
      const [add, say, plain] = set.tools;
      assert.equal(add.description, 'Adds two numbers.');
      assert.deepEqual((add.inputSchema as { required: string[] }).required.sort(), ['a', 'b']);
      assert.deepEqual(Object.keys((add.outputSchema as { properties: object }).properties), ['sum']);
      assert.equal(say.description, 'Say it back.');
      assert.equal((say.inputSchema as { properties: { text: { maxLength: number } } }).properties.text.maxLength, 5);
      assert.equal(plain.source, 'command');
      assert.equal(pool.size, 1, 'both declarations use one connection');
    });

    it("reports a tool the server does not have, listing the server's tools, and keeps the others", async () => {
      const set = await loadToolsAsync([decl('calc', 'add'), decl('nope', 'multiply')], { workspace: ws, mcpPool: pool });
      assert.deepEqual(
        set.tools.map((t) => t.name),
        ['calc'],
      );
      assert.equal(set.errors.length, 1);
      assert.equal(set.errors[0].index, 1);
      assert.match(
        set.errors[0].message,
        /has no tool "multiply"\. Its tools: add, big, echo_text, fail, json_text, multi_text, picture, slow, stats, whereami\. Fix "mcp\.tool"/,
      );
    });

    it('reports a server command that does not exist, naming it', async () => {
      const set = await loadToolsAsync([{ name: 'ghost', mcp: { command: ['codeact-no-such-mcp-server', '--stdio'], tool: 'x' } }], {
        workspace: ws,
        mcpPool: pool,
      });
      assert.deepEqual(set.tools, []);
      assert.match(
        set.errors[0].message,
        /could not start the MCP server "codeact-no-such-mcp-server --stdio": command not found \("codeact-no-such-mcp-server" is not on PATH/,
      );
    });
  });

  describe('calls through the gateway', () => {
    let gw: ToolGateway;
    beforeEach(async () => {
      const set = noErrors(
        await loadToolsAsync(
          ['add', 'echo_text', 'json_text', 'multi_text', 'picture', 'fail', 'slow', 'stats', 'whereami'].map((t) =>
            decl(t, t, {}, { env: ['CODEACT_MCP_LISTED'] }),
          ),
          { workspace: ws, mcpPool: pool, hostEnv: { ...process.env, CODEACT_MCP_LISTED: 'yes', CODEACT_MCP_SECRET: 'no' } },
        ),
      );
      gw = new ToolGateway(set.tools);
    });

    it("returns structuredContent, validated against the server's schemas both ways", async () => {
      assert.deepEqual(await call(gw, 'add', { a: 1, b: 2 }), { sum: 3 });
      await assert.rejects(
        call(gw, 'add', { a: 'one', b: 2 }),
        (e: ToolError) => e.code === 'invalid_arguments' && /Invalid arguments for "add": \$\.a must be number/.test(e.message),
      );
      await assert.rejects(call(gw, 'add', { a: 1 }), (e: ToolError) => e.code === 'invalid_arguments' && /b/.test(e.message));
      assert.equal(gw.records.filter((r) => r.ok).length, 1);
    });

    it('turns content into values: text, JSON text, several blocks, images', async () => {
      assert.equal(await call(gw, 'echo_text', { text: 'plain words' }), 'plain words');
      assert.deepEqual(await call(gw, 'json_text', {}), { items: [1, 2, 3], ok: true });
      assert.deepEqual(await call(gw, 'multi_text', {}), ['first line', { n: 2 }]);
      const [caption, image] = (await call(gw, 'picture', {})) as [string, Record<string, string>];
      assert.equal(caption, 'a dot');
      assert.equal(image.type, 'image');
      assert.equal(image.mimeType, 'image/png');
      assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString('latin1'), 'PNG');
    });

    it("rejects with the server's text when the result has isError", async () => {
      await assert.rejects(call(gw, 'fail', { reason: 'maintenance' }), /Tool "fail" failed: inventory service unavailable: maintenance/);
    });

    it('runs the server in the workspace with a minimal environment plus the listed variables', async () => {
      const where = (await call(gw, 'whereami', {})) as { cwd: string; env: string[] };
      assert.equal(where.cwd, ws);
      assert.ok(where.env.includes('CODEACT_MCP_LISTED'));
      assert.ok(!where.env.includes('CODEACT_MCP_SECRET'));
      assert.ok(where.env.length <= 6, where.env.join(','));
    });

    it('cancels the request on the server when the call is aborted', async () => {
      const ac = new AbortController();
      const pending = call(gw, 'slow', { ms: 60_000 }, ac.signal);
      // Abort once the server is surely working on it: after another call on the same connection answered.
      await call(gw, 'echo_text', { text: 'x' });
      ac.abort();
      await assert.rejects(pending, /Tool "slow" was stopped \(MCP tool "slow" on the MCP server/);
      assert.deepEqual(await call(gw, 'stats', {}), { cancelled: 1 });
    });
  });

  it('times out a call, says so, and cancels it on the server', async () => {
    const quick = new McpClientPool({ callTimeoutMs: 300 });
    try {
      const { tools } = noErrors(loadTools([decl('slow', 'slow'), decl('stats', 'stats')], { workspace: ws, mcpPool: quick }));
      const gw = new ToolGateway(tools);
      await assert.rejects(call(gw, 'slow', { ms: 60_000 }), /Tool "slow" timed out after 0\.3 s \(MCP tool "slow" on the MCP server/);
      assert.deepEqual(await call(gw, 'stats', {}), { cancelled: 1 });
    } finally {
      await quick.dispose();
    }
  });

  it('reports a server that exits during startup, with its exit code and stderr tail', async () => {
    const { tools } = noErrors(loadTools([decl('broken', 'add', {}, { command: server('--crash') })], { workspace: ws, mcpPool: pool }));
    await assert.rejects(new ToolGateway(tools).call({ itemId: 'i', callId: 'c', name: 'broken', arguments: {} }, new AbortController().signal), (e: Error) => {
      assert.match(
        e.message,
        /^Tool "broken" could not start the MCP server ".*server\.mjs --tag=[^ ]+ --crash": it exited during startup \(exit code 3\)\.\nstderr:\nloading config\.\.\.\nfatal: missing setting INVENTORY_URL/,
      );
      return true;
    });
  });

  it('gives up on a server that never completes the handshake, and kills it', async () => {
    const quick = new McpClientPool({ connectTimeoutMs: 500 });
    try {
      const silent = [process.execPath, '-e', 'setInterval(() => {}, 1000)', '--', tag];
      const { tools } = noErrors(loadTools([{ name: 'mute', mcp: { command: silent, tool: 'x' } }], { workspace: ws, mcpPool: quick }));
      await assert.rejects(
        call(new ToolGateway(tools), 'mute', {}),
        /Tool "mute" could not start the MCP server ".*": it did not complete the MCP handshake within 0\.5 s\. Check that the command starts an MCP server on stdio/,
      );
      assert.deepEqual(ours(), []);
    } finally {
      await quick.dispose();
    }
  });

  it('reports a missing server command and an unknown tool when called', async () => {
    const { tools } = noErrors(
      loadTools([{ name: 'ghost', mcp: { command: ['codeact-no-such-mcp-server'], tool: 'x' } }, decl('typo', 'ad')], { workspace: ws, mcpPool: pool }),
    );
    const gw = new ToolGateway(tools);
    await assert.rejects(
      call(gw, 'ghost', {}),
      /Tool "ghost" could not start the MCP server "codeact-no-such-mcp-server": command not found.*Check "mcp\.command" in codeact\.tools/,
    );
    await assert.rejects(call(gw, 'typo', {}), /Tool "typo" failed: the MCP server ".*" has no tool "ad"\. Its tools: add, big, echo_text, fail, /);
  });

  it("dispose() closes the connections and kills the servers' process trees; the pool reconnects on demand", async () => {
    const { tools } = noErrors(loadTools([decl('where', 'whereami', {}, { command: server('--spawn-child') })], { workspace: ws, mcpPool: pool }));
    const gw = new ToolGateway(tools);
    const first = (await call(gw, 'where', {})) as { pid: number };
    // The server and the grandchild it started.
    assert.equal(ours().length, 2);
    await pool.dispose();
    assert.deepEqual(ours(), []);
    assert.equal(pool.size, 0);
    const second = (await call(gw, 'where', {})) as { pid: number };
    assert.notEqual(second.pid, first.pid);
    await pool.dispose();
    assert.deepEqual(ours(), []);
  });

  it('reconnects after the server died', async () => {
    const { tools } = noErrors(loadTools([decl('where', 'whereami')], { workspace: ws, mcpPool: pool }));
    const gw = new ToolGateway(tools);
    const first = (await call(gw, 'where', {})) as { pid: number };
    process.kill(first.pid, 'SIGKILL');
    // The call right after may still meet the dying connection; one after that must reconnect.
    let second: { pid: number } | undefined;
    for (let i = 0; i < 50 && !second; i++) {
      try {
        second = (await call(gw, 'where', {})) as { pid: number };
      } catch (e) {
        assert.match((e as Error).message, /closed the connection \(killed by SIGKILL\)|server is not running/);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    assert.ok(second && second.pid !== first.pid);
  });

  describe('in the local guest', () => {
    let rt: LocalRuntime;
    before(() => {
      rt = new LocalRuntime({ sandbox: { kind: 'none' } });
    });
    after(async () => rt?.dispose());

    it('runs `await call_tool("add", a=1, b=2)` end to end, and surfaces isError as a RuntimeError', async () => {
      const set = noErrors(await loadToolsAsync([decl('add', 'add'), decl('fail', 'fail')], { workspace: ws, mcpPool: pool }));
      const gw = new ToolGateway(set.tools);
      const ok = await rt.execute({ code: 'r = await call_tool("add", a=1, b=2)\nreturn r["sum"]' }, { onEvent: () => {}, onToolCall: gw.handler });
      assert.equal(ok.status, 'completed', JSON.stringify(ok.error));
      assert.equal(ok.value, 3);
      const bad = await rt.execute({ code: 'await call_tool("fail", reason="disk full")' }, { onEvent: () => {}, onToolCall: gw.handler });
      assert.equal(bad.error?.type, 'RuntimeError');
      assert.match(bad.error!.message, /Tool "fail" failed: inventory service unavailable: disk full/);
      const caught = await rt.execute(
        { code: 'try:\n    await call_tool("fail")\nexcept RuntimeError as e:\n    return "caught: " + str(e)' },
        { onEvent: () => {}, onToolCall: gw.handler },
      );
      assert.match(String(caught.value), /^caught: Tool "fail" failed: inventory service unavailable: no reason/);
    });
  });

  describe('streamable HTTP', () => {
    let http: Server;
    let url: string;
    before(async () => {
      const { buildServer } = (await import(pathToFileURL(fixture).href)) as {
        buildServer: () => { connect(t: unknown): Promise<void>; close(): Promise<void> };
      };
      const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
      // Stateless: a fresh server and transport per request, as in the SDK's example.
      http = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          if (req.method !== 'POST') {
            res.writeHead(405).end();
            return;
          }
          const mcp = buildServer();
          const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
          res.on('close', () => {
            void transport.close();
            void mcp.close();
          });
          await mcp.connect(transport);
          await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
        });
      });
      await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    });
    after(() => new Promise<void>((r) => http.close(() => r())));

    it('calls a tool of a server at a URL', async () => {
      const set = noErrors(await loadToolsAsync([{ name: 'add', mcp: { url, tool: 'add' } }], { workspace: ws, mcpPool: pool }));
      assert.equal(set.tools[0].description, 'Adds two numbers.');
      assert.deepEqual(await call(new ToolGateway(set.tools), 'add', { a: 40, b: 2 }), { sum: 42 });
    });

    it('says when the URL cannot be reached', async () => {
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((r) => closed.close(() => r()));
      const { tools } = loadTools([{ name: 'gone', mcp: { url: `http://127.0.0.1:${port}/mcp?token=secret`, tool: 'add' } }], { workspace: ws, mcpPool: pool });
      await assert.rejects(call(new ToolGateway(tools), 'gone', {}), (e: Error) => {
        assert.match(e.message, new RegExp(`Tool "gone" could not reach the MCP server at http://127\\.0\\.0\\.1:${port}/mcp: ECONNREFUSED`));
        assert.doesNotMatch(e.message, /secret/);
        return true;
      });
    });
  });

  it('maps results without a server: structured, empty, resources, isError without text', () => {
    assert.deepEqual(mcpResultValue({ structuredContent: { a: 1 }, content: [{ type: 'text', text: 'ignored' }] }), { a: 1 });
    assert.equal(mcpResultValue({ content: [] }), null);
    assert.equal(mcpResultValue({ content: [{ type: 'text', text: '42' }] }), 42);
    assert.equal(mcpResultValue({ content: [{ type: 'text', text: '{not json' }] }), '{not json');
    assert.deepEqual(mcpResultValue({ content: [{ type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hi' } }] }), {
      type: 'resource',
      uri: 'file:///a.txt',
      mimeType: 'text/plain',
      text: 'hi',
    });
    assert.throws(() => mcpResultValue({ isError: true, content: [] }), /reported an error without a message/);
  });

  it("delivers a 12 MiB result from a stdio server (up to the gateway's 16 MiB cap), to the gateway and into the guest", async () => {
    const { tools } = noErrors(loadTools([decl('big', 'big')], { workspace: ws, mcpPool: pool }));
    const gw = new ToolGateway(tools);
    const value = (await call(gw, 'big', { mib: 12 })) as { rows: string[] };
    assert.equal(value.rows.length, 12 * 1024);
    assert.ok(JSON.stringify(value).length > 12 * 1024 * 1024);
    const rt = new LocalRuntime({ sandbox: { kind: 'none' } });
    try {
      const item = await rt.execute({ code: 'r = await call_tool("big", mib=12)\nreturn len(r["rows"])', timeoutMs: 60_000 }, { onToolCall: gw.handler });
      assert.equal(item.value, 12 * 1024, JSON.stringify(item.error));
    } finally {
      await rt.dispose();
    }
  });

  it('works in the CLI: `codeact run` calls an mcp tool declared in settings, and leaves no server behind', function () {
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({
        'codeact.tools': [
          decl('add', 'add', { inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } }),
        ],
      }),
    );
    const r = spawnSync(process.execPath, [CLI, 'run', '-', '--json', '--sandbox', 'none', '--trust-workspace', '--workspace', ws], {
      cwd: root,
      input: 'r = await call_tool("add", a=1, b=2)\nreturn r["sum"]\n',
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stderr + r.stdout);
    const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { item: { value: unknown } };
    assert.equal(last.item.value, 3);
    assert.deepEqual(ours(), []);
  });

  it('a declared tool that could not be loaded is named to the code with why (not "Unknown tool … No managed tools are declared"), in the CLI', function () {
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [decl('nope', 'multiply')] }));
    const r = spawnSync(process.execPath, [CLI, 'run', '-', '--json', '--sandbox', 'none', '--trust-workspace', '--workspace', ws], {
      cwd: root,
      input: 'try:\n    await call_tool("nope", a=1)\nexcept RuntimeError as e:\n    return str(e)\n',
      encoding: 'utf8',
      timeout: 120_000,
    });
    const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { item: { value: unknown } };
    const said = String(last.item.value);
    assert.doesNotMatch(said, /No managed tools are declared/);
    assert.match(
      said,
      /The tool "nope" is declared but could not be loaded[^]*codeact\.tools\[0\] \(nope\): the MCP server .* has no tool "multiply"\. Its tools: add, /,
    );
    assert.deepEqual(ours(), []);
  });
});
