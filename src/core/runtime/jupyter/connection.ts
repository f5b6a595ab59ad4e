/**
 * Talking to a Jupyter server (Jupyter Server, Kernel Gateway or Enterprise Gateway): connection
 * settings for `@jupyterlab/services` in Node, a REST client for the kernel API whose failures are
 * classified into errors a user can act on, and a guard that keeps the library's console chatter off
 * stdout (the CLI prints JSON lines there).
 *
 * The token travels in an `Authorization: token …` header, on REST calls and on the WebSocket
 * upgrade alike, never in a URL (URLs end up in logs and error messages).
 */
import { ServerConnection, type Kernel, type KernelAPI } from '@jupyterlab/services';
import WebSocket from 'ws';
import { CodeActError, errorCategory, type ErrorCategory } from '../../util/errors';
import { htmlToText, isHtml } from '../../../common/htmlText';
import { formatBytes, overCap } from '../../../common/format';
import { readBodyOrThrow, readBodyPrefix } from '../../util/readBodyCapped';
import { hubUserOf, isStoppedServerAnswer, rewriteHubUserPath, stoppedMessage, type HubUser } from './hub';

/**
 * The Jupyter runtime's errors, each with its category: a setting the server cannot work with (`config`), a
 * server that cannot be reached (`environment`: the CLI exits 2 for both), or a failure of the run (`runtime`).
 */
const JUPYTER_ERRORS = {
  JupyterConfigError: 'config',
  JupyterAuthError: 'config',
  JupyterNotFound: 'config',
  JupyterKernelNotFound: 'config',
  JupyterUnreachable: 'environment',
  JupyterServerError: 'runtime',
  JupyterHubServerStopped: 'runtime',
  JupyterTimeout: 'runtime',
  JupyterBootstrapError: 'runtime',
  JupyterConnectionLost: 'runtime',
  JupyterResponseTooLarge: 'runtime',
  JupyterClosed: 'runtime',
  KernelDied: 'runtime',
} as const satisfies Record<string, ErrorCategory>;

/** An error of the Jupyter runtime: its type becomes `ExecutionError.type`, its category says who is at fault. */
export class JupyterError extends CodeActError {
  readonly category: ErrorCategory;
  constructor(
    readonly type: keyof typeof JUPYTER_ERRORS,
    message: string,
    readonly status?: number,
    /** The low-level cause (ECONNREFUSED, ENOTFOUND…), for network errors. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = type;
    this.category = JUPYTER_ERRORS[type];
  }
}

/** What to tell the user about the token; the setting names live with the caller. */
const TOKEN_HINT =
  'Set it with the "CodeAct: Set Jupyter Token" command (stored in VS Code\'s SecretStorage), or in the ' +
  'CODEACT_JUPYTER_TOKEN environment variable for the CLI. The token is never read from settings.json.';

const URL_HINT_SHORT = 'codeact.jupyter.serverURL (CLI: --jupyter-url) points to a Jupyter server, not to another service or a proxy that answers for it';
const URL_HINT = 'Check that the server is running and that codeact.jupyter.serverURL (CLI: --jupyter-url) points to it.';

/** Normalises a server URL to its base (`http(s)://host:port/base/`), or throws a JupyterError. */
export function normaliseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new JupyterError('JupyterConfigError', `The Jupyter URL ${JSON.stringify(raw)} is not a URL. ${URL_HINT}`);
  }
  if (url.protocol === 'ws:' || url.protocol === 'wss:') url.protocol = url.protocol === 'ws:' ? 'http:' : 'https:';
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new JupyterError('JupyterConfigError', `The Jupyter URL must start with http:// or https:// (got ${url.protocol}). ${URL_HINT}`);
  }
  if (url.username || url.password) {
    throw new JupyterError('JupyterConfigError', 'The Jupyter URL must not carry credentials; pass the token separately. ' + TOKEN_HINT);
  }
  if (url.searchParams.has('token')) {
    throw new JupyterError('JupyterConfigError', 'The Jupyter URL must not carry ?token=...; pass the token separately. ' + TOKEN_HINT);
  }
  url.search = '';
  url.hash = '';
  // A URL copied from the browser may point at a page of the server rather than its base, or at the
  // hub's page for a user's server (`…/hub/user/NAME/`) rather than the server (`…/user/NAME/`).
  url.pathname = rewriteHubUserPath(url.pathname).replace(/\/(lab|tree|notebooks|api)(\/.*)?$/, '/');
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url.toString();
}

export interface ConnectionConfig {
  baseUrl: string;
  token?: string;
  /** Timeout of one REST request; kernel start-up on a gateway can take a while. */
  requestTimeoutMs: number;
}

