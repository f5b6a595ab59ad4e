/**
 * A remote body is read with a byte limit while it streams (issue 31, point 5): servers that send far more
 * than any answer needs, with no declared size (chunked), are cut off at the cap. Counted, not timed: the
 * client's socket shows what it read (at most the cap, one chunk and Node's own buffers), and the sender
 * shows that the client closed before the body's end.
 *
 * - a real Jupyter Server behind a loopback proxy that lies for one answer (a file's contents, a kernel start);
 * - an MCP server over streamable HTTP (a JSON answer, and one endless server-sent event);
 * - OAuth metadata of an MCP server that asks for sign-in;
 * - an `http` tool.
 */
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { CodeInterpreterCallItem, FileOutput } from '../../src/common/events';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { findJupyterServer, startJupyterServer, SKIP_MESSAGE, type JupyterServer } from '../support/jupyterServer';
import { memorySecretStore } from '../../src/core/tools/sources/mcp/authStore';
import { MCP_MAX_AUTH_BYTES, MCP_MAX_MESSAGE_BYTES } from '../../src/core/tools/sources/mcp/list';
import { McpClientPool } from '../../src/core/tools/sources/mcp/pool';
import { loadTools } from '../../src/core/tools/declarations';
import { createProvider } from '../../src/core/providers/factory';
import { startOAuthMcpServer, type OAuthMcpServer } from '../support/mcpOAuthServer';
import { cannotSwitchUser, runScriptInChild, TESTER } from './support/asUser';
import { CLIENT_SLACK, clientBytesRead, LIE_CHUNK, sendHuge, watchClientSockets, type Lie } from '../support/lyingBody';

const MiB = 1024 * 1024;
/** What the liars send: far over every cap (on main, the Jupyter client read all of it). */
const HUGE = 64 * MiB;

/** Asserts the lie was cut off: the client read at most `cap` + one chunk + Node's buffers, and closed first. */
function assertCutOff(lie: Lie, cap: number): void {
  const read = clientBytesRead(lie.clientPort);
  console.log(
    `      the server sent ${lie.sent.toLocaleString('en-US')} bytes; the client read ${read.toLocaleString('en-US')} (cap ${cap.toLocaleString('en-US')})`,
  );
  assert.equal(lie.completed, false, `the client read the whole ${HUGE.toLocaleString('en-US')}-byte body`);
  assert.ok(
    read <= cap + LIE_CHUNK + CLIENT_SLACK,
    `the client read ${read.toLocaleString('en-US')} bytes, more than the cap ${cap.toLocaleString('en-US')} and a chunk`,
  );
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/**
 * A proxy in front of a real server: forwards every request (and WebSocket upgrades) unless `lie` takes it.
 * Each lie it told is in `lies`.
 */
async function lyingProxy(target: string, lie: (req: IncomingMessage, res: ServerResponse) => Promise<Lie> | undefined) {
  const to = new URL(target);
  const lies: Promise<Lie>[] = [];
  const server = createServer((req, res) => {
    const told = lie(req, res);
    if (told) return void lies.push(told);
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const up = connect(Number(to.port), to.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(lines.join('\r\n') + '\r\n\r\n');
      up.write(head);
      socket.pipe(up);
      up.pipe(socket);
    });
    const end = () => {
      socket.destroy();
      up.destroy();
    };
    up.on('error', end);
    socket.on('error', end);
    socket.on('close', end);
    up.on('close', end);
  });
  const url = await listen(server);
  return { url, lies, close: () => (server.closeAllConnections(), server.close()) };
}

