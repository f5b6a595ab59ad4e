/**
 * The turn in flight, journaled: what a crash (SIGKILL, the extension host killed) may lose is only what had
 * not completed. While a turn runs, each history item is written the moment it is final (the prompt, each
 * model response's items, each function call's output as its execution ends) and the streamed text goes
 * into the transcript as events. When a conversation is reopened, `recoverInterrupted` closes a turn that
 * never ended: its end marker says it was interrupted (the person sees it), every function call without a
 * result gets an explicit "result lost" output (no strict server refuses the history), and a note in the
 * history tells the model, with the answer's text streamed so far.
 *
 * `repairHistory` is how the model's history is rebuilt from the saved items: outputs follow their calls
 * in the calls' order (they are saved as they finish), and a call whose output is missing gets one.
 */
import type { FunctionCallOutputItem, MessageItem } from '../../common/events';
import type { TranscriptEvent, TurnEnded } from '../../common/transcript';
import type { ConversationItem } from '../providers/shared/types';
import { quoteInline } from '../../common/quoteData';
import { newId } from '../util/ids';
import { repairDamaged, type Conversation } from './transcriptStore';

/** What the person reads on a turn the process running it did not live to end. */
const CRASHED_MESSAGE = 'Interrupted: CodeAct ended (killed, crashed or VS Code closed) while this turn ran. What completed before is kept.';

/** The output of a call whose result was never saved. */
export const RESULT_LOST =
  'Result lost: CodeAct ended (it was killed or crashed) while this call ran, so its result was never recorded. The call may or may not have taken effect; check before repeating it.';

/** Characters of the cut-off answer the note quotes back. */
const PARTIAL_MAX = 4000;

/** How the note the model reads after an interrupted turn begins. */
export const INTERRUPTED_NOTE =
  '[CodeAct note: this turn was interrupted: the process running it ended before the turn finished. The steps above completed; anything after them was lost.';

/** The note the model reads after an interrupted turn. */
function interruptedNote(partial: string): string {
  return (
    INTERRUPTED_NOTE +
    // The cut-off text is the model's own, quoted as data (a JSON string) so it cannot start a line of the note.
    (partial ? ` The answer had begun with: ${quoteInline(partial, PARTIAL_MAX)}]` : ']')
  );
}

/** A result-lost output for a call. */
function lostOutput(call: Extract<ConversationItem, { type: 'function_call' }>): FunctionCallOutputItem {
  return {
    type: 'function_call_output',
    id: newId('out'),
    ...(call.id ? { item_id: call.id } : {}),
    call_id: call.call_id,
    name: call.name,
    output: JSON.stringify({ error: RESULT_LOST }),
    is_error: true,
  };
}

/**
 * The history as the model gets it: each run of function calls is followed by their outputs in the calls'
 * order, and a call with no output gets a "result lost" one. The items are not changed; a new list is returned.
 */
export function repairHistory(items: readonly ConversationItem[]): ConversationItem[] {
  const outputs = new Map<string, ConversationItem>();
  for (const item of items) if (item.type === 'function_call_output' && !outputs.has(item.call_id)) outputs.set(item.call_id, item);
  const calledIds = new Set(items.flatMap((i) => (i.type === 'function_call' ? [i.call_id] : [])));
  const out: ConversationItem[] = [];
  const placed = new Set<string>();
  // Calls waiting for their outputs: placed, in the calls' order, at the first output or user message after them.
  let calls: Extract<ConversationItem, { type: 'function_call' }>[] = [];
  const settle = () => {
    for (const call of calls) {
      if (placed.has(call.call_id)) continue;
      placed.add(call.call_id);
      out.push(outputs.get(call.call_id) ?? lostOutput(call));
    }
    calls = [];
  };
  for (const item of items) {
    if (item.type === 'function_call_output') {
      settle();
      // An output of a call not in the history (an old or damaged file) stays where it is; a duplicate goes.
      if (!calledIds.has(item.call_id) && outputs.get(item.call_id) === item) out.push(item);
      continue;
    }
    if (item.type === 'message' && item.role === 'user') settle();
    out.push(item);
    if (item.type === 'function_call') calls.push(item);
  }
  settle();
  return out;
}

