/**
 * Bounded dealings with an MCP server, which is untrusted input like generated code:
 *
 * - `tools/list` stops after {@link MCP_LIST_LIMITS} pages and tools and has one deadline for all its
 *   pages; a page is checked by hand (cheaply) before any tool in it is parsed, so a page of a million
 *   tools costs no more than its JSON text.
 * - Messages are capped at {@link MCP_MAX_MESSAGE_BYTES} and {@link MCP_MAX_MESSAGE_NESTS} objects and
 *   arrays before they are parsed, on stdio and over HTTP alike.
 * - The SDK's own check of `structuredContent` against a tool's `outputSchema` goes through the
 *   gateway's schema engine (linear-time patterns, a work budget), compiled only for tools called.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ResultSchema, ToolSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator, JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { JsonSchema } from '../../../../common/tools';
import { compileSchema, type Validator } from '../../../gateway/schema';
import { formatBytes, overCap } from '../../../../common/format';
import { BodyTooLarge, capBody } from '../../../util/readBodyCapped';

export interface McpListLimits {
  /** Most pages of one listing. */
  maxPages: number;
  /** Most tools of one server. */
  maxTools: number;
  /** Deadline for the whole listing, every page included. */
  timeoutMs: number;
}

export const MCP_LIST_LIMITS: McpListLimits = { maxPages: 50, maxTools: 1_000, timeoutMs: 30_000 };

/**
 * Largest message accepted from a server (a line on stdio, a response body over HTTP): room for a result
 * up to the gateway's cap (16 MiB) even as escaped JSON text inside a text block. With the object cap
 * below, parsing the largest message takes a few tens of milliseconds.
 */
export const MCP_MAX_MESSAGE_BYTES = 24 * 1024 * 1024;

/**
 * Most `{` and `[` in one message, strings included (JSON text inside a text block is parsed too): what
 * JSON.parse costs is mostly the objects it builds, about 0.3 µs each, so 50,000 cost about 15 ms.
 */
const MCP_MAX_MESSAGE_NESTS = 50_000;

/** How many `{` and `[` bytes `chunk` holds. */
function countNests(chunk: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < chunk.length; i++) {
    const c = chunk[i];
    if (c === 0x7b || c === 0x5b) n++;
  }
  return n;
}

/** Thrown when a listing passes a limit; the message is a sentence that follows "failed: ". */
export class McpListLimitError extends Error {}

/**
 * Every page of `tools/list`, within `limits`. Each request gets the time left until the deadline;
 * `onTimeout` builds the error for a listing that ran out of time (the caller names the server).
 */
export async function listAllTools(client: Client, label: string, limits: McpListLimits, signal?: AbortSignal): Promise<Tool[]> {
  const deadline = Date.now() + limits.timeoutMs;
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 1; ; page++) {
    if (page > limits.maxPages) {
      throw new McpListLimitError(
        `the ${label} has more than ${limits.maxPages} pages of tools (tools/list kept returning a nextCursor); CodeAct stops listing there. Check the server, or use another one.`,
      );
    }
    const left = deadline - Date.now();
    if (left <= 0) throw listTimeout(label, limits);
    // ResultSchema checks the envelope only: the tools are checked below, one by one, up to the limit.
    const result = (await client.request({ method: 'tools/list', params: cursor !== undefined ? { cursor } : {} }, ResultSchema, {
      timeout: left,
      signal,
    })) as Record<string, unknown>;
    const listed = result.tools;
    if (!Array.isArray(listed)) throw new McpListLimitError(`the ${label} answered tools/list without a "tools" array.`);
    if (tools.length + listed.length > limits.maxTools) {
      throw new McpListLimitError(
        `the ${label} lists more than ${limits.maxTools.toLocaleString('en-US')} tools, CodeAct's limit for one server. Use a server with fewer tools.`,
      );
    }
    for (const raw of listed) {
      const parsed = ToolSchema.safeParse(raw);
      if (!parsed.success) {
        const name =
          raw && typeof raw === 'object' && typeof (raw as { name?: unknown }).name === 'string'
            ? `"${(raw as { name: string }).name.slice(0, 64)}"`
            : 'a tool';
        throw new McpListLimitError(`the ${label} listed ${name} in a form that is not an MCP tool (${parsed.error.issues[0]?.message ?? 'invalid'}).`);
      }
      tools.push(parsed.data as Tool);
    }
    const next = result.nextCursor;
    if (next === undefined || next === null || next === '') break;
    if (typeof next !== 'string') throw new McpListLimitError(`the ${label} answered tools/list with a nextCursor that is not a string.`);
    cursor = next;
  }
  // What Client.listTools does after listing: remember output schemas (compiled lazily, see below) and task support.
  (client as unknown as { cacheToolMetadata(tools: Tool[]): void }).cacheToolMetadata(tools);
  return tools;
}

export function listTimeout(label: string, limits: McpListLimits): McpListLimitError {
  return new McpListLimitError(`listing the tools of the ${label} took longer than ${limits.timeoutMs / 1000} s, the deadline for all its pages.`);
}

