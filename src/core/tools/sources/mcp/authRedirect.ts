/**
 * The loopback redirect of an OAuth sign-in (RFC 8252 §7.3): a one-shot HTTP listener on 127.0.0.1
 * that takes the browser's redirect to `/callback`, checks its `state`, and hands over the
 * authorization code. It answers nothing else, stops after the first matching redirect, after a
 * bounded number of requests, or when the wait runs out.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const REDIRECT_PATH = '/callback';
/** How long a sign-in waits for the browser by default: 5 minutes. */
export const SIGN_IN_WAIT_MS = 5 * 60_000;
/** Requests a listener answers before it gives up (browsers also ask for /favicon.ico). */
const MAX_REQUESTS = 50;

export class McpSignInError extends Error {}

interface LoopbackRedirect {
  /** `http://127.0.0.1:PORT/callback`. */
  readonly redirectUrl: string;
  /** The authorization code, once the browser comes back with the right state. */
  readonly code: Promise<string>;
  close(): void;
}

/** A free loopback port (the listener binds it again when the sign-in starts). */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/**
 * Listens on 127.0.0.1:`port` (0: any) for the redirect. `code` rejects with a {@link McpSignInError}
 * when the authorization server reports an error, when `timeoutMs` passes, or when `signal` aborts.
 */
export async function startLoopbackRedirect(options: {
  port: number;
  state: string;
  label: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}): Promise<LoopbackRedirect> {
  const { state, label } = options;
  const timeoutMs = options.timeoutMs ?? SIGN_IN_WAIT_MS;
  let settle!: { resolve: (code: string) => void; reject: (e: Error) => void };
  const code = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  code.catch(() => {});
  let requests = 0;
  let done = false;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (done || req.method !== 'GET' || url.pathname !== REDIRECT_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      if (requests >= MAX_REQUESTS)
        finish(new McpSignInError(`the sign-in to the ${label} got too many stray requests on its redirect port and was stopped. Try again.`));
      return;
    }
    if (url.searchParams.get('state') !== state) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('This sign-in link is not the one CodeAct started (state mismatch). Start the sign-in again.');
      if (requests >= MAX_REQUESTS) finish(new McpSignInError(`the sign-in to the ${label} did not come back with its state. Try again.`));
      return;
    }
    const error = url.searchParams.get('error');
    const got = url.searchParams.get('code');
    if (error || !got) {
      const why = [error ?? 'no authorization code', url.searchParams.get('error_description')].filter(Boolean).join(': ').slice(0, 500);
      page(res, 400, 'Sign-in failed', `The authorization server said: ${why}. You can close this tab.`);
      finish(new McpSignInError(`the sign-in to the ${label} failed: the authorization server said "${why}".`));
      return;
    }
    page(res, 200, 'Signed in', `CodeAct is signed in to the ${label}. You can close this tab.`);
    finish(undefined, got);
  });
  const timer = setTimeout(
    () =>
      finish(new McpSignInError(`the sign-in to the ${label} was not completed within ${Math.round(timeoutMs / 1000)} s. Sign in again when you are ready.`)),
    timeoutMs,
  );
  timer.unref();
  const onAbort = () => finish(new McpSignInError(`the sign-in to the ${label} was stopped.`));
  function finish(err: Error | undefined, value?: string) {
    if (done) return;
    done = true;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    if (err) settle.reject(err);
    else settle.resolve(value!);
    // Let the answer reach the browser before the socket goes.
    setImmediate(() => {
      server.close();
      server.closeAllConnections?.();
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new McpSignInError(
          e.code === 'EADDRINUSE'
            ? `the sign-in to the ${label} could not listen for the browser on 127.0.0.1:${options.port}: the port is in use. Try again (a new port is chosen).`
            : `the sign-in to the ${label} could not listen for the browser on 127.0.0.1: ${e.message}.`,
        ),
      ),
    );
    server.listen(options.port, '127.0.0.1', resolve);
  }).catch((e) => {
    done = true;
    clearTimeout(timer);
    throw e;
  });
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  const port = (server.address() as AddressInfo).port;
  return { redirectUrl: `http://127.0.0.1:${port}${REDIRECT_PATH}`, code, close: () => finish(new McpSignInError(`the sign-in to the ${label} was closed.`)) };
}

function page(res: ServerResponse, status: number, title: string, text: string): void {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    `<!doctype html><meta charset="utf-8"><title>${esc(title)}</title><body style="font-family:sans-serif"><h1>${esc(title)}</h1><p>${esc(text)}</p></body>`,
  );
}
