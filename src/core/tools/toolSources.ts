/**
 * The kinds of tool source, as data: one descriptor per kind (`TOOL_SOURCES`, a row for every
 * `ToolSourceKind` of common/tools.ts, which the compiler asks for). A descriptor checks a declaration's
 * source, builds its tool, may fill in its tools in an async phase ({@link resolveTools}, the one both hosts
 * call), and says which program it launches on the host ({@link hostLaunches}: the sandbox of a writable
 * workspace keeps that program read-only, core/runtime/local/hostFiles.ts).
 */
import type { HostLaunch, ToolDeclaration, ToolSourceKind } from '../../common/tools';
import { TOOL_SOURCE_KINDS } from '../../common/tools';
import type { ManagedTool, ToolSet } from '../gateway/toolSet';
import { commandSource, runCommandTool } from './sources/command';
import { checkHttpSource, runHttpTool } from './sources/http';
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
   * The host's language-model tools (VS Code's `vscode.lm.tools`): the managed tool of an `lmTool`
   * declaration, or why there is none. A host without them (the CLI) leaves it out.
   */
  lmTools?: (decl: ToolDeclaration) => ManagedTool | string;
  /**
   * Connections of `mcp` tools. Default: the process-wide `defaultMcpPool()` from ./sources/mcp/pool; whoever owns
   * the process disposes it at the end (`await disposeDefaultMcpPool()`).
   */
  mcpPool?: McpClientPool;
}

/** What a source kind's build is given: a declaration nothing is wrong with. */
interface SourceBuild {
  decl: ToolDeclaration;
  name: string;
  index: number;
  approval: ManagedTool['approval'];
  ctx: DeclarationContext;
}

/** How a declaration's tool runs: its `invoke` (the declaration says the rest), a tool built whole, or why it cannot be built. */
type SourceTool = { invoke: ManagedTool['invoke'] } | { tool: ManagedTool } | string;

/** What a source kind is: how its declarations are checked and built, what it fills in later, and what it starts on the host. */
interface ToolSourceDescriptor {
  /** Says each thing wrong with the declaration's source (its field); the host's `ctx` says what it can run. */
  check(decl: ToolDeclaration, say: (reason: string) => void, ctx: DeclarationContext): void;
  /** The tool of a declaration nothing is wrong with (built only then). */
  build(b: SourceBuild): SourceTool;
  /** The async phase: fills in what its tools' declarations left out, moving the tools it cannot use to `errors`. Never rejects. */
  resolve?(set: ToolSet, options: { signal?: AbortSignal }): Promise<ToolSet>;
  /** Changes when resolving the same declarations again may give another answer (an MCP sign-in): a host that caches resolves again. */
  resolveGeneration?(): number;
  /**
   * The argv (and folder) its tool starts on the host, or undefined when it starts no process there. Read from
   * the raw declaration, as leniently as it may be written: anything that could start is protected.
   */
  launches(decl: Record<string, unknown>): Omit<HostLaunch, 'tool'> | undefined;
}

const objectOf = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

