/**
 * Connections to MCP servers (stdio or streamable HTTP). An {@link McpClientPool} holds one client
 * connection per server, opened lazily on the first call and shared by every declaration that names the
 * same server. Stdio servers run in the workspace folder with a minimal environment plus the variables
 * the declaration lists, in their own process group; `dispose()` closes every connection and kills the
 * stdio servers' whole process trees.
 */
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationAnswer, ElicitationPrompt } from '../../../../common/elicitation';
import { raceAbort } from '../../../util/abort';
import { abortable, describeFetchError, isTransportFailure, stderrPart } from './failures';
import { RunClock, waitAtMost, withTimeout } from '../../../util/timeout';
import { answerElicitation, type ElicitingCall } from './elicitation';
import { CODEACT_VERSION } from '../../../util/version';
import { spawnFailure } from '../processes';
import { McpOAuthProvider, McpSignInProblem, McpSignInRequired, type McpAuthHost } from './auth';
import { ScopeStepUps } from './scopeStepUp';
import { boundedSchemaValidator, cappedFetch, listAllTools, listTimeout, MCP_LIST_LIMITS, McpListLimitError, type McpListLimits } from './list';
import type { McpCallResult } from './result';
import { StdioServerTransport, type McpFloodLimits } from './stdioTransport';
import { isHttpServer, isStdioServer, mcpServerLabel, missingToolMessage, serverKey, type McpHttpServerSpec, type McpServerSpec } from './serverSpec';
export { mcpServerLabel, missingToolMessage, serverKey, type McpServerSpec } from './serverSpec';

const MCP_DEFAULTS = { connectTimeoutMs: 30_000, callTimeoutMs: 60_000, closeGraceMs: 1_000 };

interface McpPoolOptions {
  /** Spawn + `initialize` handshake; default 30 s. */
  connectTimeoutMs?: number;
  /** One `tools/call`; default 60 s. */
  callTimeoutMs?: number;
  /** How long a stdio server gets to exit after its stdin closes, before it is killed; default 1 s. */
  closeGraceMs?: number;
  /** Bounds of `tools/list`: pages, tools and one deadline; defaults in {@link MCP_LIST_LIMITS}. */
  listLimits?: Partial<McpListLimits>;
  /** What a stdio server may send unasked, and backpressure on its output; defaults in {@link MCP_FLOOD_LIMITS}. */
  floodLimits?: Partial<McpFloodLimits>;
  /** OAuth sign-in to HTTP servers that ask for it (./auth). Without it, such a server's 401 is an error. */
  auth?: McpAuthHost;
  log?: (line: string) => void;
}

interface McpCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * The user asked for this (a tool call): a server that needs sign-in gets it (the host asks, then
   * opens the browser). Otherwise (a background listing) the host only offers it. Default: true for
   * `callTool`, false for `listTools`.
   */
  interactive?: boolean;
  /** Pauses the run's clock while the person fills in a form the server asked for, or signs in (the call's own timeout pauses too). */
  pause?: () => () => void;
  /** Asks the person for what the server elicits during this call; without it, an elicitation is declined. */
  elicit?: (prompt: ElicitationPrompt, attributed: boolean) => Promise<ElicitationAnswer>;
}

/** The SDK's own request timeout is left out of it (its expiry would cancel `initialize`); the longest timer Node has. */
const NO_SDK_TIMEOUT = 2_147_483_647;

interface Connection {
  key: string;
  spec: McpServerSpec;
  label: string;
  client: Client;
  stdio?: StdioServerTransport;
  http?: StreamableHTTPClientTransport;
  auth?: McpOAuthProvider;
  /** An HTTP body past its cap (see cappedFetch): it closes the connection, so no request waits on a stream that was cut. */
  tooLarge?: Error;
  tools?: Promise<Tool[]>;
  closed: boolean;
  /** Its `tools/call` requests in flight, oldest first (what an elicitation is asked on). */
  calls: Set<ElicitingCall>;
}

interface Entry {
  promise: Promise<Connection>;
  spec: McpServerSpec;
  interactive: boolean;
  conn?: Connection;
}

const CLIENT_INFO = { name: 'codeact', version: CODEACT_VERSION };

/**
 * MCP client connections, one per server, opened on first use. Shared by every tool that names the
 * same server (same argv, working directory and environment, or same URL). A connection that drops
 * (the server exits, the HTTP endpoint fails) is reopened on the next call. `dispose()` closes them
 * all and kills the stdio servers' process trees; the pool stays usable and reconnects on demand.
 * As a last net, stdio servers still running when the Node process exits are killed then.
 */
