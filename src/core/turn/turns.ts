/**
 * The turn lifecycle both hosts share (the extension and the CLI): mark the turn, save every event, end it
 * with its status (or as interrupted, when the host went away under it).
 * - A chat turn (`runChatTurn`: the panel, `codeact chat`) runs the agent loop on the conversation's
 *   history, saves the new items, keeps the hosted container id, and ends with an error also when the
 *   provider cannot even be built.
 * - A code turn (`runCodeTurn`: Run with Tools, the LM tool, `codeact run`) runs code straight in the runtime
 *   with the tools.
 */
import type { CodeInterpreterCallItem, RuntimeKind } from '../../common/events';
import { isTurnMarker } from '../../common/eventTraits';
import type { TranscriptEvent, TurnEndStatus, TurnSource, TurnStarted } from '../../common/transcript';
import { AgentLoop, type AgentResult, type AgentOptions } from '../agent/agent';
import type { Conversation } from '../agent/transcriptStore';
import { ConversationBusyError, holdConversation } from '../agent/conversationLock';
import { repairHistory, settleHeld } from '../agent/turnJournal';
import { compactionStateFrom } from '../agent/contextBudget';
import { codeRanNote } from './codeTurnNotes';
import { hostedOptionsFrom, imageBudgetFrom } from '../config/engine';
import { runtimeKindOf } from '../../common/providers';
import type { EngineConfig } from '../config/resolve';
import type { ToolGateway } from '../gateway/gateway';
import { ProviderError } from '../providers/shared/errors';
import { recoverExpiredContainers } from '../providers/shared/expiredContainer';
import type { Provider } from '../providers/shared/types';
import type { BeforeRun, ExecuteRequest, Runtime } from '../runtime/types';
import { newId } from '../util/ids';

/** What a turn the host's going away cut off (VS Code reloading or closing) says it was: the same for every kind of turn. */
export const INTERRUPTED_MESSAGE = 'Interrupted: VS Code reloaded or closed while this turn ran.';

type Emit = (e: TranscriptEvent) => void;

/** A turn's own markers (their traits, ../../common/eventTraits), for the hosts that run turns. */
export { isTurnMarker };

/** What the model is told when a conversation that ran code goes on in a new Python session (its earlier one is gone). */
export const CONTINUED_NOTE =
  'Note: this conversation is being continued in a new Python session: variables, imports and files from the code above no longer exist; recreate what you need.';

/** The error event that tells the person the turn was not saved (where and why); told, never saved itself. */
export const STORE_FAILED = 'store_failed';

/**
 * Saves each event in the conversation (if the turn has one), marked with the turn it belongs to (so two
 * writers' events are never shown under each other's prompts), and tells the host's listener. A turn's start
 * and end are written at once and fsynced; a failed write is told once, as an `error` event (STORE_FAILED).
 */
function emitterOf(convo: Conversation | undefined, onEvent: Emit | undefined): Emit & { turnId?: string } {
  const tell = (e: TranscriptEvent) => tellListener(onEvent, e);
  const emit: Emit & { turnId?: string } = (e) => {
    convo?.appendEvent(emit.turnId && !isTurnMarker(e) ? { ...e, turn_id: emit.turnId } : e);
    if (isTurnMarker(e)) convo?.flush({ durable: true });
    tell(e);
    const failure = convo?.takeFailure();
    if (failure) tell({ type: 'error', message: failure.message, code: STORE_FAILED });
  };
  return emit;
}

/**
 * Holds the conversation for the turn (../agent/conversationLock); undefined when the turn has none. What
 * another process appended meanwhile (a `codeact chat --continue` while the panel had it open) is taken in
 * first, so the turn's history has it, and shown to the listener as it was saved.
 */
function hold(convo: Conversation | undefined, onEvent: Emit | undefined): (() => void) | undefined {
  if (!convo) return undefined;
  const release = holdConversation(convo.id, convo.file);
  // A turn another process left open (it died while this one had the conversation open) is closed now, right
  // after its steps, not later after this turn's; the listener sees it closed.
  for (const e of settleHeld(convo, undefined, running).shown) tellListener(onEvent, e);
  return release;
}

/** The turns this process runs now (never closed as interrupted by a turn that starts beside them). */
const running = new Set<string>();

function tellListener(onEvent: Emit | undefined, e: TranscriptEvent): void {
  try {
    onEvent?.(e);
  } catch {
    // A listener's bug must not break the turn.
  }
}

