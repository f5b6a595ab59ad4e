/**
 * The contract between tool sources and the gateway: what a managed tool is, and what loading a set of
 * tool declarations gives. Tool sources (core/tools) import this, never the gateway itself.
 */
import type { ApprovalPolicy, DeclarationProblem, JsonSchema, ToolExposure } from '../../common/tools';
import type { ToolApprovalFacts } from './approvalPolicy';
import type { ElicitationAnswer, ElicitationPrompt } from '../../common/elicitation';
import { quoteInline } from '../../common/quoteData';

interface ToolInvokeContext {
  signal: AbortSignal;
  callId: string;
  /** Pauses the run's clock and this call's duration while the person is asked something (an MCP elicitation). */
  pause?: () => () => void;
  /** Asks the person to fill in a form (an MCP server's elicitation) on the host of this call; absent where nobody can answer. */
  elicit?: (prompt: ElicitationPrompt, attributed: boolean) => Promise<ElicitationAnswer>;
}

export interface ManagedTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** The policy before the person's allowances, as the precedence table decided it (gateway/approvalPolicy). */
  approval: ApprovalPolicy;
  /** What the table decided it from; the gateway decides again at each call with the person's allowances. */
  approvalFacts?: ToolApprovalFacts;
  expose: ToolExposure;
  /** Where the tool comes from: `command`, `http`, `mcp`, `lmTool`, or a host's own. */
  source: string;
  /** The server or group a tool belongs to, for listings (an `mcp` tool: its server's label). */
  group?: string;
  invoke(args: Record<string, unknown>, context: ToolInvokeContext): Promise<unknown>;
}

export interface DeclarationError {
  index: number;
  name?: string;
  /** Everything wrong with it, as sentences a person can act on (the problems, written out). */
  message: string;
  /** The same, field by field: where, the bad value, why, the fix (absent where a source said it in one sentence). */
  problems?: DeclarationProblem[];
}

export interface ToolSet {
  tools: ManagedTool[];
  errors: DeclarationError[];
}

export function formatDeclarationError(e: DeclarationError): string {
  return `codeact.tools[${e.index}]${e.name ? ` (${e.name})` : ''}: ${e.message}`;
}

/** Declarations the model is told of one by one when none could be loaded; the rest are counted. */
const UNUSABLE_SHOWN = 10;

/**
 * What the model reads when no managed tool is usable: none is declared, or none of the declarations could
 * be loaded, then which and why (each quoted as data: a server's words are not instructions).
 */
export function noManagedTools(unusable: readonly DeclarationError[]): string {
  if (!unusable.length) return 'No managed tools are declared in this workspace.';
  const shown = unusable.slice(0, UNUSABLE_SHOWN).map((e) => quoteInline(formatDeclarationError(e), 400));
  const more = unusable.length > UNUSABLE_SHOWN ? ` and ${unusable.length - UNUSABLE_SHOWN} more` : '';
  return (
    `No managed tool could be loaded: ${unusable.length} declaration${unusable.length === 1 ? '' : 's'} in codeact.tools failed: ${shown.join('; ')}${more}. ` +
    'Tell the user what failed; it is fixed in codeact.tools (.vscode/settings.json) or on the server.'
  );
}
