/**
 * The tool gateway: the trust boundary between guest code and the host. Only allowlisted tools run;
 * arguments are capped in size, depth and key count, then validated before a tool is invoked, and
 * results after; the approval policy applies; every call is recorded as a short summary. Guest input
 * is untrusted: names and arguments are checked, never trusted.
 */
import { clip } from '../../common/format';
import { INSTALL_PACKAGES, isDiscoveryCall, type ApprovalPolicy } from '../../common/tools';
import { decideApproval, factsOf } from './approvalPolicy';
import type { ToolCallHandler, ToolCallRequest } from '../runtime/types';
import type { ToolCatalog } from './discovery/toolCatalog';
import { ToolDiscovery } from './discovery/toolDiscovery';
import { ARGUMENT_LIMITS, measureShape, preview, type ShapeLimits } from './limits';
import { MAX_VALUE_DEPTH } from '../../common/jsonShape';
import { BudgetExceeded, compileSchema, type Validator } from './schema';
import { formatDeclarationError, type DeclarationError, type ManagedTool } from './toolSet';
import { CodeActError } from '../util/errors';
import { pausedTime } from '../util/timeout';
import type { ElicitationPrompt, Elicitor } from '../../common/elicitation';

/**
 * What the gateway keeps of one call: a bounded summary, never the whole arguments or result, so
 * memory stays flat however many calls a session makes and however large they are.
 */
interface ToolCallSummary {
  call_id: string;
  name: string;
  ok: boolean;
  /** The error message, cut to {@link SUMMARY_TEXT} characters. */
  error?: string;
  code?: ToolError['code'];
  /** About the size of the arguments as JSON (a lower bound when a cap refused them). */
  argument_bytes: number;
  /** Size of the result as JSON; 0 when there is none. */
  result_bytes: number;
  /** The start of the arguments as JSON, at most {@link SUMMARY_TEXT} characters. */
  arguments_preview: string;
  /** The start of the result as JSON, at most {@link SUMMARY_TEXT} characters. */
  output_preview?: string;
  duration_ms: number;
  started_at: number;
  ended_at: number;
}

/** Longest text kept in a summary. */
const SUMMARY_TEXT = 200;
/** Summaries kept by default (the newest). */
const MAX_RECORDS = 200;

/** Caps on a tool's result, checked before it is serialised or validated (its size: `maxResultBytes`). */
const RESULT_SHAPE = { maxDepth: MAX_VALUE_DEPTH, maxKeys: 250_000 };

/** What the gateway tells the code when it refuses a call: one wording, which the tests compare against. */
export const REFUSALS = {
  unknownTool: (name: string) => `Unknown tool "${name}".`,
  allowedTools: (names: readonly string[]) => `Allowed tools: ${names.join(', ')}.`,
  invalidArguments: (name: string) => `Invalid arguments for "${name}":`,
  notKeywordArguments: (name: string) => `${REFUSALS.invalidArguments(name)} $ must be an object of keyword arguments.`,
  deniedByPolicy: (name: string) => `The tool "${name}" is denied by its approval policy`,
  nobodyCanApprove: (name: string) =>
    `The tool "${name}" needs approval, and nobody can approve it here. Run it in a terminal (the CLI then asks) or in VS Code, or set its "approval" to "auto".`,
  didNotRun: (name: string, unanswered: string) => `The call to "${name}" did not run (${unanswered}).`,
  userDenied: (name: string) => `The user denied the call to "${name}".`,
};

export interface ApprovalRequest {
  tool: ManagedTool;
  arguments: Record<string, unknown>;
  itemId: string;
  callId: string;
  signal: AbortSignal;
  /** The session's background job that asks (the call came from `call_tool` in job n), if not the execution itself. */
  job?: number;
}

/**
 * What came of asking: allowed, denied by the person, or no answer at all (the run ended while the question was
 * open: Stop, the conversation closed), with what happened ("no answer: the run was stopped"). No answer is
 * never recorded as the person's "deny".
 */
export type ApprovalOutcome = 'allowed' | 'denied' | { unanswered: string };

/**
 * Decides an `ask` call. Implemented by the extension (a card or a modal). While it waits, the run's clock is
 * paused: the wait counts neither against the run's timeout nor in the call's duration.
 */
export type Approver = (request: ApprovalRequest) => Promise<ApprovalOutcome>;

