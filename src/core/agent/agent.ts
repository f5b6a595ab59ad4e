/**
 * The agent loop: a model turn, then the function calls it asked for (run in parallel through the
 * runtime and the gateway), then their results back to the model, until a final answer or `maxTurns`.
 *
 * Everything that happens is emitted in the shared event vocabulary. For `execute_tool_code` and
 * `execute_code` the code is streamed as plain text while the model writes it (the JSON arguments
 * are unescaped on the fly), so a code card fills in before the code runs.
 *
 * A model without function calling gets the text protocol instead (./textProtocol): it writes
 * ```python blocks, which run through the same path as an `execute_tool_code` call.
 */
import type { AttachedImage, CodeActEvent, FunctionCallOutputItem, MessageItem, Usage } from '../../common/events';
import { notRunItem } from '../runtime/execution';
import type { ToolGateway } from '../gateway/gateway';
import { ProviderError } from '../providers/shared/errors';
import { JsonStringFieldExtractor } from '../providers/shared/partialJson';
import { DEFAULT_IMAGE_BUDGET, type ConversationItem, type FunctionCallRequest, type HostedOptions, type ImageBudget, type ModelTool, type Provider, type TurnResult } from '../providers/shared/types';
import type { BeforeRun, Runtime } from '../runtime/types';
import { tagDiscoveryEvent } from '../gateway/discovery/toolDiscovery';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE, directToolSpec, executeCodeSpec, executeToolCodeSpec, listsSchemasInline } from '../tools/modelTools';
import { TextProtocol, type AgentProtocol, type CodeStreamEntry, type TextTurn } from './textProtocol';
import { budgetFor, type ContextBudget, type CompactionState } from './contextBudget';
import { countExecutions, executionImages, executionSummary, toolResultText } from './executionResult';
import { newId } from '../util/ids';
import { pausedTime } from '../util/timeout';

export { executionSummary };

export type AgentMode = 'toolCode' | 'hosted' | 'code';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

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
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export type AgentStatus = 'completed' | 'failed' | 'cancelled' | 'max_turns';

export interface AgentResult {
  status: AgentStatus;
  /** The final answer's text (the last assistant message of the last turn). */
  text: string;
  /** Items this run appended to the history (user message included), in order. */
  items: ConversationItem[];
  usage: { turns: Usage[]; total: Usage };
  containerId?: string | null;
  error?: { message: string; code: string };
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 8000 };

export function defaultSystemInstruction(mode: AgentMode, toolNames: string[], schemasInline = true): string {
  const lines = [
    'You are CodeAct, a coding agent inside the user\'s editor. You act by writing Python code that runs for real.',
  ];
  if (mode === 'toolCode') {
    lines.push(
      `Use the ${EXECUTE_TOOL_CODE} function: write one Python script that does the whole job, calling the workspace's managed tools with ` +
        '`await call_tool(name, **arguments)`, looping, filtering and aggregating in Python, and `return` a compact JSON result. ' +
        'Run independent tool calls concurrently with asyncio.gather. ' +
        (schemasInline
          ? 'Read each tool\'s input and output schema in the function description and pass exactly the arguments it asks for.'
          : 'Look tools up with search_tools and describe_tool (see the function description) and pass exactly the arguments they ask for.'),
      !toolNames.length
        ? 'No managed tools are declared in this workspace.'
        : schemasInline
          ? `Managed tools available: ${toolNames.join(', ')}.`
          : `${toolNames.length} managed tools are available; the ${EXECUTE_TOOL_CODE} description lists them by source.`,
    );
  } else if (mode === 'code') {
    lines.push(`Use the ${EXECUTE_CODE} function to compute, parse and check things in Python; \`return\` a compact JSON result.`);
  } else {
    lines.push('Use your code execution sandbox to compute, analyse data and produce files.');
  }
  lines.push(
    'If a run fails, read the error and traceback, fix the code and try again; do not repeat a failing call unchanged.',
    'Do not invent results: base your answer on what the code returned. When you are done, answer concisely in Markdown, ' +
      'quoting the key numbers or names from the results.',
  );
  return lines.join('\n');
}

