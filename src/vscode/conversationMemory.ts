/**
 * What the extension remembers about conversations in the workspace's state (VS Code's `workspaceState`),
 * so a reload, or closing and reopening VS Code, brings the panel back where it was: the conversation that
 * was open, and the conversation each Run with Tools document writes into. A turn the reload cut off is
 * closed as interrupted, so the transcript says so instead of showing it running forever.
 */
import type { ConversationSummary, TranscriptScroll } from '../common/protocol';
import type { Conversation, ListedConversation, TranscriptStore } from '../core/agent/transcriptStore';
import { heldHere, holdConversation } from '../core/agent/conversationLock';
import { settleHeld } from '../core/agent/turnJournal';
import { INTERRUPTED_MESSAGE } from '../core/turn/turns';
import type { Memento } from './controller.apis';
import { isLocalRuntimeItem } from '../core/providers/shared/history';
import { jobsLeftRunning } from '../common/transcript';

const OPEN_KEY = 'codeact.openConversation';
const DOCUMENTS_KEY = 'codeact.documentConversations';
const SCROLL_KEY = 'codeact.openConversationScroll';
/** Documents remembered at most (the least recently run go first). */
const MAX_DOCUMENTS = 50;

/** Told to the person, in the panel, when a reopened conversation's Python session is gone (the model gets core/turn's CONTINUED_NOTE). */
export const SESSION_GONE_NOTICE =
  'This conversation was reopened: its earlier Python session is gone, so variables from earlier runs are not defined. Code you run now starts a new session.';

/** Whether code of the conversation ran in a session of ours (local or Jupyter), whose variables a restart loses. */
export function ranLocalCode(conversation: Conversation): boolean {
  return conversation.events.some((e) => e.type === 'response.output_item.done' && isLocalRuntimeItem(e.item));
}

/** A Jupyter kernel was left running for the conversation by an earlier window: its next run may take it back (or says it is gone). */
export function mayComeBack(conversation: Conversation): boolean {
  return typeof conversation.meta.kernelId === 'string' && conversation.meta.kernelId !== '';
}

export class ConversationMemory {
  /** Said once in the panel after a restored conversation's Python session turned out to be gone. */
  private notice?: string;
  /** The conversation restored at start (its notice is said again without "gone" when its session is found alive). */
  private restored?: Conversation;

  constructor(
    private readonly store: TranscriptStore,
    private readonly state: Memento | undefined,
  ) {}

  /** Remembers the open conversation (undefined: none, the panel shows its empty state). */
  rememberOpen(id: string | undefined): void {
    if (this.state?.get<string>(OPEN_KEY) !== id) void this.state?.update(OPEN_KEY, id);
  }

  /**
   * The conversation that was open when VS Code last closed or reloaded, if it still exists; a turn left
   * running (no end marker) is ended as interrupted and saved.
   */
  restoreOpen(): Conversation | undefined {
    const id = this.state?.get<string>(OPEN_KEY);
    if (!id || !this.store.exists(id)) return undefined;
    try {
      const convo = this.store.open(id);
      closeInterrupted(convo);
      this.notice = openedNotice(convo, ranLocalCode(convo) && !mayComeBack(convo));
      this.restored = convo;
      return convo;
    } catch {
      return undefined;
    }
  }

  /** Where the panel was scrolled in a conversation (one remembered: the open one's). */
  rememberScroll(id: string, scroll: TranscriptScroll): void {
    void this.state?.update(SCROLL_KEY, { id, scroll });
  }

  scrollOf(id: string | undefined): TranscriptScroll | undefined {
    const v = this.state?.get<{ id?: string; scroll?: TranscriptScroll }>(SCROLL_KEY);
    return id && v?.id === id && v.scroll && typeof v.scroll.stuck === 'boolean' ? v.scroll : undefined;
  }

  /** The restored conversation's session is alive (in a session host): the notice does not say it is gone. */
  sessionAlive(id: string): void {
    if (this.restored?.id === id && this.notice !== undefined) this.notice = openedNotice(this.restored, false);
  }

  takeNotice(): string | undefined {
    const n = this.notice;
    this.notice = undefined;
    return n;
  }

  /** The conversation of a Run with Tools document, if it still exists. */
  documentConversation(uri: string): string | undefined {
    const id = this.documents()[uri];
    return id && this.store.exists(id) ? id : undefined;
  }

  rememberDocument(uri: string, id: string): void {
    const docs = this.documents();
    delete docs[uri];
    docs[uri] = id;
    const keys = Object.keys(docs);
    for (const k of keys.slice(0, Math.max(0, keys.length - MAX_DOCUMENTS))) delete docs[k];
    void this.state?.update(DOCUMENTS_KEY, docs);
  }

  private documents(): Record<string, string> {
    const v = this.state?.get<Record<string, string>>(DOCUMENTS_KEY);
    return v && typeof v === 'object' ? { ...v } : {};
  }
}

/**
 * Closes a turn the host's going away left running (no end marker): marked interrupted, its completed steps
 * kept for the model with a note, calls without a result answered "result lost" (core/agent/turnJournal).
 * A damaged file is first kept as it was beside a repaired copy (core/agent/transcriptStore: repairDamaged).
 * Not while another process holds the conversation: its turn is running, not cut off.
 */
export function closeInterrupted(convo: Conversation): Conversation {
  return whileHeld(convo, () => settleHeld(convo, INTERRUPTED_MESSAGE));
}

/**
 * The conversation's session is gone (no session host kept it): the background jobs it shows running ended with
 * it, said once and saved, so no card or strip says they run. Not called while a session host keeps the session:
 * its jobs go on there, and the host's journal tells how they did.
 */
export function endJobsLeftRunning(convo: Conversation): Conversation {
  return whileHeld(convo, () => {
    for (const { session_id, job } of jobsLeftRunning(convo.events))
      convo.appendEvent({
        type: 'codeact.job',
        session_id,
        job,
        state: 'ended',
        message: `Background job ${job} ended with its Python session (VS Code closed or reloaded); its result is gone.`,
      });
  });
}

/** Changes a conversation no other process holds (one that does is running a turn), then saves it. */
function whileHeld(convo: Conversation, change: () => void): Conversation {
  if (heldHere(convo.file)) return convo;
  let release: (() => void) | undefined;
  try {
    release = holdConversation(convo.id, convo.file);
  } catch {
    return convo;
  }
  try {
    change();
    convo.flush();
  } finally {
    release();
  }
  return convo;
}

/** A stored conversation as the panel's history list shows it; a damaged one is listed, saying so (opening it says more). */
export function conversationSummary(c: ListedConversation): ConversationSummary {
  const title = c.damaged ? `${c.title} (damaged: ${c.damaged})` : c.title;
  return { id: c.id, title, updatedAt: c.updatedAt, turns: c.turns, provider: c.provider, model: c.model };
}

/** What opening a conversation says: what reading its file skipped or recovered, and that its Python session is gone. */
export function openedNotice(c: Conversation, sessionGone: boolean): string | undefined {
  return [...c.notices, ...(sessionGone ? [SESSION_GONE_NOTICE] : [])].join(' ') || undefined;
}
