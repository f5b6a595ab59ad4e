/**
 * What a chat turn's model is told of the code that ran in its conversation's Python session outside its own
 * requests since its last turn: code turns (Run with Tools, a language-model tool, an MCP client such as VS Code's
 * agent sharing the panel's conversation) are not in the model's history, yet their variables and files are there.
 * Read from the conversation's own events (nothing stored twice): the code turns after the last chat turn, each as
 * JSON data (who ran it, its code and the result as the model reads an execution), the newest few, within budgets.
 */
import type { CodeInterpreterCallItem } from '../../common/events';
import { headTail, omittedText } from '../../common/outputBudget';
import type { TranscriptEvent } from '../../common/transcript';
import { executionSummary, sessionContext } from '../agent/executionResult';

/** Code turns told of at most (the newest; the note says how many there were). */
const MAX_TOLD = 5;
/** Characters of each one's code, and of its output, the note carries at most. */
const CODE_CHARS = 2000;
const OUTPUT_CHARS = 2000;
/** Events looked back through at most (a bound before the work, however long the conversation). */
const MAX_EVENTS_BACK = 20_000;

export const CODE_RAN_NOTE =
  "Note: code ran in this conversation's Python session outside your requests since your last turn (the person's Run with Tools, " +
  'a language-model tool, or another agent); what it defined and wrote is there. Each line below is one run, as JSON data (who ran it, its code, its result):';

/**
 * The note for the chat turn `turnId` (whose start marker may already be among `events`), or undefined when no code
 * ran outside the model's requests since the last chat turn.
 */
export function codeRanNote(events: readonly TranscriptEvent[], turnId?: string): string | undefined {
  const turns = new Map<string, string>(); // code turn id -> its label, newest first
  const items = new Map<string, CodeInterpreterCallItem[]>();
  const stop = Math.max(0, events.length - MAX_EVENTS_BACK);
  for (let i = events.length - 1; i >= stop; i--) {
    const e = events[i];
    if (e.type === 'codeact.turn.started') {
      if (e.turn_id === turnId) continue;
      // A chat turn names its model; a code turn has none.
      if (e.model !== undefined || e.provider !== undefined) break;
      turns.set(e.turn_id, e.prompt);
    } else if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') {
      const id = (e as { turn_id?: string }).turn_id;
      if (id) (items.get(id) ?? items.set(id, []).get(id)!).push(e.item);
    }
  }
  // Newest first, as collected; only the runs told are summarised (however many ran).
  const runs = [...turns].flatMap(([id, label]) => (items.get(id) ?? []).map((item) => ({ label, item })));
  if (!runs.length) return undefined;
  const told = runs
    .slice(0, MAX_TOLD)
    .reverse()
    .map((r) => runNote(r.label, r.item));
  const count = runs.length > told.length ? ` (the last ${told.length} of ${runs.length})` : '';
  return [`${CODE_RAN_NOTE}${count}`, ...told].join('\n');
}

function runNote(label: string, item: CodeInterpreterCallItem): string {
  const code = headTail(item.code ?? '', CODE_CHARS, (o) => `\n… ${omittedText(o)} of the code left out …\n`);
  const result = executionSummary(item, { outputChars: OUTPUT_CHARS, ...sessionContext(item) });
  return JSON.stringify({ by: label.slice(0, 200), code, result: JSON.parse(result) as unknown });
}
