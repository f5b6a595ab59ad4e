/**
 * The agent loop: a model turn, then the function calls it asked for (run in parallel through the
 * runtime and the gateway), then their results back to the model, until a final answer or `maxTurns`.
 *
 * Everything that happens is emitted in the shared event vocabulary. For `execute_tool_code` and
 * `execute_code` the code is streamed as plain text while the model writes it (the JSON arguments
 * are unescaped on the fly, ./codeStreams), so a code card fills in before the code runs. A turn that fails
 * retryably is tried again (./retries); what a run gathers is its RunState (./runState). A function the model
 * calls directly is announced and timed by the runtime's ToolDispatcher, as a call from the code is.
 *
 * A model without function calling gets the text protocol instead (./textProtocol): a provider wrapper,
 * chosen once per run, so its ```python blocks come back as `execute_tool_code` calls and run through the
 * same path.
 */
import type { AttachedImage, CodeActEvent, FunctionCallOutputItem, JobChanged } from '../../common/events';
import { MODES, type CodeMode } from '../../common/runtimes';
import { SETTINGS } from '../config/keys';
import type { ToolGateway } from '../gateway/gateway';
import { noManagedTools, type DeclarationError } from '../gateway/toolSet';
import { ProviderError } from '../providers/shared/errors';
import {
  DEFAULT_IMAGE_BUDGET,
  type ConversationItem,
  type FunctionCallRequest,
  type HostedOptions,
  type ImageBudget,
  type ModelTool,
  type Provider,
  type TurnRequest,
  type TurnResult,
} from '../providers/shared/types';
import { ToolDispatcher } from '../runtime/toolDispatcher';
import type { BeforeRun, Runtime } from '../runtime/types';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE, directToolSpec, executeCodeSpec, executeToolCodeSpec, jobsAvailable, listsSchemasInline } from '../tools/modelTools';
import { TextProtocolProvider, type AgentProtocol } from './textProtocol';
import { NOTHING_TO_COMPACT, budgetFor, type ContextBudget, type CompactionState } from './contextBudget';
import { executionImages, executionSummary, toolResultText, withinPixelCap } from './executionResult';
import { CodeStreams } from './codeStreams';
import { TurnRetries, type RetryPolicy, type Sleep, type TurnProvider } from './retries';
import { RunState, type AgentResult, type AgentStatus } from './runState';
import { newId } from '../util/ids';

export { executionSummary };
export type { AgentResult } from './runState';

type AgentMode = CodeMode;

/** What the system instruction says of each mode's way to run code (a new mode is asked for its line here). */
const MODE_INSTRUCTIONS: Record<AgentMode, (toolNames: string[], schemasInline: boolean, unusable: readonly DeclarationError[]) => string[]> = {
  toolCode: (toolNames, schemasInline, unusable) => [
    `Use the ${EXECUTE_TOOL_CODE} function: write one Python script that does the whole job, calling the workspace's managed tools with ` +
      '`await call_tool(name, **arguments)`, looping, filtering and aggregating in Python, and `return` a compact JSON result. ' +
      'Run independent tool calls concurrently with asyncio.gather. ' +
      (schemasInline
        ? "Read each tool's input and output schema in the function description and pass exactly the arguments it asks for."
        : 'Look tools up with search_tools and describe_tool (see the function description) and pass exactly the arguments they ask for.'),
    !toolNames.length
      ? noManagedTools(unusable)
      : schemasInline
        ? `Managed tools available: ${toolNames.join(', ')}.`
        : `${toolNames.length} managed tools are available; the ${EXECUTE_TOOL_CODE} description lists them by source.`,
  ],
  code: () => [`Use the ${EXECUTE_CODE} function to compute, parse and check things in Python; \`return\` a compact JSON result.`],
  hosted: () => ['Use your code execution sandbox to compute, analyse data and produce files.'],
};

/** The function each mode gives the model to run code with (none: the provider's sandbox runs it), and its spec. */
const MODE_CODE_TOOL: Record<AgentMode, { name: string; spec: typeof executeToolCodeSpec } | undefined> = {
  toolCode: { name: EXECUTE_TOOL_CODE, spec: executeToolCodeSpec },
  code: { name: EXECUTE_CODE, spec: (_tools, ctx) => executeCodeSpec(ctx) },
  hosted: undefined,
};

