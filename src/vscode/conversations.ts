/**
 * The chat's conversations: the open one (remembered across reloads, restored at start), opening one from
 * the history, leaving one (its Jupyter kernel goes), a Run with Tools document's own conversation, and the
 * history's list, delete and clear. A conversation reopened without its Python session is "stale" until a
 * turn runs in it: the model is told once (`CONTINUED_NOTE`). No `vscode` import: the controller composes it.
 */
import { CONTINUED_NOTE } from '../core/turn/turns';
import type { JobChanged } from '../common/events';
import type { ConversationSummary } from '../common/protocol';
import { copyConversation } from '../core/agent/conversationCopy';
import { titleFrom, type Conversation, type TranscriptStore } from '../core/agent/transcriptStore';
import type { RuntimeSessions } from '../core/runtime/types';
import { closeInterrupted, conversationSummary, mayComeBack, openedNotice, ranLocalCode, type ConversationMemory } from './conversationMemory';
import type { CodeActSettings } from './settings';

/** A Run with Tools document: its URI (the key of its conversation), its name (the title) and its folder. */
export interface RunDocument {
  uri: string;
  name: string;
  folder?: string;
}

export interface ConversationsDeps {
  store: TranscriptStore;
  memory: ConversationMemory;
  /** The folder a new conversation takes, and the reset of the person's pick when one starts. */
  folders: { forNewConversation(): string | undefined; reset(): void };
  settingsFor(folder: string | undefined): Pick<CodeActSettings, 'provider' | 'model' | 'mode'>;
  /** A turn runs (it writes into the open conversation: no switching under it). */
  busy(): boolean;
  /** The live sessions of a session id's runtime (none: no runtime has it). */
  sessions(id: string): Pick<RuntimeSessions, 'has' | 'close' | 'handover'> | undefined;
  /** The variables view: the session it shows (cleared when the conversation changes). */
  variables: { shown?: { id: string; label: string } };
  /** The open conversation changed: the panel's state is stale. */
  changed(): void;
  refreshVariables(): void;
}

export const BUSY_SWITCH = 'Stop the running turn before switching conversations (CodeAct: Stop).';

/** Run ends kept for a conversation's next turn at most. */
const MAX_ENDED_NOTES = 3;

export class Conversations {
  private open?: Conversation;
  /** A reopened conversation whose earlier variables are gone: the model is told on the next turn. */
  private stale?: string;

  constructor(private readonly deps: ConversationsDeps) {
    // The conversation open before a reload or a restart comes back (its variables do not, except in a Jupyter
    // kernel left running for it: its next run takes it back, or says it is gone).
    this.open = deps.memory.restoreOpen();
    if (this.open && ranLocalCode(this.open) && !mayComeBack(this.open)) this.stale = this.open.id;
  }

  get current(): Conversation | undefined {
    return this.open;
  }

  /** The open conversation changes: remembered across reloads. */
  private set(conversation: Conversation | undefined): void {
    this.open = conversation;
    this.deps.memory.rememberOpen(conversation?.id);
  }

  /** The open conversation, or a new one titled from the prompt or run label. */
  ensure(title: string): Conversation {
    return this.open ?? this.switchTo(this.create(title));
  }

  private create(title: string, folder = this.deps.folders.forNewConversation()): Conversation {
    const s = this.deps.settingsFor(folder);
    return this.deps.store.create({ title: titleFrom(title), provider: s.provider, model: s.model, mode: s.mode, workspace: folder });
  }

  private switchTo(conversation: Conversation): Conversation {
    this.set(conversation);
    this.deps.changed();
    return conversation;
  }

  /** A running turn writes into its conversation: no switching under it. A document's run keeps the chat's session. */
  private leave(keepSession = false): void {
    if (this.deps.busy()) throw new Error(BUSY_SWITCH);
    const old = this.open;
    old?.flush();
    // A conversation's Jupyter kernel goes when the conversation is left.
    if (old && !keepSession) {
      void this.deps.sessions(old.id)?.close(old.id);
      if (mayComeBack(old)) old.update({ kernelId: null });
    }
    this.deps.variables.shown = undefined;
    this.stale = undefined;
  }

  /** The next turn starts a new conversation (in the folder the person picks next, or the active editor's). */
  startNew(): void {
    this.leave();
    this.set(undefined);
    this.deps.folders.reset();
    this.deps.changed();
  }

  /** A Run with Tools document's conversation, named after it (never whichever chat is open), opened for the panel. */
  ofDocument(doc: RunDocument): Conversation {
    const known = this.deps.memory.documentConversation(doc.uri);
    if (known && known === this.open?.id) return this.open;
    this.leave(true);
    const convo = known && this.deps.store.exists(known) ? this.deps.store.open(known) : this.create(doc.name, doc.folder);
    this.deps.memory.rememberDocument(doc.uri, convo.id);
    return this.switchTo(convo);
  }

