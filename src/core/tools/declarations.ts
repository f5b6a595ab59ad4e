/**
 * Turns `codeact.tools` declarations into managed tools. Each invalid declaration is reported on its
 * own, with its index and name; the valid ones still work.
 */
import { clip } from '../../common/format';
import { formatDeclarationProblem, TOOL_NAME_PATTERN, TOOL_SOURCE_KINDS, type DeclarationProblem, type ToolDeclaration } from '../../common/tools';
import { decideApproval, type ToolApprovalFacts } from '../gateway/approvalPolicy';
import { compileSchema, SchemaError } from '../gateway/schema';
import type { DeclarationError, ManagedTool, ToolSet } from '../gateway/toolSet';
import { resolveTools, TOOL_SOURCES, type DeclarationContext } from './toolSources';

const DEFAULT_INPUT_SCHEMA = { type: 'object', additionalProperties: false, properties: {} };

/** The problems of a declaration's own fields (formatDeclarationProblem words them); the tests compare against these. */
export const DECLARATION_PROBLEMS = {
  notAnObject: (shown: string): DeclarationProblem => ({
    reason: `The declaration ${shown} is not an object`,
    fix: 'write an object with "name", "description", "inputSchema" and one source, for example {"name": "search", "command": ["python3", "tools/search.py"]}',
  }),
  missingName: { field: 'name', reason: 'is missing', fix: 'give the tool a name, for example "name": "search_orders"' } satisfies DeclarationProblem,
  invalidName: (value: string): DeclarationProblem => ({
    field: 'name',
    value,
    reason: 'is not a valid tool name',
    fix: 'start with a letter and use only letters, digits, "_" and "-" (at most 64 characters), for example "search_orders"',
  }),
  declaredTwice: (value: string, first: number): DeclarationProblem => ({
    field: 'name',
    value,
    reason: `is declared twice (also at codeact.tools[${first}])`,
    fix: 'rename one of them',
  }),
  noSource: {
    reason: 'The declaration has no source',
    fix: `give exactly one of ${TOOL_SOURCE_KINDS.map((s) => `"${s}"`).join(', ')}`,
  } satisfies DeclarationProblem,
  twoSources: (sources: readonly string[]): DeclarationProblem => ({
    reason: `The declaration has two sources (${sources.join(' and ')})`,
    fix: 'keep exactly one',
  }),
  notText: (value: string): DeclarationProblem => ({ field: 'description', value, reason: 'is not text', fix: 'write the description as a string' }),
};

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
      const problem = DECLARATION_PROBLEMS.notAnObject(clip(JSON.stringify(decl) ?? String(decl), 80));
      errors.push({ index, message: formatDeclarationProblem(problem), problems: [problem] });
      return;
    }
    const d = decl as ToolDeclaration;
    const name = typeof d.name === 'string' ? d.name : undefined;
    if (d.name === undefined) problems.push(DECLARATION_PROBLEMS.missingName);
    else if (!name || !TOOL_NAME_PATTERN.test(name)) problems.push(DECLARATION_PROBLEMS.invalidName(clip(JSON.stringify(d.name), 80)));
    else if (seen.has(name)) problems.push(DECLARATION_PROBLEMS.declaredTwice(JSON.stringify(name), seen.get(name)!));
    const sources = TOOL_SOURCE_KINDS.filter((s) => d[s] !== undefined);
    if (sources.length === 0) problems.push(DECLARATION_PROBLEMS.noSource);
    if (sources.length > 1) problems.push(DECLARATION_PROBLEMS.twoSources(sources));
    if (d.description !== undefined && typeof d.description !== 'string') problems.push(DECLARATION_PROBLEMS.notText(clip(JSON.stringify(d.description), 80)));
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
    // The source kind checks its field, and builds the tool of a declaration nothing is wrong with (./toolSources).
    const kind = sources.length === 1 ? TOOL_SOURCES[sources[0]] : undefined;
    kind?.check(d, say, ctx);
    const made = kind && problems.length === 0 ? kind.build({ decl: d, name: name!, index, approval, ctx }) : undefined;
    if (typeof made === 'string') say(made);
    const invoke = typeof made === 'object' && 'invoke' in made ? made.invoke : undefined;
    const external = typeof made === 'object' && 'tool' in made ? made.tool : undefined;
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

/**
 * `loadTools`, then `resolveTools`: `mcp` declarations that leave out `description`,
 * `inputSchema` or `outputSchema` get the server's, and tools whose server does not start or lacks
 * the tool move to `errors`. This starts the servers it needs (in `ctx.mcpPool`, or the default pool).
 */
export async function loadToolsAsync(raw: unknown, ctx: DeclarationContext & { signal?: AbortSignal }): Promise<ToolSet> {
  return resolveTools(loadTools(raw, ctx), { signal: ctx.signal });
}