export interface AgentOptions {
  provider: Provider;
  model: string;
  runtime: Runtime;
  /** Sees each execution's code before it runs (code review: codeact.approval.reviewCode). */
  beforeRun?: BeforeRun;
  gateway: ToolGateway;
  mode?: AgentMode;
  /** Replaces the default system instruction. */
  system?: string;
  maxTurns?: number;
  /** Hosted mode: container reuse, memory limit, files, Anthropic tool version. */
  hosted?: Omit<HostedOptions, 'enabled'>;
  /** Groups executions of one conversation (a Jupyter kernel keeps its state across them). */
  sessionId?: string;
  /** Said to the model after the system instruction, e.g. that a reopened conversation's variables are gone. */
  sessionNote?: string;
  /** Whole-run timeout of each code execution. */
  executionTimeoutMs?: number;
  /** Background jobs one session may run at once (codeact.jobs.maxPerSession); 0: the model is told they are off. */
  maxJobs?: number;
  /** The runtime's bound on concurrent tool calls, as the model is told (default 8). */
  maxConcurrentToolCalls?: number;
  /**
   * `tools` (default): the model calls `execute_tool_code`. `text`: it writes ```python blocks instead
   * (models without function calling). A model whose server rejects `tools` switches to `text` by itself.
   */
  protocol?: AgentProtocol;
  /** Above this many managed tools, `execute_tool_code` lists names only (codeact.toolDiscovery.inlineLimit). */
  inlineToolLimit?: number;
  maxOutputTokens?: number;
  /** The model's context window in tokens; default: the provider's (settings, the server) or the catalogue's. */
  contextWindow?: number;
  /** codeact.context.compactAt: the share of the window (less the answer's room) where compaction starts. */
  compactAt?: number;
  /** Where an earlier compaction of this conversation left off (its last codeact.context.compacted event). */
  compaction?: CompactionState;
  /** The chat turn's id, for the codeact.context.compacted event. */
  turnId?: string;
  /**
   * The output budget (codeact.outputs.modelChars): the most characters of one result the model reads.
   * A longer one keeps its beginning and end, and says how much was left out. Default DEFAULT_OUTPUT_CHARS.
   */
  outputChars?: number;
  /**
   * Images in one request to a model that sees them (codeact.vision.maxImages / maxMB); also bounds the
   * images kept with each execution's result. Default DEFAULT_IMAGE_BUDGET.
   */
  images?: ImageBudget;
  retry?: Partial<RetryPolicy>;
  signal?: AbortSignal;
  onEvent?: (event: CodeActEvent) => void;
  /** Injected for tests; defaults to a timer that the signal cancels. */
  sleep?: Sleep;
  /** Saves the run's items the moment each is final (the turn journal: ./turnJournal). */
  journal?: (items: ConversationItem[]) => void;
}

export function defaultSystemInstruction(mode: AgentMode, toolNames: string[], schemasInline = true, unusable: readonly DeclarationError[] = []): string {
  const lines = ["You are CodeAct, a coding agent inside the user's editor. You act by writing Python code that runs for real."];
  lines.push(...MODE_INSTRUCTIONS[mode](toolNames, schemasInline, unusable));
  lines.push(
    'If a run fails, read the error and traceback, fix the code and try again; do not repeat a failing call unchanged.',
    'Do not invent results: base your answer on what the code returned. When you are done, answer concisely in Markdown, ' +
      'quoting the key numbers or names from the results.',
  );
  return lines.join('\n');
}

export class AgentLoop {
  private readonly mode: AgentMode;
  private readonly retries: TurnRetries;
  /** The code cards of the response being streamed. */
  private readonly streams: CodeStreams;

  constructor(private readonly options: AgentOptions) {
    this.mode = options.mode ?? 'toolCode';
    this.retries = new TurnRetries({ policy: options.retry, sleep: options.sleep, provider: options.provider.id, emit: (e) => this.emit(e) });
    this.streams = new CodeStreams({ runtime: options.runtime.kind, emit: (e) => this.emit(e) });
  }

  private emit(event: CodeActEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {}
  }

