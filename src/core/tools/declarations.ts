/**
 * Turns `codeact.tools` declarations into managed tools. Each invalid declaration is reported on its
 * own, with its index and name; the valid ones still work.
 */
import { clip } from '../../common/format';
import {
  formatDeclarationProblem,
  TOOL_NAME_PATTERN,
  TOOL_SOURCES,
  type CommandSource,
  type DeclarationProblem,
  type HostLaunch,
  type ToolDeclaration,
} from '../../common/tools';
import { decideApproval, type ToolApprovalFacts } from '../gateway/approvalPolicy';
import { compileSchema, SchemaError } from '../gateway/schema';
import type { DeclarationError, ManagedTool, ToolSet } from '../gateway/toolSet';
import { runCommandTool } from './sources/command';
import { parseHostRule, runHttpTool } from './sources/http';
import { defaultMcpPool, type McpClientPool } from './sources/mcp/pool';
import { createMcpTool, resolveMcpTools, validateMcpSource } from './sources/mcp/source';

export interface DeclarationContext {
  /** The workspace folder: command tools run there. */
  workspace: string;
  hostEnv?: NodeJS.ProcessEnv;
  /** Policy of tools that do not set `approval` (codeact.approval.default as resolved); default `auto`. */
  defaultApproval?: 'auto' | 'ask' | 'deny';
  /** The person's own codeact.approval.default (default `auto`): a folder's tools never run looser (../gateway/approvalPolicy). */
  userDefaultApproval?: 'auto' | 'ask' | 'deny';
  /** Whose settings these declarations are: the person's (default) or a folder's. */
  declaredIn?: 'user' | 'folder';
  /**
   * Builds tools of the sources this layer cannot run by itself (`lmTool`). `mcp` tools are built
   * here (see `mcpPool`); the hook is no longer asked for them.
   */
  resolveExternal?: (decl: ToolDeclaration, source: 'mcp' | 'lmTool') => ManagedTool | string;
  /**
   * Connections of `mcp` tools. Default: the process-wide `defaultMcpPool()` from ./sources/mcp/pool; whoever owns
   * the process disposes it at the end (`await disposeDefaultMcpPool()`).
   */
  mcpPool?: McpClientPool;
}

const DEFAULT_INPUT_SCHEMA = { type: 'object', additionalProperties: false, properties: {} };

