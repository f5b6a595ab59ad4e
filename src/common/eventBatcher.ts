/**
 * Host-side batching of transcript events for the chat panel: append-only, coalesced, at most one post
 * per frame. Pure: the post function and the scheduler are injected.
 *
 * Adjacent deltas for the same item (text, code, output of the same stream, function arguments: the types
 * whose traits say `delta`, when they share what ./eventTraits' `SAME_PIECE` asks) are merged into one event,
 * so a model streaming a token at a time or a program printing a line at a time costs one message per frame,
 * not one per token. Order across items is preserved exactly.
 */
import type { EventsMessage } from './protocol';
import { isDelta, SAME_PIECE, type EventsWith } from './eventTraits';
import type { TranscriptEvent } from './transcript';

/** Runs `flush` later (once); may return a function that cancels it. */
export type FrameScheduler = (flush: () => void) => (() => void) | void;

export interface EventBatcherOptions {
  conversationId?: string;
  /** The seq of the last batch already delivered (0 for a new conversation). */
  startSeq?: number;
  /** How many posted batches to keep for `replaySince` (a reloaded page catching up). */
  retainBatches?: number;
  /** Rough cap, in characters, on what the kept batches hold. */
  retainChars?: number;
  /**
   * Names this batcher's numbering of `seq` (a random token per host panel). A page whose seq came from
   * another numbering (an extension host that has since restarted) is never told it is up to date.
   */
  epoch?: string;
}

export interface EventBatcher {
  push(event: TranscriptEvent): void;
  pushAll(events: readonly TranscriptEvent[]): void;
  /** Posts what is pending now (for example before a turn's last event is persisted). */
  flush(): void;
  /** The seq of the last posted batch. */
  readonly seq: number;
  readonly conversationId: string | undefined;
  /** Events waiting for the next frame. */
  readonly pending: number;
  /**
   * The batches after `seq`, if all of them are still kept; undefined when the page must get a `reset`
   * (also when its seq is of another epoch). An empty array means the page is up to date.
   */
  replaySince(seq: number, conversationId?: string, epoch?: string): EventsMessage[] | undefined;
  /** The numbering `seq` belongs to (`EventBatcherOptions.epoch`). */
  readonly epoch: string | undefined;
  /** Starts a new conversation (drops what is pending and kept). */
  reset(conversationId?: string, seq?: number): void;
  dispose(): void;
}

/** A scheduler for hosts without animation frames: one flush per `ms` at most (default 16 ms, ~60 Hz). */
export function timerScheduler(ms = 16): FrameScheduler {
  return (flush) => {
    const handle = setTimeout(flush, ms);
    return () => clearTimeout(handle);
  };
}

type Delta = EventsWith<'delta', true>;

/** True when `b` can be appended to `a` as one delta. */
export function canCoalesce(a: TranscriptEvent, b: TranscriptEvent): boolean {
  if (a.type !== b.type || !isDelta(a) || !isDelta(b) || a.item_id !== b.item_id) return false;
  return (SAME_PIECE[a.type] as (a: Delta, b: Delta) => boolean)(a, b);
}

/** Merges adjacent deltas of a list (a pure helper; the batcher does the same incrementally). */
export function coalesceEvents(events: readonly TranscriptEvent[]): TranscriptEvent[] {
  const out: TranscriptEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (last && canCoalesce(last, e)) (last as Delta).delta += (e as Delta).delta;
    else out.push(isDelta(e) ? { ...e } : e);
  }
  return out;
}

function approxChars(e: TranscriptEvent): number {
  if (isDelta(e)) return e.delta.length + 64;
  if (e.type === 'response.code_interpreter_call_code.done') return e.code.length + 64;
  if (e.type === 'response.output_text.done' || e.type === 'response.reasoning_text.done') return e.text.length + 64;
  if (e.type === 'response.output_item.done' || e.type === 'response.output_item.added') {
    try {
      return JSON.stringify(e).length;
    } catch {
      return 1024;
    }
  }
  return 128;
}

export function createEventBatcher(post: (message: EventsMessage) => unknown, schedule: FrameScheduler, options: EventBatcherOptions = {}): EventBatcher {
  let conversationId = options.conversationId;
  let seq = options.startSeq ?? 0;
  const retainBatches = options.retainBatches ?? 512;
  const retainChars = options.retainChars ?? 16 * 1024 * 1024;
  let pending: TranscriptEvent[] = [];
  let pendingChars = 0;
  let cancel: (() => void) | void = undefined;
  let scheduled = false;
  let disposed = false;
  // Kept batches, oldest first, with their rough sizes.
  let kept: { message: EventsMessage; chars: number }[] = [];
  let keptChars = 0;
  /** The oldest seq we can no longer replay from (batches up to and including it were dropped). */
  let droppedThrough = seq;

  const flush = (): void => {
    scheduled = false;
    cancel = undefined;
    if (disposed || pending.length === 0) return;
    const message: EventsMessage = { type: 'events', seq: ++seq, events: pending };
    if (conversationId !== undefined) message.conversationId = conversationId;
    const chars = pendingChars;
    pending = [];
    pendingChars = 0;
    kept.push({ message, chars });
    keptChars += chars;
    while (kept.length > retainBatches || (keptChars > retainChars && kept.length > 0)) {
      const old = kept.shift()!;
      keptChars -= old.chars;
      droppedThrough = old.message.seq;
    }
    post(message);
  };

  const push = (event: TranscriptEvent): void => {
    if (disposed) return;
    const last = pending[pending.length - 1];
    if (last && canCoalesce(last, event)) {
      (last as Delta).delta += (event as Delta).delta;
      pendingChars += (event as Delta).delta.length;
    } else {
      // Copy deltas: they are appended to later, and the caller's objects must stay untouched.
      pending.push(isDelta(event) ? { ...event } : event);
      pendingChars += approxChars(event);
    }
    if (!scheduled) {
      scheduled = true;
      cancel = schedule(flush);
    }
  };

  return {
    push,
    pushAll(events) {
      for (const e of events) push(e);
    },
    flush() {
      if (cancel) cancel();
      flush();
    },
    get seq() {
      return seq;
    },
    get conversationId() {
      return conversationId;
    },
    get pending() {
      return pending.length;
    },
    get epoch() {
      return options.epoch;
    },
    replaySince(since, conv, epoch) {
      if (conv !== conversationId || epoch !== options.epoch) return undefined;
      if (since === seq) return [];
      if (since > seq || since < droppedThrough) return undefined;
      return kept.filter((k) => k.message.seq > since).map((k) => k.message);
    },
    reset(conv, startSeq = 0) {
      if (cancel) cancel();
      cancel = undefined;
      scheduled = false;
      pending = [];
      pendingChars = 0;
      kept = [];
      keptChars = 0;
      conversationId = conv;
      seq = startSeq;
      droppedThrough = startSeq;
    },
    dispose() {
      disposed = true;
      if (cancel) cancel();
      pending = [];
      kept = [];
    },
  };
}
