/**
 * `mcp` tools: one tool of an MCP server (stdio or streamable HTTP) exposed as a managed tool.
 *
 * An {@link McpClientPool} holds one client connection per server, opened lazily on the first call
 * and shared by every declaration that names the same server. Stdio servers run in the workspace
 * folder with a minimal environment plus the variables the declaration lists, in their own process
 * group; `dispose()` closes every connection and kills the stdio servers' whole process trees.
 *
 * `loadTools` (declarations.ts) builds the tools synchronously, without contacting any server. A
 * declaration that leaves out `description`, `inputSchema` or `outputSchema` gets them from the
 * server's `tools/list` through {@link resolveMcpTools} (or `loadToolsAsync`), which also reports
 * servers that do not start and tools the server does not have.
 */
import { CODEACT_VERSION } from '../util/version';
import { raceAbort } from '../util/abort';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type JSONRPCMessage, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchema, McpSource, ToolDeclaration } from '../../common/tools';
import type { ManagedTool } from '../gateway/gateway';
import { compileSchema } from '../gateway/schema';
import { descendantsOf, killMarked, killMarkedNow, killTree, waitGone } from '../util/processTree';
import { commandEnv } from './command';
import type { DeclarationError, ToolSet } from './declarations';
import { boundedSchemaValidator, cappedFetch, LineBuffer, listAllTools, listTimeout, MCP_LIST_LIMITS, MCP_MAX_MESSAGE_BYTES, McpListLimitError, type McpListLimits } from './mcpList';
import { randomToken } from '../util/ids';

/** The environment variable that marks a stdio server and everything it starts (value: one per server process). */
export const MCP_SERVER_MARKER = 'CODEACT_MCP_SERVER';

export const MCP_DEFAULTS = { connectTimeoutMs: 30_000, callTimeoutMs: 60_000, closeGraceMs: 1_000 };

/** Input schema of an `mcp` tool whose declaration has none, until {@link resolveMcpTools} fills in the server's: the server validates. */
export const MCP_PERMISSIVE_INPUT_SCHEMA = { type: 'object' } as const;

export type McpServerSpec =
  | { kind: 'stdio'; argv: string[]; cwd: string; env: Record<string, string> }
  | { kind: 'http'; url: string };

export interface McpPoolOptions {
  /** Spawn + `initialize` handshake; default 30 s. */
  connectTimeoutMs?: number;
  /** One `tools/call`; default 60 s. */
  callTimeoutMs?: number;
  /** How long a stdio server gets to exit after its stdin closes, before it is killed; default 1 s. */
  closeGraceMs?: number;
  /** Bounds of `tools/list`: pages, tools and one deadline; defaults in {@link MCP_LIST_LIMITS}. */
  listLimits?: Partial<McpListLimits>;
  log?: (line: string) => void;
}

export interface McpCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** What a `tools/call` result becomes for the guest. See {@link mcpResultValue}. */
export interface McpCallResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Declarations