function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  return {
    input_tokens: a.input_tokens + (b.input_tokens ?? 0),
    output_tokens: a.output_tokens + (b.output_tokens ?? 0),
    total_tokens: (a.total_tokens ?? 0) + (b.total_tokens ?? (b.input_tokens ?? 0) + (b.output_tokens ?? 0)),
  };
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class AgentLoop {
  private readonly mode: AgentMode;
  private readonly retry: RetryPolicy;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: AgentOptions) {
    this.mode = options.mode ?? 'toolCode';
    this.retry = { ...DEFAULT_RETRY, ...(options.retry ?? {}) };
    this.sleep = options.sleep ?? defaultSleep;
  }

  private emit(event: CodeActEvent): void {
    try {
      this.options.onEvent?.(tagDiscoveryEvent(event));
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
    };
    if (this.mode === 'toolCode') tools.push(executeToolCodeSpec(managed, ctx));
    if (this.mode === 'code') tools.push(executeCodeSpec(ctx));
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

  /** Code executions of the conversation so far: numbers each one ("execution 3"), in the order the calls were made. */
  private executions = 0;

  /** Runs one user prompt to a final answer. `history` holds the earlier items of the conversation. */
  async run(history: ConversationItem[], prompt: string): Promise<AgentResult> {
    const { provider, signal } = this.options;
    this.executions = countExecutions(history);
    const appended: ConversationItem[] = [];
    const userItem: MessageItem = { type: 'message', id: newId('msg_user'), role: 'user', text: prompt };
    appended.push(userItem);
    const turns: Usage[] = [];
    let total: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    let containerId = this.options.hosted?.containerId ?? null;
    const done = (status: AgentStatus, text: string, error?: AgentResult['error']): AgentResult => ({ status, text, items: appended, usage: { turns, total }, containerId, ...(error ? { error } : {}) });

    if (this.mode === 'hosted' && !provider.capabilities.hostedCode) {
      const message = `The ${provider.id} provider has no hosted code sandbox. Use mode "toolCode" (code runs locally with your managed tools) or pick OpenAI, Anthropic or Gemini.`;
      this.emit({ type: 'error', message, code: 'hosted_unsupported' });
      return done('failed', '', { message, code: 'hosted_unsupported' });
    }
    const tools = this.modelTools();
    let system = this.options.system ?? defaultSystemInstruction(this.mode, this.options.gateway.names(), listsSchemasInline(this.options.gateway.tools(), this.options.inlineToolLimit));
    if (this.options.sessionNote) system += `\n${this.options.sessionNote}`;
    const proto = (this.text = this.mode === 'hosted' ? undefined : new TextProtocol({
      provider, model: this.options.model, protocol: this.options.protocol, runtime: this.options.runtime.kind, system: this.options.system,
      codeTool: tools.find((t) => t.name === EXECUTE_TOOL_CODE || t.name === EXECUTE_CODE), emit: (e) => this.emit(e),
    }));
    const maxTurns = this.options.maxTurns ?? 12;
    let lastText = '';
    const budget = await this.contextBudget(system, tools);
    // A context overflow the server reports: one compaction and one retry of that request, no more.
    let overflowRetry = false;

    for (let turn = 1; turn <= maxTurns; turn++) {
      if (signal?.aborted) return this.cancelled(done, lastText);
      let result: TurnResult;
      let view: ConversationItem[] = [];
      try {
        const all = [...history, ...appended];
        budget?.nextRequest();
        view = budget ? await budget.prepare(all, overflowRetry) : all;
        const request = {
          model: this.options.model,
          system,
          history: view,
          tools,
          hosted: this.mode === 'hosted' ? { enabled: true, ...(this.options.hosted ?? {}), containerId } : undefined,
          signal,
          maxOutputTokens: this.options.maxOutputTokens,
          images: this.images,
        };
        // The one retry without tools (a probe) is one attempt: no retries of its own.
        result = await this.turnWithRetries(proto?.active ? proto.request(request) : request, proto?.probingTools ? 1 : this.retry.maxAttempts);
        proto?.succeeded();
        budget?.observe(view, result.usage?.input_tokens);
      } catch (caught) {
        const err = proto?.probeFailed(caught) ?? caught;
        // A server that rejects `tools`: the same turn again, in text form.
        if (proto?.switchOnRejection(err)) {
          turn--;
          continue;
        }
        if (err instanceof ProviderError && err.code === 'context_overflow' && budget && !overflowRetry && !err.partial?.items.length) {
          overflowRetry = true;
          turn--;
          continue;
        }
        if (err instanceof ProviderError) {
          // Everything received before the error is kept.
          if (err.partial?.items.length) appended.push(...(this.textTurn ? this.textTurn.partial(err.partial.items) : err.partial.items));
          if (err.code === 'aborted' || signal?.aborted) return this.cancelled(done, lastText);
          this.emit({ type: 'error', message: err.message, code: err.code });
          return done('failed', lastText, { message: err.message, code: err.code });
        }
        if (signal?.aborted) return this.cancelled(done, lastText);
        const message = `Unexpected error: ${(err as Error).message}`;
        this.emit({ type: 'error', message, code: 'internal' });
        return done('failed', lastText, { message, code: 'internal' });
      }
      overflowRetry = false;
      let again = false;
      if (this.textTurn) {
        const step = this.textTurn.finish(result);
        result = { ...result, items: step.items, functionCalls: step.calls };
        again = step.again;
      }
      appended.push(...result.items);
      if (result.usage) {
        turns.push(result.usage);
        total = addUsage(total, result.usage);
      }
      if (result.containerId) containerId = result.containerId;
      const text = result.items
        .filter((i) => i.type === 'message' && i.role === 'assistant' && !i.thinking)
        .map((i) => (i as MessageItem).text)
        .join('');
      if (text) lastText = text;

      if (result.functionCalls.length === 0) {
        if (result.stopReason === 'pause_turn' || again) continue;
        return done('completed', text || lastText);
      }
      const outputs = await Promise.all(result.functionCalls.map((call) => this.runFunctionCall(call)));
      appended.push(...outputs);
      if (signal?.aborted) return this.cancelled(done, lastText);
    }
    const message = `Stopped after ${maxTurns} model turns without a final answer. Raise the limit (CLI: --max-turns; settings: codeact.maxTurns) or simplify the request.`;
    this.emit({ type: 'error', message, code: 'max_turns' });
    return done('max_turns', lastText, { message, code: 'max_turns' });
  }

  /** The context budget of this run's requests (./contextBudget); none when no window is known. */
  private contextBudget(system: string, tools: ModelTool[]): Promise<ContextBudget | undefined> {
    const o = this.options;
    return budgetFor({
      provider: o.provider, model: o.model, system, tools, window: o.contextWindow, maxOutputTokens: o.maxOutputTokens, compactAt: o.compactAt, state: o.compaction, turnId: o.turnId,
      toolNames: o.gateway.names(), signal: o.signal, emit: (e) => this.emit(e),
      variables: async () => (o.sessionId && this.persistent ? o.runtime.sessions.variables(o.sessionId) : null),
    });
  }

  private cancelled(done: (s: AgentStatus, t: string, e?: AgentResult['error']) => AgentResult, text: string): AgentResult {
    const message = 'Stopped by the user.';
    this.emit({ type: 'error', message, code: 'cancelled' });
    return done('cancelled', text, { message, code: 'cancelled' });
  }

  private async turnWithRetries(request: Parameters<Provider['streamTurn']>[0], maxAttempts: number): Promise<TurnResult> {
    // Failures by code, for errors that allow fewer retries than the policy (a stalled stream: once).
    const failures = new Map<string, number>();
    for (let attempt = 1; ; attempt++) {
      this.codeStreams = new Map();
      this.textTurn = this.text?.active ? this.text.turn((itemId, entry) => this.codeStreams.set(itemId, entry)) : undefined;
      try {
        return await this.options.provider.streamTurn(request, (e) => this.onProviderEvent(e));
      } catch (err) {
        const retryable = err instanceof ProviderError && err.retryable && !err.partial?.items.length;
        // Code cards opened while the failed response streamed will never run: close them.
        this.abandonCodeStreams(
          err instanceof ProviderError && err.code === 'aborted' ? 'Cancelled' : 'NotRun',
          err instanceof ProviderError && err.code === 'aborted' ? 'The run was stopped.' : `The model's response broke off before this code could run (${(err as Error).message.split('\n')[0]}).`,
        );
        if (!retryable || attempt >= maxAttempts || request.signal?.aborted) throw err;
        const pe = err as ProviderError;
        const sameKind = (failures.get(pe.code) ?? 0) + 1;
        failures.set(pe.code, sameKind);
        if (pe.retryLimit !== undefined && sameKind > pe.retryLimit) throw err;
        const last = pe.retryLimit !== undefined ? Math.min(maxAttempts, attempt + 1 + pe.retryLimit - sameKind) : maxAttempts;
        const backoff = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
        const delay = Math.min(this.retry.maxDelayMs * 4, pe.retryAfterMs ?? backoff + Math.floor(Math.random() * backoff * 0.2));
        this.emit({ type: 'codeact.retry', attempt, delay_ms: delay, status: pe.status, message: `${pe.message} Retrying in ${(delay / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${last}).` });
        try {
          await this.sleep(delay, request.signal);
        } catch {
          throw new ProviderError({ code: 'aborted', message: 'Stopped by the user.', provider: this.options.provider.id });
        }
      }
    }
  }

  /** Code streams of the current turn, by our function-call item id (never the provider's call id: servers repeat those). */
  private codeStreams = new Map<string, CodeStreamEntry>();
  /** The text protocol of the current run, and its state for the current response. */
  private text?: TextProtocol;
  private textTurn?: TextTurn;

  /** Closes a code card whose code will not run, so it never stays "writing". */
  private abandonCode(execId: string, code: string, type: string, message: string): void {
    notRunItem((e) => this.emit(e), { itemId: execId, code, runtime: this.options.runtime.kind, error: { type, message } });
  }

  private abandonCodeStreams(type: string, message: string): void {
    for (const s of new Set(this.codeStreams.values())) {
      if (s.settled) continue;
      s.settled = true;
      this.abandonCode(s.execId, s.extractor.value, type, message);
    }
  }

  /** Passes provider events through, and turns code-tool argument deltas into plain code deltas. */
  private onProviderEvent(e: CodeActEvent): void {
    const streams = this.codeStreams;
    if (this.textTurn?.handle(e)) return;
    this.emit(e);
    if (this.mode === 'hosted') return;
    if (e.type === 'response.output_item.added' && e.item.type === 'function_call' && e.item.id && (e.item.name === EXECUTE_TOOL_CODE || e.item.name === EXECUTE_CODE)) {
      // The code card of this call: an execution item of its own, with an id of ours.
      const execId = newId('exec');
      streams.set(e.item.id, { extractor: new JsonStringFieldExtractor(['code']), execId });
      this.emit({ type: 'response.code_interpreter_call.in_progress', item_id: execId, runtime: this.options.runtime.kind });
    } else if (e.type === 'response.function_call_arguments.delta') {
      const s = streams.get(e.item_id);
      if (!s) return;
      const delta = (s.extractor as JsonStringFieldExtractor).push(e.delta);
      if (delta) this.emit({ type: 'response.code_interpreter_call_code.delta', item_id: s.execId, delta });
    }
  }

  private async runFunctionCall(call: FunctionCallRequest): Promise<FunctionCallOutputItem> {
    const { runtime, gateway, signal } = this.options;
    let args: Record<string, unknown>;
    const stream = this.codeStreams.get(call.item_id);
    const finish = (output: string, isError = false, images?: AttachedImage[]): FunctionCallOutputItem => {
      if (stream && !stream.settled) {
        // The code was shown while the model wrote it, but it will not run.
        stream.settled = true;
        this.abandonCode(stream.execId, stream.extractor.value, 'NotRun', (JSON.parse(output) as { error?: string }).error ?? 'The code was not run.');
      }
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
    try {
      args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
      if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error('not an object');
    } catch {
      return finish(JSON.stringify({ error: `The arguments of ${call.name} were not a valid JSON object: ${call.arguments.slice(0, 200)}` }), true);
    }
    if (call.name === EXECUTE_TOOL_CODE || call.name === EXECUTE_CODE) {
      const allowed = (call.name === EXECUTE_TOOL_CODE && this.mode === 'toolCode') || (call.name === EXECUTE_CODE && this.mode === 'code');
      if (!allowed) return finish(JSON.stringify({ error: `${call.name} is not available in this mode.` }), true);
      if (typeof args.code !== 'string') return finish(JSON.stringify({ error: `${call.name} needs a "code" string argument.` }), true);
      const execId = stream?.execId ?? newId('exec');
      const announced = !!stream;
      if (stream) stream.settled = true;
      if (announced) {
        // Make sure the streamed code equals the code that runs (a provider may send arguments whole).
        const streamed = stream!.extractor.value;
        if (args.code.startsWith(streamed) && args.code.length > streamed.length) {
          this.emit({ type: 'response.code_interpreter_call_code.delta', item_id: execId, delta: args.code.slice(streamed.length) });
        }
      }
      // Numbered before the first await, so parallel calls are numbered in the order the model made them.
      const execution = ++this.executions;
      const item = await runtime.execute(
        { code: args.code, itemId: execId, sessionId: this.options.sessionId, timeoutMs: this.options.executionTimeoutMs, tools: call.name === EXECUTE_TOOL_CODE, announced, execution },
        { signal, onEvent: (e) => this.emit(e), onToolCall: call.name === EXECUTE_TOOL_CODE ? gateway.handler : undefined, beforeRun: this.options.beforeRun },
      );
      const summary = executionSummary(item, { execution, outputChars: this.options.outputChars, kept: this.keepsOutputs && !item.session?.state_lost, installs: call.name === EXECUTE_TOOL_CODE && gateway.installs });
      return finish(summary, item.status !== 'completed', executionImages(item, `execution ${execution}`, this.images));
    }
    const tool = gateway.get(call.name);
    if (!tool || (tool.expose !== 'direct' && tool.expose !== 'both')) {
      return finish(JSON.stringify({ error: `Unknown function "${call.name}".` }), true);
    }
    const started = performance.now();
    const itemId = call.item_id;
    // Ours, as inside an execution (`<item id>:<n>`): the provider's call id is not unique.
    const callId = `${itemId}:1`;
    // The person's time deciding an approval is not the call's.
    const { pause, pausedMs } = pausedTime();
    const took = () => Math.round(performance.now() - started - pausedMs());
    this.emit({ type: 'codeact.tool_call.started', item_id: itemId, call_id: callId, name: call.name, arguments: args });
    try {
      const output = await gateway.call({ itemId, callId, name: call.name, arguments: args, pause }, signal ?? new AbortController().signal);
      this.emit({ type: 'codeact.tool_call.completed', item_id: itemId, call_id: callId, name: call.name, output, duration_ms: took() });
      return finish(toolResultText(call.name, output, this.options.outputChars));
    } catch (err) {
      const message = (err as Error).message;
      this.emit({ type: 'codeact.tool_call.completed', item_id: itemId, call_id: callId, name: call.name, error: message, duration_ms: took() });
      return finish(JSON.stringify({ error: message }), true);
    }
  }
}

