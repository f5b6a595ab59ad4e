/**
 * The events about background jobs: a job's card (in the turn of the execution that started it) and its live
 * output (`codeact.job`, `codeact.job.output`), and the card of what the model was told of jobs that ended
 * (`codeact.job.notes`). The job strip reads `model.jobs`.
 */
import type { JobToolCall } from '../events';
import type { TranscriptEvent } from './events';
import { currentTurn, execKey, jobKey, type JobNotesView, type JobView, type TranscriptModel, type TurnView } from './model';
import { appendOutput, emptyTail } from './outputTail';
import type { Ctx } from './reducerContext';

type JobEvent = Extract<TranscriptEvent, { type: 'codeact.job' | 'codeact.job.output' | 'codeact.job.notes' }>;

/** Job cards the model remembers in `jobs` (the oldest ended ones leave the list; their cards stay in their turns). */
const MAX_JOBS_LISTED = 64;
/** A job card's tool calls kept (the last ones). */
const JOB_TOOLS_KEPT = 50;
/** Characters of a job's output its card holds (a tail; the end event's kept output replaces it). */
const JOB_TAIL_CHARS = 256 * 1024;

/** The name of a job across its events: a conversation's session, and the job's number in it. */
const slot = (sessionId: string, job: number): string => `job:${sessionId}:${job}`;

export function applyJobEvent(ctx: Ctx, model: TranscriptModel, event: JobEvent): void {
  if (event.type === 'codeact.job.notes') {
    const text = typeof event.text === 'string' ? event.text : '';
    const jobs = Array.isArray(event.jobs) ? event.jobs.filter((n) => Number.isSafeInteger(n)) : [];
    const view: JobNotesView = { kind: 'jobNotes', key: `jn:${++model.serial}`, turnId: '', jobs, text, rev: 1 };
    const turn = ctx.turnForNewItem();
    view.turnId = turn.id;
    ctx.addItem(turn, view);
    return;
  }
  if (typeof event.session_id !== 'string' || !Number.isSafeInteger(event.job)) return;
  const name = slot(event.session_id, event.job);
  const known = model.aliases[name] ? model.items[model.aliases[name]] : undefined;
  let view = known?.kind === 'job' ? known : undefined;
  if (event.type === 'codeact.job.output') {
    if (!view || view.status !== 'running') return;
    if (event.tool) return jobToolCall(ctx, view, event.tool);
    if (event.skipped) view.skipped += event.skipped;
    appendOutput(
      view.output,
      'stdout',
      event.skipped ? `\n[… ${event.skipped.toLocaleString('en-US')} bytes not shown …]\n${event.delta}` : event.delta,
      Infinity,
      JOB_TAIL_CHARS,
    );
    ctx.itemChanged(view);
    return;
  }
  // A running event for a number seen before: the session restarted and numbers its jobs from 1 again.
  if (!view || (event.state === 'running' && view.status !== 'running')) view = open(ctx, model, event, name);
  if (event.state === 'running') {
    if (typeof event.started_at === 'number') view.startedAt = event.started_at;
  } else {
    view.status = event.state;
    // A call still waiting when the job ended never returns to it.
    for (const c of view.tools ?? [])
      if (c.status === 'running') {
        c.status = 'stopped';
        c.rev++;
      }
    if (typeof event.seconds === 'number') view.seconds = event.seconds;
    view.message = event.message;
    if (typeof event.output === 'string') {
      // What the host kept replaces the live tail: whole, or its start and end with what was cut.
      view.output = emptyTail();
      appendOutput(view.output, 'stdout', event.output, Infinity, JOB_TAIL_CHARS);
    }
  }
  ctx.itemChanged(view);
}

/** A job's call of a managed tool started or ended: a row of its card (the oldest go past {@link JOB_TOOLS_KEPT}). */
function jobToolCall(ctx: Ctx, view: JobView, t: JobToolCall): void {
  if (typeof t.call_id !== 'string' || typeof t.name !== 'string') return;
  const tools = (view.tools ??= []);
  let row = tools.find((c) => c.callId === t.call_id);
  if (!row) {
    row = { callId: t.call_id, name: t.name, arguments: t.arguments, status: 'running', rev: 0 };
    tools.push(row);
    if (tools.length > JOB_TOOLS_KEPT) tools.splice(0, tools.length - JOB_TOOLS_KEPT);
  }
  if (t.status !== 'running') {
    row.status = t.status === 'ok' ? 'ok' : 'error';
    if (t.status === 'ok') row.output = t.output;
    else row.error = typeof t.error === 'string' ? t.error : 'Unknown error';
    if (typeof t.duration_ms === 'number') row.durationMs = t.duration_ms;
  }
  row.rev++;
  ctx.itemChanged(view);
}