/** Checks a declaration's `mcp` object. Returns the problem, or undefined when it is fine. */
export function validateMcpSource(raw: unknown): string | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    return '"mcp" must be an object: {"command": [...], "tool": "..."} for a stdio server or {"url": "...", "tool": "..."} for streamable HTTP';
  }
  const m = raw as McpSource;
  const problems: string[] = [];
  if (typeof m.tool !== 'string' || !m.tool) problems.push('"mcp.tool" is required: the name of the tool on the MCP server');
  if (m.command !== undefined && m.url !== undefined) problems.push('"mcp" takes either "command" (a stdio server) or "url" (streamable HTTP), not both');
  else if (m.command === undefined && m.url === undefined) {
    problems.push('"mcp" needs "command" (argv of a stdio server, for example ["npx", "-y", "some-mcp-server"]) or "url" (a streamable HTTP endpoint)');
  } else if (m.command !== undefined) {
    if (!Array.isArray(m.command) || m.command.length === 0 || !m.command.every((a) => typeof a === 'string' && a.length > 0)) {
      problems.push('"mcp.command" must be a non-empty argv array of strings, for example ["node", "tools/mcp-server.js"]');
    }
  } else if (typeof m.url !== 'string' || !isHttpUrl(m.url)) {
    problems.push('"mcp.url" must be an http(s) URL of a streamable HTTP MCP endpoint, for example "http://127.0.0.1:3000/mcp"');
  }
  if (m.env !== undefined) {
    if (!Array.isArray(m.env) || !m.env.every((e) => typeof e === 'string')) problems.push('"mcp.env" must list environment variable names');
    else if (m.url !== undefined && m.command === undefined) problems.push('"mcp.env" applies only to stdio servers ("command"); an HTTP server has its own environment');
  }
  return problems.length ? problems.join('; ') : undefined;
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** The server a (valid) source names. Stdio servers run in the workspace with a minimal environment plus `env`. */
export function mcpServerSpec(source: McpSource, ctx: { workspace: string; hostEnv?: NodeJS.ProcessEnv }): McpServerSpec {
  if (source.command) return { kind: 'stdio', argv: [...source.command], cwd: ctx.workspace, env: commandEnv(source.env, ctx.hostEnv ?? process.env) };
  return { kind: 'http', url: source.url! };
}

/** A short human name of the server, safe to show (no environment, no URL query). */
export function mcpServerLabel(spec: McpServerSpec): string {
  if (spec.kind === 'http') {
    try {
      const u = new URL(spec.url);
      return `MCP server at ${u.origin}${u.pathname}`;
    } catch {
      return 'MCP server at an invalid URL';
    }
  }
  const cmd = spec.argv.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
  return `MCP server "${cmd.length > 120 ? cmd.slice(0, 119) + '…' : cmd}"`;
}

function serverKey(spec: McpServerSpec): string {
  return spec.kind === 'http'
    ? JSON.stringify(['http', spec.url])
    : JSON.stringify(['stdio', spec.argv, spec.cwd, Object.entries(spec.env).sort(([a], [b]) => (a < b ? -1 : 1))]);
}

interface McpBinding {
  index: number;
  spec: McpServerSpec;
  tool: string;
  pool: McpClientPool;
  declared: { description: boolean; inputSchema: boolean; outputSchema: boolean };
}

const bindings = new WeakMap<ManagedTool, McpBinding>();

/** The label of the MCP server an `mcp` tool comes from (to group tool listings), or undefined. */
export function mcpToolServer(tool: ManagedTool): string | undefined {
  const b = bindings.get(tool);
  return b ? mcpServerLabel(b.spec) : undefined;
}

export interface McpToolContext {
  pool: McpClientPool;
  workspace: string;
  hostEnv?: NodeJS.ProcessEnv;
  defaultApproval?: 'auto' | 'ask' | 'deny';
  /** Index of the declaration in codeact.tools, for error reports. */
  index?: number;
}

/** Builds the managed tool of a valid `mcp` declaration (see {@link validateMcpSource}). Contacts no server. */
export function createMcpTool(decl: ToolDeclaration, ctx: McpToolContext): ManagedTool {
  const source = decl.mcp!;
  const spec = mcpServerSpec(source, ctx);
  const { pool } = ctx;
  const tool: ManagedTool = {
    name: decl.name,
    description: decl.description ?? '',
    inputSchema: decl.inputSchema ?? MCP_PERMISSIVE_INPUT_SCHEMA,
    outputSchema: decl.outputSchema,
    approval: decl.approval ?? ctx.defaultApproval ?? 'auto',
    expose: decl.expose ?? 'code',
    source: 'mcp',
    invoke: async (args, c) => {
      try {
        return mcpResultValue(await pool.callTool(spec, source.tool, args, { signal: c.signal }));
      } catch (e) {
        throw new Error(`Tool "${decl.name}" ${(e as Error).message}`);
      }
    },
  };
  bindings.set(tool, {
    index: ctx.index ?? -1,
    spec,
    tool: source.tool,
    pool,
    declared: { description: decl.description !== undefined, inputSchema: decl.inputSchema !== undefined, outputSchema: decl.outputSchema !== undefined },
  });
  return tool;
}