  /**
   * Opens a conversation from history. A conversation whose code ran in a session that is gone, or whose file
   * had damaged records, says so (the returned `notice`), and the model is told on the next turn, so neither relies on variables that
   * no longer exist.
   */
  reopen(id: string): { conversation: Conversation; notice?: string } {
    this.leave();
    const conversation = closeInterrupted(this.deps.store.open(id));
    this.set(conversation);
    this.deps.variables.shown = undefined;
    const gone = ranLocalCode(conversation) && !this.deps.sessions(id)?.has(id) && !mayComeBack(conversation);
    if (gone) this.stale = id;
    const notice = openedNotice(conversation, gone);
    this.deps.changed();
    this.deps.refreshVariables();
    return { conversation, notice };
  }

  /**
   * Continues a conversation of another store (`codeact chat`, `codeact acp`: core/agent/conversationCopy): copied
   * here under its id, replacing this store's earlier copy when `replace`, then opened as from the history. When
   * that earlier copy is the open conversation, its Python session stays: it is the same session.
   */
  continueFrom(from: TranscriptStore, id: string, replace: boolean): { conversation: Conversation; notice?: string } {
    if (this.deps.busy()) throw new Error(BUSY_SWITCH);
    const same = this.open?.id === id;
    if (same) this.open!.flush();
    copyConversation(from, this.deps.store, id, { replace });
    if (same) {
      this.leave(true);
      this.set(undefined);
    }
    return this.reopen(id);
  }

  list(): ConversationSummary[] {
    return this.deps.store.list().map(conversationSummary);
  }

  delete(id: string): void {
    if (this.open?.id === id) {
      this.leave();
      this.set(undefined);
    } else endLeftSession(id, kernelIdOf(this.deps.store, id), this.deps.sessions(id));
    this.deps.store.delete(id);
    this.deps.changed();
  }

  /** Every conversation goes, and with them the kernels earlier windows left running for them (as delete does). */
  clear(): void {
    this.leave();
    this.set(undefined);
    for (const c of this.deps.store.list()) if (typeof c.kernelId === 'string' && c.kernelId) endLeftSession(c.id, c.kernelId, this.deps.sessions(c.id));
    this.deps.store.clear();
    this.deps.changed();
  }

  /** The chat's session moved (another folder): the open conversation's variables are gone, the model is told. */
  sessionMoved(): void {
    if (this.open && ranLocalCode(this.open)) this.stale = this.open.id;
  }

  /**
   * What the model is told on a turn in this conversation about its session (none: nothing to say). A run's end
   * noted with {@link noteForNextTurn} is said once: taken here.
   */
  sessionNote(id: string): string | undefined {
    const convo = this.stored(id);
    const ended = convo?.meta.endedNotes?.filter((n) => typeof n === 'string');
    if (ended?.length) convo!.update({ endedNotes: null });
    return [this.stale === id ? CONTINUED_NOTE : '', ...(ended ?? [])].filter(Boolean).join('\n') || undefined;
  }

  /**
   * Said to the model once, on the conversation's next turn: how a run it was not told the end of ended (./reattach),
   * a rewind the person did (../panelOutputs). Kept in the conversation's file, so a reload before that turn does not lose it.
   */
  noteForNextTurn(id: string, note: string): void {
    const convo = this.stored(id);
    // Bounded: the last few (a run left running per reload at most).
    convo?.update({ endedNotes: [...(convo.meta.endedNotes ?? []), note].slice(-MAX_ENDED_NOTES) });
  }

  /** The conversation by its id: the open one, else from the store (none when it is not stored here). */
  private stored(id: string): Conversation | undefined {
    if (this.open?.id === id) return this.open;
    return this.deps.store.exists(id) ? this.deps.store.open(id) : undefined;
  }

  /** Whether the model would be told that the conversation's earlier session is gone. */
  isStale(id: string): boolean {
    return this.stale === id;
  }

  /** The conversation's session was found alive (a session host kept it across the reload): nothing is gone. */
  reattached(id: string): void {
    if (this.stale === id) this.stale = undefined;
    this.deps.memory.sessionAlive(id);
  }

  /**
   * A background job of a conversation that is not the open one started or ended (its session lives on in a
   * session host, or ended as the chat left it): saved in that conversation's file, so opening it later shows the
   * job as it is, not running forever. Returns the conversation's title; none when it is the open one (saved
   * through the panel's events) or not stored here.
   */
  saveJobEvent(e: JobChanged): string | undefined {
    const convo = e.session_id === this.open?.id ? undefined : this.stored(e.session_id);
    if (!convo) return undefined;
    convo.appendEvent(e);
    convo.flush();
    return convo.meta.title;
  }

  /** A turn ran in the conversation: its session is the live one now. */
  ran(id: string): void {
    if (this.stale === id) this.stale = undefined;
  }
}

/** The kernel a stored conversation remembers (left running by an earlier window), if any. */
function kernelIdOf(store: TranscriptStore, id: string): string | undefined {
  if (!store.exists(id)) return undefined;
  try {
    const kernelId = store.open(id).meta.kernelId;
    return typeof kernelId === 'string' && kernelId ? kernelId : undefined;
  } catch {
    return undefined;
  }
}

/** A deleted conversation's kernel left running by an earlier window is shut down (when this window has a runtime to ask). */
function endLeftSession(id: string, kernelId: string | undefined, sessions: Pick<RuntimeSessions, 'close' | 'handover'> | undefined): void {
  if (!sessions?.handover || !kernelId) return;
  sessions.handover.adopt(id, kernelId);
  void sessions.close(id);
}