/**
 * Acknowledges what the server sends at once, so that the server's Nagle algorithm never waits for
 * our delayed ACK.
 *
 * Jupyter Server (1.x and 2.x; tornado re-enables Nagle on the stream after the WebSocket handshake),
 * Kernel Gateway and Enterprise Gateway write each kernel message with its own `send`. With Nagle on,
 * the server sends the first message of a run (`status: busy`) and then holds the next ones until
 * that segment is acknowledged; Linux delays the ACK of a segment that needs no answer by ~40 ms.
 * A warm `1+1` then takes ~44 ms where the kernel needs ~5 ms.
 *
 * Sending any data carries the ACK along with it. So after the messages of one socket read we send
 * an unsolicited pong (RFC 6455 §5.5.3 allows it: "A Pong frame MAY be sent unsolicited"; tornado
 * and proxies treat it as a heartbeat). Several messages that arrive together get one pong, sent on
 * the next turn of the event loop. This works against any server, whereas the real fix (TCP_NODELAY on
 * the server's socket, see the README) needs access to the server. Node offers no TCP_QUICKACK, and
 * TCP_NODELAY on our side (which `ws` already sets) only affects what we send.
 *
 * Returns a function that counts the pongs sent, for tests.
 */
function acknowledgePromptly(socket: WebSocket): () => number {
  let scheduled = false;
  let sent = 0;
  const pong = () => {
    scheduled = false;
    if (socket.readyState !== WebSocket.OPEN) return;
    try {
      socket.pong();
      sent++;
    } catch {
      // The socket is closing; the connection's own handlers report that.
    }
  };
  socket.on('message', () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pong);
  });
  return () => sent;
}

/** `@jupyterlab/services` settings for Node: `ws` as WebSocket, the token as a header, prompt ACKs. */
export function makeServerSettings(config: ConnectionConfig): ServerConnection.ISettings {
  const token = config.token ?? '';
  const headers: Record<string, string> = token ? { Authorization: `token ${token}` } : {};
  class AuthorizedWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers, handshakeTimeout: Math.min(config.requestTimeoutMs, 60_000) });
      acknowledgePromptly(this);
    }
  }
  return ServerConnection.makeSettings({
    baseUrl: config.baseUrl,
    wsUrl: config.baseUrl.replace(/^http/, 'ws'),
    token,
    appendToken: false,
    WebSocket: AuthorizedWebSocket as unknown as typeof globalThis.WebSocket,
    init: { cache: 'no-store' },
  });
}

/**
 * The kernel REST API (`/api/kernels`) with timeouts and classified errors. It is also handed to
 * `KernelConnection` (as its `kernelAPIClient`) so restarts and interrupts take the same path.
 */
export class KernelRestClient implements Kernel.IKernelAPIClient {
  /** The JupyterHub user whose server the URL points at, if it has that shape. */
  private readonly hub: HubUser | undefined;

  constructor(
    readonly serverSettings: ServerConnection.ISettings,
    private readonly config: ConnectionConfig,
  ) {
    this.hub = hubUserOf(config.baseUrl);
  }

  get displayUrl(): string {
    return this.config.baseUrl;
  }

  async listRunning(): Promise<KernelAPI.IModel[]> {
    const res = await this.request('GET', 'api/kernels', 'listing the kernels', [200]);
    return (await this.json(res, 'listing the kernels')) as KernelAPI.IModel[];
  }

