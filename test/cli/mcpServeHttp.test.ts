/**
 * `codeact mcp serve --http` (issue 36, points 1 and 5): the built CLI serving Streamable HTTP on loopback, driven
 * by the official MCP SDK client and by raw HTTP. Each MCP session has its own Python session, whose state lives
 * from call to call; no token (or a wrong one), another Host (DNS rebinding), another Origin or another path gets
 * nothing; the server listens on 127.0.0.1 only.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI, CLI_ENV } from '../support/cli';
import { waitFor } from '../support/wait';

const textOf = (r: unknown) => ((r as CallToolResult).content ?? []).map((c) => (c as { text?: string }).text ?? '').join('\n');

/** One raw HTTP request to the server: its status. */
async function raw(url: string, headers: Record<string, string>, body = '{}', host?: string): Promise<number> {
  return (await rawFull(url, headers, body, host)).status;
}

/** A POST to the server's MCP path (or another Host name), with MCP's content headers and these. */
function post(url: string, headers: Record<string, string>, onResponse: (res: IncomingMessage) => void, host?: string): ClientRequest {
  const u = new URL(url);
  return request(
    {
      host: host ?? u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    },
    onResponse,
  );
}

/** One raw HTTP request: its status and the MCP session id it was given. */
function rawFull(url: string, headers: Record<string, string>, body = '{}', host?: string): Promise<{ status: number; session?: string }> {
  return new Promise((resolve, reject) => {
    const req = post(
      url,
      headers,
      (res) => {
        res.resume();
        const session = res.headers['mcp-session-id'];
        resolve({ status: res.statusCode ?? 0, ...(typeof session === 'string' ? { session } : {}) });
      },
      host,
    );
    req.on('error', reject);
    req.end(body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});

describe('codeact mcp serve --http: Streamable HTTP on loopback with a token', function () {
  this.timeout(120_000);
  let ws: string;
  let child: ChildProcess;
  let url = '';
  let token = '';
  const clients: Client[] = [];

  before(async function () {
    if (!existsSync(CLI)) this.skip();
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-mcp-http-'));
    child = spawn(process.execPath, [CLI, 'mcp', 'serve', '--http', '--workspace', ws, '--python', '/usr/bin/python3'], {
      env: CLI_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    await waitFor(() => /Authorization: Bearer \S+\n/.test(err), { what: "the server's address and token on stderr", timeoutMs: 60_000 });
    url = /Streamable HTTP\): (\S+)/.exec(err)![1];
    token = /Authorization: Bearer (\S+)/.exec(err)![1];
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    child?.kill('SIGTERM');
    if (child) await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  async function connect(): Promise<Client> {
    const client = new Client({ name: 'codeact-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }
  const run = (c: Client, code: string) => c.callTool({ name: 'execute_tool_code', arguments: { code } });

  it('listens on 127.0.0.1 only', async function () {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    if (!other) return this.skip(); // the address above is the check then; nothing else to connect to
    await assert.rejects(raw(url, { authorization: `Bearer ${token}` }, INIT, other.address), /ECONNREFUSED/);
  });

  it('gives each MCP session its own Python session, whose state lives from call to call', async () => {
    const a = await connect();
    const b = await connect();
    await run(a, 'x = "from a"');
    await run(b, 'x = "from b"');
    assert.match(textOf(await run(a, 'return x')), /from a/);
    assert.match(textOf(await run(b, 'return x')), /from b/);
    assert.match(textOf(await a.callTool({ name: 'list_variables', arguments: {} })), /"name": "x"/);
  });

  it('answers nothing without the token, with a wrong one, for another Host or Origin, or on another path', async () => {
    assert.equal(await raw(url, {}, INIT), 401);
    assert.equal(await raw(url, { authorization: `Bearer ${token}x` }, INIT), 401);
    assert.equal(await raw(url, { authorization: `Bearer ${token.slice(0, -1)}` }, INIT), 401);
    const port = new URL(url).port;
    assert.equal(await raw(url, { authorization: `Bearer ${token}`, host: `evil.example:${port}` }, INIT), 403);
    assert.equal(await raw(url, { authorization: `Bearer ${token}`, origin: 'https://evil.example' }, INIT), 403);
    assert.equal(await raw(url.replace(/\/mcp$/, '/other'), { authorization: `Bearer ${token}` }, INIT), 404);
    // The same request with the token and the server's own Host is answered.
    assert.equal(await raw(url, { authorization: `Bearer ${token}` }, INIT), 200);
  });

  it('a new session takes the place of the one unused longest when 16 are held (clients that never DELETE do not fill it)', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const ids: string[] = [];
    for (let i = 0; i < 17; i++) {
      const r = await rawFull(url, auth, INIT);
      assert.equal(r.status, 200);
      ids.push(r.session!);
    }
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const status = (id: string) => raw(url, { ...auth, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' }, ping);
    // The sessions of the tests above were used before these: they gave their places first, then the oldest of these.
    assert.equal(await status(ids[16]), 200);
    assert.equal(await status(ids[0]), 404);
  });

  it('a client that goes away before the answer stops its run: the session takes the next call at once', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const session = (await rawFull(url, auth, INIT)).session!;
    const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    await raw(url, headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const call = (id: number, code: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'execute_tool_code', arguments: { code }, _meta: { progressToken: `p${id}` } },
      });
    // The long call prints "ready" (it comes as progress on the call's stream: the run is under way); then the client
    // drops the connection.
    await new Promise<void>((resolve, reject) => {
      const req = post(url, headers, (res) => {
        let seen = '';
        res.on('data', (d) => {
          seen += d;
          if (!seen.includes('ready')) return;
          req.destroy();
          resolve();
        });
      });
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      req.end(call(2, 'import time\nprint("ready", flush=True)\ntime.sleep(600)'));
    });
    // Were the sleep still running, this call would wait for it (the session runs one thing at a time).
    const next = await new Promise<string>((resolve, reject) => {
      const req = post(url, headers, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end(call(3, 'return 6 * 7'));
    });
    assert.match(next, /"id":3/);
    assert.match(next, /\\"value\\":42/);
  });
});
