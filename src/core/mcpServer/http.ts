/**
 * The MCP door on Streamable HTTP (issue 36, point 1): loopback only, a bearer token made per start, one MCP
 * server (./server) and one Python session per MCP session.
 *
 * Every request is checked before any MCP work: the path (`/mcp`), the Host header (a loopback name with this
 * port: a web page that rebinds a DNS name to 127.0.0.1 is refused), an Origin if there is one (loopback
 * only), and the token (compared in constant time). A request that fails gets 401, 403 or 404 and nothing
 * else. At most {@link MAX_SESSIONS} MCP sessions live at once: a new one takes the place of the one unused
 * longest that has no request going on (clients that go without a DELETE would otherwise fill the server), and
 * gets 503 only when every one is busy. A session ends when its client deletes it, when it gives its place, or
 * when the server closes; its Python session ends with it.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Runtime } from '../runtime/types';
import { newId, randomToken } from '../util/ids';
import { codeActMcpServer } from './server';

/** MCP sessions one server keeps at once. */
const MAX_SESSIONS = 16;
/** The largest POST body read (a message of 1,000,000 characters of code fits, JSON-escaped). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

type DoorOptions = Parameters<typeof codeActMcpServer>[0] & { runtime: Runtime };

interface Live {
  transport: StreamableHTTPServerTransport;
  python: string;
  /** POST requests going on (a call runs; a GET's stream of notifications, open for as long as the client likes, does not count). */
  busy: number;
  /** When its last request ended (or began), for the place a new session takes. */
  used: number;
}

interface McpHttpServer {
  /** Where clients connect: http://127.0.0.1:PORT/mcp */
  readonly url: string;
  /** The bearer token of this start. */
  readonly token: string;
  /** MCP sessions live now. */
  readonly sessions: number;
  close(): Promise<void>;
}

export async function serveMcpHttp(o: DoorOptions, port = 0): Promise<McpHttpServer> {
  const token = randomToken(32);
  const expected = Buffer.from(`Bearer ${token}`);
  const live = new Map<string, Live>();
  let bound = 0;
  /** Sessions whose initialize is being answered (counted against the limit with the live ones). */
  let starting = 0;
  /** Orders the sessions' use (a counter, not a clock). */
  let clock = 0;

  /** Ends the session unused longest with no request going on; false when every one is busy. */
  const giveWay = async (): Promise<boolean> => {
    let oldest: Live | undefined;
    for (const s of live.values()) if (s.busy === 0 && (!oldest || s.used < oldest.used)) oldest = s;
    if (!oldest) return false;
    await oldest.transport.close().catch(() => {});
    for (const [id, s] of live) if (s === oldest) live.delete(id);
    return true;
  };

  const refuse = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  };

  const allowed = (req: IncomingMessage): { status: number; message: string } | undefined => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/mcp') return { status: 404, message: 'Not found: the MCP endpoint is /mcp.' };
    const host = req.headers.host ?? '';
    const name = host.replace(/:\d+$/, '');
    if (!LOOPBACK_NAMES.has(name) || host !== `${name}:${bound}`)
      return { status: 403, message: 'Forbidden: this server answers only on loopback, by its own address.' };
    const origin = req.headers.origin;
    if (origin !== undefined) {
      let oh = '';
      try {
        oh = new URL(origin).hostname;
      } catch {
        /* not a URL: refused below */
      }
      if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(oh)) return { status: 403, message: 'Forbidden: a request from a web page of another origin.' };
    }
    const auth = Buffer.from(String(req.headers.authorization ?? ''));
    if (auth.length !== expected.length || !timingSafeEqual(auth, expected))
      return { status: 401, message: 'Unauthorized: send the token this server printed at start (Authorization: Bearer …).' };
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const no = allowed(req);
    if (no) return refuse(res, no.status, no.message, no.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
    // A POST's body is read here (bounded), so its requests are known: a client that goes away before their answer
    // cancels them (the run stops), and only an initialize can start a session.
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readBody(req);
      if (read === 'too large') return refuse(res, 413, `Payload too large: at most ${MAX_BODY_BYTES} bytes.`);
      if (read === 'not JSON') return refuse(res, 400, 'Parse error: the body is not JSON.');
      body = read.json;
    }
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const s = live.get(sid);
      if (!s) return refuse(res, 404, 'This MCP session is gone (it ended, gave its place to a newer one, or the server restarted): start a new one.');
      s.used = ++clock;
      if (req.method === 'POST') {
        s.busy++;
        const ids = requestIds(body);
        res.once('close', () => {
          s.busy--;
          s.used = ++clock;
          if (res.writableFinished) return;
          for (const requestId of ids)
            s.transport.onmessage?.({
              jsonrpc: '2.0',
              method: 'notifications/cancelled',
              params: { requestId, reason: 'the client went away before the answer' },
            });
        });
      }
      return s.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST' || !(Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body)))
      return refuse(res, 400, 'Bad request: start a session with an initialize request (POST), or send its Mcp-Session-Id.');
    if (live.size + starting >= MAX_SESSIONS && !(await giveWay()))
      return refuse(res, 503, `This server's ${MAX_SESSIONS} MCP sessions are all busy: end one (DELETE), or try again once a call ends.`);
    // Its own Python session, ended with it; or the server's named one (--keep-session), shared and kept.
    const python = o.session ?? newId('mcp');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomToken(16),
      onsessioninitialized: (id) => {
        live.set(id, { transport, python, busy: 0, used: ++clock });
      },
    });
    const server = codeActMcpServer(o, python);
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id) live.delete(id);
      if (!o.session && !o.shared) void o.runtime.sessions.close(python).catch(() => {});
    };
    starting++;
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      starting--;
    }
    // Not taken as an initialize (the transport refused it): nothing of it is kept.
    if (!transport.sessionId) await server.close().catch(() => {});
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) refuse(res, 500, `Internal error: ${e instanceof Error ? e.message : String(e)}`.slice(0, 300));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', () => resolve());
  });
  bound = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/mcp`,
    token,
    get sessions() {
      return live.size;
    },
    async close() {
      for (const s of [...live.values()]) await s.transport.close().catch(() => {});
      live.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The body of a POST, read up to MAX_BODY_BYTES, as JSON. */
function readBody(req: IncomingMessage): Promise<{ json: unknown } | 'too large' | 'not JSON'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) over = true;
      else chunks.push(c);
    });
    req.on('error', () => resolve('not JSON'));
    req.on('end', () => {
      if (over) return resolve('too large');
      try {
        resolve({ json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
      } catch {
        resolve('not JSON');
      }
    });
  });
}

/** The ids of the requests (not notifications or responses) in a JSON-RPC message or batch. */
function requestIds(body: unknown): Array<string | number> {
  const ids: Array<string | number> = [];
  for (const m of Array.isArray(body) ? body : [body]) {
    const msg = m as { method?: unknown; id?: unknown } | null;
    if (msg && typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number')) ids.push(msg.id);
  }
  return ids;
}