export interface GatewayOptions {
  approver?: Approver;
  /** Asks the person what a tool's MCP server elicits (a form); without it, elicitations are declined. */
  elicitor?: Elicitor;
  /** Overrides per tool (for example "Allow for this session"); `deny` always wins over everything. */
  policyOverride?: (tool: ManagedTool) => ApprovalPolicy | undefined;
  log?: (line: string) => void;
  onRecord?: (record: ToolCallSummary) => void;
  /** Largest result accepted from a tool, serialised; default 16 MiB. */
  maxResultBytes?: number;
  /** Caps on arguments, checked before validation; defaults in {@link ARGUMENT_LIMITS}. */
  argumentLimits?: Partial<ShapeLimits>;
  /**
   * The guest's `install_packages` (the reserved call `codeact.install_packages`; core/runtime/install), which
   * asks the person itself; absent: the call is refused with `installUnavailable` or a default reason.
   */
  installer?: ToolCallHandler;
  installUnavailable?: string;
  /** How many call summaries {@link ToolGateway.records} keeps (the newest); default {@link MAX_RECORDS}. */
  maxRecords?: number;
  /**
   * The declarations that could not be loaded (the tool set's `errors`: a server that refused the sign-in or
   * lacks the tool, a declaration that does not validate): a call of one of them says which and why.
   */
  unusable?: readonly DeclarationError[];
}

