/**
 * The one skeleton of a streamed model turn, shared by every adapter: check for Stop, open the stream,
 * hand each event to the adapter's state machine, tell a cut stream from a finished one, map any failure
 * to a ProviderError that keeps what arrived before it, announce `response.completed`, and build the
 * TurnResult. An adapter keeps only its request building and its stream state machine.
 */
import { type TurnItems } from './emit';
import { ProviderError, streamCut, toProviderError, type ErrorContext } from './errors';
import type { EmitFn, StopReason, TurnRequest, TurnResult } from './types';
import { newId } from '../../util/ids';

export interface StreamMachine<E> {
  /** Handles one event of the stream. */
  onEvent(ev: E): void;
  /** After the last event: undefined when the stream ended as it should, else what is missing. */
  cutReason(): string | undefined;
  /** After a complete stream: finish the items still open. */
  finish?(): void;
  readonly responseId: string | undefined;
  /** The turn's outcome, once the stream is complete. */
  outcome(turn: TurnItems): {
    stopReason: StopReason;
    rawStopReason?: string;
    usage?: TurnResult['usage'];
    /** The hosted container (null when the provider has none; undefined: not said in `response.completed`). */
    containerId?: string | null;
    model?: string;
  };
}

export interface RunStreamOptions<E> {
  req: TurnRequest;
  ctx: ErrorContext;
  turn: TurnItems;
  emit: EmitFn;
  /** Opens the stream (the SDK call). */
  open: () => Promise<AsyncIterable<E>>;
  machine: StreamMachine<E>;
  /** Prefix of a generated response id, when the provider sent none. */
  idPrefix: string;
}

function stopped(ctx: ErrorContext): ProviderError {
  return new ProviderError({ code: 'aborted', provider: ctx.provider, message: 'Stopped: the request was cancelled.' });
}

export async function runStream<E>(o: RunStreamOptions<E>): Promise<TurnResult> {
  const { req, ctx, turn, machine } = o;
  try {
    if (req.signal?.aborted) throw stopped(ctx);
    const stream = await o.open();
    ctx.streaming = true;
    for await (const ev of stream) machine.onEvent(ev);
    if (req.signal?.aborted) throw stopped(ctx);
    const cut = machine.cutReason();
    if (cut) throw streamCut(ctx, undefined, cut);
    machine.finish?.();
  } catch (err) {
    const pe = toProviderError(err, ctx);
    pe.partial = { items: turn.partialItems(), responseId: machine.responseId };
    throw pe;
  }
  const responseId = machine.responseId ?? newId(o.idPrefix);
  const out = machine.outcome(turn);
  o.emit({ type: 'response.completed', response: { id: responseId, usage: out.usage, ...(out.containerId !== undefined ? { container_id: out.containerId } : {}) } });
  return {
    items: turn.items,
    functionCalls: turn.functionCalls,
    usage: out.usage,
    responseId,
    containerId: out.containerId ?? null,
    stopReason: turn.functionCalls.length > 0 && out.stopReason !== 'pause_turn' ? 'tool_use' : out.stopReason,
    rawStopReason: out.rawStopReason,
    files: turn.files,
    model: out.model,
  };
}
