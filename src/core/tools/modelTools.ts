/**
 * The tools the model sees. `execute_tool_code` runs Python that may call the workspace's managed tools;
 * `execute_code` runs plain Python with no bridge to the host.
 */
import type { JsonSchema } from '../../common/tools';
import { oneLine, toolGroup } from '../gateway/discovery/toolCatalog';
import { noManagedTools, type DeclarationError, type ManagedTool } from '../gateway/toolSet';
import { DEFAULT_OUTPUT_CHARS, MIN_OUTPUT_CHARS } from '../../common/outputBudget';
import { ourRuntimeOf, type RuntimeKind } from '../../common/runtimes';

interface ModelToolSpec {
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

interface CodeToolContext {
  /** Where the code runs; what the model is told of it is the runtime's (common/runtimes.ts). Default: the local guest. */
  runtime?: RuntimeKind;
  /** Runs of this conversation share one session (a local Python session or a Jupyter kernel). */
  persistent?: boolean;
  maxConcurrency?: number;
  /** Most tools listed with their schemas (codeact.toolDiscovery.inlineLimit); default DEFAULT_INLINE_LIMIT. */
  inlineLimit?: number;
  /** The model sees the images the code shows (they are attached to the result). */
  seesImages?: boolean;
  /** The output budget (codeact.outputs.modelChars); default DEFAULT_OUTPUT_CHARS. */
  outputChars?: number;
  /** A later run of the session reads a run's whole output with output_of(n) / last_output(). */
  keepsOutputs?: boolean;
  /** The code may call `install_packages` (a local session whose host can install, with the user's approval). */
  installs?: boolean;
  /** The declarations that could not be loaded (said when no tool is usable). */
  unusable?: readonly DeclarationError[];
  /** Background jobs one session may run at once (codeact.jobs.maxPerSession); 0 turns them off. Default: on. */
  maxJobs?: number;
}

/** What the model is told of background jobs (execute_tool_code's `background`), where a session runs them. */
const JOBS_SENTENCE =
  'Long work can run in the background: `"background": true` returns `{"job": n, "status": "running"}` at once, and the ' +
  'conversation and later runs go on. A job is a fork of the session: it sees every variable, keeps what it assigns, and ' +
  '`return`s its value. Later runs: `jobs()`, `wait_job(n, timeout=60)` (its status, then value or error), `job_output(n)` ' +
  '(a long one keeps its start and end), `stop_job(n)` (with every process it started). A job may `await call_tool(...)`; ' +
  'an approval it needs waits for the person. Your next step is told once when a job ends.';

/** What the model is told where the person turned background jobs off. */
export const JOBS_OFF = 'Background jobs are turned off here (codeact.jobs.maxPerSession is 0): run long work in the foreground.';

/** Where the conversation's session runs background jobs; else what the model is told instead. */
export function jobsAvailable(ctx: Pick<CodeToolContext, 'runtime' | 'persistent' | 'maxJobs'>): true | { unavailable: string } {
  const jobs = ourRuntimeOf(ctx.runtime).jobs;
  if (jobs !== true) return jobs;
  if (!ctx.persistent) return { unavailable: 'Background jobs are not available here: each run starts from scratch, and a job needs a session.' };
  return ctx.maxJobs === 0 ? { unavailable: JOBS_OFF } : true;
}

/** The code tools' parameters: `background` only where jobs run. */
function codeParameters(ctx: CodeToolContext): Record<string, unknown> {
  if (jobsAvailable(ctx) !== true) return CODE_PARAMETERS;
  const background = { type: 'boolean', description: 'Run as a background job of the session: returns its job number at once (see the description).' };
  return { ...CODE_PARAMETERS, properties: { ...CODE_PARAMETERS.properties, background } };
}

function jobsSentence(ctx: CodeToolContext): string {
  const jobs = jobsAvailable(ctx);
  return jobs === true ? JOBS_SENTENCE : jobs.unavailable;
}

/** What the model is told of `install_packages` (in the description of execute_tool_code). */
const INSTALL_SENTENCE =
  'A missing package: `await install_packages(["name", "other>=2"])` installs it into the session\'s Python once the user approves (names and versions only); then import it.';

/** The default of codeact.toolDiscovery.inlineLimit (src/core/config/keys.ts reads it here). */
export const DEFAULT_INLINE_LIMIT = 20;
/**
 * Token budget of the tool listing: above it the schemas are left out even under the inline limit, and
 * the short listing shortens its descriptions to stay within it.
 */
const INLINE_TOKEN_BUDGET = 6000;

/**
 * Token budget of the short listing (names and one-line descriptions): descriptions are cut to the
 * widest length that fits, down to 24 characters, then left out (names only).
 */
export const COMPACT_TOKEN_BUDGET = 4500;

/** Rough token estimate of a text (about 4 characters a token, as the OpenAI-compatible context check). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Every tool with its description and schemas, as listed at or under the inline limit. */
export function inlineToolLines(sorted: ManagedTool[]): string[] {
  const lines = [`Managed tools (${sorted.length}):`];
  for (const t of sorted) {
    lines.push('', `- ${t.name}: ${t.description || '(no description)'}`);
    lines.push(`  input schema: ${schemaText(t.inputSchema)}`);
    lines.push(`  output schema: ${schemaText(t.outputSchema)}`);
  }
  return lines;
}

/** True when every tool is listed with its schemas: at most `limit` tools and within INLINE_TOKEN_BUDGET. */
export function listsSchemasInline(tools: readonly ManagedTool[], limit = DEFAULT_INLINE_LIMIT): boolean {
  if (tools.length > limit) return false;
  return estimateTextTokens(inlineToolLines([...tools]).join('\n')) <= INLINE_TOKEN_BUDGET;
}

/**
 * Names and one-line descriptions grouped by source (an MCP server, command tools…), within
 * COMPACT_TOKEN_BUDGET: descriptions get shorter as the set grows, down to names alone.
 */
function compactToolLines(sorted: readonly ManagedTool[]): string[] {
  const groups = new Map<string, ManagedTool[]>();
  for (const t of sorted) {
    const g = toolGroup(t);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g)!.push(t);
  }
  const render = (width: number): string[] => {
    const lines: string[] = [];
    for (const [group, tools] of [...groups].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      lines.push('', `${group} (${tools.length}):`);
      if (width === 0) lines.push(tools.map((t) => t.name).join(', '));
      else for (const t of tools) lines.push(`- ${t.name}${t.description ? `: ${oneLine(t.description, width)}` : ''}`);
    }
    return lines;
  };
  const fits = (width: number): boolean => estimateTextTokens(render(width).join('\n')) <= COMPACT_TOKEN_BUDGET;
  if (fits(100)) return render(100);
  if (!fits(24)) return render(0);
  // The widest description that fits (a bisection: at most 7 renders).
  let lo = 24;
  let hi = 100;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return render(lo);
}