/**
 * Fills in what `mcp` declarations leave out (`description`, `inputSchema`, `outputSchema`) from
 * their servers' `tools/list`, connecting only to the servers that are needed, in parallel. A tool
 * whose server does not start, or that the server does not have, moves from `tools` to `errors`
 * (the message lists the server's tools). Other tools pass through unchanged. Never rejects.
 */
export async function resolveMcpTools(toolSet: ToolSet, options: { signal?: AbortSignal } = {}): Promise<ToolSet> {
  const pending = toolSet.tools.map((t) => ({ tool: t, binding: bindings.get(t) }));
  const lists = new Map<string, Promise<Tool[]>>();
  for (const { binding: b } of pending) {
    if (!b || (b.declared.description && b.declared.inputSchema && b.declared.outputSchema)) continue;
    const key = serverKey(b.spec);
    if (!lists.has(key)) {
      const p = b.pool.listTools(b.spec, { signal: options.signal });
      p.catch(() => {});
      lists.set(key, p);
    }
  }
  const tools: ManagedTool[] = [];
  const errors: DeclarationError[] = [...toolSet.errors];
  for (const { tool, binding: b } of pending) {
    const list = b && lists.get(serverKey(b.spec));
    if (!b || !list) {
      tools.push(tool);
      continue;
    }
    const fail = (message: string) => errors.push({ index: b.index, name: tool.name, message });
    let serverTools: Tool[];
    try {
      serverTools = await list;
    } catch (e) {
      fail((e as Error).message);
      continue;
    }
    const found = serverTools.find((t) => t.name === b.tool);
    if (!found) {
      fail(missingToolMessage(b.spec, b.tool, serverTools));
      continue;
    }
    const filled: ManagedTool = { ...tool };
    const problems: string[] = [];
    if (!b.declared.description) filled.description = found.description ?? found.title ?? '';
    const take = (key: 'inputSchema' | 'outputSchema', schema: unknown) => {
      if (schema === undefined) return;
      try {
        compileSchema(schema as JsonSchema);
        filled[key] = schema as JsonSchema;
      } catch (e) {
        problems.push(`the server's ${key} of "${b.tool}" cannot be used (${(e as Error).message}); declare "${key}" yourself`);
      }
    };
    if (!b.declared.inputSchema) take('inputSchema', found.inputSchema);
    if (!b.declared.outputSchema) take('outputSchema', found.outputSchema);
    if (problems.length) {
      fail(problems.join('; '));
      continue;
    }
    bindings.set(filled, b);
    tools.push(filled);
  }
  errors.sort((a, b) => a.index - b.index);
  return { tools, errors };
}

function missingToolMessage(spec: McpServerSpec, tool: string, tools: Tool[]): string {
  const names = tools.map((t) => t.name).sort();
  return (
    `the ${mcpServerLabel(spec)} has no tool "${tool}". ` +
    (names.length ? `Its tools: ${names.join(', ')}.` : 'It lists no tools.') +
    ' Fix "mcp.tool" in codeact.tools.'
  );
}

// ---------------------------------------------------------------------------------------------
// Results

/**
 * What the guest receives for a `tools/call` result: `structuredContent` when the server sent it;
 * otherwise the content, one block as a value and several as an array, where a text block is its
 * parsed JSON when the text is JSON and the text otherwise, an image is `{type:"image", mimeType, data}`
 * (base64), audio likewise, an embedded resource `{type:"resource", uri, mimeType, text|blob}` and a
 * resource link `{type:"resource_link", uri, name, ...}`. No content gives null. `isError` throws
 * an Error with the text.
 */