/** Starts a turn (its marker, now) and returns how it ends: with its status, or as interrupted when the host is going away. */
function startTurn(emit: ReturnType<typeof emitterOf>, start: Omit<TurnStarted, 'type' | 'turn_id' | 'started_at'>, interrupted: (() => boolean) | undefined) {
  const turnId = newId('turn');
  running.add(turnId);
  emit.turnId = turnId;
  const started = Date.now();
  emit({ type: 'codeact.turn.started', turn_id: turnId, ...start, started_at: started });
  const end = (status: TurnEndStatus, message?: string) => {
    running.delete(turnId);
    const cutOff = status !== 'completed' && interrupted?.();
    emit({
      type: 'codeact.turn.ended',
      turn_id: turnId,
      status,
      duration_ms: Date.now() - started,
      ...(cutOff ? { message: INTERRUPTED_MESSAGE, interrupted: true } : message ? { message } : {}),
    });
  };
  return { turnId, end };
}

/** What every turn takes from its host. */
interface TurnOptions {
  source: TurnSource;
  /** The runtime, or how to get it (getting it may fail too: a Jupyter runtime without a URL). */
  runtime: Runtime | (() => Promise<Runtime>);
  signal?: AbortSignal;
  /** True when the host is going away (VS Code reloading or closing): a turn stopped now ends as interrupted. */
  interrupted?: () => boolean;
  /** Every event of the turn, turn markers included, after it is saved. */
  onEvent?: (e: TranscriptEvent) => void;
}

interface ChatTurnOptions extends TurnOptions {
  conversation: Conversation;
  prompt: string;
  config: EngineConfig;
  /** Builds the provider (it may fail: a missing key, a bad URL; the turn then ends with that error). */
  provider: () => Promise<Provider>;
  gateway: ToolGateway;
  /** Said to the model after the system instruction (a reopened conversation's session is gone). */
  sessionNote?: string;
  /** Test seams (retry sleep) and other agent options the hosts do not vary. */
  agent?: Partial<AgentOptions>;
}

interface ChatTurnResult {
  turnId: string;
  /** Undefined when the turn failed before the model answered (the error is in `error`). */
  result?: AgentResult;
  error?: { message: string; code: string };
}

export async function runChatTurn(o: ChatTurnOptions): Promise<ChatTurnResult> {
  const convo = o.conversation;
  let release: () => void;
  try {
    release = hold(convo, o.onEvent)!;
  } catch (err) {
    // Open in another process: nothing of this turn is written into it.
    return refused(err, o.onEvent);
  }
  try {
    return await chatTurn(o);
  } finally {
    release();
  }
}

/** A turn that could not hold its conversation: the error to the listener, nothing saved. */
function refused(err: unknown, onEvent: Emit | undefined): ChatTurnResult {
  if (!(err instanceof ConversationBusyError)) throw err;
  emitterOf(undefined, onEvent)({ type: 'error', message: err.message, code: err.code });
  return { turnId: newId('turn'), error: { message: err.message, code: err.code } };
}

