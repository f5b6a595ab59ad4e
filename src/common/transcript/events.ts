/** Turn markers: the two events the hosts add around one turn of the shared vocabulary. */
import type { CodeActEvent, RuntimeKind } from '../events';

// ---- turn markers ---------------------------------------------------------------------------------

/** Where a turn came from. */
export type TurnSource = 'chat' | 'run_with_tools' | 'lm_tool' | 'participant' | 'cli' | 'acp' | 'mcp';

/** Starts a turn: the user's prompt (or what was run) and the model it goes to. */
export interface TurnStarted {
  type: 'codeact.turn.started';
  turn_id: string;
  /** The user's prompt; for Run with Tools a short description such as `orders.py, lines 3-20`. */
  prompt: string;
  source?: TurnSource;
  provider?: string;
  model?: string;
  runtime?: RuntimeKind;
  /** Epoch milliseconds. */
  started_at?: number;
}

export type TurnEndStatus = 'completed' | 'stopped' | 'failed';

/** Ends a turn. Anything still running in it is shown as stopped. */
export interface TurnEnded {
  type: 'codeact.turn.ended';
  turn_id: string;
  status: TurnEndStatus;
  duration_ms?: number;
  /** Optional one-line explanation, for example why it failed. */
  message?: string;
  /** VS Code reloaded or closed while the turn ran: it was cut off, not stopped by the user. */
  interrupted?: boolean;
}

/**
 * What the transcript store persists and the panel reduces: the event vocabulary plus turn markers. A saved
 * event carries the turn it belongs to (`turn_id`), so the panel and the export group by it even when two
 * processes wrote the conversation.
 */
export type TranscriptEvent = (CodeActEvent & { turn_id?: string }) | TurnStarted | TurnEnded;

/**
 * The events in turn order: each turn's events together, after its start marker, in the order the turns
 * started. Events of two processes writing one conversation interleave in the file; `turn_id` puts each
 * back with its turn. An event without one (older transcripts) stays with the events before it.
 */
export function eventsByTurn(events: readonly TranscriptEvent[]): TranscriptEvent[] {
  const groups = new Map<string, TranscriptEvent[]>();
  const order: TranscriptEvent[][] = [];
  let current: TranscriptEvent[] = [];
  order.push(current);
  for (const e of events) {
    if (e.type === 'codeact.turn.started') {
      current = [];
      groups.set(e.turn_id, current);
      order.push(current);
    }
    const own = e.turn_id !== undefined ? groups.get(e.turn_id) : undefined;
    (own ?? current).push(e);
  }
  return order.flat();
}
