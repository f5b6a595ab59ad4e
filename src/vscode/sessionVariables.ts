/**
 * The variables view's side of the session: which Python session the view shows (the latest run's: the
 * conversation's or a Run with Tools document's), reading its variables, and the live sessions "Restart
 * Session" can offer.
 */
import type { VariablesSummary } from '../common/events';
import type { Conversation } from '../core/agent/transcriptStore';
import type { RuntimeCache } from './runtimeCache';
import { Emitter, type Unsubscribe } from '../common/emitter';

/** What the panel's variables view shows. */
export interface SessionVariables {
  sessionId?: string;
  /** "This conversation" or the document's name. */
  label?: string;
  summary: VariablesSummary | null;
  /** Why there is nothing to show. */
  note?: string;
}

export class VariablesTracker {
  /** The session the view shows: the one of the latest run (none: the open conversation's). */
  shown?: { id: string; label: string };
  /** The conversations whose code ran in a session (by id): a document's runs switch the open one away, not their sessions. */
  private readonly chats = new Map<string, Conversation>();
  private readonly changed = new Emitter<SessionVariables>();

  constructor(
    private readonly runtimes: RuntimeCache,
    private readonly conversation: () => Conversation | undefined,
  ) {}

  onVariables(listener: (v: SessionVariables) => void): Unsubscribe {
    return this.changed.on(listener);
  }

  /** Reads the variables of the session the view shows, and tells the listeners. */
  async refresh(): Promise<SessionVariables> {
    const convo = this.conversation();
    const target = this.shown ?? (convo ? { id: convo.id, label: 'This conversation' } : undefined);
    const runtime = this.runtimes.of(target?.id);
    let result: SessionVariables;
    if (!target) result = { summary: null, note: 'No session yet: variables appear after code runs.' };
    else if (!runtime?.sessions.readsVariables || !runtime.sessions.persist)
      result = {
        sessionId: target.id,
        label: target.label,
        summary: null,
        note: 'Runs start fresh (codeact.session.policy is "run", or this runtime keeps no session).',
      };
    else {
      const summary = await runtime.sessions.variables(target.id).catch(() => null);
      result = {
        sessionId: target.id,
        label: target.label,
        summary,
        ...(summary ? {} : { note: runtime.sessions.has(target.id) ? 'The session is busy.' : 'No live session: variables appear after code runs.' }),
      };
    }
    this.changed.fire(result);
    return result;
  }

  /** A chat's code ran in the conversation's session: shown in the view and offered by Restart Session. */
  ranChat(convo: Conversation): void {
    this.chats.delete(convo.id);
    this.chats.set(convo.id, convo);
    this.shown = { id: convo.id, label: 'This conversation' };
  }

  /** The live session ids the Restart command can offer: the conversation's and the documents'. */
  liveSessions(): Array<{ id: string; label: string }> {
    // Each folder's runtime has its own sessions.
    const live = (id: string) => this.runtimes.all().some((r) => r.sessions.has(id));
    const convo = this.conversation();
    const out: Array<{ id: string; label: string }> = [];
    const chats = new Map(this.chats);
    if (convo) chats.set(convo.id, convo);
    for (const [id, c] of chats) if (live(id)) out.push({ id, label: `Chat: ${c.meta.title}` });
    for (const [id, label] of this.runtimes.documentSessions) if (live(id)) out.push({ id, label });
    return out;
  }
}
