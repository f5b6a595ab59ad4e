/**
 * A window that comes back (a reload, a crash of the extension host, VS Code reopened) to a conversation whose
 * Python session a session host may have kept (codeact.session.host, core/sessionHost): it reattaches, or says the
 * session is gone and ends the jobs the conversation shows running; once the panel shows it, the jobs' journal
 * the host kept is replayed (what they printed while no window was attached, whole and in order). And the open
 * conversation's background jobs as they start, print and end, and Stop of one.
 */
import type { CodeActEvent, CodeInterpreterCallItem, JobChanged, JobOutput } from '../common/events';
import type { TranscriptEvent } from '../common/transcript';
import { forDisplay } from '../common/untrusted';
import { executionSummary, sessionContext } from '../core/agent/executionResult';
import { RUN_LEFT_RUNNING } from '../core/sessionHost/client';
import type { Conversation } from '../core/agent/transcriptStore';
import type { ToolCallHandler } from '../core/runtime/types';
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
  /** Takes the managed-tool calls of a run of the chat's folder (its gateway: approvals and keys stay here). */
  toolHandler(): Promise<ToolCallHandler>;
  /** A notification (the end of a job of a conversation that is not open). */
  inform(message: string): void;
}

/** How the model's next turn is told the end of a run a reload let go of (the run's summary follows). */
export const RUN_ENDED_NOTE = 'Note: the execution left running when the window reloaded (or VS Code closed) has finished:';
/** Characters of its output the note carries at most (the card has it all). */
const NOTE_OUTPUT_CHARS = 2000;
/** What of a watched run reaches its card (its code and start the card has). */
const SHOWN = new Set<string>([
  'codeact.output.delta',
  'codeact.output.display',
  'codeact.tool_call.started',
  'codeact.tool_call.completed',
  'codeact.elicitation.requested',
  'codeact.elicitation.resolved',
]);

/**
 * The conversation's last execution, when its end was not known: the window let go of it while it ran (a reload),
 * or the window went before its end was saved (a crash). Undefined when it ended.
 */
export function runLeftRunning(events: readonly TranscriptEvent[]): CodeInterpreterCallItem | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if ((e.type !== 'response.output_item.added' && e.type !== 'response.output_item.done') || e.item.type !== 'code_interpreter_call') continue;
    if (e.type === 'response.output_item.added' || e.item.error?.message === RUN_LEFT_RUNNING) return e.item;
    return undefined;
  }
  return undefined;
}