  modelTools(): ModelTool[] {
    const tools: ModelTool[] = [];
    const managed = this.options.gateway.tools();
    const ctx = {
      runtime: this.options.runtime.kind,
      persistent: this.persistent,
      keepsOutputs: this.keepsOutputs,
      outputChars: this.options.outputChars,
      maxConcurrency: this.options.maxConcurrentToolCalls,
      inlineLimit: this.options.inlineToolLimit,
      seesImages: this.seesImages(),
      installs: this.options.gateway.installs,
      unusable: this.options.gateway.unusable(),
      maxJobs: this.options.maxJobs,
    };
    const codeTool = MODE_CODE_TOOL[this.mode];
    if (codeTool) tools.push(codeTool.spec(managed, ctx));
    for (const t of managed) if (t.expose === 'direct' || t.expose === 'both') tools.push(directToolSpec(t));
    return tools;
  }

  /** Runs of this conversation share one session. */
  private get persistent(): boolean {
    return this.options.runtime.sessions.persist && !!this.options.sessionId;
  }

  /** A later run of the session can read a run's whole output (`output_of(n)`). */
  private get keepsOutputs(): boolean {
    // Under code review (beforeRun) kept outputs are not claimed: refused code keeps none.
    return this.persistent && this.options.runtime.sessions.keepsOutputs && !this.options.beforeRun;
  }

  /** The image budget of this run's requests. */
  private get images(): ImageBudget {
    return this.options.images ?? DEFAULT_IMAGE_BUDGET;
  }

  /** Whether the model sees the images the code shows (the provider catalogue says, within a budget that allows any). */
  private seesImages(): boolean {
    return this.images.maxImages > 0 && this.images.maxBytes > 0 && this.options.provider.seesImages?.(this.options.model) === true;
  }

  /** Runs one user prompt to a final answer. `history` holds the earlier items of the conversation. */
  async run(history: ConversationItem[], prompt: string): Promise<AgentResult> {
    const { provider, signal } = this.options;
    const state = new RunState(history, prompt, this.options.hosted?.containerId ?? null, this.options.journal);

    if (!MODES[this.mode].ourRuntime && !provider.capabilities.hostedCode) {
      return this.end(
        state,
        'failed',
        'hosted_unsupported',
        `The ${provider.id} provider has no hosted code sandbox. Use mode "toolCode" (code runs locally with your managed tools) or pick OpenAI, Anthropic or Gemini.`,
      );
    }
    const tools = this.modelTools();
    let system =
      this.options.system ??
      defaultSystemInstruction(
        this.mode,
        this.options.gateway.names(),
        listsSchemasInline(this.options.gateway.tools(), this.options.inlineToolLimit),
        this.options.gateway.unusable(),
      );
    if (this.options.sessionNote) system += `\n${this.options.sessionNote}`;
    // Where this run sends its turns: the provider, or the text protocol's wrapper of it.
    const turns: TurnProvider = !MODES[this.mode].ourRuntime
      ? provider
      : new TextProtocolProvider(provider, {
          model: this.options.model,
          protocol: this.options.protocol,
          runtime: this.options.runtime.kind,
          system: this.options.system,
          sessionNote: this.options.sessionNote,
          register: this.streams.register,
        });
    const maxTurns = this.options.maxTurns ?? SETTINGS.maxTurns.default;
    const budget = await this.contextBudget(system, tools, state);
    // A context overflow the server reports: one compaction and one retry of that request, no more, and only
    // when the compaction changed the request (the compacted history to send).
    let overflowRetry: ConversationItem[] | undefined;
    let overflowed = false;

    for (let turn = 1; turn <= maxTurns; turn++) {
      if (signal?.aborted) return this.cancelled(state);
      let result: TurnResult;
      let view: ConversationItem[] = [];
      try {
        await this.tellJobs(state);
        const all = state.all();
        if (overflowRetry) view = overflowRetry;
        else {
          budget?.nextRequest();
          view = budget ? await budget.prepare(all) : all;
        }
        overflowRetry = undefined;
        const request: TurnRequest = {
          model: this.options.model,
          system,
          history: view,
          tools,
          hosted: !MODES[this.mode].ourRuntime ? { enabled: true, ...(this.options.hosted ?? {}), containerId: state.containerId } : undefined,
          signal,
          maxOutputTokens: this.options.maxOutputTokens,
          images: this.images,
        };
        result = await this.streamTurn(turns, request);
        budget?.observe(view, result.usage?.input_tokens);
      } catch (err) {
        if (err instanceof ProviderError && err.code === 'context_overflow' && budget && !overflowed && !err.partial?.items.length) {
          overflowed = true;
          overflowRetry = await budget.afterOverflow(state.all(), view);
          if (overflowRetry) {
            turn--;
            continue;
          }
          return this.end(state, 'failed', err.code, `${err.message} ${NOTHING_TO_COMPACT}`);
        }
        if (err instanceof ProviderError) {
          // Everything received before the error is kept.
          if (err.partial?.items.length) state.append(...err.partial.items);
          if (err.code === 'aborted' || signal?.aborted) return this.cancelled(state);
          return this.end(state, 'failed', err.code, err.message);
        }
        if (signal?.aborted) return this.cancelled(state);
        return this.end(state, 'failed', 'internal', `Unexpected error: ${(err as Error).message}`);
      }
      overflowed = false;
      state.addTurn(result);

      if (result.functionCalls.length === 0) {
        if (result.stopReason === 'pause_turn') continue;
        return state.result('completed');
      }
      // Each output is saved as its call finishes; the history keeps them in the calls' order.
      const outputs = await Promise.all(
        result.functionCalls.map(async (call) => {
          const output = await this.runFunctionCall(state, call);
          state.save([output]);
          return output;
        }),
      );
      state.append(...outputs);
      if (signal?.aborted) return this.cancelled(state);
    }
    return this.end(
      state,
      'max_turns',
      'max_turns',
      `Stopped after ${maxTurns} model turns without a final answer. Raise the limit (CLI: --max-turns; settings: codeact.maxTurns) or simplify the request.`,
    );
  }

