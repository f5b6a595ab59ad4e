/**
 * "Keep running in background" for a run already going on (issue 34; docs/design/backgroundJobs.md): a fork
 * cannot take over code running on the session's main thread, so the host *detaches* it. The execution's call
 * resolves at once with what is true (its output so far, its job number); the run goes on in the session, its
 * output becomes the job's (`codeact.job.output`), its end a job's end (`codeact.job`, the model's job note),
 * exactly as a fork job's (./guestJobs). The session's next execution waits for it (the main thread is busy)
 * and says how long.
 */
import type { CodeInterpreterCallItem, JobChanged, SessionInfo } from '../../../common/events';
import { formatElapsed } from '../../../common/format';
import { executionItem } from '../execution';
import type { RuntimeLimits } from '../types';
import type { GuestJobs } from './guestJobs';
import type { Detached, GuestRun } from './guestRun';

/**
 * Sends the running execution `exec` to the background as the session's next job number; returns the item its
 * caller gets now (the output so far, and a note that says what happened). Throws with why not.
 */
export function detachRun(
  exec: GuestRun,
  jobs: GuestJobs,
  limits: RuntimeLimits,
  session: SessionInfo,
  sandbox: CodeInterpreterCallItem['sandbox'],
): { job: number; item: CodeInterpreterCallItem } {
  if (exec.detached) throw new Error(`This execution already runs in the background as job ${exec.detached.job}.`);
  if (exec.finished || exec.completion || exec.stopping || exec.failure) throw new Error('This execution is not running any more.');
  if (limits.maxJobs <= 0) throw new Error('Background jobs are turned off (codeact.jobs.maxPerSession is 0).');
  if (jobs.count >= limits.maxJobs)
    throw new Error(`This session already runs ${jobs.count} background jobs; the limit is ${limits.maxJobs} (codeact.jobs.maxPerSession).`);
  const capture = exec.out.capture;
  const soFar = capture.text('stdout') + capture.text('stderr');
  const job = jobs.adopt(exec.itemId, exec.started, soFar, () => exec.stop('cancel'));
  exec.detached = { job, at: performance.now() };
  const execution = session.execution;
  exec.note(
    `\n[codeact: the person sent execution ${execution} to the background: it goes on as background job ${job}. ` +
      'Its output so far is above. You will be told when it ends (at your first step after its end). ' +
      `It is this session's own run, not a fork: wait_job(${job}), job_output(${job}) and jobs() do not know it, ` +
      "and the session's next execution waits for it to finish.]\n",
  );
  const item = executionItem({
    itemId: exec.itemId,
    code: exec.request.code,
    runtime: 'local',
    outputs: capture.outputs(),
    startedAt: exec.started,
    truncated: exec.out.truncated,
    sandbox,
  });
  item.session = session;
  exec.announce(item);
  // From now on its output is the job's, and its time limit a job's (counted from now).
  exec.redirect((e) => {
    if (e.type === 'codeact.output.delta') jobs.detachedOutput(job, e.delta);
  });
  exec.clock.restart(limits.maxJobMs, () => exec.stop('timeout', limits.maxJobMs));
  return { job, item };
}

/** Tells the run's card it can be sent to the background (a session's run, jobs on, not itself a job's start). */
export function offerDetach(exec: GuestRun, sessionId: string | undefined, limits: RuntimeLimits): void {
  if (!sessionId || limits.maxJobs <= 0 || exec.request.background) return;
  exec.emit({ type: 'response.code_interpreter_call.interpreting', item_id: exec.itemId, detach: { session_id: sessionId, max_jobs: limits.maxJobs } });
}

/** The run sent to the background is over: its end is the job's (unless its session ended first). */
export function detachedEnded(exec: GuestRun, item: CodeInterpreterCallItem, jobs: GuestJobs): void {
  const d = exec.detached!;
  d.endedAt = performance.now();
  const error = item.error;
  const state: Exclude<JobChanged['state'], 'running' | 'ended'> = !error
    ? 'done'
    : error.type === 'Cancelled'
      ? 'stopped'
      : error.type === 'Timeout'
        ? 'timed_out'
        : 'failed';
  const execution = item.session?.execution;
  jobs.detachedEnded(d.job, state, (after) => {
    const what = `Background job ${d.job} (execution ${execution}, sent to the background)`;
    if (state === 'done') return `${what} finished after ${after}` + (item.value != null ? `; its value: ${JSON.stringify(item.value).slice(0, 1500)}` : '.');
    if (state === 'stopped') return `${what} was stopped after ${after}.` + (item.session?.state_lost ? ' Its Python session was ended with it.' : '');
    if (state === 'timed_out') return `${what} was stopped after ${after}: it reached the time limit of a background job (codeact.jobs.maxMinutes).`;
    return `${what} failed after ${after}: ${error!.type}: ${error!.message}`.slice(0, 2000);
  });
}

/** What an execution that waited for a run sent to the background says (undefined: it did not wait for one). */
export function waitedNote(d: Detached | undefined, since: number): string | undefined {
  if (!d?.endedAt || d.endedAt <= since) return undefined;
  const waited = d.endedAt - Math.max(since, d.at);
  return `[codeact: this execution waited ${formatElapsed(waited)} for background job ${d.job} (a run sent to the background) to finish.]\n`;
}