export function loadTools(raw: unknown, ctx: DeclarationContext): ToolSet {
  const errors: DeclarationError[] = [];
  const tools: ManagedTool[] = [];
  if (raw === undefined || raw === null) return { tools, errors };
  if (!Array.isArray(raw)) {
    return { tools, errors: [{ index: -1, message: 'codeact.tools must be a list (a JSON array) of tool declarations.' }] };
  }
  const seen = new Map<string, number>();
  raw.forEach((decl: unknown, index) => {
    const problems: DeclarationProblem[] = [];
    const say = (reason: string) => problems.push({ reason });
    if (!decl || typeof decl !== 'object' || Array.isArray(decl)) {
      const reason = `The declaration ${clip(JSON.stringify(decl) ?? String(decl), 80)} is not an object`;
      const fix =
        'write an object with "name", "description", "inputSchema" and one source, for example {"name": "search", "command": ["python3", "tools/search.py"]}';
      errors.push({ index, message: formatDeclarationProblem({ reason, fix }), problems: [{ reason, fix }] });
      return;
    }
    const d = decl as ToolDeclaration;
    const name = typeof d.name === 'string' ? d.name : undefined;
    if (d.name === undefined) problems.push({ field: 'name', reason: 'is missing', fix: 'give the tool a name, for example "name": "search_orders"' });
    else if (!name || !TOOL_NAME_PATTERN.test(name)) {
      const fix = 'start with a letter and use only letters, digits, "_" and "-" (at most 64 characters), for example "search_orders"';
      problems.push({ field: 'name', value: clip(JSON.stringify(d.name), 80), reason: 'is not a valid tool name', fix });
    } else if (seen.has(name))
      problems.push({
        field: 'name',
        value: JSON.stringify(name),
        reason: `is declared twice (also at codeact.tools[${seen.get(name)}])`,
        fix: 'rename one of them',
      });
    const sources = TOOL_SOURCES.filter((s) => (d as unknown as Record<string, unknown>)[s] !== undefined);
    const oneOf = TOOL_SOURCES.map((s) => `"${s}"`).join(', ');
    if (sources.length === 0) problems.push({ reason: 'The declaration has no source', fix: `give exactly one of ${oneOf}` });
    if (sources.length > 1) problems.push({ reason: `The declaration has two sources (${sources.join(' and ')})`, fix: 'keep exactly one' });
    if (d.description !== undefined && typeof d.description !== 'string') {
      problems.push({ field: 'description', value: clip(JSON.stringify(d.description), 80), reason: 'is not text', fix: 'write the description as a string' });
    }
    for (const key of ['inputSchema', 'outputSchema'] as const) {
      if (d[key] === undefined) continue;
      try {
        compileSchema(d[key]!);
      } catch (e) {
        if (e instanceof SchemaError) problems.push(...e.problems.map((p) => ({ ...p, field: p.field ? `${key}.${p.field}` : key })));
        else problems.push({ field: key, reason: (e as Error).message });
      }
    }
    for (const [field, allowed, reason] of [
      ['approval', ['auto', 'ask', 'deny'], 'is not an approval policy'],
      ['expose', ['code', 'direct', 'both'], 'is not a way to offer the tool'],
    ] as const) {
      const value: unknown = d[field];
      if (value === undefined || (allowed as readonly unknown[]).includes(value)) continue;
      const choices = allowed.map((a) => `"${a}"`);
      problems.push({ field, value: clip(JSON.stringify(value), 80), reason, fix: `use ${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}` });
    }
    // The one precedence table decides the tool's approval, whatever its source (../gateway/approvalPolicy).
    const approvalFacts: ToolApprovalFacts = {
      declared: problems.some((p) => p.field === 'approval') ? undefined : d.approval,
      declaredIn: ctx.declaredIn ?? 'user',
      default: ctx.defaultApproval ?? 'auto',
      userDefault: ctx.userDefaultApproval ?? 'auto',
    };
    const approval = decideApproval(approvalFacts).policy;
    const made =
      sources.length === 1 ? SOURCE_KINDS[sources[0]].load({ decl: d, name: name!, index, approval, ctx, say, valid: () => problems.length === 0 }) : undefined;
    const invoke = made && 'invoke' in made ? made.invoke : undefined;
    const external = made && 'tool' in made ? made.tool : undefined;
    if (problems.length) {
      errors.push({ index, name, message: problems.map(formatDeclarationProblem).join(' '), problems });
      return;
    }
    seen.set(name!, index);
    tools.push(
      external
        ? Object.assign(external, { approval, approvalFacts })
        : {
            name: name!,
            description: d.description ?? '',
            inputSchema: d.inputSchema ?? DEFAULT_INPUT_SCHEMA,
            outputSchema: d.outputSchema,
            approval,
            approvalFacts,
            expose: d.expose ?? 'code',
            source: sources[0],
            invoke: invoke!,
          },
    );
  });
  return { tools, errors };
}

/** What a source kind's loader is given: the declaration, and where to say what is wrong with its source. */
interface SourceLoad {
  decl: ToolDeclaration;
  name: string;
  index: number;
  approval: ManagedTool['approval'];
  ctx: DeclarationContext;
  say(reason: string): void;
  /** Nothing is wrong with the declaration so far (a tool built whole is built only then). */
  valid(): boolean;
}

/** How a declaration's tool runs: its `invoke` (the declaration says the rest), or a tool built whole; undefined when its source is wrong. */
type SourceTool = { invoke: ManagedTool['invoke'] } | { tool: ManagedTool } | undefined;

/**
 * A source kind: its loader (checks the declaration's source and says how its tool runs), and the program it
 * runs on the host, if any. Every kind must say the second (the type requires it), so the sandbox of a writable
 * workspace protects what a new kind runs without a list kept anywhere else (hostLaunches, below).
 */
interface SourceKind {
  load(load: SourceLoad): SourceTool;
  /** The argv (and folder) the tool starts on the host, or undefined when it starts no process there. */
  hostLaunch(decl: Record<string, unknown>): Omit<HostLaunch, 'tool'> | undefined;
}

const objectOf = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

