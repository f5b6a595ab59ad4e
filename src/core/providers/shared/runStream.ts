/**
 * The one skeleton of a streamed model turn, shared by every adapter: set up the error context and the
 * turn's items, check for Stop, open the stream, hand each event to the adapter's state machine, tell a
 * cut stream from a finished one, map any failure to a ProviderError that keeps what arrived before it,
 * announce `response.completed`, and build the TurnResult. An adapter keeps only its request building and
 * its stream state machine.
 */
import { TurnItems } from './emit';
import { ProviderError, streamCut, toProviderError, type ErrorContext } from './errors';
import type { EmitFn, ProviderId, StopReason, TurnRequest, TurnResult } from './types';
import { newId } from '../../util/ids';

export interface StreamMachine<E> {
  /** Handles one event of the stream. */
  onEvent(ev: E): void;
  /** After the last event: whether the stream ended as it should (else it was cut). */
  readonly complete: boolean;
  /** What a cut stream is said to lack; default "The stream ended". */
  readonly cutWhat?: string;
  /** After a complete stream: finish the items still open. */
  finish?(): void;
  readonly responseId: string | undefined;
  /** The turn's outcome, once the stream is complete. */
  outcome(): {
    stopReason: StopReason;
    rawStopReason?: string;
    usage?: TurnResult['usage'];
    /** The hosted container (null when the provider has none; undefined: not said in `response.completed`). */
    containerId?: string | null;
    model?: string;
  };
}

/** Who streams: the provider, the base URL its client was given (for error messages), and the prefix of a generated response id when the provider sent none. */
export interface StreamSource {
  provider: ProviderId;
  baseURL?: string;
  idPrefix: string;
}

/** The error context of a turn (also for the checks an adapter makes before it streams). */
export function turnContext(provider: ProviderId, req: TurnRequest, baseURL?: string): ErrorContext {
  return { provider, model: req.model, baseURL, signal: req.signal, withTools: (req.tools?.length ?? 0) > 0 };
}

function stopped(ctx: ErrorContext): ProviderError {
  return new ProviderError({ code: 'aborted', provider: ctx.provider, message: 'Stopped: the request was cancelled.' });
}

/**
 * One streamed turn: `open` makes the SDK call, `machine` (the adapter's state machine) turns each
 * event into ours; this skeleton owns the error context, abort checks, the finished check, error
 * mapping and the TurnResult.
 */
export async function runStream<E>(
  source: StreamSource,
  req: TurnRequest,
  emit: EmitFn,
  open: () => Promise<AsyncIterable<E>>,
  machineFor: (turn: TurnItems, ctx: ErrorContext) => StreamMachine<E>,
): Promise<TurnResult> {
  const o = { ...source, emit };
  const ctx = turnContext(o.provider, req, o.baseURL);
  const turn = new TurnItems(o.provider, newId('turn'));
  const machine = machineFor(turn, ctx);
  try {
    if (req.signal?.aborted) throw stopped(ctx);
    const stream = await open();
    ctx.streaming = true;
    for await (const ev of stream) machine.onEvent(ev);
    if (req.signal?.aborted) throw stopped(ctx);
    if (!machine.complete) throw streamCut(ctx, undefined, machine.cutWhat ?? 'The stream ended');
    machine.finish?.();
  } catch (err) {
    const pe = toProviderError(err, ctx);
    pe.partial = { items: turn.partialItems(), responseId: machine.responseId };
    throw pe;
  }
  const responseId = machine.responseId ?? newId(o.idPrefix);
  const out = machine.outcome();
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