export function mcpResultValue(result: McpCallResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError) {
    const text = content
      .filter((c) => c.type === 'text' && typeof c.text === 'string')
      .map((c) => c.text as string)
      .join('\n')
      .trim();
    throw new Error(`failed: ${text || 'the MCP server reported an error without a message'}`);
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  const values = content.map(contentValue);
  if (values.length === 0) return null;
  return values.length === 1 ? values[0] : values;
}

function contentValue(c: Record<string, unknown>): unknown {
  switch (c.type) {
    case 'text':
      return textValue(String(c.text ?? ''));
    case 'image':
    case 'audio':
      return { type: c.type, mimeType: c.mimeType, data: c.data };
    case 'resource': {
      const r = (c.resource ?? {}) as Record<string, unknown>;
      return { type: 'resource', uri: r.uri, ...(r.mimeType ? { mimeType: r.mimeType } : {}), ...('text' in r ? { text: r.text } : { blob: r.blob }) };
    }
    default: {
      const rest: Record<string, unknown> = { ...c };
      delete rest._meta;
      delete rest.annotations;
      return rest;
    }
  }
}

function textValue(text: string): unknown {
  const t = text.trim();
  if (!t) return text;
  const c = t[0];
  if (c === '{' || c === '[' || c === '"' || c === '-' || (c >= '0' && c <= '9') || t === 'true' || t === 'false' || t === 'null') {
    try {
      return JSON.parse(t);
    } catch {}
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Stdio transport

const STDERR_KEEP = 64 * 1024;

function tail(text: string, lines = 20, chars = 2000): string {
  const t = text.trim().split('\n').slice(-lines).join('\n');
  return t.length > chars ? '…' + t.slice(-chars) : t;
}

/**
 * The SDK's stdio client transport, reworked for a host that must not leak processes: the server
 * gets exactly the environment it is given (the SDK's adds more), runs in its own process group,
 * its stderr is kept (the tail goes into errors), and `close()` ends stdin, waits a grace period,
 * then kills the whole tree.
 */
class StdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcessWithoutNullStreams;
  private readonly lines = new LineBuffer(MCP_MAX_MESSAGE_BYTES);
  /** In the server's environment, so its daemons (setsid, double fork) can be found and killed. */
  private readonly marker = randomToken(9);
  private stderrText = '';
  private closing?: Promise<void>;
  private notified = false;
  /** Ids of requests awaiting an answer: only while there are some does the server keep Node's event loop alive. */
  private readonly pending = new Set<string | number>();
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** Why the client dropped the connection itself, if it did. */
  fatal?: string;

  constructor(
    private readonly spec: Extract<McpServerSpec, { kind: 'stdio' }>,
    private readonly graceMs: number,
  ) {}

  get stderr(): string {
    return this.stderrText;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const [program, ...args] = this.spec.argv;
      let spawned = false;
      const child = spawn(program, args, {
        cwd: this.spec.cwd,
        env: { ...this.spec.env, [MCP_SERVER_MARKER]: this.marker },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
      this.child = child;
      child.once('spawn', () => {
        spawned = true;
        this.updateRef();
        resolve();
      });
      child.on('error', (e) => {
        if (!spawned) reject(e);
        else this.onerror?.(e);
      });
      child.stdout.on('data', (chunk: Buffer) => {
        let lines: string[];
        try {
          lines = this.lines.push(chunk);
        } catch (e) {
          // A message too large to buffer: the stream cannot be resynchronised, so drop the connection.
          this.fatal = `it sent a message over CodeAct's limits: ${(e as Error).message}`;
          this.onerror?.(e as Error);
          void this.close();
          return;
        }
        for (const line of lines) {
          let message: JSONRPCMessage;
          try {
            message = deserializeMessage(line);
          } catch (e) {
            this.onerror?.(new Error(`the server wrote a line on stdout that is not an MCP message (${(e as Error).message.split('\n')[0]}); servers must log to stderr`));
            continue;
          }
          if ('id' in message && ('result' in message || 'error' in message) && this.pending.delete(message.id as string | number)) this.updateRef();
          this.onmessage?.(message);
        }
      });
      child.stderr.on('data', (b: Buffer) => {
        this.stderrText += b.toString('utf8');
        if (this.stderrText.length > STDERR_KEEP) this.stderrText = this.stderrText.slice(-STDERR_KEEP);
      });
      for (const s of [child.stdin, child.stdout, child.stderr]) s.on('error', () => {});
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        // Let the pipes drain (for the stderr tail), but never wait on a grandchild that holds them.
        let open = (child.stdout.readableEnded ? 0 : 1) + (child.stderr.readableEnded ? 0 : 1);
        if (open === 0) return this.notifyClosed();
        const t = setTimeout(() => this.notifyClosed(), 200);
        const ended = () => {
          if (--open === 0) {
            clearTimeout(t);
            this.notifyClosed();
          }
        };
        child.stdout.once('end', ended);
        child.stderr.once('end', ended);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.exit || this.closing || !stdin.writable) return reject(new Error('the server is not running'));
      if ('method' in message) {
        if ('id' in message) this.pending.add(message.id);
        else if (message.method === 'notifications/cancelled') this.pending.delete((message.params as { requestId: string | number }).requestId);
        this.updateRef();
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends stdin, gives the server `graceMs` to exit, then kills its process group and every descendant. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const child = this.child;
      if (child?.pid) {
        const pid = child.pid;
        const tree = descendantsOf(pid);
        if (!this.exit) {
          // Keep Node alive for the grace period: a caller awaiting dispose() at the end of main() must see it through.
          child.ref();
          let timer: NodeJS.Timeout | undefined;
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          try {
            child.stdin.end();
          } catch {}
          await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, this.graceMs)))]);
          clearTimeout(timer);
        }
        const doomed = [...new Set([...(this.exit ? [] : [pid]), ...tree, ...descendantsOf(pid)])];
        killTree(pid, !this.exit);
        for (const p of tree) {
          try {
            process.kill(p, 'SIGKILL');
          } catch {}
        }
        // Daemons that left the tree (setsid, double fork) still carry the marker.
        doomed.push(...(await killMarked(MCP_SERVER_MARKER, this.marker)));
        // SIGKILL is asynchronous: resolve once they are really gone, so "after dispose() nothing runs" holds.
        await waitGone(doomed, 2000);
      }
      this.notifyClosed();
    })();
    return this.closing;
  }

  /** Synchronous teardown, for `process.on('exit')`. */
  killNow(): void {
    if (this.child?.pid && !this.exit) killTree(this.child.pid);
    if (this.child) killMarkedNow(MCP_SERVER_MARKER, this.marker);
  }

  /** An idle server must not keep a finished CLI alive; a pending request must keep it waiting. */
  private updateRef(): void {
    const child = this.child;
    if (!child) return;
    const op = this.pending.size > 0 ? 'ref' : 'unref';
    child[op]();
    for (const s of [child.stdin, child.stdout, child.stderr] as unknown as Array<{ ref?: () => void; unref?: () => void }>) s[op]?.();
  }

  private notifyClosed(): void {
    if (this.notified) return;
    this.notified = true;
    this.onclose?.();
  }
}

