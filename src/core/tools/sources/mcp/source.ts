/**
 * `mcp` tools: one tool of an MCP server (stdio or streamable HTTP) exposed as a managed tool. Its
 * server's connection is in an {@link McpClientPool} (./pool).
 *
 * `loadTools` (declarations.ts) builds the tools synchronously, without contacting any server. A
 * declaration that leaves out `description`, `inputSchema` or `outputSchema` gets them from the
 * server's `tools/list` through {@link resolveMcpTools} (or `loadToolsAsync`), which also reports
 * servers that do not start and tools the server does not have.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchema, McpSource, ToolDeclaration } from '../../../../common/tools';
import { compileSchema } from '../../../gateway/schema';
import type { DeclarationError, ManagedTool, ToolSet } from '../../../gateway/toolSet';
import { commandEnv } from '../processes';
import { mcpServerLabel, missingToolMessage, serverKey, type McpClientPool, type McpServerSpec } from './pool';
import { mcpResultValue } from './result';

/** Input schema of an `mcp` tool whose declaration has none, until {@link resolveMcpTools} fills in the server's: the server validates. */
export const MCP_PERMISSIVE_INPUT_SCHEMA = { type: 'object' } as const;

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
    else if (m.url !== undefined && m.command === undefined)
      problems.push('"mcp.env" applies only to stdio servers ("command"); an HTTP server has its own environment');
  }
  if (m.oauth !== undefined) {
    const problem = validateMcpOAuth(m.oauth, m.url !== undefined && m.command === undefined);
    if (problem) problems.push(problem);
  }
  return problems.length ? problems.join('; ') : undefined;
}

function validateMcpOAuth(raw: unknown, isHttp: boolean): string | undefined {
  if (!isHttp) return '"mcp.oauth" applies only to HTTP servers ("url"); a stdio server does not sign in';
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return '"mcp.oauth" must be an object: {"clientId": "...", "scope": "..."}';
  const o = raw as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !['clientId', 'clientSecret', 'scope'].includes(k));
  if (unknown.length) return `"mcp.oauth" takes "clientId", "clientSecret" and "scope", not ${unknown.map((k) => JSON.stringify(k)).join(', ')}`;
  for (const k of ['clientId', 'clientSecret', 'scope']) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'string' || !v || v.length > 2048)) return `"mcp.oauth.${k}" must be a non-empty string`;
  }
  if (o.clientSecret !== undefined && o.clientId === undefined) return '"mcp.oauth.clientSecret" needs "mcp.oauth.clientId"';
  return undefined;
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
  return source.oauth ? { kind: 'http', url: source.url!, oauth: { ...source.oauth } } : { kind: 'http', url: source.url! };
}

/** What an `mcp` tool is bound to: its server and the tool there, and what its declaration gave. */
interface McpBinding {
  /** Index of the declaration in codeact.tools, for error reports. */
  index: number;
  spec: McpServerSpec;
  tool: string;
  pool: McpClientPool;
  declared: { description: boolean; inputSchema: boolean; outputSchema: boolean };
}

/** The managed tool of an `mcp` declaration: {@link resolveMcpTools} reads its server from `mcp`. */
interface McpTool extends ManagedTool {
  readonly mcp: McpBinding;
}

function isMcpTool(tool: ManagedTool): tool is McpTool {
  return (tool as Partial<McpTool>).mcp !== undefined;
}

interface McpToolContext {
  pool: McpClientPool;
  workspace: string;
  hostEnv?: NodeJS.ProcessEnv;
  /** The tool's approval, as the precedence table decided it (loadTools); default `auto`. */
  approval?: 'auto' | 'ask' | 'deny';
  /** Index of the declaration in codeact.tools, for error reports. */
  index?: number;
}

/** Builds the managed tool of a valid `mcp` declaration (see {@link validateMcpSource}). Contacts no server. */
export function createMcpTool(decl: ToolDeclaration, ctx: McpToolContext): McpTool {
  const source = decl.mcp!;
  const spec = mcpServerSpec(source, ctx);
  const { pool } = ctx;
  return {
    name: decl.name,
    description: decl.description ?? '',
    inputSchema: decl.inputSchema ?? MCP_PERMISSIVE_INPUT_SCHEMA,
    outputSchema: decl.outputSchema,
    approval: ctx.approval ?? 'auto',
    expose: decl.expose ?? 'code',
    source: 'mcp',
    group: mcpServerLabel(spec),
    invoke: async (args, c) => {
      try {
        return mcpResultValue(await pool.callTool(spec, source.tool, args, { signal: c.signal, pause: c.pause, elicit: c.elicit }));
      } catch (e) {
        throw new Error(`Tool "${decl.name}" ${(e as Error).message}`);
      }
    },
    mcp: {
      index: ctx.index ?? -1,
      spec,
      tool: source.tool,
      pool,
      declared: { description: decl.description !== undefined, inputSchema: decl.inputSchema !== undefined, outputSchema: decl.outputSchema !== undefined },
    },
  };
}

/**
 * Fills in what `mcp` declarations leave out (`description`, `inputSchema`, `outputSchema`) from
 * their servers' `tools/list`, connecting only to the servers that are needed, in parallel. A tool
 * whose server does not start, or that the server does not have, moves from `tools` to `errors`
 * (the message lists the server's tools). Other tools pass through unchanged. Never rejects.
 */
export async function resolveMcpTools(toolSet: ToolSet, options: { signal?: AbortSignal } = {}): Promise<ToolSet> {
  const pending = toolSet.tools.map((t) => ({ tool: t, binding: isMcpTool(t) ? t.mcp : undefined }));
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
    // A copy keeps the binding (`mcp`) and the group.
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
    tools.push(filled);
  }
  errors.sort((a, b) => a.index - b.index);
  return { tools, errors };
}
