/**
 * Tool discovery from inside the code, host side. The guest asks through the ordinary tool-call
 * channel, under RESERVED names that no managed tool can have (declared names allow only letters,
 * digits, `_` and `-`; every reserved name starts with `codeact.`):
 *
 *   codeact.search_tools  {query: str, limit?: int 1..50 = 10}
 *       -> [{name, description, signature, returns?, group, score}], best first (BM25, ./toolSearch)
 *   codeact.describe_tool {name: str}
 *       -> {name, description, group, signature, returns?, approval, input_schema, output_schema}
 *   codeact.tool_catalog  {}
 *       -> the signature catalogue (./toolCatalog) the guest builds its `tools` module from
 *
 * The gateway routes these here (ToolGateway.handler), for the CLI and the extension alike. They read
 * only the tool list: no approval, no tool runs, every answer bounded. Their `codeact.tool_call.*`
 * events carry `kind: "discovery"` (the runtime's ToolDispatcher tags them) so the panel can show them quietly.
 */
import { clip } from '../../../common/format';
import { DESCRIBE_TOOL, RESERVED_CALLS, SEARCH_TOOLS, TOOL_CATALOG } from '../../../common/tools';
import type { ManagedTool } from '../toolSet';
import { buildToolCatalog, oneLine, pythonName, returnsSummary, signatureText, toolGroup, toolParams, type ToolCatalog } from './toolCatalog';
import { MAX_QUERY_CHARS, MAX_RESULTS, ToolSearchIndex } from './toolSearch';

/** Largest schema returned by describe_tool, serialised. */
const MAX_DESCRIBED_SCHEMA_BYTES = 64 * 1024;

interface SearchResult {
  name: string;
  description: string;
  signature: string;
  returns?: string;
  group: string;
  score: number;
}

function argsObject(name: string, args: unknown, allowed: string[]): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  if (typeof args !== 'object' || Array.isArray(args)) throw new Error(`${name} takes keyword arguments (${allowed.join(', ')}).`);
  const extra = Object.keys(args).filter((k) => !allowed.includes(k));
  if (extra.length) throw new Error(`${name} got unexpected argument(s) ${extra.map((k) => JSON.stringify(k)).join(', ')}; it takes ${allowed.join(', ')}.`);
  return args as Record<string, unknown>;
}

function boundedSchema(schema: unknown): unknown {
  if (schema === undefined) return null;
  const size = Buffer.byteLength(JSON.stringify(schema));
  if (size <= MAX_DESCRIBED_SCHEMA_BYTES) return schema;
  return {
    $comment: `This schema is ${size.toLocaleString('en-US')} bytes, too large to show here (the limit is ${MAX_DESCRIBED_SCHEMA_BYTES.toLocaleString('en-US')}). The signature lists its top-level parameters.`,
  };
}

export class ToolDiscovery {
  private readonly byName = new Map<string, ManagedTool>();
  /** By the function name in the guest's `tools` module (`get-ticket` is `get_ticket` there). */
  private readonly byPython = new Map<string, ManagedTool>();
  private index?: ToolSearchIndex;
  private cachedCatalog?: ToolCatalog;

  constructor(private readonly tools: readonly ManagedTool[]) {
    for (const t of tools) this.byName.set(t.name, t);
    for (const t of tools) {
      const py = pythonName(t.name);
      if (py && !this.byName.has(py) && !this.byPython.has(py)) this.byPython.set(py, t);
    }
  }

  /** Answers one reserved call. Throws an Error (raised in the guest as RuntimeError) for bad requests. */
  handle(name: string, args: unknown): unknown {
    switch (name) {
      case SEARCH_TOOLS:
        return this.search(args);
      case DESCRIBE_TOOL:
        return this.describe(args);
      case TOOL_CATALOG:
        argsObject('tool_catalog', args, []);
        return this.catalog();
      default:
        throw new Error(`"${name}" is a reserved name, not a tool. The reserved calls are ${Object.values(RESERVED_CALLS).join(', ')}.`);
    }
  }

  private getIndex(): ToolSearchIndex {
    this.index ??= new ToolSearchIndex(
      this.tools.map((t) => ({ name: t.name, description: t.description, params: (toolParams(t) ?? []).map((p) => p.name), group: toolGroup(t) })),
    );
    return this.index;
  }

  search(args: unknown): SearchResult[] {
    const a = argsObject('search_tools', args, ['query', 'limit']);
    if (typeof a.query !== 'string' || !a.query.trim())
      throw new Error('search_tools(query, limit=10): query must be a non-empty string, for example "create an invoice".');
    const limit = a.limit === undefined || a.limit === null ? 10 : a.limit;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_RESULTS) {
      throw new Error(`search_tools(query, limit=10): limit must be an integer from 1 to ${MAX_RESULTS}, not ${JSON.stringify(limit)}.`);
    }
    return this.getIndex()
      .search(a.query.slice(0, MAX_QUERY_CHARS), limit)
      .map((hit) => {
        const t = this.byName.get(hit.name)!;
        const r: SearchResult = {
          name: t.name,
          description: oneLine(t.description, 160),
          signature: signatureText(t.name, toolParams(t)),
          group: toolGroup(t),
          score: hit.score,
        };
        const returns = returnsSummary(t.outputSchema);
        if (returns) r.returns = returns;
        return r;
      });
  }

  describe(args: unknown): Record<string, unknown> {
    const a = argsObject('describe_tool', args, ['name']);
    if (typeof a.name !== 'string' || !a.name) throw new Error('describe_tool(name): name must be the name of a managed tool, as a string.');
    const t = this.byName.get(a.name) ?? this.byPython.get(a.name);
    if (!t) {
      const near = this.getIndex()
        .search(a.name.slice(0, MAX_QUERY_CHARS), 5)
        .map((h) => h.name);
      throw new Error(
        `No managed tool is named ${JSON.stringify(a.name.slice(0, 100))}.${near.length ? ` Closest: ${near.join(', ')}.` : ''} Use search_tools("what you need") to find one.`,
      );
    }
    const description = clip(t.description, 4000);
    const out: Record<string, unknown> = { name: t.name, description, group: toolGroup(t), signature: signatureText(t.name, toolParams(t)) };
    const returns = returnsSummary(t.outputSchema);
    if (returns) out.returns = returns;
    out.approval = t.approval;
    out.input_schema = boundedSchema(t.inputSchema);
    out.output_schema = boundedSchema(t.outputSchema);
    return out;
  }

  catalog(): ToolCatalog {
    this.cachedCatalog ??= buildToolCatalog(this.tools, { reserved: { ...RESERVED_CALLS } });
    return this.cachedCatalog;
  }
}