export class Reattacher {
  /** Conversations reattached whose jobs' journal is not replayed yet ({@link replayJobs}): their live output is in it. */
  readonly replaying = new Set<string>();
  /** Runs left running by an earlier window, being watched to their end ({@link watchLeftRun}), by item id. */
  private readonly watching = new Set<string>();

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
   * After a reattach, once the panel shows the conversation: its last execution, if this window's predecessor let go of
   * it while it ran (a reload: {@link RUN_LEFT_RUNNING}) or was cut off before its end (a crash), is watched in the
   * session host. Its card runs again and gets what it printed, whole and in order (the host's journal: while no
   * window was attached, then live); its end fills the card and is saved, and the model's next turn is told it once.
   * Not awaited by the panel: the run may go on for long.
   */
  async watchLeftRun(restored: Promise<unknown>): Promise<void> {
    await restored;
    const convo = this.d.conversation();
    const left = convo && runLeftRunning(convo.events);
    const runtime = left && this.d.runtimes.of(convo.id);
    if (!convo || !left || !runtime?.watch || !runtime.sessions.has(convo.id) || this.watching.has(left.id)) return;
    this.watching.add(left.id);
    let shown = false;
    const show = (e: TranscriptEvent) => {
      // The card runs again once the host has shown the run is ours (the panel only: its saved end comes with the run's).
      if (!shown) this.d.notify({ type: 'response.output_item.added', item: { ...left, status: 'interpreting', error: undefined, outputs: [] } });
      shown = true;
      this.d.notify(e);
    };
    let ended = false;
    try {
      // Only this run's own events reach its card (the host watches the session's current run, or its last one).
      // Its tool calls (and its session's background jobs') come here again, as they did to the window that started it.
      const onToolCall = this.d.trusted() ? await this.d.toolHandler() : undefined;
      const onEvent = (e: CodeActEvent) => void ('item_id' in e && e.item_id === left.id && SHOWN.has(e.type) && show(e));
      const done = await runtime.watch(convo.id, { onEvent, onToolCall });
      if (done.item?.id !== left.id)
        return this.d.log.info(`conversation ${convo.id}: the run left running (${left.id}) is not its session's last in the host`);
      ended = true;
      this.d.log.info(`conversation ${convo.id}: the run left running when the window reloaded ended (${done.item.status})`);
      // Saved in the open conversation (another one opened meanwhile gets the note only).
      if (this.d.conversation()?.id === convo.id) this.d.emit({ type: 'response.output_item.done', item: done.item });
      this.d.conversations.noteForNextTurn(
        convo.id,
        `${RUN_ENDED_NOTE} ${executionSummary(done.item, { outputChars: NOTE_OUTPUT_CHARS, ...sessionContext(done.item) })}`,
      );
    } catch (e) {
      this.d.log.warn(`conversation ${convo.id}: the run left running could not be watched in the session host: ${(e as Error).message}`);
    } finally {
      this.watching.delete(left.id);
      // Shown running and then not seen to end (the host went away): the card as it was saved, not running.
      if (shown && !ended) this.d.notify({ type: 'response.output_item.done', item: left.status === 'failed' ? left : { ...left, status: 'incomplete' } });
    }
  }

  /**
   * A background job of the open conversation started, printed or ended: its card and the job strip. Its start and
   * end are saved in the conversation; what it prints is not (its end carries the output kept).
   */
  onJobEvent(e: JobChanged | JobOutput): void {
    if (e.type === 'codeact.job') this.d.log.info(`session ${e.session_id}: background job ${e.job} ${e.state}`);
    if (e.session_id !== this.d.conversation()?.id) return e.type === 'codeact.job' ? this.elsewhere(e) : undefined;
    // Being replayed from the host's journal (replayJobs), which holds this piece too.
    if (e.type === 'codeact.job.output' && this.replaying.has(e.session_id)) return;
    if (e.type === 'codeact.job') this.d.emit(e);
    else this.d.notify(e);
  }

  /** A job of a conversation that is not open: its start or end saved there, and its end said in a notification. */
  private elsewhere(e: JobChanged): void {
    try {
      const title = this.d.conversations.saveJobEvent(e);
      if (title === undefined || e.state === 'running') return;
      const what = forDisplay(e.message.split('\n')[0], { line: true });
      this.d.inform(`CodeAct: ${what} (conversation "${forDisplay(title, { line: true })}")`);
    } catch (err) {
      this.d.log.warn(`session ${e.session_id}: background job ${e.job} ${e.state} could not be saved in its conversation: ${(err as Error).message}`);
    }
  }

  /** "Keep running in background" (the panel's button on a running card): the execution goes on as a job; its number. */
  async detach(sessionId: string, itemId: string): Promise<number> {
    const sessions = this.d.runtimes.of(sessionId)?.sessions;
    if (!sessions?.detach) throw new Error('This execution cannot be sent to the background: its runtime cannot do that.');
    const job = await sessions.detach(sessionId, itemId);
    this.d.log.info(`session ${sessionId}: execution ${itemId} sent to the background as job ${job}`);
    return job;
  }

  /** Stops a running background job of a session (the panel's Stop): its whole process tree; rejects with why not. */
  async stopJob(sessionId: string, job: number): Promise<void> {
    const sessions = this.d.runtimes.of(sessionId)?.sessions;
    if (!sessions?.stopJob) throw new Error(`Background job ${job} cannot be stopped: this runtime runs no background jobs.`);
    await sessions.stopJob(sessionId, job);
    this.d.log.info(`session ${sessionId}: background job ${job} stopped from the panel`);
  }
}
