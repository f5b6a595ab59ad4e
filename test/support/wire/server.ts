/**
 * A loopback HTTP server (node:http on 127.0.0.1, port 0) that speaks one provider's streaming wire
 * format. It serves queued steps in order (scripted turns, faults, recorded bodies), records every
 * request (method, path, query, headers, body) and notices when a client closes a connection early.
 *
 * The per-provider formats live in the dialect modules (openaiResponses.ts, openaiChat.ts,
 * anthropic.ts, gemini.ts); `startWireServer(dialect)` is the entry point used by tests.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ScriptTurn, StatusFault, WireStep } from './turn';

export interface RecordedRequest {
  index: number;
  method: string;
  /** Path and query as sent. */
  url: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  /** The JSON body (undefined when not JSON). */
  body: any;
  /** Set when the client closed the connection before the response was complete. */
  closedEarly: boolean;
  /** Resolves when the connection of this request is closed (either side). */
  closed: Promise<void>;
}

/** A rendered SSE body: frames are complete events including their terminator. */
export interface Rendered {
  frames: string[];
  status?: number;
  headers?: Record<string, string>;
}

export interface Dialect {
  name: string;
  /** The path prefix the SDK base URL needs (`/v1` for OpenAI, empty for Anthropic and Gemini). */
  basePath: string;
  /** Whether this request is one this dialect streams turns for. */
  matches(req: RecordedRequest): boolean;
  render(turn: ScriptTurn, req: RecordedRequest): Rendered;
  /** The HTTP error response of a status fault. */
  error(f: StatusFault): { status: number; headers: Record<string, string>; body: string };
  /** A frame whose JSON is broken, in place of `frame`. */
  malform(frame: string): string;
  /** A mid-stream error event. */
  streamError(errorType: string, message: string): string;
  /** The first frames of a never-ending answer, then one delta frame per tick. */
  endless(req: RecordedRequest): { preamble: string[]; tick: (n: number) => string };
  contentType: string;
  extraHeaders?: Record<string, string>;
  /** Other routes (file downloads…). Returns true when handled. */
  route?(req: RecordedRequest, res: http.ServerResponse, server: WireServer): boolean;
}