async function chatTurn(o: ChatTurnOptions): Promise<ChatTurnResult> {
  const { conversation: convo, config } = o;
  const emit = emitterOf(convo, o.onEvent);
  const runtimeKind: RuntimeKind = runtimeKindOf(config);
  const { turnId, end } = startTurn(
    emit,
    { prompt: o.prompt, source: o.source, provider: config.provider, model: config.model, runtime: runtimeKind },
    o.interrupted,
  );
  try {
    // A container that expired is dropped (history and meta) and the request goes on in a new one.
    const recovery = recoverExpiredContainers(await o.provider(), convo.meta.expiredContainers ?? [], emit);
    const provider = recovery.provider;
    const runtime = typeof o.runtime === 'function' ? await o.runtime() : o.runtime;
    const session = sessionHandover(runtime, convo, convo.id);
    // Code that ran in the session outside the model's requests since its last turn: not in its history, so told.
    const sessionNote = [o.sessionNote, codeRanNote(convo.events, turnId)].filter(Boolean).join('\n') || undefined;
    const agent = new AgentLoop({
      provider,
      model: config.model,
      runtime,
      gateway: o.gateway,
      mode: config.mode,
      protocol: config.protocol,
      inlineToolLimit: config.toolsInlineLimit,
      maxTurns: config.maxTurns,
      sessionId: convo.id,
      ...(sessionNote ? { sessionNote } : {}),
      executionTimeoutMs: config.timeoutMs,
      maxJobs: config.maxJobs,
      hosted: hostedOptionsFrom(config, recovery.containerAfter(convo.meta.containerId)),
      images: imageBudgetFrom(config),
      outputChars: config.outputModelChars,
      compactAt: config.contextCompactAt,
      // Compaction goes on from where the conversation's last one left off (the saved items are all there).
      compaction: compactionStateFrom(convo.events),
      turnId,
      signal: o.signal,
      onEvent: emit,
      // Each item is saved the moment it is final, so a crash keeps every completed step (../agent/turnJournal).
      journal: (items) => convo.appendItems(items),
      ...(o.agent ?? {}),
    });
    const result = await agent.run(repairHistory(convo.history), o.prompt).finally(session);
    // Outputs were saved as they finished: the history keeps them in the calls' order, as the run did.
    convo.history.splice(0, convo.history.length, ...repairHistory(convo.history));
    const containerId = recovery.containerAfter(result.containerId);
    const expired = recovery.expired;
    const saved: unknown[] = Array.isArray(convo.meta.expiredContainers) ? convo.meta.expiredContainers : [];
    const newlyExpired = expired.length !== saved.length || expired.some((id, i) => id !== saved[i]);
    if ((containerId !== undefined && containerId !== convo.meta.containerId) || newlyExpired) {
      convo.update({ ...(containerId !== undefined ? { containerId } : {}), ...(newlyExpired ? { expiredContainers: expired } : {}) });
    }
    end(result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'stopped' : 'failed', result.error?.message);
    return { turnId, result, ...(result.error && result.status !== 'completed' ? { error: result.error } : {}) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const code = err instanceof ProviderError ? err.code : 'internal';
    emit({ type: 'error', message, code });
    end('failed', message);
    return { turnId, error: { message, code } };
  } finally {
    convo.flush();
  }
}

/** A code turn gets its runtime before it starts (the start marker names the runtime's kind). */
interface CodeTurnOptions extends TurnOptions {
  /** Where the turn is saved; none: `codeact run`, which keeps no transcript. */
  conversation?: Conversation;
  code: string;
  /** What the transcript calls the turn (its prompt): "orders.py, lines 3-20", "Run again with tools". */
  label: string;
  /** The tools' gateway, or how to get it (got once the turn has started). */
  gateway: ToolGateway | (() => Promise<ToolGateway>);
  timeoutMs: number;
  /** The Python session the code runs in (none: the runtime's own). */
  sessionId?: string;
  /** Sees the code before it runs (code review): it may edit it, or refuse it with an error. */
  beforeRun?: BeforeRun;
  /** More of the request (an MCP client's call: its item id, whether `call_tool` exists, its number, in the background). */
  request?: Pick<ExecuteRequest, 'itemId' | 'tools' | 'execution' | 'background'>;
}

interface CodeTurnResult {
  turnId: string;
  item: CodeInterpreterCallItem;
}

/** Runs code once in the runtime, as a turn: its markers around the execution's events, its status from the item. */
export async function runCodeTurn(o: CodeTurnOptions): Promise<CodeTurnResult> {
  const release = hold(o.conversation, o.onEvent);
  try {
    return await codeTurn(o);
  } finally {
    release?.();
  }
}

async function codeTurn(o: CodeTurnOptions): Promise<CodeTurnResult> {
  const emit = emitterOf(o.conversation, o.onEvent);
  const runtime = typeof o.runtime === 'function' ? await o.runtime() : o.runtime;
  const { turnId, end } = startTurn(emit, { prompt: o.label, source: o.source, runtime: runtime.kind }, o.interrupted);
  try {
    const gateway = typeof o.gateway === 'function' ? await o.gateway() : o.gateway;
    const session = sessionHandover(runtime, o.conversation, o.sessionId);
    const item = await runtime
      .execute(
        { code: o.code, timeoutMs: o.timeoutMs, ...(o.sessionId !== undefined ? { sessionId: o.sessionId } : {}), ...o.request },
        { signal: o.signal, onToolCall: o.request?.tools === false ? undefined : gateway.handler, onEvent: emit, beforeRun: o.beforeRun },
      )
      .finally(session);
    end(item.status === 'completed' ? 'completed' : item.error?.type === 'Cancelled' ? 'stopped' : 'failed');
    return { turnId, item };
  } catch (err) {
    // A runtime that threw (instead of failing the item) still ends its turn, so it is not shown running forever.
    end('failed', err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    o.conversation?.flush();
  }
}

/**
 * A session an earlier process left running for the conversation (its Jupyter kernel, by the id the
 * conversation remembers) is taken back at its next run; returns what, once the runs are over, remembers the
 * session's id now (none: forgotten). Only the conversation's own session (a document's run may use the chat's).
 */
function sessionHandover(runtime: Runtime, convo: Conversation | undefined, sessionId: string | undefined): () => void {
  const handover = runtime.sessions.handover;
  if (!handover || !convo || sessionId !== convo.id) return () => {};
  const remembered = typeof convo.meta.kernelId === 'string' ? convo.meta.kernelId : undefined;
  if (remembered) handover.adopt(convo.id, remembered);
  return () => {
    const now = handover.idOf(convo.id);
    if (now !== remembered) convo.update({ kernelId: now ?? null });
  };
}
