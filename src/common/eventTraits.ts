/**
 * What each event type is, decided once: every place that treats events by kind (the panel's batcher, the
 * transcript store, the turn's markers, the CLI's printers, the panel's reducer) reads this table instead
 * of a list of names of its own. A new event type does not compile until its row is written here.
 *
 * Pure data: no Node, no `vscode`.
 */
import type { TranscriptEvent } from './transcript/events';

/** Every event type: the vocabulary (./events) and the two turn markers (./transcript/events). */
export type EventType = TranscriptEvent['type'];

interface EventTraits {
  /**
   * A piece of a longer text (it has `item_id` and `delta`): the panel's batcher appends adjacent ones of
   * one item into one event (./eventBatcher), when they share what the type's {@link SAME_PIECE} asks.
   */
  delta: boolean;
  /**
   * Written to the conversation's file by the transcript store. `false`: kept in memory for the panel only
   * (the finished item carries the same output, so the file would hold it twice).
   */
  persisted: boolean;
  /**
   * One of a turn's own markers, which the hosts add around a turn: saved, reduced by the panel, never
   * printed by `--json` nor handed to a listener of the vocabulary. Its `turn_id` names its turn; any other
   * event's `turn_id` names the turn it belongs to.
   */
  turnMarker: boolean;
  /**
   * What the CLI's printers (../cli/print.ts) show of it for a person: `run` printed by `codeact run` and by
   * `codeact chat` (whose printer builds on it), `chat` by a chat only, `none` never. `--json` prints every
   * event that is not a turn marker, as it is.
   */
  printed: 'run' | 'chat' | 'none';
  /** The panel's reducer (./transcript/reducer) shows it; `false`: the reducer passes it by. */
  panel: boolean;
  /**
   * It reports a model request's token usage, which the turn's and the conversation's totals count
   * (./usage): in `response.usage` (`response`) or in its own `usage` (`event`). `false`: it reports none.
   */
  usage: false | 'response' | 'event';
}

const stream = { delta: true, persisted: true, turnMarker: false, panel: true, usage: false } as const;
const plain = { delta: false, persisted: true, turnMarker: false, panel: true, usage: false } as const;

/** The traits of every event type (the compiler asks for a row for each). */
export const EVENT_TRAITS = {
  'response.output_text.delta': { ...stream, printed: 'chat' },
  'response.output_text.done': { ...plain, printed: 'chat' },
  'response.reasoning_text.delta': { ...stream, printed: 'none' },
  'response.reasoning_text.done': { ...plain, printed: 'none' },
  'response.code_interpreter_call.in_progress': { ...plain, printed: 'chat' },
  'response.code_interpreter_call_code.delta': { ...stream, printed: 'chat' },
  'response.code_interpreter_call_code.done': { ...plain, printed: 'chat' },
  'response.code_interpreter_call.interpreting': { ...plain, printed: 'none' },
  'response.code_interpreter_call.completed': { ...plain, printed: 'none' },
  'response.output_item.added': { ...plain, printed: 'none' },
  'response.output_item.done': { ...plain, printed: 'run' },
  'response.function_call_arguments.delta': { ...stream, printed: 'none' },
  'response.function_call_arguments.done': { ...plain, printed: 'none' },
  'codeact.output.delta': { ...stream, persisted: false, printed: 'run' },
  'codeact.output.display': { ...plain, persisted: false, printed: 'run' },
  'codeact.tool_call.started': { ...plain, printed: 'none' },
  'codeact.tool_call.completed': { ...plain, printed: 'run' },
  'codeact.approval.requested': { ...plain, printed: 'none' },
  'codeact.approval.resolved': { ...plain, printed: 'none' },
  'codeact.elicitation.requested': { ...plain, printed: 'none' },
  'codeact.elicitation.resolved': { ...plain, printed: 'none' },
  'codeact.retry': { ...plain, printed: 'chat' },
  'codeact.session': { ...plain, printed: 'chat' },
  'codeact.job': { ...plain, printed: 'none' },
  'codeact.job.output': { ...plain, persisted: false, printed: 'none' },
  'codeact.job.notes': { ...plain, printed: 'none' },
  'codeact.context.usage': { ...plain, printed: 'none' },
  'codeact.context.compacted': { ...plain, usage: 'event', printed: 'chat' },
  'codeact.notebook.cell': { ...plain, printed: 'none' },
  'codeact.usage.summary': { ...plain, panel: false, printed: 'none' },
  'response.completed': { ...plain, usage: 'response', printed: 'none' },
  error: { ...plain, printed: 'none' },
  'codeact.turn.started': { ...plain, turnMarker: true, printed: 'none' },
  'codeact.turn.ended': { ...plain, turnMarker: true, printed: 'none' },
} as const satisfies Record<EventType, EventTraits>;

type Table = typeof EVENT_TRAITS;
/** The event types whose trait `K` is `V`. */
type TypesWith<K extends keyof EventTraits, V> = { [T in EventType]: Table[T][K] extends V ? T : never }[EventType];
/** The events whose trait `K` is `V`. */
export type EventsWith<K extends keyof EventTraits, V> = Extract<TranscriptEvent, { type: TypesWith<K, V> }>;

type DeltaType = TypesWith<'delta', true>;
type DeltaOf<T extends DeltaType> = Extract<TranscriptEvent, { type: T }>;

/**
 * What else two adjacent deltas of one type and one item must share to be one piece, which the panel's
 * batcher appends (./eventBatcher). A type whose row says `delta` does not compile until it is written here.
 */
export const SAME_PIECE: { [T in DeltaType]: (a: DeltaOf<T>, b: DeltaOf<T>) => boolean } = {
  'response.output_text.delta': (a, b) => (a.thinking === true) === (b.thinking === true),
  'response.reasoning_text.delta': () => true,
  'response.code_interpreter_call_code.delta': () => true,
  'response.function_call_arguments.delta': (a, b) => a.call_id === b.call_id,
  'codeact.output.delta': (a, b) => a.stream === b.stream,
};

/** The traits of a type read from outside (a saved file, a newer host): undefined for a type this version does not know. */
export function traitsOf(type: string): EventTraits | undefined {
  return Object.hasOwn(EVENT_TRAITS, type) ? EVENT_TRAITS[type as EventType] : undefined;
}

/** A turn's own markers (not of the event vocabulary: a listener that takes only the vocabulary skips them). */
export function isTurnMarker(e: TranscriptEvent): e is EventsWith<'turnMarker', true> {
  return traitsOf(e.type)?.turnMarker === true;
}

/** A delta of the vocabulary (see `EventTraits.delta`). */
export function isDelta(e: TranscriptEvent): e is EventsWith<'delta', true> {
  return traitsOf(e.type)?.delta === true;
}

/**
 * Where the panel's reducer passes an event by: a known type gets here only when its traits say the panel
 * does not show it (the compiler checks); an unknown one (a newer host's) is ignored too.
 */
export function notShownInPanel(event: EventsWith<'panel', false>): void {
  void event;
}