  async getModel(id: string, timeoutMs?: number): Promise<KernelAPI.IModel | undefined> {
    const res = await this.request('GET', `api/kernels/${encodeURIComponent(id)}`, 'looking up the kernel', [200, 404], undefined, timeoutMs);
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return undefined;
    }
    return (await this.json(res, 'looking up the kernel')) as KernelAPI.IModel;
  }

  async startNew(options: KernelAPI.IKernelOptions & { env?: Record<string, string> } = {}): Promise<KernelAPI.IModel> {
    try {
      const res = await this.request('POST', 'api/kernels', 'starting a kernel', [200, 201], options);
      const model = (await this.json(res, 'starting a kernel')) as KernelAPI.IModel;
      if (!model || typeof model.id !== 'string') {
        throw new JupyterError('JupyterServerError', `The server at ${this.displayUrl} answered the kernel start with no kernel id; is it a Jupyter server?`);
      }
      return model;
    } catch (err) {
      if (err instanceof JupyterError && err.status === 500 && /NoSuchKernel|No such kernel/i.test(err.message)) {
        const names = await this.kernelSpecNames().catch(() => [] as string[]);
        throw new JupyterError(
          'JupyterKernelNotFound',
          `The Jupyter server at ${this.displayUrl} has no kernel named "${options.name}"` +
            (names.length ? ` (it has: ${names.join(', ')})` : '') +
            '. Set codeact.jupyter.kernelName (CLI: --jupyter-kernel) to one of its kernels.',
          500,
        );
      }
      throw err;
    }
  }

  async restart(id: string): Promise<void> {
    await this.request('POST', `api/kernels/${encodeURIComponent(id)}/restart`, 'restarting the kernel', [200]);
  }

  async interrupt(id: string): Promise<void> {
    await this.request('POST', `api/kernels/${encodeURIComponent(id)}/interrupt`, 'interrupting the kernel', [200, 204]);
  }

  async shutdown(id: string, timeoutMs?: number): Promise<void> {
    await this.request('DELETE', `api/kernels/${encodeURIComponent(id)}`, 'shutting the kernel down', [200, 204, 404], undefined, timeoutMs);
  }

  /**
   * A file's model from the contents API (`/api/contents/PATH`): metadata only, or with its content as
   * base64 when `contentBytes` says how large the file may be (its model is read up to that as base64,
   * plus room for the metadata). Undefined when the server has no such file (404) — or no contents API
   * at all (a gateway).
   */
  async fileModel(
    path: string,
    contentBytes: number | undefined,
    timeoutMs?: number,
  ): Promise<{ size?: number; content?: unknown; format?: string; type?: string } | undefined> {
    const content = contentBytes !== undefined;
    const enc = path.split('/').map(encodeURIComponent).join('/');
    const query = content ? '?type=file&format=base64&content=1' : '?content=0';
    let res: Response;
    try {
      res = await this.request('GET', `api/contents/${enc}${query}`, 'reading a file the code wrote', [200, 404, 400], undefined, timeoutMs);
    } catch (err) {
      if (err instanceof JupyterError && (err.status === 404 || err.status === 405)) return undefined;
      throw err;
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => {});
      return undefined;
    }
    // base64 is 4 bytes for 3; the model around it (name, path, dates) is a few hundred bytes.
    const cap = content ? Math.ceil(contentBytes / 3) * 4 + MODEL_OVERHEAD : MAX_JSON_BODY;
    const hint = content
      ? `the file is larger than the ${formatBytes(contentBytes)} CodeAct copies out, or the server sent more than the file; it stays on the kernel's machine.`
      : undefined;
    return (await this.json(res, `reading the file ${JSON.stringify(path)} the code wrote`, cap, hint)) as {
      size?: number;
      content?: unknown;
      format?: string;
    };
  }

  async kernelSpecNames(): Promise<string[]> {
    const res = await this.request('GET', 'api/kernelspecs', 'listing the kernel specs', [200]);
    const body = (await this.json(res, 'listing the kernel specs')) as { kernelspecs?: Record<string, unknown> };
    return Object.keys(body.kernelspecs ?? {});
  }

  /** The answer's JSON, read within `cap` bytes as it streams (see readBodyCapped). */
  private async json(res: Response, what: string, cap = MAX_JSON_BODY, hint = `Check that ${URL_HINT_SHORT}.`): Promise<unknown> {
    let bytes: Buffer;
    try {
      bytes = await readBodyOrThrow(
        res.body,
        cap,
        () =>
          new JupyterError(
            'JupyterResponseTooLarge',
            `The Jupyter server at ${this.displayUrl} sent ${overCap(cap)} while ${what}, CodeAct's limit for that answer, ` +
              `so it stopped reading there: ${hint}`,
          ),
      );
    } catch (err) {
      if (err instanceof JupyterError) throw err;
      throw networkError(err, this.displayUrl, what, this.config.requestTimeoutMs);
    }
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new JupyterError(
        'JupyterServerError',
        `The server at ${this.displayUrl} answered with something that is not JSON while ${what}; is it a Jupyter server?`,
      );
    }
  }

  private async request(method: string, path: string, what: string, ok: number[], body?: unknown, timeoutMs = this.config.requestTimeoutMs): Promise<Response> {
    const url = new URL(path, this.config.baseUrl).toString();
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.config.token) headers.Authorization = `token ${this.config.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw networkError(err, this.displayUrl, what, timeoutMs);
    }
    if (ok.includes(res.status)) return res;
    const detail = await errorDetail(res);
    if (this.hub && isStoppedServerAnswer(this.hub, res.status, res.headers, detail)) {
      throw new JupyterError('JupyterHubServerStopped', stoppedMessage(this.hub), res.status);
    }
    if (res.status === 401 || res.status === 403) {
      throw new JupyterError(
        'JupyterAuthError',
        this.config.token
          ? `The Jupyter server at ${this.displayUrl} refused the token (HTTP ${res.status}) while ${what}. ${TOKEN_HINT}`
          : `The Jupyter server at ${this.displayUrl} requires a token (HTTP ${res.status}) and none is set. ${TOKEN_HINT}`,
        res.status,
      );
    }
    if (res.status >= 300 && res.status < 400) {
      throw new JupyterError(
        'JupyterNotFound',
        `The server at ${this.displayUrl} redirected ${method} ${path} (HTTP ${res.status}) instead of answering: the URL is probably ` +
          'a login page or missing a base path (for JupyterHub: https://HUB/user/NAME/).',
        res.status,
      );
    }
    if (res.status === 404) {
      throw new JupyterError(
        'JupyterNotFound',
        `The server at ${this.displayUrl} answered 404 to ${method} /${path}: that is not the base URL of a Jupyter server, Kernel ` +
          'Gateway or Enterprise Gateway. Include any base path (for JupyterHub: https://HUB/user/NAME/).',
        404,
      );
    }
    throw new JupyterError(
      'JupyterServerError',
      `The Jupyter server at ${this.displayUrl} answered HTTP ${res.status} while ${what}${detail ? `: ${detail}` : ''}.`,
      res.status,
    );
  }
}

function networkError(err: unknown, url: string, what: string, timeoutMs: number): JupyterError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const category = errorCategory(err);
  if (category === 'timeout' || category === 'cancelled') {
    return new JupyterError(
      'JupyterTimeout',
      `The Jupyter server at ${url} did not answer within ${Math.round(timeoutMs / 1000)} s while ${what}. ${URL_HINT}`,
    );
  }
  const cause = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  return new JupyterError('JupyterUnreachable', `Cannot reach the Jupyter server at ${url} (${cause}) while ${what}. ${URL_HINT}`, undefined, cause);
}

/** Only the start of an error body is read: the reason is near the top. */
const MAX_ERROR_BODY = 64 * 1024;
/** The most of a REST answer read (kernel models, kernel specs, a file's metadata): they are a few kilobytes. */
const MAX_JSON_BODY = 4 * 1024 * 1024;
/** Room for a file model's metadata around its base64 content. */
const MODEL_OVERHEAD = 64 * 1024;

async function errorDetail(res: Response): Promise<string> {
  try {
    const text = new TextDecoder().decode(await readBodyPrefix(res.body, MAX_ERROR_BODY));
    if (isHtml(text, res.headers.get('content-type'))) return htmlToText(text, 300);
    try {
      const body = JSON.parse(text) as { message?: string; reason?: string; traceback?: string };
      const tail = typeof body.traceback === 'string' ? body.traceback.trim().split('\n').pop() : undefined;
      return [body.message, body.reason, tail].filter((s) => typeof s === 'string' && s && s !== 'Unhandled error').join(': ');
    } catch {
      return text.replace(/\s+/g, ' ').trim().slice(0, 300);
    }
  } catch {
    return '';
  }
}

/**
 * `@jupyterlab/services` logs with console.debug/log/warn from inside KernelConnection (socket
 * start, status changes, reconnects). In Node those go to stdout, where the CLI prints its JSON
 * lines, so route them to `log` for the duration of the library's synchronous calls. Only the named
 * instance members are wrapped; if a future version renames them, nothing breaks, the lines just
 * come back.
 */
export function quietLibraryLogging(conn: object, log: (line: string) => void): void {
  const target = conn as Record<string, unknown>;
  for (const name of ['_createSocket', '_updateStatus', '_reconnect', '_updateConnectionStatus']) {
    const original = target[name];
    if (typeof original !== 'function') continue;
    target[name] = (...args: unknown[]) => withQuietConsole(log, () => (original as (...a: unknown[]) => unknown).apply(conn, args));
  }
}

export function withQuietConsole<T>(log: (line: string) => void, fn: () => T): T {
  const saved = { debug: console.debug, log: console.log, warn: console.warn, info: console.info };
  const quiet = () => {
    console.debug = console.log = console.warn = console.info = sink;
  };
  const sink = (...args: unknown[]) => {
    // The caller's log function may itself use the console: give it the real one meanwhile.
    Object.assign(console, saved);
    try {
      log(args.map((a) => (typeof a === 'string' ? a : String(a))).join(' '));
    } catch {
      // Logging must never break the connection.
    } finally {
      quiet();
    }
  };
  quiet();
  try {
    return fn();
  } finally {
    Object.assign(console, saved);
  }
}