  /**
   * The session's background jobs that ended since the model's last step, said once before its next request
   * (a user message of ours: every provider takes one after tool results). Only the runtime's word that a job
   * ended makes one, so none claims a job finished while it runs.
   */
  private async tellJobs(state: RunState): Promise<void> {
    const { runtime, sessionId } = this.options;
    if (!sessionId || !this.persistent || !runtime.sessions.takeJobNotes) return;
    let notes: JobChanged[];
    try {
      notes = await runtime.sessions.takeJobNotes(sessionId);
    } catch {
      return; // the notes stay with the runtime; the model hears of the job through wait_job or jobs()
    }
    if (!notes.length) return;
    const text = jobNotesText(notes);
    state.append({ type: 'message', id: newId('msg_user'), role: 'user', text });
    // Its own card in the transcript (and its own record in the conversation), not a message of the person.
    this.emit({ type: 'codeact.job.notes', session_id: sessionId, jobs: notes.map((n) => n.job), text });
  }

  /** The context budget of this run's requests (./contextBudget); none when no window is known. */
  private contextBudget(system: string, tools: ModelTool[], state: RunState): Promise<ContextBudget | undefined> {
    const o = this.options;
    return budgetFor({
      provider: o.provider,
      model: o.model,
      system,
      tools,
      window: o.contextWindow,
      maxOutputTokens: o.maxOutputTokens,
      compactAt: o.compactAt,
      state: o.compaction,
      turnId: o.turnId,
      toolNames: o.gateway.names(),
      signal: o.signal,
      emit: (e) => {
        // A summary request is a model request: its usage counts in the run's total (and, by the event, in the turn's and the conversation's).
        if (e.type === 'codeact.context.compacted' && e.usage) state.countRequest(e.usage);
        this.emit(e);
      },
      variables: async () => (o.sessionId && this.persistent ? o.runtime.sessions.variables(o.sessionId) : null),
    });
  }

  /** Ends the run on an error: the `error` event, and the result that carries it. */
  private end(state: RunState, status: AgentStatus, code: string, message: string): AgentResult {
    this.emit({ type: 'error', message, code });
    return state.result(status, { message, code });
  }

  private cancelled(state: RunState): AgentResult {
    return this.end(state, 'cancelled', 'cancelled', 'Stopped by the user.');
  }

  /** One model turn, with retries and the provider's fallback: each attempt streams a fresh response (its own code cards). */
  private streamTurn(turns: TurnProvider, request: TurnRequest): Promise<TurnResult> {
    return this.retries.run(
      () => {
        this.streams.reset();
        return turns.streamTurn(request, (e) => this.onProviderEvent(e));
      },
      {
        maxAttempts: this.retries.policy.maxAttempts,
        signal: request.signal,
        fallback: (err) => turns.fallback?.(err, (e) => this.emit(e)),
        // Code cards opened while the failed response streamed will never run: close them.
        failed: (err) => {
          const aborted = err instanceof ProviderError && err.code === 'aborted';
          this.streams.abandonAll(
            aborted ? 'Cancelled' : 'NotRun',
            aborted ? 'The run was stopped.' : `The model's response broke off before this code could run (${(err as Error).message.split('\n')[0]}).`,
          );
        },
      },
    );
  }

