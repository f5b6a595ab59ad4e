/**
 * The tools the model sees. `execute_tool_code` runs Python that may call the workspace's managed tools;
 * `execute_code` runs plain Python with no bridge to the host.
 */
import type { JsonSchema } from '../../common/tools';
import type { ManagedTool } from '../gateway/gateway';

export interface ModelToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export const EXECUTE_TOOL_CODE = 'execute_tool_code';
export const EXECUTE_CODE = 'execute_code';

const CODE_PARAMETERS = {
  type: 'object',
  properties: {
    code: { type: 'string', description: 'Python 3 source to run. Top-level await and return are allowed.' },
  },
  required: ['code'],
  additionalProperties: false,
};

function schemaText(schema: JsonSchema | undefined): string {
  return schema === undefined ? 'not declared' : JSON.stringify(schema);
}

export interface CodeToolContext {
  runtime?: 'local' | 'jupyter' | string;
  /** Runs of this conversation share one session (a local Python session or a Jupyter kernel). */
  persistent?: boolean;
  maxConcurrency?: number;
}

function stateSentence(ctx: CodeToolContext): string {
  if (!ctx.persistent) return 'Each run starts from scratch: no variables, files or installs survive between runs.';
  return ctx.runtime === 'jupyter'
    ? 'Runs share one Jupyter kernel per conversation: variables, imports and functions from earlier runs are still defined.'
    : 'Runs of this conversation share one Python session: variables, imports, functions and files in the working directory from earlier runs are still there. ' +
        'If the session was restarted, the run\'s stderr starts with a [codeact] note saying that earlier variables are gone.';
}

function where(ctx: CodeToolContext): string {
  if (ctx.runtime === 'jupyter') return 'in a Jupyter kernel';
  return ctx.persistent ? "in this conversation's isolated Python session" : 'in a fresh, isolated process';
}

export function executeToolCodeSpec(tools: ManagedTool[], ctx: CodeToolContext = {}): ModelToolSpec {
  const sorted = [...tools].sort((a, b) => a.name.localeCompare(b.name));
  const lines = [
    `Run Python 3 ${where(ctx)} and get back its printed output and its return value.`,
    '',
    'Inside the code, the only way to reach the outside world is the async function',
    '`await call_tool(name, **arguments)`. It calls one of the managed tools listed below on the host, which',
    'checks the arguments against the tool\'s input schema before the tool runs, and returns the tool\'s JSON result',
    '(dicts, lists, strings, numbers). If the tool is unknown, the arguments are invalid, the user denies the call, or',
    'the tool fails, call_tool raises RuntimeError with the reason; catch it to recover or let it fail the run.',
    `Independent calls run concurrently with \`await asyncio.gather(call_tool(...), call_tool(...))\` (up to ${ctx.maxConcurrency ?? 8} at a time).`,
    '',
    'Conventions: top-level `await` and `return` work. `return` a JSON-serialisable value (dict, list, str, number,',
    'bool, None) as the result; print() only what a person should read. ' + stateSentence(ctx),
    ctx.runtime === 'jupyter' ? 'The kernel may have no network access.' : `The working directory ${ctx.persistent ? 'is a private folder of the session' : 'is an empty temporary folder'}; there may be no network.`,
    'Prefer one script that does the whole job (loops, filtering, aggregation) over many small runs.',
    '',
  ];
  if (sorted.length === 0) {
    lines.push('No managed tools are declared in this workspace, so call_tool will always fail.');
  } else {
    lines.push(`Managed tools (${sorted.length}):`);
    for (const t of sorted) {
      lines.push('', `- ${t.name}: ${t.description || '(no description)'}`);
      lines.push(`  input schema: ${schemaText(t.inputSchema)}`);
      lines.push(`  output schema: ${schemaText(t.outputSchema)}`);
    }
  }
  return { name: EXECUTE_TOOL_CODE, description: lines.join('\n'), parameters: CODE_PARAMETERS };
}

export function executeCodeSpec(ctx: CodeToolContext = {}): ModelToolSpec {
  return {
    name: EXECUTE_CODE,
    description:
      `Run Python 3 ${where(ctx)} and get back its printed output and its return value. ` +
      'Top-level await and return work; return a JSON-serialisable value. There is no access to tools, and there may be no network. ' +
      stateSentence(ctx),
    parameters: CODE_PARAMETERS,
  };
}

/** The function definition for a managed tool offered to the model directly (`expose: "direct"` or `"both"`). */
export function directToolSpec(tool: ManagedTool): ModelToolSpec {
  const params = typeof tool.inputSchema === 'object' ? { ...tool.inputSchema } : { type: 'object', properties: {} };
  delete (params as Record<string, unknown>).$schema;
  return { name: tool.name, description: tool.description || tool.name, parameters: params };
}