describe('security: remote bodies are read within a cap as they stream', function () {
  this.timeout(120_000);
  before(watchClientSockets);

  const available = !!findJupyterServer();
  if (!available) console.log(`      ${SKIP_MESSAGE}`);
  (available ? describe : describe.skip)('a real Jupyter Server behind a proxy that lies about sizes', () => {
    let server: JupyterServer;
    before(async () => (server = await startJupyterServer()));
    after(async () => server?.stop());

    it("a file's contents of 64 MiB, chunked, for a file the kernel said was small: cut off at the cap, and the file is named as not copied", async () => {
      const maxFileBytes = 256 * 1024;
      const proxy = await lyingProxy(server.url, (req, res) =>
        /^\/api\/contents\/.*lie\.txt\?.*content=1/.test(req.url ?? '')
          ? sendHuge(res, { total: HUGE, head: '{"name": "lie.txt", "type": "file", "format": "base64", "content": "', tail: '"}' })
          : undefined,
      );
      const rt = new JupyterRuntime({ url: proxy.url, token: server.token, limits: { maxFileBytes } });
      try {
        const item: CodeInterpreterCallItem = await rt.execute({ code: 'open("lie.txt", "w").write("small")', sessionId: 'lie' });
        assert.equal(item.status, 'completed', JSON.stringify(item.error));
        const file = item.outputs.find((o): o is FileOutput => o.type === 'file' && o.filename === 'lie.txt');
        assert.ok(file && !file.path, JSON.stringify(item.outputs));
        assert.match(
          file.note ?? '',
          new RegExp(
            `it could not be copied from the server: The Jupyter server at ${proxy.url.replace(/[.]/g, '\\.')} sent more than 415,064 bytes while reading the file "lie\\.txt" the code wrote, CodeAct's limit for that answer, so it stopped reading there: the file is larger than the 256 KiB CodeAct copies out`,
          ),
        );
        assert.equal(proxy.lies.length, 1);
        assertCutOff(await proxy.lies[0], Math.ceil(maxFileBytes / 3) * 4 + 64 * 1024);
      } finally {
        await rt.dispose();
        proxy.close();
      }
    });

    const CHILD = String.raw`
import { JupyterRuntime } from '${path.resolve(__dirname, '../../src/core/runtime/jupyter/jupyterRuntime')}';
import { totalClientBytesRead, watchClientSockets } from '${path.resolve(__dirname, '../support/lyingBody')}';
(async () => {
  const { url, token, maxFileBytes } = JSON.parse(process.argv[2]);
  watchClientSockets();
  const rt = new JupyterRuntime({ url, token, limits: { maxFileBytes } });
  const item = await rt.execute({ code: 'open("lie.txt", "w").write("small")', sessionId: 'lie' });
  await rt.dispose();
  const file = item.outputs.find((o) => o.type === 'file' && o.filename === 'lie.txt');
  console.log(JSON.stringify({ status: item.status, note: file?.note, path: file?.path, uid: process.getuid(), read: totalClientBytesRead() }));
})();
`;
    for (const who of ['root', 'the unprivileged user'] as const) {
      it(`the same lie to a runtime running as ${who}: cut off at the cap`, async function () {
        const user = who === 'root' ? undefined : TESTER;
        const why = user && cannotSwitchUser();
        if (why) return this.skip();
        const maxFileBytes = 256 * 1024;
        const proxy = await lyingProxy(server.url, (req, res) =>
          /^\/api\/contents\/.*lie\.txt\?.*content=1/.test(req.url ?? '')
            ? sendHuge(res, { total: HUGE, head: '{"name": "lie.txt", "type": "file", "format": "base64", "content": "', tail: '"}' })
            : undefined,
        );
        try {
          const out = await runScriptInChild<{ status: string; note?: string; path?: string; uid: number; read: number }>(
            CHILD,
            { url: proxy.url, token: server.token, maxFileBytes },
            user,
            `the runtime as ${who}`,
          );
          assert.equal(out.uid, user?.uid ?? 0);
          assert.equal(out.status, 'completed');
          assert.equal(out.path, undefined);
          assert.match(out.note ?? '', /sent more than 415,064 bytes while reading the file "lie\.txt" the code wrote/);
          const lie = await proxy.lies[0];
          console.log(`      as ${who}: the proxy sent ${lie.sent.toLocaleString('en-US')} bytes; the runtime read ${out.read.toLocaleString('en-US')} in all`);
          assert.equal(lie.completed, false);
          // Everything the runtime read over REST, the kernel's answers included, stays near the cap.
          assert.ok(out.read <= 415_064 + LIE_CHUNK + CLIENT_SLACK, `the runtime read ${out.read} bytes`);
        } finally {
          proxy.close();
        }
      });
    }

    it('a kernel start answered with an endless JSON body: the run fails with an error that names the server, the cap and what to check', async () => {
      const proxy = await lyingProxy(server.url, (req, res) =>
        req.method === 'POST' && /^\/api\/kernels\/?(\?|$)/.test(req.url ?? '')
          ? sendHuge(res, { total: HUGE, head: '{"id": "', filler: 0x61, tail: '"}', status: 201 })
          : undefined,
      );
      const rt = new JupyterRuntime({ url: proxy.url, token: server.token });
      try {
        const item = await rt.execute({ code: '1 + 1', sessionId: 'lie' });
        assert.equal(item.status, 'failed');
        assert.equal(item.error?.type, 'JupyterResponseTooLarge', JSON.stringify(item.error));
        assert.match(
          item.error?.message ?? '',
          /^The Jupyter server at http:\/\/127\.0\.0\.1:\d+\/ sent more than 4 MiB \(4,194,304 bytes\) while starting a kernel, CodeAct's limit for that answer, so it stopped reading there: Check that codeact\.jupyter\.serverURL \(CLI: --jupyter-url\) points to a Jupyter server/,
        );
        assert.ok(proxy.lies.length >= 1);
        for (const lie of proxy.lies) assertCutOff(await lie, 4 * MiB);
      } finally {
        await rt.dispose();
        proxy.close();
      }
    });
  });

  describe('an MCP server over streamable HTTP', () => {
    let pool: McpClientPool;
    beforeEach(() => (pool = new McpClientPool({ connectTimeoutMs: 60_000 })));
    afterEach(async () => pool.dispose());

    /** A real MCP server (the SDK's, stateless, one tool "big") whose answers to tools/call are `lie`'s. */
    async function mcpServer(lie: (id: unknown, res: ServerResponse) => Promise<Lie>) {
      const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
      const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
      const lies: Promise<Lie>[] = [];
      const server = createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        if (req.method !== 'POST') return void res.writeHead(405).end();
        const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method?: string; id?: unknown };
        if (rpc.method === 'tools/call') return void lies.push(lie(rpc.id, res));
        const mcp = new McpServer({ name: 'liar', version: '1.0.0' });
        mcp.registerTool('big', { description: 'Answers far too much.' }, async () => ({ content: [{ type: 'text', text: 'never this' }] }));
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on('close', () => void transport.close());
        await mcp.connect(transport);
        await transport.handleRequest(req, res, rpc);
      });
      const url = `${await listen(server)}mcp`;
      return { url, lies, close: () => (server.closeAllConnections(), server.close()) };
    }

    const head = (id: unknown) => `{"jsonrpc": "2.0", "id": ${JSON.stringify(id)}, "result": {"content": [{"type": "text", "text": "`;

    it('a tools/call answer of 64 MiB of JSON, chunked: the call fails at 24 MiB, naming the server, the cap and what to do', async () => {
      const server = await mcpServer((id, res) => sendHuge(res, { total: HUGE, head: head(id), tail: '"}]}}' }));
      try {
        await assert.rejects(
          pool.callTool({ kind: 'http', url: server.url }, 'big', {}),
          /the MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp sent more than 24 MiB \(25,165,824 bytes\) in one MCP message, CodeAct's limit, so it stopped reading there and closed the connection\. Ask the tool for less \(a smaller result\), or check the server\./,
        );
        assert.equal(server.lies.length, 1);
        assertCutOff(await server.lies[0], MCP_MAX_MESSAGE_BYTES);
      } finally {
        server.close();
      }
    });

    it('one server-sent event that never ends: the call fails at 24 MiB for that event', async () => {
      const server = await mcpServer((id, res) =>
        sendHuge(res, { total: HUGE, contentType: 'text/event-stream', head: `event: message\ndata: ${head(id)}`, tail: '"}]}}\n\n' }),
      );
      try {
        await assert.rejects(
          pool.callTool({ kind: 'http', url: server.url }, 'big', {}),
          /the MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp sent more than 24 MiB \(25,165,824 bytes\) in one MCP message \(one server-sent event\), CodeAct's limit/,
        );
        assert.equal(server.lies.length, 1);
        assertCutOff(await server.lies[0], MCP_MAX_MESSAGE_BYTES);
      } finally {
        server.close();
      }
    });
  });

  describe("an MCP server's OAuth metadata", () => {
    let server: OAuthMcpServer;
    let pool: McpClientPool;
    const lies: Promise<Lie>[] = [];
    afterEach(async () => {
      await pool?.dispose();
      await server?.close();
    });

    it('authorization-server metadata of 64 MiB, chunked: the sign-in fails at 1 MiB, naming the address, the server and what to check', async () => {
      server = await startOAuthMcpServer({
        answer: (req, res) => {
          if (req.url !== '/.well-known/oauth-authorization-server') return false;
          lies.push(sendHuge(res, { total: HUGE, head: '{"issuer": "', tail: '"}' }));
          return true;
        },
      });
      const authorize = async () => true;
      pool = new McpClientPool({ auth: { secrets: memorySecretStore(), authorize } });
      await assert.rejects(
        pool.callTool({ kind: 'http', url: server.url }, 'add', { a: 1, b: 2 }),
        /http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-authorization-server \(signing in to the MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp\) sent more than 1 MiB \(1,048,576 bytes\) in an OAuth answer, CodeAct's limit, so it stopped reading there and closed the connection\. Check "mcp\.url" in codeact\.tools and the server's sign-in setup\./,
      );
      assert.ok(lies.length >= 1);
      for (const lie of lies) assertCutOff(await lie, MCP_MAX_AUTH_BYTES);
    });
  });

  describe('an http tool', () => {
    it('an answer of 64 MiB, chunked: the call fails at maxResponseBytes (default 4 MiB), naming the host, the cap and what to do', async () => {
      const lies: Promise<Lie>[] = [];
      const server = createServer((_req, res) => void lies.push(sendHuge(res, { total: HUGE, head: '{"items": "', tail: '"}' })));
      const url = await listen(server);
      try {
        const set = loadTools([{ name: 'fetchy', http: { url: `${url}items`, allowedHosts: [new URL(url).host] } }], { workspace: '/tmp' });
        assert.deepEqual(set.errors, []);
        await assert.rejects(
          set.tools[0].invoke({}, { signal: new AbortController().signal, callId: 'c' }),
          /^Error: Tool "fetchy": 127\.0\.0\.1:\d+ sent more than 4 MiB \(4,194,304 bytes\), the tool's maxResponseBytes, so CodeAct stopped reading there and closed the connection\. Raise maxResponseBytes in the tool's declaration if the endpoint's answers are this large, or ask it for less\.$/,
        );
        assert.equal(lies.length, 1);
        assertCutOff(await lies[0], 4 * MiB);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });
  });

  describe("a file from a provider's hosted sandbox", () => {
    for (const provider of ['openai', 'anthropic'] as const) {
      it(`${provider}: a download of 64 MiB, chunked, past its cap: cut off, naming the provider, the file, the cap and what to do`, async () => {
        const lies: Promise<Lie>[] = [];
        const server = createServer((req, res) => {
          if (/\/content$/.test(req.url ?? '')) return void lies.push(sendHuge(res, { total: HUGE, contentType: 'application/octet-stream' }));
          // Anthropic's adapter asks for the file's metadata first.
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ id: 'f1', type: 'file', filename: 'out.bin', mime_type: 'application/octet-stream' }));
        });
        const origin = (await listen(server)).replace(/\/$/, '');
        try {
          const p = await createProvider({ provider, apiKey: 'test-key', baseURL: provider === 'openai' ? `${origin}/v1` : origin, env: {} });
          await assert.rejects(
            p.downloadFile!({ type: 'file', file_id: 'f1', container_id: 'c1', filename: 'out.bin' }, { maxBytes: MiB }),
            new RegExp(
              `^ProviderError: .+ sent more than 1 MiB \\(1,048,576 bytes\\) for the file "out\\.bin", CodeAct's limit for a download from the hosted sandbox, so it stopped reading there\\. Download the file from the provider's console`,
            ),
          );
          assert.equal(lies.length, 1);
          assertCutOff(await lies[0], MiB);
        } finally {
          server.closeAllConnections();
          server.close();
        }
      });
    }
  });
});
