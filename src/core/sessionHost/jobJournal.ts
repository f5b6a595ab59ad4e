/**
 * The session host's journal of background jobs, per session: what each running job printed, in order, and how
 * each job started and ended, so a client that attaches later (a reloaded window, `codeact chat --continue`)
 * gets every job's output whole and in order (`ask jobEvents`), then the live rest (`job` messages).
 *
 * Bounded: a job's output events go once it ended (its end event carries the output the host kept); a session
 * keeps at most {@link JOB_JOURNAL_BYTES} of events (the oldest output goes first, and the loss is counted in a
 * `skipped` on the next piece of that job) and the last {@link ENDED_KEPT} ended jobs.
 */
import type { JobChanged, JobOutput } from '../../common/events';

/** Bytes of job events one session's journal keeps. */
const JOB_JOURNAL_BYTES = 8 * 1024 * 1024;
/** Ended jobs whose start and end a session's journal keeps. */
const ENDED_KEPT = 32;
/** Sessions with a journal at once (the one not written to for longest goes first). */
const MAX_SESSIONS = 64;

type JobEvent = JobChanged | JobOutput;

interface Entry {
  job: number;
  event: JobEvent;
  bytes: number;
}

export class JobJournal {
  private readonly sessions = new Map<string, { entries: Entry[]; bytes: number }>();

  record(e: JobEvent): void {
    let s = this.sessions.get(e.session_id);
    this.sessions.delete(e.session_id);
    this.sessions.set(e.session_id, (s ??= { entries: [], bytes: 0 }));
    if (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const bytes =
      e.type === 'codeact.job.output' ? e.delta.length + 64 + (e.tool ? JSON.stringify(e.tool).length : 0) : 256 + e.message.length + (e.output?.length ?? 0);
    s.entries.push({ job: e.job, event: e, bytes });
    s.bytes += bytes;
    if (e.type === 'codeact.job' && e.state !== 'running') {
      // Its end carries what the host kept of its output: the pieces go.
      s.entries = s.entries.filter((x) => x.job !== e.job || x.event.type === 'codeact.job' || x.event.session_id !== e.session_id);
      const ends = s.entries.filter((x) => x.event.type === 'codeact.job' && x.event.state !== 'running').map((x) => x.job);
      const old = new Set(ends.slice(0, Math.max(0, ends.length - ENDED_KEPT)));
      if (old.size) s.entries = s.entries.filter((x) => !old.has(x.job));
      s.bytes = s.entries.reduce((n, x) => n + x.bytes, 0);
    }
    // Past the cap the oldest output goes; the next piece of that job says how much.
    for (let i = 0; s.bytes > JOB_JOURNAL_BYTES && i < s.entries.length;) {
      const x = s.entries[i];
      if (x.event.type !== 'codeact.job.output') {
        i++;
        continue;
      }
      s.entries.splice(i, 1);
      s.bytes -= x.bytes;
      const next = s.entries.slice(i).find((y) => y.job === x.job && y.event.type === 'codeact.job.output');
      if (next && next.event.type === 'codeact.job.output')
        next.event = { ...next.event, skipped: (next.event.skipped ?? 0) + (x.event.skipped ?? 0) + Buffer.byteLength(x.event.delta) };
    }
  }

  /** The session's job events, in order (a client that attaches replays them, then takes the live ones). */
  events(sessionId: string): JobEvent[] {
    return (this.sessions.get(sessionId)?.entries ?? []).map((x) => x.event);
  }

  /** The session was closed: its journal goes. */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }
}