/**
 * The validator the SDK uses for `outputSchema`: the gateway's engine, compiled on first use. A schema
 * that cannot be compiled checks nothing here; the gateway reports it when it fills in the tool.
 */
export const boundedSchemaValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let check: Validator | undefined | null;
    return (input: unknown) => {
      if (check === undefined) {
        try {
          check = compileSchema(schema as JsonSchema);
        } catch {
          check = null;
        }
      }
      let problems: string[] = [];
      try {
        problems = check ? check(input) : [];
      } catch (e) {
        problems = [(e as Error).message];
      }
      return problems.length
        ? { valid: false, data: undefined, errorMessage: problems.join('; ') }
        : { valid: true, data: input as T, errorMessage: undefined };
    };
  },
};

/** Largest OAuth answer accepted (protected-resource and authorization-server metadata, registration, tokens): they are a few kilobytes. */
export const MCP_MAX_AUTH_BYTES = 1024 * 1024;

/**
 * `fetch` for one HTTP server whose response bodies are capped as they stream (see readBodyCapped): an
 * answer of the MCP endpoint at {@link MCP_MAX_MESSAGE_BYTES} and {@link MCP_MAX_MESSAGE_NESTS} (a stream
 * of server-sent events: each event), any other address (the OAuth metadata, registration and token
 * endpoints the SDK asks during sign-in) at {@link MCP_MAX_AUTH_BYTES}. Past a cap the body errors with a
 * {@link BodyTooLarge} that names the server and the cap, and the connection is closed.
 */
export function cappedFetch(
  server: { label: string; url: string },
  onTooLarge?: (e: BodyTooLarge) => void,
  caps = { message: MCP_MAX_MESSAGE_BYTES, auth: MCP_MAX_AUTH_BYTES },
): FetchLike {
  const endpoint = new URL(server.url).href;
  const tooLarge = (message: string, cap: number) => {
    const e = new BodyTooLarge(message, cap);
    onTooLarge?.(e);
    return e;
  };
  return async (url, init) => {
    const res = await fetch(url, init);
    if (!res.body) return res;
    const target = new URL(String(url));
    const isEndpoint = target.href === endpoint;
    const where = isEndpoint ? `the ${server.label}` : `${target.origin}${target.pathname} (signing in to the ${server.label})`;
    const cap = isEndpoint ? caps.message : caps.auth;
    const perEvent = isEndpoint && /^text\/event-stream/i.test(res.headers.get('content-type') ?? '');
    const what = isEndpoint ? `one MCP message${perEvent ? ' (one server-sent event)' : ''}` : 'an OAuth answer';
    const body = capBody(res.body, {
      cap,
      perEvent,
      maxNests: MCP_MAX_MESSAGE_NESTS,
      tooLarge: () =>
        tooLarge(
          `${where} sent ${overCap(cap)} in ${what}, CodeAct's limit, so it stopped reading there and closed the connection. ` +
            (isEndpoint
              ? 'Ask the tool for less (a smaller result), or check the server.'
              : 'Check "mcp.url" in codeact.tools and the server\'s sign-in setup.'),
          cap,
        ),
      tooNested: () =>
        tooLarge(
          `${where} sent more than ${MCP_MAX_MESSAGE_NESTS.toLocaleString('en-US')} objects and arrays in ${what}, CodeAct's limit, so it stopped reading there ` +
            'and closed the connection. Ask the tool for less, or check the server.',
          cap,
        ),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * Splits a stdio stream into lines, each at most `maxBytes`. Linear in the input: each chunk is scanned
 * once and a line is joined once (the SDK's ReadBuffer re-joins and re-scans everything buffered on
 * every chunk, which is quadratic in a long line).
 */
export class LineBuffer {
  private parts: Buffer[] = [];
  private size = 0;
  private nests = 0;

  constructor(private readonly maxBytes = MCP_MAX_MESSAGE_BYTES) {}

  /** The complete lines `chunk` ends; throws when a line passes the cap (the stream cannot be resynchronised then). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      this.add(chunk.subarray(start, nl));
      const line = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.size);
      lines.push(line.toString('utf8').replace(/\r$/, ''));
      this.parts = [];
      this.size = this.nests = 0;
      start = nl + 1;
    }
    if (start < chunk.length) this.add(chunk.subarray(start));
    return lines;
  }

  private add(piece: Buffer): void {
    this.nests += countNests(piece);
    if (this.size + piece.length > this.maxBytes || this.nests > MCP_MAX_MESSAGE_NESTS) {
      const nests = this.nests > MCP_MAX_MESSAGE_NESTS;
      this.parts = [];
      this.size = this.nests = 0;
      throw new Error(
        nests
          ? `a message has more than ${MCP_MAX_MESSAGE_NESTS.toLocaleString('en-US')} objects and arrays (CodeAct's limit for one MCP message)`
          : `a message is longer than ${formatBytes(this.maxBytes)} (CodeAct's limit for one MCP message)`,
      );
    }
    this.parts.push(piece);
    this.size += piece.length;
  }
}