export const TOOL_SOURCES: Record<ToolSourceKind, ToolSourceDescriptor> = {
  command: {
    check: (decl, say) => {
      const c = commandSource(decl.command);
      if (typeof c === 'string') say(c);
    },
    build: ({ decl, name, ctx }) => {
      const cmd = commandSource(decl.command);
      if (typeof cmd === 'string') return cmd;
      return { invoke: (args, c) => runCommandTool(name, cmd, args, { workspace: ctx.workspace, signal: c.signal, hostEnv: ctx.hostEnv }) };
    },
    launches: (d) => {
      if (Array.isArray(d.command)) return { argv: d.command };
      const c = objectOf(d.command);
      return c && Array.isArray(c.argv) ? { argv: c.argv, cwd: typeof c.cwd === 'string' ? c.cwd : undefined } : undefined;
    },
  },
  http: {
    check: (decl, say) => checkHttpSource(decl.http, say),
    build: ({ decl, name, ctx }) => ({ invoke: (args, c) => runHttpTool(name, decl.http!, args, { signal: c.signal, hostEnv: ctx.hostEnv }) }),
    // A request from the host process: no program.
    launches: () => undefined,
  },
  mcp: {
    check: (decl, say) => {
      const problem = validateMcpSource(decl.mcp);
      if (problem) say(problem);
    },
    build: ({ decl, index, approval, ctx }) => ({
      tool: createMcpTool(decl, { pool: ctx.mcpPool ?? defaultMcpPool(), workspace: ctx.workspace, hostEnv: ctx.hostEnv, approval, index }),
    }),
    // The servers' descriptions and schemas, for what the declarations leave out.
    resolve: (set, options) => resolveMcpTools(set, options),
    resolveGeneration: () => defaultMcpPool().authGeneration,
    // A stdio server is started in the workspace; an HTTP one is reached, not run.
    launches: (d) => {
      const m = objectOf(d.mcp);
      return m && Array.isArray(m.command) ? { argv: m.command } : undefined;
    },
  },
  // Built by the host (VS Code's language-model tools), when it can.
  lmTool: {
    check: (_decl, say, ctx) => {
      if (!ctx.lmTools) say('"lmTool" tools are not available here');
    },
    build: ({ decl, ctx }) => {
      const made = ctx.lmTools!(decl);
      return typeof made === 'string' ? made : { tool: made };
    },
    // Another extension's tool, called through VS Code: that extension runs it, not CodeAct.
    launches: () => undefined,
  },
};

/** The descriptor of a tool's source kind (undefined for a host's own tool). */
function descriptorOf(tool: ManagedTool): ToolSourceDescriptor | undefined {
  return Object.hasOwn(TOOL_SOURCES, tool.source) ? TOOL_SOURCES[tool.source as ToolSourceKind] : undefined;
}

/** Some tool of the set comes from a source kind with an async phase ({@link resolveTools} may change the set). */
export function needsResolving(set: ToolSet): boolean {
  return set.tools.some((t) => !!descriptorOf(t)?.resolve);
}

/** What changes when resolving the same tools again may give another answer (every kind's `resolveGeneration`), for a host's cache key. */
export function resolveGeneration(): number[] {
  return TOOL_SOURCE_KINDS.map((k) => TOOL_SOURCES[k].resolveGeneration?.() ?? 0);
}

/**
 * The async phase of loading tools, the same for every host: each source kind that has one fills in its tools
 * (MCP servers' descriptions and schemas), and tools that cannot be used move to `errors`. Never rejects.
 */
export async function resolveTools(set: ToolSet, options: { signal?: AbortSignal } = {}): Promise<ToolSet> {
  let out = set;
  for (const kind of TOOL_SOURCE_KINDS) {
    const resolve = TOOL_SOURCES[kind].resolve;
    if (resolve) out = await resolve(out, options);
  }
  return out;
}

/** At most this many declarations are read for what they run on the host (the declarations are untrusted). */
const MAX_LAUNCH_DECLARATIONS = 1000;

/**
 * What the declared tools run on the host, as each one's source kind declares it (`launches`): a declaration
 * whose source kind starts a program. Read from the raw declarations, invalid ones too (what could start is protected).
 */
export function hostLaunches(raw: unknown): HostLaunch[] {
  if (!Array.isArray(raw)) return [];
  const out: HostLaunch[] = [];
  for (const decl of raw.slice(0, MAX_LAUNCH_DECLARATIONS)) {
    const d = objectOf(decl);
    if (!d) continue;
    for (const kind of TOOL_SOURCE_KINDS) {
      if (d[kind] === undefined) continue;
      const launch = TOOL_SOURCES[kind].launches(d);
      if (launch) out.push({ tool: String(d.name ?? '?').slice(0, 64), ...launch });
    }
  }
  return out;
}
