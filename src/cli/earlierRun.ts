/**
 * `codeact chat --continue` in a live session (a session host) whose last run is still going: an earlier
 * `codeact chat` that was killed left it running. The new turn would wait behind it in silence; instead this
 * says so, shows what that run printed (from its start, the host journals it) and the rest as it comes, and
 * goes on when it ends. Ctrl+C stops it (the host's Stop: its process tree is killed).
 */
import { forTerminal, SgrState, TerminalStream } from '../common/untrusted';
import type { Runtime } from '../core/runtime/types';
import { HostedRuntime } from '../core/sessionHost/client';

/** Waits for the session's run going on, if one is; resolves false when it was stopped with `signal`. */
export async function awaitEarlierRun(runtime: Runtime, sessionId: string, signal: AbortSignal): Promise<boolean> {
  if (!(runtime instanceof HostedRuntime)) return true;
  const info = (await runtime.sessions.list()).find((s) => s.id === sessionId);
  if (!info?.running) return true;
  const id = forTerminal(sessionId, { line: true });
  process.stderr.write(`${id}: waiting for the run an earlier codeact chat left going; its output follows. Ctrl+C to stop it.\n`);
  const colours = new SgrState();
  const clean = { stdout: new TerminalStream({ colours }), stderr: new TerminalStream({ colours }) };
  const watched = await runtime.watch(sessionId, {
    signal,
    // On stderr, also with --json (whose stdout is this turn's events).
    onEvent: (e) => {
      if (e.type === 'codeact.output.delta') process.stderr.write(e.stream === 'stderr' ? clean.stderr.write(e.delta) : clean.stdout.write(e.delta));
    },
  });
  const status = watched.item?.status ?? 'ended';
  const cut = watched.dropped ? ` (${watched.dropped} of its earliest events were not kept)` : '';
  process.stderr.write(`\n${id}: the earlier run ${signal.aborted ? 'was stopped' : status === 'completed' ? 'finished' : status}${cut}.\n`);
  return !signal.aborted;
}