// ---------------------------------------------------------------------------------------------
// The pool

interface Connection {
  key: string;
  spec: McpServerSpec;
  label: string;
  client: Client;
  stdio?: StdioServerTransport;
  http?: StreamableHTTPClientTransport;
  tools?: Promise<Tool[]>;
  closed: boolean;
}

interface Entry {
  promise: Promise<Connection>;
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

  /** Servers with an open (or opening) connection. */
  get size(): number {
    return this.entries.size;
  }

  /** The server's tools (`tools/list`, every page, within the list limits), cached per connection until the server says they changed. */
  async listTools(spec: McpServerSpec, options: McpCallOptions = {}): Promise<Tool[]> {
    const conn = await this.connection(spec, options.signal);
    return this.toolsOf(conn, options);
  }

  /**
   * Calls `tool` with `args` and returns the raw result. Checks first that the server has the tool
   * (listing its tools when it does not). Errors are sentences that start lower-case after the
   * tool's name: "timed out after 60 s ...", "was stopped.", "could not start the MCP server ...".
   */
  async callTool(spec: McpServerSpec, tool: string, args: Record<string, unknown>, options: McpCallOptions = {}): Promise<McpCallResult> {
    const signal = options.signal;
    const timeoutMs = options.timeoutMs ?? this.callTimeoutMs;
    const conn = await this.connection(spec, signal);
    const tools = await this.toolsOf(conn, options);
    if (!tools.some((t) => t.name === tool)) throw new Error(`failed: ${missingToolMessage(spec, tool, tools)}`);
    try {
      return (await conn.client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: timeoutMs })) as McpCallResult;
    } catch (e) {
      throw this.callError(conn, tool, e, signal, timeoutMs);
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

  private connection(spec: McpServerSpec, signal?: AbortSignal): Promise<Connection> {
    const key = serverKey(spec);
    let entry = this.entries.get(key);
    if (!entry || entry.conn?.closed) {
      const e: Entry = { promise: undefined as unknown as Promise<Connection> };
      e.promise = this.open(spec, key, e);
      e.promise.catch(() => {
        if (this.entries.get(key) === e) this.entries.delete(key);
      });
      this.entries.set(key, e);
      entry = e;
    }
    return abortable(entry.promise, signal).catch((e) => {
      if (signal?.aborted) throw new Error(`was stopped while the ${mcpServerLabel(spec)} started.`);
      throw e;
    });
  }

  private async open(spec: McpServerSpec, key: string, entry: Entry): Promise<Connection> {
    const label = mcpServerLabel(spec);
    const lifetime = this.lifetime.signal;
    const client = new Client(CLIENT_INFO, { capabilities: {}, jsonSchemaValidator: boundedSchemaValidator });
    const conn: Connection = { key, spec, label, client, closed: false };
    let transport: Transport;
    if (spec.kind === 'stdio') {
      conn.stdio = new StdioServerTransport(spec, this.closeGraceMs);
      transport = conn.stdio;
      this.processes.add(conn.stdio);
      this.updateExitHook();
    } else {
      conn.http = new StreamableHTTPClientTransport(new URL(spec.url), { fetch: cappedFetch() });
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
      await client.connect(transport, { timeout: this.connectTimeoutMs, signal: lifetime });
    } catch (e) {
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

  private toolsOf(conn: Connection, options: McpCallOptions): Promise<Tool[]> {
    if (!conn.tools) {
      const p = listAllTools(conn.client, conn.label, this.listLimits).catch((e) => {
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
      await withTimeout(conn.http.terminateSession().catch(() => {}), 2000);
    }
    await withTimeout(conn.client.close().catch(() => {}), this.closeGraceMs + 2000);
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

  private stderrPart(conn: Connection): string {
    const text = conn.stdio?.stderr ?? '';
    return text.trim() ? `\nstderr:\n${tail(text)}` : '';
  }

  private startError(conn: Connection, e: unknown, lifetime: AbortSignal): Error {
    const err = e as NodeJS.ErrnoException;
    const { label, spec } = conn;
    if (lifetime.aborted) return new Error(`could not use the ${label}: the MCP connections were closed while it started.`);
    if (spec.kind === 'stdio' && err?.code === 'ENOENT') {
      return new Error(`could not start the ${label}: command not found (${JSON.stringify(spec.argv[0])} is not on PATH or does not exist). Check "mcp.command" in codeact.tools.`);
    }
    if (spec.kind === 'stdio' && err?.code === 'EACCES') return new Error(`could not start the ${label}: permission denied. Check "mcp.command" in codeact.tools.`);
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout) {
      return new Error(
        `could not start the ${label}: it did not complete the MCP handshake within ${this.connectTimeoutMs / 1000} s. ` +
          (spec.kind === 'stdio' ? 'Check that the command starts an MCP server on stdio (not HTTP), and that it logs to stderr only.' : 'Check that the URL is a streamable HTTP MCP endpoint.') +
          this.stderrPart(conn),
      );
    }
    const exit = conn.stdio?.exit;
    if (exit) {
      const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
      return new Error(
        `could not start the ${label}: it exited during startup (${how}).` +
          (this.stderrPart(conn) || ' It wrote nothing to stderr. Check that the command starts an MCP server on stdio.'),
      );
    }
    if (spec.kind === 'http') return new Error(`could not reach the ${label}: ${describeFetchError(err)}. Check "mcp.url" in codeact.tools and that the server is running.`);
    return new Error(`could not start the ${label}: ${err?.message ?? String(e)}.${this.stderrPart(conn)}`);
  }

  private callError(conn: Connection, what: string, e: unknown, signal: AbortSignal | undefined, timeoutMs: number, isList = false): Error {
    const step = isList ? `listing the tools of the ${conn.label}` : `(MCP tool "${what}" on the ${conn.label})`;
    if (signal?.aborted) return new Error(isList ? `was stopped while ${step}.` : `was stopped ${step}.`);
    if (conn.stdio?.fatal) return new Error(`failed: the connection to the ${conn.label} was dropped: ${conn.stdio.fatal}.`);
    const exit = conn.stdio?.exit;
    if (exit || (e instanceof McpError && e.code === ErrorCode.ConnectionClosed)) {
      const how = exit ? (exit.signal ? ` (killed by ${exit.signal})` : ` (exit code ${exit.code})`) : '';
      return new Error(`failed: the ${conn.label} closed the connection${how} while ${isList ? 'listing its tools' : `running "${what}"`}.${this.stderrPart(conn)}`);
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
      const msg = conn.spec.kind === 'http' ? describeFetchError(e as Error) : ((e as Error)?.message ?? String(e));
      return new Error(`failed: ${isList ? `could not list the tools of the ${conn.label}` : `could not reach the ${conn.label}`}: ${msg}.`);
    }
    return new Error(`failed: the ${conn.label} answered ${isList ? 'tools/list' : `"${what}"`} with an error: ${e.message.replace(/^MCP error -?\d+: /, '')}`);
  }
}

function isTransportFailure(e: unknown): boolean {
  const err = e as Error | undefined;
  return (
    e instanceof StreamableHTTPError ||
    (err instanceof TypeError && /fetch/i.test(err.message)) ||
    (err as NodeJS.ErrnoException | undefined)?.code !== undefined ||
    err?.message === 'the server is not running' ||
    err?.message === 'Not connected'
  );
}

function describeFetchError(e: Error | undefined): string {
  const cause = (e as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return e?.message ?? 'unknown error';
}

function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return raceAbort(p, signal, () => new McpError(ErrorCode.RequestTimeout, 'aborted'));
}

function withTimeout(p: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([p, new Promise((r) => setTimeout(r, ms).unref())]);
}

let defaultPool: McpClientPool | undefined;

/** The pool `loadTools` uses when its context names none: one per process (the CLI, the extension host). */
export function defaultMcpPool(): McpClientPool {
  return (defaultPool ??= new McpClientPool());
}

/** Closes the default pool's connections and kills its stdio servers. Call it when the process is done with tools. */
export async function disposeDefaultMcpPool(): Promise<void> {
  await defaultPool?.dispose();
}
