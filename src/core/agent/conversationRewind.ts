/**
 * Rewinding a conversation (issue 35): it is cut back to just before one of its turns, and the turns from there on
 * are not deleted but kept, with everything before them, as a new conversation in the history (the branch). The
 * conversation keeps its id (its session, its place in the panel); the model's history is the file's, so the next
 * request holds only what is left. Both files are written whole: the branch first (a new name, never over another
 * file), then the cut copy in place of the original (./transcriptStore's atomic write), so a crash in between loses
 * nothing: the original is whole until the cut copy replaces it, and the branch then holds it.
 */
import { clip } from '../../common/format';
import type { TranscriptEvent, TurnSource } from '../../common/transcript';
import { writeFileAtomicSync } from '../util/atomicFile';
import { randomToken } from '../util/ids';
import { holdConversation } from './conversationLock';
import { readTranscript } from './transcriptFile';
import type { Conversation, TranscriptStore } from './transcriptStore';

/** What a conversation rewind did. */
export interface ConversationCut {
  /** The conversation the whole one was kept as (its turns from the cut on included). */
  branchId: string;
  branchTitle: string;
  /** The turn it went back to before: its number (from 1), its prompt (the person may send it again), and where it came from. */
  turn: number;
  prompt: string;
  source?: TurnSource;
  /** How many turns were cut (they are in the branch). */
  removed: number;
}

type Record = { meta?: { title?: string } & globalThis.Record<string, unknown>; event?: TranscriptEvent; patch?: unknown };

/** The turn that holds execution `itemId` (the id of its `codeact.turn.started`), from the conversation's events. */
export function turnOfExecution(events: readonly TranscriptEvent[], itemId: string): string | undefined {
  let turn: string | undefined;
  for (const e of events) {
    if (e.type === 'codeact.turn.started') turn = e.turn_id;
    else if (('item_id' in e && e.item_id === itemId) || (e.type === 'response.output_item.done' && e.item.id === itemId)) return e.turn_id ?? turn;
  }
  return undefined;
}

/** The title of the branch a rewind keeps the whole conversation as. */
export function branchTitle(title: string): string {
  return clip(`${title} (before rewind)`, 80);
}

/** A turn as a rewind names it: its number (from 1), prompt and source, and its first execution (the id of its item). */
interface TurnPoint {
  turn: number;
  prompt: string;
  source?: TurnSource;
  firstExecution?: string;
}

/** Turn `turnId` of the conversation, in one pass over its events; undefined when it is not there. */
export function turnAt(events: readonly TranscriptEvent[], turnId: string): TurnPoint | undefined {
  let n = 0;
  let found: TurnPoint | undefined;
  let current: string | undefined;
  for (const e of events) {
    if (e.type === 'codeact.turn.started') {
      current = e.turn_id;
      if (!found) n++;
      if (e.turn_id === turnId) found = { turn: n, prompt: e.prompt, ...(e.source ? { source: e.source } : {}) };
    } else if (found && e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && (e.turn_id ?? current) === turnId)
      return { ...found, firstExecution: e.item.id };
  }
  return found;
}

/** Whether a turn's prompt is a person's message (to send again), not a label of what was run (Run with Tools: "orders.py, lines 3-20"). */
export function isMessage(source: TurnSource | undefined): boolean {
  return source !== 'run_with_tools' && source !== 'lm_tool';
}

/**
 * Cuts `convo` back to just before its turn `turnId`, keeping the whole conversation as a new one (the branch,
 * titled "… (before rewind)"). Meta patches after the cut are kept (they describe the conversation, not a turn).
 * Holds the conversation while it writes (a turn of another process would be cut under it: that throws
 * ConversationBusyError). Throws, changing nothing, when the turn is not in the file or a write fails.
 */