export class McpClientPool {
  private readonly entries = new Map<string, Entry>();
  private readonly processes = new Set<StdioServerTransport>();
  private lifetime = new AbortController();
  private readonly onProcessExit = () => {
    for (const p of this.processes) p.killNow();
  };
  private exitHookInstalled = false;
  readonly connectTimeoutMs: number;
  readonly callTimeoutMs: number;
  private readonly closeGraceMs: number;
  private readonly listLimits: McpListLimits;

  constructor(private readonly options: McpPoolOptions = {}) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? MCP_DEFAULTS.connectTimeoutMs;
    this.callTimeoutMs = options.callTimeoutMs ?? MCP_DEFAULTS.callTimeoutMs;
    this.closeGraceMs = options.closeGraceMs ?? MCP_DEFAULTS.closeGraceMs;
    this.listLimits = { ...MCP_LIST_LIMITS, ...options.listLimits };
  }

  private signIns = 0;
  private readonly scopes = new ScopeStepUps();

  /** Changes with every sign-in and sign-out: a host that caches tool listings lists again when it changed. */
  get authGeneration(): number {
    return this.signIns;
  }

  /** Sets (or removes) OAuth sign-in for connections opened from now on. */
  setAuth(auth: McpAuthHost | undefined): void {
    this.options.auth = auth;
  }

  /** Servers with an open (or opening) connection. */
  get size(): number {
    return this.entries.size;
  }

  /** The server's tools (`tools/list`, every page, within the list limits), cached per connection until the server says they changed. */
  async listTools(spec: McpServerSpec, options: McpCallOptions = {}): Promise<Tool[]> {
    const conn = await this.connection(spec, options.signal, options.interactive ?? false);
    return this.toolsOf(conn, options);
  }

  /**
   * Signs in to an HTTP server that asks for OAuth (the host asks the user, then opens the browser), by
   * connecting to it as a request of the user's. Resolves when connected; a server that needs no
   * sign-in just connects.
   */
  async signIn(spec: McpServerSpec, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.connection(spec, options.signal, true);
  }

  /** Closes the connections to the HTTP server at `url` (after a sign-out: the next use signs in again). */
  async closeServer(url: string): Promise<void> {
    this.signIns++;
    const entries = [...this.entries.entries()].filter(([, e]) => isHttpServer(e.spec) && e.spec.url === url);
    for (const [key] of entries) this.entries.delete(key);
    await Promise.allSettled(entries.map(async ([, e]) => this.closeConnection(await e.promise)));
  }

  /**
   * Calls `tool` with `args` and returns the raw result. Checks first that the server has the tool
   * (listing its tools when it does not). Errors are sentences that start lower-case after the
   * tool's name: "timed out after 60 s ...", "was stopped.", "could not start the MCP server ...".
   */
  async callTool(spec: McpServerSpec, tool: string, args: Record<string, unknown>, options: McpCallOptions = {}): Promise<McpCallResult> {
    const signal = options.signal;
    const timeoutMs = options.timeoutMs ?? this.callTimeoutMs;
    const interactive = options.interactive ?? true;
    const conn = await this.connection(spec, signal, interactive);
    const tools = await this.toolsOf(conn, options);
    if (!tools.some((t) => t.name === tool)) throw new Error(`failed: ${missingToolMessage(spec, tool, tools)}`);
    // Each request has its own signal: stopping this call cancels this request only, and once it is answered
    // nothing cancels it (the SDK never removes its abort listener from the signal it is given). The timeout
    // is a RunClock, paused while the person fills in a form the server asked for.
    const own = new AbortController();
    const clock = new RunClock();
    const onStop = () => own.abort(signal?.reason);
    if (signal?.aborted) onStop();
    else signal?.addEventListener('abort', onStop, { once: true });
    clock.start(timeoutMs, () => own.abort(new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: timeoutMs })));
    const call: ElicitingCall = {
      signal: own.signal,
      elicit: options.elicit,
      pause: () => {
        const resumeClock = clock.pause();
        const resumeRun = options.pause?.();
        return () => {
          resumeClock();
          resumeRun?.();
        };
      },
    };
    conn.calls.add(call);
    try {
      // A sign-in in the middle (the grant ran out, more scopes) does not count against the call's timeout.
      return await this.withSignIn(
        conn,
        interactive,
        signal,
        async () => (await conn.client.callTool({ name: tool, arguments: args }, undefined, { signal: own.signal, timeout: NO_SDK_TIMEOUT })) as McpCallResult,
        call.pause,
      );
    } catch (e) {
      throw this.callError(conn, tool, e, signal, timeoutMs);
    } finally {
      clock.stop();
      signal?.removeEventListener('abort', onStop);
      conn.calls.delete(call);
    }
  }

  /** Closes every connection and kills every stdio server with its process tree. */
  async dispose(): Promise<void> {
    this.lifetime.abort(new Error('the MCP connections were closed'));
    this.lifetime = new AbortController();
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(
      entries.map(async (e) => {
        const conn = await e.promise;
        await this.closeConnection(conn);
      }),
    );
    await Promise.allSettled([...this.processes].map((p) => p.close()));
    this.processes.clear();
    this.updateExitHook();
  }

  // -- internals ------------------------------------------------------------------------------

  private connection(spec: McpServerSpec, signal?: AbortSignal, interactive = false): Promise<Connection> {
    const key = serverKey(spec);
    let entry = this.entries.get(key);
    if (!entry || entry.conn?.closed) {
      const e: Entry = { promise: undefined as unknown as Promise<Connection>, spec, interactive };
      e.promise = this.open(spec, key, e, interactive);
      e.promise.catch(() => {
        if (this.entries.get(key) === e) this.entries.delete(key);
      });
      this.entries.set(key, e);
      entry = e;
    }
    const joined = entry;
    return abortable(entry.promise, signal).catch((e) => {
      if (signal?.aborted) throw new Error(`was stopped while the ${mcpServerLabel(spec)} started.`);
      // A background listing found that sign-in is needed while this request of the user's waited for it.
      if (e instanceof McpSignInRequired && interactive && !joined.interactive) return this.connection(spec, signal, true);
      throw e;
    });
  }

  private async open(spec: McpServerSpec, key: string, entry: Entry, interactive: boolean, attempt = 0): Promise<Connection> {
    const label = mcpServerLabel(spec);
    const lifetime = this.lifetime.signal;
    // Form elicitation only: URL mode (a link to open, then a completion notification) is not supported.
    const client = new Client(CLIENT_INFO, { capabilities: { elicitation: { form: {} } }, jsonSchemaValidator: boundedSchemaValidator });
    const conn: Connection = { key, spec, label, client, closed: false, calls: new Set() };
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      answerElicitation(request.params, { server: label, calls: [...conn.calls], signal: extra.signal, log: this.options.log }),
    );
    let transport: Transport;
    if (isStdioServer(spec)) {
      conn.stdio = new StdioServerTransport(spec, this.closeGraceMs, this.options.floodLimits);
      transport = conn.stdio;
      this.processes.add(conn.stdio);
      this.updateExitHook();
    } else {
      const capped = cappedFetch({ label, url: spec.url }, (e) => void ((conn.tooLarge ??= e), client.close()));
      const fetch = this.scopes.fetch(key, capped, () => conn.auth);
      if (this.options.auth) (conn.auth = await McpOAuthProvider.open(this.options.auth, spec, label)).wantScope = () => this.scopes.scope(key);
      // An expired access token is refreshed before it is sent (a server's 401 would also do it).
      if (conn.auth?.expired)
        await auth(conn.auth, { serverUrl: spec.url, fetchFn: fetch }).catch((e) =>
          this.options.log?.(`${label}: refreshing the sign-in failed: ${(e as Error).message}`),
        );
      conn.http = new StreamableHTTPClientTransport(new URL(spec.url), { fetch, authProvider: conn.auth });
      transport = conn.http;
    }
    client.onerror = (e) => this.options.log?.(`${label}: ${e.message}`);
    client.onclose = () => {
      conn.closed = true;
      if (this.entries.get(key) === entry) this.entries.delete(key);
      if (conn.stdio) {
        // The server went away on its own: take whatever it left behind with it.
        void conn.stdio.close().finally(() => {
          this.processes.delete(conn.stdio!);
          this.updateExitHook();
        });
      }
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      conn.tools = undefined;
    });
    this.options.log?.(`starting ${label}`);
    try {
      // `initialize` is never cancelled (MCP forbids it): neither the deadline nor closing the pool sends
      // notifications/cancelled for it; they close the connection instead (closeConnection below).
      const handshake = client.connect(transport, { timeout: NO_SDK_TIMEOUT });
      await withTimeout(
        raceAbort(handshake, lifetime, () => new Error('the MCP connections were closed')),
        this.connectTimeoutMs,
        () => new McpError(ErrorCode.RequestTimeout, 'the handshake timed out'),
      );
    } catch (e) {
      if (e instanceof UnauthorizedError && conn.auth?.needsSignIn && !lifetime.aborted && (attempt === 0 || (attempt === 1 && this.scopes.pending(key)))) {
        // The server wants OAuth: the SDK found its authorization server and made the authorization URL.
        try {
          await this.completeSignIn(conn, interactive, lifetime);
        } finally {
          await this.closeConnection(conn);
        }
        return this.open(spec, key, entry, interactive, 1);
      }
      const error = this.startError(conn, e, lifetime);
      await this.closeConnection(conn);
      throw error;
    }
    if (lifetime.aborted) {
      await this.closeConnection(conn);
      throw new Error(`could not use the ${label}: the MCP connections were closed while it started.`);
    }
    entry.conn = conn;
    this.options.log?.(`connected to ${label}`);
    return conn;
  }

  /** The user's part of a sign-in the SDK started on `conn` (or, for a background request, the host's offer of it). */
  private async completeSignIn(conn: Connection, interactive: boolean, signal: AbortSignal | undefined): Promise<void> {
    const host = this.options.auth!;
    const { label, spec } = conn;
    if (!interactive && host.offerSignIn) {
      host.offerSignIn({ label, serverUrl: (spec as McpHttpServerSpec).url, signIn: () => this.signIn(spec) });
      throw new McpSignInRequired(`could not use the ${label}: it needs you to sign in. Choose "Sign in" when CodeAct offers it, or call one of its tools.`);
    }
    try {
      const code = await conn.auth!.completeSignIn(signal);
      await conn.http!.finishAuth(code);
    } catch (e) {
      throw new McpSignInProblem(`could not sign in to the ${label}: ${(e as Error)?.message ?? String(e)}`);
    }
    this.signIns++;
    this.scopes.signedIn(conn.key);
    this.options.log?.(`signed in to ${label}`);
  }

  /** Runs `fn`; when the server asks for sign-in on the open connection (the grant ran out, more scopes), signs in once (see completeSignIn) and runs it again. */
  private async withSignIn<T>(
    conn: Connection,
    interactive: boolean,
    signal: AbortSignal | undefined,
    fn: () => Promise<T>,
    pause?: () => () => void,
  ): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof UnauthorizedError && conn.auth?.needsSignIn)) throw e;
    }
    const resume = interactive ? pause?.() : undefined;
    try {
      await this.completeSignIn(conn, interactive, signal);
    } finally {
      resume?.();
    }
    return fn();
  }

  private toolsOf(conn: Connection, options: McpCallOptions): Promise<Tool[]> {
    if (!conn.tools) {
      const interactive = options.interactive ?? false;
      const p = this.withSignIn(conn, interactive, options.signal, () => listAllTools(conn.client, conn.label, this.listLimits)).catch((e) => {
        if (e instanceof McpListLimitError) throw e;
        // The request of a page got the time left until the listing's deadline.
        if (e instanceof McpError && e.code === ErrorCode.RequestTimeout) throw listTimeout(conn.label, this.listLimits);
        throw e;
      });
      conn.tools = p;
      p.catch(() => {
        if (conn.tools === p) conn.tools = undefined;
      });
    }
    return abortable(conn.tools, options.signal).catch((e) => {
      if (e instanceof McpListLimitError && !options.signal?.aborted) throw new Error(`failed: ${e.message}`);
      throw this.callError(conn, 'tools/list', e, options.signal, this.listLimits.timeoutMs, true);
    });
  }

  private async closeConnection(conn: Connection): Promise<void> {
    conn.closed = true;
    if (conn.http) {
      await waitAtMost(
        conn.http.terminateSession().catch(() => {}),
        2000,
      );
    }
    await waitAtMost(
      conn.client.close().catch(() => {}),
      this.closeGraceMs + 2000,
    );
    if (conn.stdio) {
      await conn.stdio.close();
      this.processes.delete(conn.stdio);
      this.updateExitHook();
    }
  }

  private updateExitHook(): void {
    const want = this.processes.size > 0;
    if (want && !this.exitHookInstalled) process.on('exit', this.onProcessExit);
    if (!want && this.exitHookInstalled) process.off('exit', this.onProcessExit);
    this.exitHookInstalled = want;
  }

  private startError(conn: Connection, e: unknown, lifetime: AbortSignal): Error {
    const err = e as NodeJS.ErrnoException;
    const { label, spec } = conn;
    if (lifetime.aborted) return new Error(`could not use the ${label}: the MCP connections were closed while it started.`);
    if (conn.tooLarge) return new Error(`could not use the ${label}: ${conn.tooLarge.message}`);
    const scope = this.scopes.refusal(e, conn);
    if (scope) return new Error(`could not use the ${label}: ${scope}`);
    if (isStdioServer(spec) && (err?.syscall?.startsWith('spawn') || (typeof err?.code === 'string' && err.code.startsWith('ERR_INVALID_ARG')))) {
      return new Error(`could not start the ${label}: ${spawnFailure(spec.argv[0], spec.cwd, err, 'mcp.command')}.`);
    }
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout) {
      return new Error(
        `could not start the ${label}: it did not complete the MCP handshake within ${this.connectTimeoutMs / 1000} s. ` +
          (isStdioServer(spec)
            ? 'Check that the command starts an MCP server on stdio (not HTTP), and that it logs to stderr only.'
            : 'Check that the URL is a streamable HTTP MCP endpoint.') +
          stderrPart(conn.stdio),
      );
    }
    const exit = conn.stdio?.exit;
    if (exit) {
      const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
      return new Error(
        `could not start the ${label}: it exited during startup (${how}).` +
          (stderrPart(conn.stdio) || ' It wrote nothing to stderr. Check that the command starts an MCP server on stdio.'),
      );
    }
    if (isHttpServer(spec))
      return new Error(`could not reach the ${label}: ${describeFetchError(err)}. Check "mcp.url" in codeact.tools and that the server is running.`);
    return new Error(`could not start the ${label}: ${err?.message ?? String(e)}.${stderrPart(conn.stdio)}`);
  }

  private callError(conn: Connection, what: string, e: unknown, signal: AbortSignal | undefined, timeoutMs: number, isList = false): Error {
    const step = isList ? `listing the tools of the ${conn.label}` : `(MCP tool "${what}" on the ${conn.label})`;
    if (signal?.aborted) return new Error(isList ? `was stopped while ${step}.` : `was stopped ${step}.`);
    if (e instanceof McpSignInProblem) return e;
    if (conn.tooLarge) return new Error(`failed: ${conn.tooLarge.message}`);
    if (e instanceof UnauthorizedError || (e instanceof StreamableHTTPError && (e.code === 401 || e.code === 403))) {
      // Reconnecting signs in again.
      conn.closed = true;
      if (this.entries.get(conn.key)?.conn === conn) this.entries.delete(conn.key);
      void this.closeConnection(conn);
      const scoped = this.scopes.refusal(e, conn);
      return new Error(`failed: ${scoped ?? `the ${conn.label} refused the sign-in (${e.message}). Call the tool again to sign in again.`}`);
    }
    if (conn.stdio?.fatal) return new Error(`failed: the connection to the ${conn.label} was dropped: ${conn.stdio.fatal}.`);
    const exit = conn.stdio?.exit;
    if (exit || (e instanceof McpError && e.code === ErrorCode.ConnectionClosed)) {
      const how = exit ? (exit.signal ? ` (killed by ${exit.signal})` : ` (exit code ${exit.code})`) : '';
      return new Error(
        `failed: the ${conn.label} closed the connection${how} while ${isList ? 'listing its tools' : `running "${what}"`}.${stderrPart(conn.stdio)}`,
      );
    }
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout) {
      return new Error(`timed out after ${timeoutMs / 1000} s ${isList ? `while ${step}` : step}.`);
    }
    if (!(e instanceof McpError) && !isTransportFailure(e)) {
      // For example a result that does not parse as a tools/call result.
      return new Error(`failed: the ${conn.label} sent an invalid answer to ${isList ? 'tools/list' : `"${what}"`}: ${(e as Error)?.message ?? String(e)}`);
    }
    if (!(e instanceof McpError)) {
      // A transport failure: drop the connection so the next call reconnects.
      conn.closed = true;
      if (this.entries.get(conn.key)?.conn === conn) this.entries.delete(conn.key);
      void this.closeConnection(conn);
      const msg = isHttpServer(conn.spec) ? describeFetchError(e as Error) : ((e as Error)?.message ?? String(e));
      return new Error(`failed: ${isList ? `could not list the tools of the ${conn.label}` : `could not reach the ${conn.label}`}: ${msg}.`);
    }
    return new Error(`failed: the ${conn.label} answered ${isList ? 'tools/list' : `"${what}"`} with an error: ${e.message.replace(/^MCP error -?\d+: /, '')}`);
  }
}

let defaultPool: McpClientPool | undefined;

/** The pool `loadTools` uses when its context names none: one per process (the CLI, the extension host). */
export function defaultMcpPool(): McpClientPool {
  return (defaultPool ??= new McpClientPool());
}

/** Gives the default pool the host's MCP sign-in (the extension and the CLI call it at startup). */
export function configureDefaultMcpAuth(auth: McpAuthHost | undefined): void {
  defaultMcpPool().setAuth(auth);
}

/** Closes the default pool's connections and kills its stdio servers. Call it when the process is done with tools. */
export async function disposeDefaultMcpPool(): Promise<void> {
  await defaultPool?.dispose();
}
