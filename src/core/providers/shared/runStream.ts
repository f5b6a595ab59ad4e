/**
 * The one skeleton of a streamed model turn, shared by every adapter: set up the error context and the
 * turn's items, check for Stop, open the stream, hand each event to the adapter's state machine, tell a
 * cut stream from a finished one, bound the wait for the response and the silences in it (./watchdog),
 * map any failure to a ProviderError that keeps what arrived before it, announce `response.completed`,
 * and build the TurnResult. An adapter keeps only its request building and its stream state machine.
 */
import { TurnItems } from './emit';
import { ProviderError, streamCut, streamStalled, toProviderError, type ErrorContext } from './errors';
import type { ErrorClassifier } from './errorReading';
import { StreamWatchdog, type StreamBounds } from './watchdog';
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

/** Who streams: the provider, its SDK's error classifier, the base URL its client was given (for error messages), and the prefix of a generated response id when the provider sent none. */
interface StreamSource {
  provider: ProviderId;
  /** Unset: no error is read as the provider's answer (a stream made up by a test). */
  errors?: ErrorClassifier;
  baseURL?: string;
  idPrefix: string;
  /** The time-to-response and idle bounds (default DEFAULT_STREAM_BOUNDS). */
  bounds?: Partial<StreamBounds>;
}

/** The error context of a turn (also for the checks an adapter makes before it streams). */
export function turnContext(source: Pick<StreamSource, 'provider' | 'errors' | 'baseURL'>, req: TurnRequest): ErrorContext {
  const { provider, errors, baseURL } = source;
  return { provider, errors, model: req.model, baseURL, signal: req.signal, withTools: (req.tools?.length ?? 0) > 0 };
}

function stopped(ctx: ErrorContext): ProviderError {
  return new ProviderError({ code: 'aborted', provider: ctx.provider, message: 'Stopped: the request was cancelled.' });
}

/**
 * One streamed turn: `open` makes the SDK call with the signal it must give the SDK (the caller's Stop
 * and the watchdog's bounds), `machine` (the adapter's state machine) turns each event into ours; this
 * skeleton owns the error context, abort checks, the bounds, the finished check, error mapping and the
 * TurnResult.
 */
export async function runStream<E>(
  source: StreamSource,
  req: TurnRequest,
  emit: EmitFn,
  open: (signal: AbortSignal) => Promise<AsyncIterable<E>>,
  machineFor: (turn: TurnItems, ctx: ErrorContext) => StreamMachine<E>,
): Promise<TurnResult> {
  const o = { ...source, emit };
  const ctx = turnContext(source, req);
  const turn = new TurnItems(o.provider, newId('turn'));
  const machine = machineFor(turn, ctx);
  const dog = new StreamWatchdog(source.bounds, req.signal);
  let it: AsyncIterator<E> | undefined;
  let ended = false;
  try {
    if (req.signal?.aborted) throw stopped(ctx);
    const stream = await dog.connect(open);
    ctx.streaming = true;
    it = stream[Symbol.asyncIterator]();
    for (;;) {
      const next = await dog.guard(it.next());
      if (next.done) break;
      dog.event();
      machine.onEvent(next.value);
    }
    ended = true;
    if (req.signal?.aborted) throw stopped(ctx);
    if (!machine.complete) throw streamCut(ctx, undefined, machine.cutWhat ?? 'The stream ended');
    machine.finish?.();
  } catch (err) {
    // Not read to its end: let the SDK close the response (as `for await` would on a throw).
    if (it && !ended) void Promise.resolve(it.return?.()).catch(() => {});
    const pe = dog.stall && !req.signal?.aborted ? streamStalled(ctx, dog.stall) : toProviderError(err, ctx);
    pe.partial = { items: turn.partialItems(), responseId: machine.responseId };
    throw pe;
  } finally {
    dog.dispose();
  }
  const responseId = machine.responseId ?? newId(o.idPrefix);
  const out = machine.outcome();
  o.emit({
    type: 'response.completed',
    response: { id: responseId, usage: out.usage, ...(out.containerId !== undefined ? { container_id: out.containerId } : {}) },
  });
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