export class WireServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: WireStep[] = [];
  private server!: http.Server;
  private readonly sockets = new Set<Socket>();
  /** Files served by the dialect's download route, by file id. */
  readonly files = new Map<string, { bytes: Buffer; contentType?: string; filename?: string }>();
  origin = '';

  constructor(readonly dialect: Dialect) {}

  /** The base URL to hand to the SDK. */
  get url(): string {
    return `${this.origin}${this.dialect.basePath}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.onRequest(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address() as AddressInfo;
    this.origin = `http://127.0.0.1:${addr.port}`;
    return this;
  }

  push(...steps: WireStep[]): this {
    this.queue.push(...steps);
    return this;
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Requests for this dialect's streaming endpoint only. */
  get turns(): RecordedRequest[] {
    return this.requests.filter((r) => this.dialect.matches(r));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    let body: any;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      body = undefined;
    }
    let resolveClosed!: () => void;
    const rec: RecordedRequest = {
      index: this.requests.length,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers: req.headers,
      rawBody,
      body,
      closedEarly: false,
      closed: new Promise<void>((r) => (resolveClosed = r)),
    };
    this.requests.push(rec);
    res.on('close', () => {
      if (!res.writableFinished) rec.closedEarly = true;
      resolveClosed();
    });

    if (this.dialect.route?.(rec, res, this)) return;
    if (!this.dialect.matches(rec)) {
      sendJson(res, 404, { error: { message: `wire server (${this.dialect.name}): no route for ${rec.method} ${rec.url}` } });
      return;
    }
    const step = this.queue.shift();
    if (!step) {
      sendJson(res, 500, { error: { message: `wire server (${this.dialect.name}): no scripted response left for request #${rec.index}` } });
      return;
    }
    try {
      await this.serve(step, rec, res);
    } catch (err) {
      // A broken script: fail the request loudly instead of hanging the test.
      if (!res.headersSent) sendJson(res, 500, { error: { message: `wire server (${this.dialect.name}): ${String((err as Error).message ?? err)}` } });
      else res.destroy();
    }
  }

  private async serve(step: WireStep, rec: RecordedRequest, res: http.ServerResponse): Promise<void> {
    const d = this.dialect;
    const sseHeaders = { 'content-type': d.contentType, 'cache-control': 'no-cache', ...(d.extraHeaders ?? {}) };
    switch (step.kind) {
      case 'turn': {
        const r = d.render(step, rec);
        res.writeHead(r.status ?? 200, { ...sseHeaders, ...(r.headers ?? {}) });
        await writeBody(res, r.frames.join(''), step.opts.chunkBytes);
        res.end();
        return;
      }
      case 'status': {
        const e = d.error(step);
        res.writeHead(e.status, { 'content-type': 'application/json', ...e.headers });
        res.end(e.body);
        return;
      }
      case 'cut': {
        const r = d.render(step.turn, rec);
        res.writeHead(200, sseHeaders);
        const head = r.frames.slice(0, step.afterFrames).join('');
        const next = r.frames[step.afterFrames] ?? '';
        await writeBody(res, head + next.slice(0, Math.max(1, Math.floor(next.length / 2))));
        await tick(20);
        res.socket?.destroy();
        return;
      }
      case 'malformed': {
        const r = d.render(step.turn, rec);
        const frames = r.frames.slice();
        frames[step.atFrame] = d.malform(frames[step.atFrame]);
        res.writeHead(200, sseHeaders);
        await writeBody(res, frames.join(''));
        res.end();
        return;
      }
      case 'stream_error': {
        const r = d.render(step.turn, rec);
        res.writeHead(200, sseHeaders);
        await writeBody(res, r.frames.slice(0, step.afterFrames).join('') + d.streamError(step.errorType, step.message));
        res.end();
        return;
      }
      case 'endless': {
        const { preamble, tick: next } = d.endless(rec);
        res.writeHead(200, sseHeaders);
        res.write(preamble.join(''));
        let n = 0;
        while (!res.destroyed && !res.writableEnded && !rec.closedEarly) {
          res.write(next(n++));
          await tick(step.intervalMs);
        }
        return;
      }
      case 'stall': {
        if (step.headers) {
          res.writeHead(200, step.raw ? step.raw.headers : sseHeaders);
          const head = step.raw ? step.raw.body : step.turn ? d.render(step.turn, rec).frames.slice(0, step.afterFrames).join('') : '';
          if (head) res.write(head);
          else res.flushHeaders();
        }
        // Silent until the client goes away (or the server closes).
        await rec.closed;
        return;
      }
      case 'end_early': {
        const r = d.render(step.turn, rec);
        res.writeHead(200, sseHeaders);
        await writeBody(res, r.frames.slice(0, step.afterFrames).join(''));
        res.end();
        return;
      }
      case 'pause': {
        const r = d.render(step.turn, rec);
        res.writeHead(200, sseHeaders);
        res.write(r.frames.slice(0, step.afterFrames).join(''));
        const until = Date.now() + step.ms;
        while (Date.now() < until && !rec.closedEarly) {
          await tick(Math.min(step.keepAlive?.everyMs ?? step.ms, Math.max(1, until - Date.now())));
          if (step.keepAlive && Date.now() < until && !rec.closedEarly) res.write(step.keepAlive.frame);
        }
        if (rec.closedEarly) return;
        res.end(r.frames.slice(step.afterFrames).join(''));
        return;
      }
      case 'replay': {
        res.writeHead(step.status, step.headers);
        await writeBody(res, step.body, step.chunkBytes);
        res.end();
        return;
      }
    }
  }
}

export async function startWireServer(dialect: Dialect): Promise<WireServer> {
  return new WireServer(dialect).start();
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function tick(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Writes the body, in pieces of `chunkBytes` bytes with a pause between them when asked. */
async function writeBody(res: http.ServerResponse, body: string | Buffer, chunkBytes?: number): Promise<void> {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (!chunkBytes || chunkBytes <= 0) {
    res.write(buf);
    return;
  }
  for (let i = 0; i < buf.length; i += chunkBytes) {
    if (res.destroyed) return;
    res.write(buf.subarray(i, i + chunkBytes));
    // Let each piece leave as its own write (the client then sees split UTF-8 sequences and events).
    await new Promise((r) => setImmediate(r));
  }
}

/** `event: X\ndata: {json}\n\n` */
/** Answers `req` with a scripted turn in the dialect's wire format: for a `route` that decides turn by turn from the request. */
export function sendTurn(dialect: Dialect, res: http.ServerResponse, req: RecordedRequest, turn: ScriptTurn): void {
  const r = dialect.render(turn, req);
  res.writeHead(r.status ?? 200, { 'content-type': dialect.contentType, ...r.headers });
  res.end(r.frames.join(''));
}

/** llama.cpp's `GET /props`: the context window the server runs with. */
export function sendProps(res: http.ServerResponse, window: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ default_generation_settings: { n_ctx: window }, total_slots: 1 }));
}

export function sseEvent(event: string | null, data: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${data}\n\n`;
}

/** Standard HTTP error headers for a status fault. */
export function faultHeaders(f: StatusFault): Record<string, string> {
  return f.retryAfter !== undefined ? { 'retry-after': String(f.retryAfter) } : {};
}