function discoveryLines(count: number): string[] {
  return [
    `Managed tools: ${count}, too many to describe here, so only their names and one-line descriptions are listed, grouped by source.`,
    'Look a tool up before you call it:',
    '- `await search_tools("what you need", limit=10)` returns the best matches: name, description, Python signature and a summary of the result;',
    '- `await describe_tool("name")` returns one tool\'s full input and output JSON schemas;',
    "- `from tools import name` gives an async function with the tool's real signature (keyword arguments only): `await name(arg=value)`.",
    '  A wrong or missing keyword raises TypeError before anything is sent. `await call_tool("name", **arguments)` works as well.',
  ];
}

function stateSentence(ctx: CodeToolContext): string {
  if (!ctx.persistent) return 'Each run starts from scratch: no variables, files or installs survive between runs.';
  return ourRuntimeOf(ctx.runtime).model.state;
}

/** What reaches the user (and the model) besides the printed output and the value. */
function outputsSentence(ctx: CodeToolContext): string {
  return (
    'The user sees rich output: `display(obj)` (defined without an import), matplotlib figures (`plt.show()`, and any figure still ' +
    'open when the code ends) and a last bare expression that is not a JSON value (a DataFrame, an image) are shown to the user as ' +
    "plots, images, tables, HTML or Markdown. The result lists each display as text: a table's shape, columns and first rows, " +
    '"[image 640×480, PNG]" for an image' +
    (ctx.seesImages
      ? '; the images themselves are attached to the result, so you can look at a plot and improve it.'
      : '. You cannot see the images yourself: print or return the numbers you need to check.') +
    ' Files the code writes in the working directory are given to the user; the result lists them under "files" with their size.'
  );
}

