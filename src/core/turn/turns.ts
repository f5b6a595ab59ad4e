/**
 * One chat turn, the use case both hosts share (the extension's panel and `codeact chat`): mark the
 * turn, run the agent loop on the conversation's history, save every event and the new items, keep the
 * hosted container id, and end the turn with its status, also when the provider cannot even be built.
 */
import type { RuntimeKind } from '../../common/events';
import type { TranscriptEvent, TurnSource } from '../../common/transcript';
import { AgentLoop, type AgentResult, type AgentOptions } from '../agent/agent';
import type { Conversation } from '../agent/transcriptStore';
import { compactionStateFrom } from '../agent/contextBudget';
import { hostedOptionsFrom, imageBudgetFrom } from '../config/engine';
import type { EngineConfig } from '../config/resolve';
import type { ToolGateway } from '../gateway/gateway';
import { ProviderError } from '../providers/shared/errors';
import { recoverExpiredContainers } from '../providers/shared/expiredContainer';
import type { Provider } from '../providers/shared/types';
import type { Runtime } from '../runtime/types';
import { newId } from '../util/ids';

export interface ChatTurnOptions {
  conversation: Conversation;
  prompt: string;
  source: TurnSource;
  config: EngineConfig;
  /** Builds the provider (it may fail: a missing key, a bad URL; the turn then ends with that error). */
  provider: () => Promise<Provider>;
  /** The runtime, or how to get it (getting it may fail too: a Jupyter runtime without a URL). */
  runtime: Runtime | (() => Promise<Runtime>);
  gateway: ToolGateway;
  /** Said to the model after the system instruction (a reopened conversation's session is gone). */
  sessionNote?: string;
  signal?: AbortSignal;
  /** True when the host is going away (VS Code reloading or closing): a turn stopped now ends as interrupted. */
  interrupted?: () => boolean;
  /** Every event of the turn, turn markers included, after it is saved. */
  onEvent?: (e: TranscriptEvent) => void;
  /** Test seams (retry sleep) and other agent options the hosts do not vary. */
  agent?: Partial<AgentOptions>;
}

export interface ChatTurnResult {
  turnId: string;
  /** Undefined when the turn failed before the model answered (the error is in `error`). */
  result?: AgentResult;
  error?: { message: string; code: string };
}

export async function runChatTurn(o: ChatTurnOptions): Promise<ChatTurnResult> {
  const { conversation: convo, config } = o;
  const emit = (e: TranscriptEvent) => {
    convo.appendEvent(e);
    try {
      o.onEvent?.(e);
    } catch {
      // A listener's bug must not break the turn.
    }
  };
  const turnId = newId('turn');
  const started = Date.now();
  const runtimeKind: RuntimeKind = config.mode === 'hosted' ? (config.provider === 'openai-compatible' ? 'local' : config.provider) : config.runtime;
  emit({ type: 'codeact.turn.started', turn_id: turnId, prompt: o.prompt, source: o.source, provider: config.provider, model: config.model, runtime: runtimeKind, started_at: started });
  try {
    // A container that expired is dropped (history and meta) and the request goes on in a new one.
    const recovery = recoverExpiredContainers(await o.provider(), convo.meta.expiredContainers ?? [], emit);
    const provider = recovery.provider;
    const runtime = typeof o.runtime === 'function' ? await o.runtime() : o.runtime;
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
      ...(o.sessionNote ? { sessionNote: o.sessionNote } : {}),
      executionTimeoutMs: config.timeoutMs,
      hosted: hostedOptionsFrom(config, recovery.containerAfter(convo.meta.containerId)),
      images: imageBudgetFrom(config),
      outputChars: config.outputModelChars,
      compactAt: config.contextCompactAt,
      // Compaction goes on from where the conversation's last one left off (the saved items are all there).
      compaction: compactionStateFrom(convo.events),
      turnId,
      signal: o.signal,
      onEvent: emit,
      ...(o.agent ?? {}),
    });
    const result = await agent.run(convo.history, o.prompt);
    convo.appendItems(result.items);
    const containerId = recovery.containerAfter(result.containerId);
    const expired = recovery.expired;
    const saved: unknown[] = Array.isArray(convo.meta.expiredContainers) ? convo.meta.expiredContainers : [];
    const newlyExpired = expired.length !== saved.length || expired.some((id, i) => id !== saved[i]);
    if ((containerId !== undefined && containerId !== convo.meta.containerId) || newlyExpired) {
      convo.update({ ...(containerId !== undefined ? { containerId } : {}), ...(newlyExpired ? { expiredContainers: expired } : {}) });
    }
    const cutOff = result.status !== 'completed' && o.interrupted?.();
    emit({
      type: 'codeact.turn.ended',
      turn_id: turnId,
      status: result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'stopped' : 'failed',
      duration_ms: Date.now() - started,
      ...(result.error ? { message: result.error.message } : {}),
      ...(cutOff ? { interrupted: true } : {}),
    });
    return { turnId, result, ...(result.error && result.status !== 'completed' ? { error: result.error } : {}) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const code = err instanceof ProviderError ? err.code : 'internal';
    emit({ type: 'error', message, code });
    emit({ type: 'codeact.turn.ended', turn_id: turnId, status: 'failed', duration_ms: Date.now() - started, message, ...(o.interrupted?.() ? { interrupted: true } : {}) });
    return { turnId, error: { message, code } };
  } finally {
    convo.flush();
  }
}