/**
 * What started a job, as the person reads it on its card, its strip row and an approval it asks: the first line of
 * its code that does something (not blank, a comment such as `# background`, or an import), else its first line.
 */
export function jobCodeLine(code: string): string | undefined {
  const lines = code.split('\n', 200).map((l) => l.trim());
  const line = lines.find((l) => l && !l.startsWith('#') && !/^(import|from)\s/.test(l)) ?? lines.find((l) => l && !/^#\s*background$/.test(l));
  return line?.slice(0, 120);
}

/** A new job card: after the execution that started it, else where the conversation is. */
function open(ctx: Ctx, model: TranscriptModel, event: Extract<JobEvent, { type: 'codeact.job' }>, name: string): JobView {
  const started = event.item_id ? model.items[model.aliases[execKey(event.item_id)] ?? execKey(event.item_id)] : undefined;
  const code = started?.kind === 'exec' ? jobCodeLine(started.code) : undefined;
  const turn: TurnView =
    (started && model.turns.find((t) => t.id === started.turnId)) ??
    ctx.owner ??
    currentTurn(model) ??
    model.turns[model.turns.length - 1] ??
    ctx.turnForNewItem();
  const view: JobView = {
    kind: 'job',
    key: jobKey(`${event.session_id}:${event.job}:${++model.serial}`),
    turnId: turn.id,
    sessionId: event.session_id,
    job: event.job,
    ...(event.item_id ? { itemId: event.item_id } : {}),
    ...(code ? { what: code } : {}),
    status: 'running',
    output: emptyTail(),
    skipped: 0,
    rev: 0,
  };
  ctx.addItem(turn, view);
  model.aliases[name] = view.key;
  const jobs = (model.jobs ??= []);
  jobs.push(view.key);
  // Bounded: the oldest ended jobs leave the list (never a running one).
  for (let i = 0; jobs.length > MAX_JOBS_LISTED && i < jobs.length;) {
    const v = model.items[jobs[i]];
    if (v?.kind === 'job' && v.status === 'running') i++;
    else jobs.splice(i, 1);
  }
  return view;
}

/**
 * The jobs a saved conversation shows running (a start, no end): after VS Code closed or reloaded, their session
 * is gone with them, and each gets an end that says so (else its card and the strip would say it runs forever).
 */
export function jobsLeftRunning(events: readonly TranscriptEvent[]): Array<{ session_id: string; job: number }> {
  const open = new Map<string, { session_id: string; job: number }>();
  for (const e of events)
    if (e.type === 'codeact.job') {
      const name = slot(e.session_id, e.job);
      if (e.state === 'running') open.set(name, { session_id: e.session_id, job: e.job });
      else open.delete(name);
    }
  return [...open.values()];
}

/**
 * The running cards that offer "Keep running in background" (ExecView.detach): whether their session has room for
 * one more job now (after a job starts or ends, or a card offers it). Only the last turns can hold a running card.
 */
export function syncDetachOffers(ctx: Ctx, model: TranscriptModel): void {
  const running = new Map<string, number>();
  for (const j of runningJobs(model)) running.set(j.sessionId, (running.get(j.sessionId) ?? 0) + 1);
  for (const turn of model.turns.slice(-2))
    for (const key of turn.itemKeys) {
      const x = model.items[key];
      if (x?.kind !== 'exec' || !x.detach || x.status !== 'running') continue;
      const full = (running.get(x.detach.sessionId) ?? 0) >= x.detach.maxJobs;
      if (full === !!x.detach.full) continue;
      x.detach = { ...x.detach, full };
      ctx.itemChanged(x);
    }
}

/** The jobs running now, oldest first (the job strip). */
export function runningJobs(model: TranscriptModel): JobView[] {
  return (model.jobs ?? []).map((k) => model.items[k]).filter((v): v is JobView => v?.kind === 'job' && v.status === 'running');
}