const SOURCE_KINDS: Record<(typeof TOOL_SOURCES)[number], SourceKind> = {
  command: {
    load: ({ decl, name, ctx, say }) => {
      const cmd = normaliseCommand(decl.command);
      if (typeof cmd === 'string') return void say(cmd);
      return { invoke: (args, c) => runCommandTool(name, cmd, args, { workspace: ctx.workspace, signal: c.signal, hostEnv: ctx.hostEnv }) };
    },
    // As lenient as the declaration may be: anything it could start is protected.
    hostLaunch: (d) => {
      if (Array.isArray(d.command)) return { argv: d.command };
      const c = objectOf(d.command);
      return c && Array.isArray(c.argv) ? { argv: c.argv, cwd: typeof c.cwd === 'string' ? c.cwd : undefined } : undefined;
    },
  },
  http: {
    load: ({ decl, name, ctx, say }) => {
      const h = decl.http!;
      if (!h || typeof h !== 'object') return void say('"http" must be an object');
      if (typeof h.url !== 'string' || !/^https?:\/\//.test(h.url)) say('"http.url" must be an http(s) URL template');
      if (!Array.isArray(h.allowedHosts) || h.allowedHosts.length === 0 || !h.allowedHosts.every((x) => typeof x === 'string')) {
        say('"http.allowedHosts" must list the hosts the tool may reach');
      } else {
        const bad = h.allowedHosts.filter((x) => !parseHostRule(x));
        if (bad.length)
          say(`"http.allowedHosts" entries must be [http(s)://]host[:port] (host may be *.example.com), not ${bad.map((b) => JSON.stringify(b)).join(', ')}`);
      }
      if (h.method !== undefined && !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(h.method)) say('"http.method" must be GET, POST, PUT, PATCH or DELETE');
      return { invoke: (args, c) => runHttpTool(name, h, args, { signal: c.signal, hostEnv: ctx.hostEnv }) };
    },
    // A request from the host process: no program.
    hostLaunch: () => undefined,
  },
  mcp: {
    load: ({ decl, index, approval, ctx, say, valid }) => {
      const problem = validateMcpSource(decl.mcp);
      if (problem) return void say(problem);
      if (valid())
        return { tool: createMcpTool(decl, { pool: ctx.mcpPool ?? defaultMcpPool(), workspace: ctx.workspace, hostEnv: ctx.hostEnv, approval, index }) };
    },
    // A stdio server is started in the workspace; an HTTP one is reached, not run.
    hostLaunch: (d) => {
      const m = objectOf(d.mcp);
      return m && Array.isArray(m.command) ? { argv: m.command } : undefined;
    },
  },
  // Built by the host (the VS Code language model tools), when it can.
  lmTool: {
    load: ({ decl, ctx, say, valid }) => {
      if (!ctx.resolveExternal) return void say('"lmTool" tools are not available here');
      if (!valid()) return;
      const made = ctx.resolveExternal(decl, 'lmTool');
      if (typeof made === 'string') return void say(made);
      return { tool: made };
    },
    // Another extension's tool, called through VS Code: that extension runs it, not CodeAct.
    hostLaunch: () => undefined,
  },
};

/** At most this many declarations are read for what they run on the host (the declarations are untrusted). */
const MAX_LAUNCH_DECLARATIONS = 1000;

/**
 * What the declared tools run on the host, as each one's source kind declares it: a declaration with one source
 * whose kind starts a program. Read from the raw declarations, invalid ones too (what could start is protected).
 */
export function hostLaunches(raw: unknown): HostLaunch[] {
  if (!Array.isArray(raw)) return [];
  const out: HostLaunch[] = [];
  for (const decl of raw.slice(0, MAX_LAUNCH_DECLARATIONS)) {
    const d = objectOf(decl);
    if (!d) continue;
    for (const kind of TOOL_SOURCES) {
      if (d[kind] === undefined) continue;
      const launch = SOURCE_KINDS[kind].hostLaunch(d);
      if (launch) out.push({ tool: String(d.name ?? '?').slice(0, 64), ...launch });
    }
  }
  return out;
}

/**
 * `loadTools`, then `resolveMcpTools`: `mcp` declarations that leave out `description`,
 * `inputSchema` or `outputSchema` get the server's, and tools whose server does not start or lacks
 * the tool move to `errors`. This starts the servers it needs (in `ctx.mcpPool`, or the default pool).
 */
export async function loadToolsAsync(raw: unknown, ctx: DeclarationContext & { signal?: AbortSignal }): Promise<ToolSet> {
  return resolveMcpTools(loadTools(raw, ctx), { signal: ctx.signal });
}

function normaliseCommand(raw: unknown): CommandSource | string {
  const src = Array.isArray(raw) ? { argv: raw } : raw;
  if (!src || typeof src !== 'object') return '"command" must be an argv array or an object with "argv"';
  const c = src as CommandSource;
  if (!Array.isArray(c.argv) || c.argv.length === 0 || !c.argv.every((a) => typeof a === 'string')) {
    return '"command" needs a non-empty argv array of strings, for example ["python3", "tools/search.py"]';
  }
  if (c.env !== undefined && (!Array.isArray(c.env) || !c.env.every((e) => typeof e === 'string'))) return '"command.env" must list environment variable names';
  if (c.timeoutMs !== undefined && !(typeof c.timeoutMs === 'number' && c.timeoutMs > 0)) return '"command.timeoutMs" must be a positive number';
  return c;
}
