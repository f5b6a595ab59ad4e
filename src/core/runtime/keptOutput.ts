/**
 * A run's whole output, kept by its session for the session's later runs: `output_of(n)` and
 * `last_output()` in the guest (guest/codeact_outputs.py). The host has the whole stdout and stderr of each
 * run (up to the runtime's output cap); after the run it sends them to the session, the local guest as a
 * "keep" frame in the same write as its next run frame (keepFrame), a Jupyter kernel with its next run's cell (KernelHandle.keepOutput: no request of its own). The session keeps them in memory, bounded: one run's
 * streams up to KEPT_RUN_CHARS each (beginning and end, as the model's copy), KEPT_TOTAL_CHARS in all.
 */
import { logsOf, type CodeOutput } from '../../common/events';
import { headTail, omittedText } from '../../common/outputBudget';

/** What a session keeps of all its runs' output; the oldest runs' goes first. */
export const KEPT_TOTAL_CHARS = 8 * 1024 * 1024;
/** What it keeps of one stream of one run. */
export const KEPT_RUN_CHARS = 2 * 1024 * 1024;

interface KeptOutput {
  n: number;
  stdout: string;
  stderr: string;
  max_total: number;
}

function stream(outputs: readonly CodeOutput[], name: 'stdout' | 'stderr'): string {
  const text = logsOf({ outputs }, name);
  return headTail(
    text,
    KEPT_RUN_CHARS,
    (o) => `…[codeact: ${omittedText(o)} of ${name} not kept: a session keeps ${KEPT_RUN_CHARS / 1024 / 1024} MiB of a run's ${name}]…\n`,
  );
}

/** The whole output of a finished run (its outputs, in order), filed under execution `n`. */
export function keptOutput(outputs: readonly CodeOutput[], n: number): KeptOutput {
  return { n, stdout: stream(outputs, 'stdout'), stderr: stream(outputs, 'stderr'), max_total: KEPT_TOTAL_CHARS };
}

/**
 * The local guest's "keep" frame for a finished run, made when it is sent (with the session's next run frame, so
 * neither the result nor the guest waits for it). The outputs are copied now: the item is the caller's.
 */
export function keepFrame(outputs: readonly CodeOutput[], n: number): () => string {
  const copy = [...outputs];
  return () => JSON.stringify({ t: 'keep', ...keptOutput(copy, n) });
}