export function cutConversation(store: TranscriptStore, convo: Conversation, turnId: string): ConversationCut {
  const release = holdConversation(convo.id, convo.file);
  try {
    convo.flush({ durable: true });
    if (convo.failure) throw new Error(`The conversation cannot be rewound: ${convo.failure.message}`);
    const { text } = readTranscript(convo.file);
    const lines = text.split('\n');
    // Only whole lines are cut: a torn last one (a crash) stays at the end of the branch, where its next append keeps it aside.
    const torn = lines.pop() ?? '';
    const records = lines.map((l): Record | undefined => {
      try {
        const r = JSON.parse(l) as unknown;
        return r && typeof r === 'object' ? (r as Record) : undefined;
      } catch {
        return undefined;
      }
    });
    const starts = records.flatMap((r, i) => (r?.event?.type === 'codeact.turn.started' ? [i] : []));
    const at = starts.find((i) => (records[i]!.event as { turn_id?: string }).turn_id === turnId);
    if (at === undefined) throw new Error('That turn is not in the conversation (it was rewound away already, or the file changed); nothing was changed.');
    const first = records[0]?.meta;
    if (!first) throw new Error(`The first line of ${convo.file} is damaged; reopen the conversation (it is repaired then), then rewind.`);
    const started = records[at]!.event as { prompt?: unknown; source?: TurnSource };
    const prompt = typeof started.prompt === 'string' ? started.prompt : '';
    const title = branchTitle(convo.meta.title);
    const branchId = `${convo.id.slice(0, 60)}_b${randomToken(5)}`;
    // The branch is a conversation of its own: its own session when continued, nothing of the original's left to it.
    const branchMeta = { ...first, id: branchId, title, createdAt: Date.now(), branchOf: convo.id, kernelId: null, containerId: null, endedNotes: null };
    const branch = [JSON.stringify({ meta: branchMeta }), ...lines.slice(1)].join('\n') + '\n';
    // Later patches go on applying to the branch's meta too: its id and title are said again last.
    const branchPatch = JSON.stringify({ t: Date.now(), patch: { title, kernelId: null, containerId: null, endedNotes: null } });
    writeFileAtomicSync(store.file(branchId), branch + branchPatch + '\n' + torn, { mode: 0o600, exclusive: true });
    const keep = keptAfterCut(records.slice(0, at));
    const kept = [...lines.slice(0, at), ...lines.slice(at).filter((_, k) => keep(records[at + k]))];
    try {
      writeFileAtomicSync(convo.file, kept.join('\n') + '\n', { mode: 0o600 });
    } catch (e) {
      // The conversation is as it was: no branch of it is left either.
      store.delete(branchId);
      throw new Error(
        `The conversation could not be rewound: writing ${convo.file} failed (${(e as Error).message}); it is as it was. Free some space, then rewind again.`,
      );
    }
    // The object reads the file it now is (a new inode: read whole again), so the next turn's history is the cut one.
    convo.catchUp();
    const source = started.source ? { source: started.source } : {};
    return { branchId, branchTitle: title, turn: starts.indexOf(at) + 1, prompt, ...source, removed: starts.filter((i) => i >= at).length };
  } finally {
    release();
  }
}

/**
 * After the cut: the meta's patches; events of earlier turns another process wrote meanwhile (their turn_id); and
 * the session's and its jobs' events, which carry no turn (a job of a kept turn that ended later, a restart).
 */
function keptAfterCut(before: readonly (Record | undefined)[]): (r: Record | undefined) => boolean {
  const turns = new Set<unknown>();
  const jobs = new Set<unknown>();
  for (const b of before) {
    const e = b?.event as { type?: string; turn_id?: unknown; job?: unknown } | undefined;
    if (e?.type === 'codeact.turn.started') turns.add(e.turn_id);
    else if (e?.type === 'codeact.job') jobs.add(e.job);
  }
  return (r) => {
    if (r?.patch !== undefined) return true;
    const e = r?.event as { type?: string; turn_id?: unknown; job?: unknown } | undefined;
    if (!e) return false;
    if (e.turn_id !== undefined) return turns.has(e.turn_id);
    // A job's later events when it started before the cut; the session's own (a restart, a loss).
    return e.type === 'codeact.session' || (e.type === 'codeact.job' && jobs.has(e.job));
  };
}

/** "1 turn was" / "3 turns were". */
export function turnsWere(n: number, verb: 'was' | 'is' = 'was'): string {
  const plural = verb === 'was' ? 'were' : 'are';
  return `${n} turn${n === 1 ? '' : 's'} ${n === 1 ? verb : plural}`;
}

/** What the model is told at its next request after a conversation rewind (`code`: what the code rewind did, if one was done). */
export function conversationRewindNote(cut: ConversationCut, code: string | undefined): string {
  const said = JSON.stringify(clip(cut.prompt.replace(/\s+/g, ' ').trim(), 120));
  const what = isMessage(cut.source) ? `their message ${said}` : `the run ${said}`;
  const head = `[codeact] The user rewound the conversation to before ${what} (turn ${cut.turn}): ${turnsWere(cut.removed)} taken out of this conversation.`;
  if (code) return `${head}\n${code}`;
  return `${head} The Python session and the workspace files were not rewound with it.`;
}