/** The output budget, and how to read what it left out. */
function budgetSentence(ctx: CodeToolContext): string {
  const chars = Math.max(MIN_OUTPUT_CHARS, ctx.outputChars ?? DEFAULT_OUTPUT_CHARS).toLocaleString('en-US');
  return (
    `Results show at most ${chars} characters of output (stdout, stderr, error, displays and value together); longer output keeps ` +
    'its start and end around a note saying exactly what was left out' +
    (ctx.keepsOutputs
      ? '. A later run reads a run\'s whole output with `output_of(n)` (n: its result\'s "execution"; `output_of(n, "stderr")`, `last_output()`).'
      : ': print less, or summarise in code.')
  );
}

function where(ctx: CodeToolContext): string {
  return ourRuntimeOf(ctx.runtime).model.place(!!ctx.persistent);
}

export function executeToolCodeSpec(tools: ManagedTool[], ctx: CodeToolContext = {}): ModelToolSpec {
  const sorted = [...tools].sort((a, b) => a.name.localeCompare(b.name));
  const lines = [
    `Run Python 3 ${where(ctx)} and get back its printed output and its return value.`,
    '',
    'Inside the code, the only way to reach the outside world is the async function',
    '`await call_tool(name, **arguments)`. It calls one of the managed tools listed below on the host, which',
    "checks the arguments against the tool's input schema before the tool runs, and returns the tool's JSON result",
    '(dicts, lists, strings, numbers). If the tool is unknown, the arguments are invalid, the user denies the call, or',
    'the tool fails, call_tool raises RuntimeError with the reason; catch it to recover or let it fail the run.',
    `Independent calls run concurrently with \`await asyncio.gather(call_tool(...), call_tool(...))\` (up to ${ctx.maxConcurrency ?? 8} at a time).`,
    '',
    'Conventions: top-level `await` and `return` work. `return` a JSON-serialisable value (dict, list, str, number,',
    'bool, None) as the result; print() only what a person should read. ' + stateSentence(ctx),
    ourRuntimeOf(ctx.runtime).model.network(!!ctx.persistent),
    outputsSentence(ctx),
    budgetSentence(ctx),
    ...(ctx.installs ? [INSTALL_SENTENCE] : []),
    jobsSentence(ctx),
    'Prefer one script that does the whole job (loops, filtering, aggregation) over many small runs.',
    '',
  ];
  if (sorted.length === 0) {
    lines.push(`${noManagedTools(ctx.unusable ?? [])} call_tool has nothing to call in this run.`);
  } else if (listsSchemasInline(sorted, ctx.inlineLimit)) {
    lines.push(...inlineToolLines(sorted));
  } else {
    lines.push(...discoveryLines(sorted.length), ...compactToolLines(sorted));
  }
  return { name: EXECUTE_TOOL_CODE, description: lines.join('\n'), parameters: codeParameters(ctx) };
}

export function executeCodeSpec(ctx: CodeToolContext = {}): ModelToolSpec {
  return {
    name: EXECUTE_CODE,
    description:
      `Run Python 3 ${where(ctx)} and get back its printed output and its return value. ` +
      'Top-level await and return work; return a JSON-serialisable value. There is no access to tools, and there may be no network. ' +
      stateSentence(ctx) +
      ' ' +
      outputsSentence(ctx) +
      ' ' +
      budgetSentence(ctx) +
      ' ' +
      jobsSentence(ctx),
    parameters: codeParameters(ctx),
  };
}

/** The function definition for a managed tool offered to the model directly (`expose: "direct"` or `"both"`). */
export function directToolSpec(tool: ManagedTool): ModelToolSpec {
  const params = typeof tool.inputSchema === 'object' ? { ...tool.inputSchema } : { type: 'object', properties: {} };
  delete (params as Record<string, unknown>).$schema;
  return { name: tool.name, description: tool.description || tool.name, parameters: params };
}
