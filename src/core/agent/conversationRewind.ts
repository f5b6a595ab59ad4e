/**
 * Rewinding a conversation (issue 35): it is cut back to just before one of its turns, and the turns from there on
 * are not deleted but kept, with everything before them, as a new conversation in the history (the branch). The
 * conversation keeps its id (its session, its place in the panel); the model's history is the file's, so the next
 * request holds only what is left. Both files are written whole: the branch first (a new name, never over another
 * file), then the cut copy in place of the original (./transcriptStore's atomic write), so a crash in between loses
 * nothing: the original is whole until the cut copy replaces it, and the branch then holds it.
 */
import { clip } from '../../common/format';
import type { TranscriptEvent } from '../../common/transcript';
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
  /** The turn it went back to before: its number (from 1) and its prompt (the person may send it again). */
  turn: number;
  prompt: string;
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

/** The first execution of turn `turnId` (the id of its item), from the conversation's events; undefined when it ran none. */
export function firstExecution(events: readonly TranscriptEvent[], turnId: string): string | undefined {
  let turn: string | undefined;
  for (const e of events) {
    if (e.type === 'codeact.turn.started') turn = e.turn_id;
    else if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' && (e.turn_id ?? turn) === turnId) return e.item.id;
  }
  return undefined;
}

/** The title of the branch a rewind keeps the whole conversation as. */
export function branchTitle(title: string): string {
  return clip(`${title} (before rewind)`, 80);
}

/** Turn `turnId` of the conversation: its number (from 1) and its prompt; undefined when it is not there. */
export function turnAt(events: readonly TranscriptEvent[], turnId: string): { turn: number; prompt: string } | undefined {
  let n = 0;
  for (const e of events)
    if (e.type === 'codeact.turn.started') {
      n++;
      if (e.turn_id === turnId) return { turn: n, prompt: e.prompt };
    }
  return undefined;
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
    // Only whole lines: a torn last one (a crash) stays out of both copies.
    lines.pop();
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
    const started = records[at]!.event as { prompt?: unknown };
    const prompt = typeof started.prompt === 'string' ? started.prompt : '';
    const title = branchTitle(convo.meta.title);
    const branchId = `${convo.id.slice(0, 60)}_b${randomToken(5)}`;
    // The branch is a conversation of its own: its own session when continued, nothing of the original's left to it.
    const branchMeta = { ...first, id: branchId, title, createdAt: Date.now(), branchOf: convo.id, kernelId: null, containerId: null, endedNotes: null };
    const branch = [JSON.stringify({ meta: branchMeta }), ...lines.slice(1)].join('\n') + '\n';
    // Later patches go on applying to the branch's meta too: its id and title are said again last.
    const branchPatch = JSON.stringify({ t: Date.now(), patch: { title, kernelId: null, containerId: null, endedNotes: null } });
    writeFileAtomicSync(store.file(branchId), branch + branchPatch + '\n', { mode: 0o600, exclusive: true });
    // After the cut: the meta's patches, and events of earlier turns another process wrote meanwhile (their turn_id).
    const earlier = new Set(starts.filter((i) => i < at).map((i) => (records[i]!.event as { turn_id?: string }).turn_id));
    const keep = (r: Record | undefined) => r?.patch !== undefined || (r?.event?.turn_id !== undefined && earlier.has(r.event.turn_id));
    const kept = [...lines.slice(0, at), ...lines.slice(at).filter((_, k) => keep(records[at + k]))];
    writeFileAtomicSync(convo.file, kept.join('\n') + '\n', { mode: 0o600 });
    // The object reads the file it now is (a new inode: read whole again), so the next turn's history is the cut one.
    convo.catchUp();
    return { branchId, branchTitle: title, turn: starts.indexOf(at) + 1, prompt, removed: starts.filter((i) => i >= at).length };
  } finally {
    release();
  }
}

/** What the model is told at its next request after a conversation rewind (`code`: what the code rewind did, if one was done). */
export function conversationRewindNote(cut: ConversationCut, code: string | undefined): string {
  const said = clip(cut.prompt.replace(/\s+/g, ' ').trim(), 120);
  const head =
    `[codeact] The user rewound the conversation to before their message ${JSON.stringify(said)} (turn ${cut.turn}): ` +
    `${cut.removed} turn${cut.removed === 1 ? ' was' : 's were'} taken out of this conversation.`;
  if (code) return `${head}\n${code}`;
  return `${head} The Python session and the workspace files were NOT rewound: variables, imports and files that code made are still there.`;
}