export class ToolError extends CodeActError {
  readonly category = 'tool' as const;
  constructor(
    message: string,
    readonly code: 'unknown_tool' | 'invalid_arguments' | 'invalid_result' | 'denied' | 'no_answer' | 'failed',
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

interface Entry {
  tool: ManagedTool;
  input: Validator;
  output?: Validator;
}

export class ToolGateway {
  private readonly entries = new Map<string, Entry>();
  /** Summaries of the latest calls, oldest first (at most `maxRecords`). */
  readonly records: ToolCallSummary[] = [];
  private readonly argumentLimits: ShapeLimits;

  constructor(
    tools: ManagedTool[],
    private readonly options: GatewayOptions = {},
  ) {
    this.argumentLimits = { ...ARGUMENT_LIMITS, ...options.argumentLimits };
    for (const tool of tools) {
      this.entries.set(tool.name, {
        tool,
        input: compileSchema(tool.inputSchema),
        output: tool.outputSchema === undefined ? undefined : compileSchema(tool.outputSchema),
      });
    }
  }

  names(): string[] {
    return [...this.entries.keys()].sort();
  }

  tools(): ManagedTool[] {
    return this.names().map((n) => this.entries.get(n)!.tool);
  }

  /** The declarations that could not be loaded, and why. */
  unusable(): readonly DeclarationError[] {
    return this.options.unusable ?? [];
  }

  get(name: string): ManagedTool | undefined {
    return this.entries.get(name)?.tool;
  }

  /**
   * Pass this as the runtime's `onToolCall`. Reserved discovery names (`codeact.search_tools`,
   * `codeact.describe_tool`, `codeact.tool_catalog`) are answered from the tool list (see ./discovery/toolDiscovery);
   * every other name is a managed-tool call.
   */
  readonly handler: ToolCallHandler = (request, signal) =>
    request.name === INSTALL_PACKAGES ? this.install(request, signal) : isDiscoveryCall(request.name) ? this.discover(request) : this.call(request, signal);

  /** The code's `install_packages` can install here (an installer is set). */
  get installs(): boolean {
    return this.options.installer !== undefined;
  }

  /** `install_packages`: the installer's own checks and approval; recorded like a tool call. */
  private install(request: ToolCallRequest, signal: AbortSignal): Promise<unknown> {
    return this.recorded(request, () => {
      const installer = this.options.installer;
      if (!installer) {
        throw new ToolError(
          this.options.installUnavailable ??
            'install_packages is not available here (no local Python session to install into). Ask the user to install the packages.',
          'denied',
        );
      }
      return installer(request, signal);
    });
  }

  private discovery?: ToolDiscovery;

  /** Answers a discovery call: no approval, no tool runs, not recorded as a tool call; bounded answers. */
  async discover(request: ToolCallRequest): Promise<unknown> {
    this.discovery ??= new ToolDiscovery(this.tools());
    const started = performance.now();
    try {
      return this.discovery.handle(String(request.name), request.arguments);
    } finally {
      this.options.log?.(`discovery ${request.name} in ${Math.round((performance.now() - started) * 100) / 100} ms`);
    }
  }

  /** The signature catalogue of the tools, for the guest's `tools` module (also served as `codeact.tool_catalog`). */
  catalog(): ToolCatalog {
    this.discovery ??= new ToolDiscovery(this.tools());
    return this.discovery.catalog();
  }

  call(request: ToolCallRequest, signal: AbortSignal): Promise<unknown> {
    return this.recorded(request, (facts) => this.run(request, signal, facts));
  }

  /** Runs one call and records it (its summary, timing and outcome), an error as a ToolError. */
  private async recorded(request: ToolCallRequest, run: (facts: CallFacts) => Promise<unknown>): Promise<unknown> {
    const facts: CallFacts = { startedAt: Date.now(), t0: performance.now(), argumentBytes: -1, resultBytes: 0, waitedMs: 0 };
    try {
      const output = await run(facts);
      this.record(request, facts, true, output);
      return output;
    } catch (err) {
      const error = err instanceof ToolError ? err : new ToolError(err instanceof Error ? err.message : String(err), 'failed');
      this.record(request, facts, false, undefined, error);
      throw error;
    }
  }

  private record(request: ToolCallRequest, facts: CallFacts, ok: boolean, output: unknown, error?: ToolError): void {
    const name = String(request.name).slice(0, SUMMARY_TEXT);
    const rec: ToolCallSummary = {
      call_id: String(request.callId).slice(0, SUMMARY_TEXT),
      name,
      ok,
      argument_bytes: Math.max(0, facts.argumentBytes),
      result_bytes: facts.resultBytes,
      // The measured size lets a small value be serialised whole; a refused value's size is only a lower bound.
      arguments_preview: preview(request.arguments, SUMMARY_TEXT, facts.argumentBytes < 0 || facts.argumentsCapped ? undefined : facts.argumentBytes),
      duration_ms: Math.round((performance.now() - facts.t0 - facts.waitedMs) * 100) / 100,
      started_at: facts.startedAt,
      ended_at: Date.now(),
    };
    // Assigned, not spread: this runs once per call, and spreading is the costliest part of it.
    if (error) {
      rec.error = clip(error.message, SUMMARY_TEXT);
      rec.code = error.code;
    }
    if (ok) rec.output_preview = preview(output ?? null, SUMMARY_TEXT, facts.resultBytes);
    const max = Math.max(1, this.options.maxRecords ?? MAX_RECORDS);
    this.records.push(rec);
    if (this.records.length > max) this.records.splice(0, this.records.length - max);
    this.options.onRecord?.(rec);
    this.options.log?.(`tool ${name} ${ok ? 'ok' : 'error'} in ${rec.duration_ms} ms${error ? `: ${rec.error}` : ''}`);
  }

  /** Why `name` cannot be called: its declaration could not be loaded (which, and why), or no declaration has it. */
  private unknownTool(name: string): string {
    const unusable = this.unusable();
    const own = unusable.filter((e) => e.name === name);
    if (own.length) {
      return `The tool "${name}" is declared but could not be loaded, so it cannot be called in this run: ${own.map(formatDeclarationError).join(' ')} Fix what it says (in codeact.tools in .vscode/settings.json, or on the server), then run again.`;
    }
    const allowed = this.names();
    const broken = unusable.filter((e) => e.name);
    const notLoaded = broken.length
      ? ` Declared but not loaded: ${broken
          .slice(0, 20)
          .map((e) => `"${e.name}"`)
          .join(', ')}${broken.length > 20 ? ` and ${broken.length - 20} more` : ''} (calling one says why).`
      : '';
    if (allowed.length) return `${REFUSALS.unknownTool(name)} ${REFUSALS.allowedTools(allowed)}${notLoaded}`;
    if (unusable.length)
      return `${REFUSALS.unknownTool(name)} No managed tool could be loaded: ${unusable.length} declaration${unusable.length === 1 ? '' : 's'} in codeact.tools failed.${notLoaded}`;
    return `${REFUSALS.unknownTool(name)} No managed tools are declared (codeact.tools in .vscode/settings.json).`;
  }

  private async run(request: ToolCallRequest, signal: AbortSignal, facts: CallFacts): Promise<unknown> {
    const name = typeof request.name === 'string' ? request.name : String(request.name);
    const entry = this.entries.get(name);
    if (!entry) throw new ToolError(this.unknownTool(name), 'unknown_tool');
    const args = request.arguments;
    if (!args || typeof args !== 'object' || Array.isArray(args)) {
      throw new ToolError(REFUSALS.notKeywordArguments(name), 'invalid_arguments');
    }
    const shape = measureShape(args, this.argumentLimits);
    facts.argumentBytes = shape.bytes;
    if (shape.problem) {
      facts.argumentsCapped = true;
      throw new ToolError(
        `Arguments for "${name}" are refused before validation: ${shape.problem}. Pass less data in one call (split it across several calls), or flatten it.`,
        'invalid_arguments',
      );
    }
    const problems = validate(entry.input, args, `The arguments for "${name}" are too costly to check against its input schema`);
    if (problems.length) throw new ToolError(`${REFUSALS.invalidArguments(name)} ${problems.join('; ')}.`, 'invalid_arguments');

    const { tool } = entry;
    // The one precedence table (gateway/approvalPolicy): the tool's facts, and the person's allowances now.
    const decision = decideApproval(factsOf(tool), this.options.policyOverride?.(tool));
    const policy: ApprovalPolicy = decision.policy;
    if (policy === 'deny') {
      this.options.log?.(`approval: ${name} denied by policy: ${decision.because}`);
      throw new ToolError(
        decision.tightened
          ? `The tool "${name}" is denied: ${decision.because}. To allow it, declare it in your user settings, or change your codeact.approval.default.`
          : `${REFUSALS.deniedByPolicy(name)} (${decision.because}). Change "approval" in codeact.tools to allow it.`,
        'denied',
      );
    }
    if (policy === 'ask') {
      this.options.log?.(`approval: ${name} asks: ${decision.because}`);
      if (!this.options.approver) {
        throw new ToolError(
          decision.tightened
            ? `The tool "${name}" needs approval (${decision.because}), and nobody can approve it here. Run it in a terminal (the CLI then asks) or in VS Code, or declare it in your user settings.`
            : REFUSALS.nobodyCanApprove(name),
          'denied',
        );
      }
      // The person's time is not the code's: the run's clock and this call's duration stop while they decide.
      const resume = request.pause?.();
      const asked = performance.now();
      let answer: ApprovalOutcome;
      try {
        const job = request.job === undefined ? {} : { job: request.job };
        answer = await this.options.approver({
          tool,
          arguments: args as Record<string, unknown>,
          itemId: request.itemId,
          callId: request.callId,
          signal,
          ...job,
        });
      } finally {
        facts.waitedMs += performance.now() - asked;
        resume?.();
      }
      if (typeof answer === 'object') {
        this.options.log?.(`approval: ${name}: ${answer.unanswered}`);
        throw new ToolError(REFUSALS.didNotRun(name, answer.unanswered), 'no_answer');
      }
      this.options.log?.(`approval: ${name} ${answer} by the user`);
      if (answer === 'denied') throw new ToolError(REFUSALS.userDenied(name), 'denied');
    }
    if (signal.aborted) throw new ToolError('The run was stopped.', 'failed');
    // A form the tool's server asks the person to fill in waits like an approval: the clocks stop meanwhile.
    const waits = pausedTime(request.pause);
    const { elicitor } = this.options;
    const elicit =
      elicitor &&
      ((prompt: ElicitationPrompt, attributed: boolean) =>
        elicitor({
          ...prompt,
          itemId: request.itemId,
          ...(attributed ? { tool: name, callId: request.callId } : {}),
          ...(request.job === undefined ? {} : { job: request.job }),
        }));
    let output: unknown;
    try {
      output = await tool.invoke(args as Record<string, unknown>, { signal, callId: request.callId, pause: waits.pause, ...(elicit ? { elicit } : {}) });
    } finally {
      facts.waitedMs += waits.pausedMs();
    }
    if (output === undefined) return null;
    const max = this.options.maxResultBytes ?? 16 * 1024 * 1024;
    const resultShape = measureShape(output, { ...RESULT_SHAPE, maxBytes: max });
    if (resultShape.problem) throw new ToolError(`The result of "${name}" is refused: ${resultShape.problem}.`, 'invalid_result');
    const size = Buffer.byteLength(JSON.stringify(output));
    facts.resultBytes = size;
    if (size > max)
      throw new ToolError(`The tool "${name}" returned ${size.toLocaleString('en-US')} bytes; the limit is ${max.toLocaleString('en-US')}.`, 'invalid_result');
    if (entry.output) {
      const bad = validate(entry.output, output, `The result of "${name}" is too costly to check against its output schema`, 'invalid_result');
      if (bad.length) throw new ToolError(`The tool "${name}" returned an invalid result: ${bad.join('; ')}.`, 'invalid_result');
    }
    return output;
  }
}

/**
 * What a call's record needs to know. `argumentBytes` is -1 until the arguments were measured; when they
 * passed a cap it is only a lower bound (the measure stopped there), and `argumentsCapped` says so.
 */
interface CallFacts {
  startedAt: number;
  t0: number;
  argumentBytes: number;
  argumentsCapped?: boolean;
  resultBytes: number;
  waitedMs: number;
}

/** Runs a validator; a value that would exceed the validation budget is refused with `what`. */
function validate(validator: Validator, value: unknown, what: string, code: ToolError['code'] = 'invalid_arguments'): string[] {
  try {
    return validator(value);
  } catch (err) {
    if (err instanceof BudgetExceeded) throw new ToolError(`${what}: ${err.message}. Send smaller or simpler data.`, code);
    throw err;
  }
}