  /** Passes provider events through; a code tool's argument deltas also fill its code card. */
  private onProviderEvent(e: CodeActEvent): void {
    this.emit(e);
    if (MODES[this.mode].ourRuntime) this.streams.observe(e);
  }

  private async runFunctionCall(state: RunState, call: FunctionCallRequest): Promise<FunctionCallOutputItem> {
    const { runtime, gateway, signal } = this.options;
    const finish = (output: string, isError = false, images?: AttachedImage[]): FunctionCallOutputItem => {
      // A code card shown while the model wrote it, for code that did not run (a failure below has said why).
      this.streams.notRun(call.item_id, 'The code was not run.');
      const item: FunctionCallOutputItem = {
        type: 'function_call_output',
        id: newId('out'),
        item_id: call.item_id,
        call_id: call.call_id,
        name: call.name,
        output,
        ...(isError ? { is_error: true } : {}),
      };
      // The event leaves the images out: the execution's own item carries its displays (the transcript keeps
      // both), and the history item below is the one that keeps them for the model.
      this.emit({ type: 'response.output_item.done', item });
      return images?.length ? { ...item, images } : item;
    };
    const fail = (error: string): FunctionCallOutputItem => {
      this.streams.notRun(call.item_id, error);
      return finish(JSON.stringify({ error }), true);
    };
    let args: Record<string, unknown>;
    try {
      args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
      if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error('not an object');
    } catch {
      return fail(`The arguments of ${call.name} were not a valid JSON object: ${call.arguments.slice(0, 200)}`);
    }
    if (call.name === EXECUTE_TOOL_CODE || call.name === EXECUTE_CODE) {
      if (MODE_CODE_TOOL[this.mode]?.name !== call.name) return fail(`${call.name} is not available in this mode.`);
      if (typeof args.code !== 'string') return fail(`${call.name} needs a "code" string argument.`);
      const withTools = call.name === EXECUTE_TOOL_CODE;
      const background = args.background === true;
      const jobs = jobsAvailable({ runtime: runtime.kind, persistent: this.persistent, maxJobs: this.options.maxJobs });
      if (background && jobs !== true) return fail(jobs.unavailable);
      const { execId, announced } = this.streams.claim(call.item_id, args.code);
      const execution = state.nextExecution();
      const item = await runtime.execute(
        {
          code: args.code,
          itemId: execId,
          sessionId: this.options.sessionId,
          timeoutMs: this.options.executionTimeoutMs,
          tools: withTools,
          announced,
          execution,
          ...(background ? { background } : {}),
        },
        { signal, onEvent: (e) => this.emit(e), onToolCall: withTools ? gateway.handler : undefined, beforeRun: this.options.beforeRun },
      );
      // What the model reads and sees of it: no image over the pixel cap (the runtimes cap too; this is the request's own check).
      const seen = withinPixelCap(item, this.images.maxPixels);
      // The number its session gave it (a run of another door may have taken the one this conversation counted).
      const told = item.session?.execution ?? execution;
      const summary = executionSummary(seen, {
        execution: told,
        outputChars: this.options.outputChars,
        kept: this.keepsOutputs && !item.session?.state_lost,
        installs: withTools && gateway.installs,
      });
      return finish(summary, item.status !== 'completed', executionImages(seen, `execution ${told}`, this.images));
    }
    const tool = gateway.get(call.name);
    if (!tool || (tool.expose !== 'direct' && tool.expose !== 'both')) return fail(`Unknown function "${call.name}".`);
    // Announced and timed as a call from the code is, under a call id of ours: the provider's is not unique.
    const outcome = await ToolDispatcher.one(
      { itemId: call.item_id, emit: (e) => this.emit(e), handler: (request, s) => gateway.call(request, s), signal: signal ?? new AbortController().signal },
      call.name,
      args,
    );
    return outcome.ok ? finish(toolResultText(call.name, outcome.value, this.options.outputChars)) : fail(outcome.error);
  }
}

/** What the model reads of background jobs that ended: one line of ours, then each job's note. */
export function jobNotesText(notes: readonly JobChanged[]): string {
  return `[codeact] Background job${notes.length === 1 ? '' : 's'} ended since your last step:\n\n${notes.map((n) => n.message).join('\n\n')}`;
}