/** The text of the answer streamed in `events` after the last finished response (what a crash cut off). */
function streamedText(events: readonly TranscriptEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'response.completed') text = '';
    else if (e.type === 'response.output_text.delta' && !e.thinking) text += e.delta;
  }
  return text.trim();
}

/**
 * Closes the turns of a reopened conversation that started and never ended (the process under them died),
 * and saves what that says: the end markers (interrupted), "result lost" outputs for calls without a result,
 * and the note to the model. Returns the turns closed. Call it only while holding the conversation
 * (./conversationLock): a turn another live process runs is not interrupted; nor is one in `running` (the
 * turns this process runs now).
 */
function recoverInterrupted(convo: Conversation, message = CRASHED_MESSAGE, running?: ReadonlySet<string>): string[] {
  const open: string[] = [];
  const startedAt = new Map<string, number>();
  convo.events.forEach((e, i) => {
    if (e.type === 'codeact.turn.started') {
      if (running?.has(e.turn_id)) return;
      open.push(e.turn_id);
      startedAt.set(e.turn_id, i);
    } else if (e.type === 'codeact.turn.ended') open.splice(open.indexOf(e.turn_id) >>> 0, open.includes(e.turn_id) ? 1 : 0);
  });
  if (!open.length) return [];
  const last = open[open.length - 1];
  const chat = convo.events[startedAt.get(last)!];
  // A chat turn's history: outputs for calls the crash left without one, then the note to the model.
  const isChat = chat.type === 'codeact.turn.started' && chat.source !== 'run_with_tools' && chat.source !== 'lm_tool';
  if (isChat) {
    // The prompt is saved when the run begins; a crash before that (while a session started) lost it.
    const lastUser = [...convo.history].reverse().find((i) => i.type === 'message' && i.role === 'user');
    const prompt = chat.type === 'codeact.turn.started' ? chat.prompt : '';
    if (prompt && (!lastUser || lastUser.type !== 'message' || lastUser.text !== prompt))
      convo.appendItems([{ type: 'message', id: newId('msg_user'), role: 'user', text: prompt }]);
    const answered = new Set(convo.history.flatMap((i) => (i.type === 'function_call_output' ? [i.call_id] : [])));
    const lost = convo.history.flatMap((i) => (i.type === 'function_call' && !answered.has(i.call_id) ? [lostOutput(i)] : []));
    const note: MessageItem = {
      type: 'message',
      id: newId('msg_note'),
      role: 'assistant',
      text: interruptedNote(streamedText(convo.events.slice(startedAt.get(last)))),
    };
    convo.appendItems([...lost, note]);
  }
  for (const turnId of open) {
    const ended: TurnEnded = { type: 'codeact.turn.ended', turn_id: turnId, status: 'stopped', interrupted: true, message };
    convo.appendEvent(ended);
  }
  convo.flush({ durable: true });
  return open;
}

/**
 * What a process does once it holds a conversation (./conversationLock), before it writes: takes in what
 * another process wrote meanwhile, keeps a damaged file beside a repaired copy, and closes the turns nobody
 * runs any more (not those in `running`, this process's own). Returns the turns closed, and the events to
 * show: those taken in, then the closing markers.
 */
export function settleHeld(convo: Conversation, message?: string, running?: ReadonlySet<string>): { closed: string[]; shown: TranscriptEvent[] } {
  const taken = convo.catchUp();
  repairDamaged(convo);
  const from = convo.events.length;
  const closed = recoverInterrupted(convo, message, running);
  return { closed, shown: [...taken, ...convo.events.slice(from)] };
}
