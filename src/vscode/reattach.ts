/**
 * A window that comes back (a reload, a crash of the extension host, VS Code reopened) to a conversation whose
 * Python session a session host may have kept (codeact.session.host, core/sessionHost): it reattaches, or says the
 * session is gone and ends the jobs the conversation shows running; once the panel shows it, the jobs' journal
 * the host kept is replayed (what they printed while no window was attached, whole and in order). And the open
 * conversation's background jobs as they start, print and end, and Stop of one.
 */
import type { JobChanged, JobOutput } from '../common/events';
import type { TranscriptEvent } from '../common/transcript';
import type { Conversation } from '../core/agent/transcriptStore';
import type { Log } from './controller.apis';
import { endJobsLeftRunning } from './conversationMemory';
import type { Conversations } from './conversations';
import type { RuntimeCache } from './runtimeCache';
import type { VariablesTracker } from './sessionVariables';

interface ReattachDeps {
  /** The open conversation. */
  conversation(): Conversation | undefined;
  conversations: Conversations;
  trusted(): boolean;
  runtimes: RuntimeCache;
  /** The chat's folder (its session host is this folder's). */
  folder(): string | undefined;
  log: Log;
  variables: VariablesTracker;
  refreshVariables(): Promise<unknown>;
  /** An event to the panel, not saved. */
  notify(e: TranscriptEvent): void;
  /** An event saved in the open conversation and sent to the panel. */
  emit(e: TranscriptEvent): void;
}

export class Reattacher {
  /** Conversations reattached whose jobs' journal is not replayed yet ({@link replayJobs}): their live output is in it. */
  readonly replaying = new Set<string>();

  constructor(private readonly d: ReattachDeps) {}

  /**
   * A window that comes back (a reload, a crash of the extension host, VS Code reopened): the open conversation's
   * session may still be alive in its folder's session host (codeact.session.host). Then it is not said to be gone,
   * and the variables view shows its variables. Only a host already running is attached to, and only in a trusted
   * workspace (asked by the runtime cache).
   */
  async reattach(): Promise<boolean> {
    const convo = this.d.conversation();
    if (!convo || !this.d.conversations.isStale(convo.id) || !this.d.trusted()) return this.gone(convo);
    // Until the host's journal of its jobs is replayed (replayJobs), what they print live is in that journal too.
    this.replaying.add(convo.id);
    try {
      const runtime = await this.d.runtimes.live(this.d.folder(), convo.id);
      if (!runtime?.sessions.has(convo.id)) return this.gone(convo);
      this.d.log.info(`conversation ${convo.id}: reattached to its live Python session`);
      this.d.conversations.reattached(convo.id);
      this.d.variables.ranChat(convo);
      await this.d.refreshVariables();
      return true;
    } catch (e) {
      this.d.log.warn(`conversation ${convo.id}: could not reattach to its session host: ${(e as Error).message}`);
      return this.gone(convo);
    }
  }

  /** Not reattached: a conversation whose session is gone shows its jobs ended with it (./conversationMemory). */
  private gone(convo: Conversation | undefined): false {
    if (!convo) return false;
    this.replaying.delete(convo.id);
    if (!this.d.conversations.isStale(convo.id)) return false;
    const before = convo.events.length;
    endJobsLeftRunning(convo);
    // The panel may show the conversation already: the ends reach it as any event does.
    for (const e of convo.events.slice(before)) this.d.notify(e);
    return false;
  }

  /**
   * After a reattach, once the panel shows the conversation: its background jobs as the session host journaled them
   * while no window was attached (each running job's output whole and in order, the ends it missed), then live.
   * Starts and ends the conversation already has are not said again.
   */
  async replayJobs(restored: Promise<unknown>): Promise<void> {
    await restored;
    const convo = this.d.conversation();
    if (!convo || !this.replaying.has(convo.id)) return;
    try {
      const events = (await this.d.runtimes.of(convo.id)?.sessions.jobEvents?.(convo.id)) ?? [];
      const had = new Set(convo.events.map((e) => (e.type === 'codeact.job' ? `${e.session_id}:${e.job}:${e.state}` : '')));
      this.replaying.delete(convo.id);
      for (const e of events) {
        if (e.type === 'codeact.job.output') this.d.notify(e);
        else if (!had.has(`${e.session_id}:${e.job}:${e.state}`)) this.d.emit(e);
      }
    } catch (e) {
      this.replaying.delete(convo.id);
      this.d.log.warn(`conversation ${convo.id}: its background jobs could not be read from the session host: ${(e as Error).message}`);
    }
  }

  /**
   * A background job of the open conversation started, printed or ended: its card and the job strip. Its start and
   * end are saved in the conversation; what it prints is not (its end carries the output kept).
   */
  onJobEvent(e: JobChanged | JobOutput): void {
    if (e.type === 'codeact.job') this.d.log.info(`session ${e.session_id}: background job ${e.job} ${e.state}`);
    if (e.session_id !== this.d.conversation()?.id) return;
    // Being replayed from the host's journal (replayJobs), which holds this piece too.
    if (e.type === 'codeact.job.output' && this.replaying.has(e.session_id)) return;
    if (e.type === 'codeact.job') this.d.emit(e);
    else this.d.notify(e);
  }

  /** Stops a running background job of a session (the panel's Stop): its whole process tree; rejects with why not. */
  async stopJob(sessionId: string, job: number): Promise<void> {
    const sessions = this.d.runtimes.of(sessionId)?.sessions;
    if (!sessions?.stopJob) throw new Error(`Background job ${job} cannot be stopped: this runtime runs no background jobs.`);
    await sessions.stopJob(sessionId, job);
    this.d.log.info(`session ${sessionId}: background job ${job} stopped from the panel`);
  }
}
