/**
 * How a Jupyter run's failures read: the kernel lost or dead, the connection to the server lost, and any
 * other failure of the machinery, each with what was kept and what the next run does.
 */
import type { ExecutionError } from '../../../common/events';
import { cancelledError, completionError, setupCategory, type Completion } from '../execution';
import { JupyterError } from './connection';
import { hubUserOf, spawnUrl, stoppedWhileRunning } from './hub';
import { isCancellation } from '../../util/errors';

export function toExecutionError(err: unknown): ExecutionError {
  if (err instanceof JupyterError) return { type: err.type, message: err.message, ...setupCategory(err) };
  const e = err as Error;
  if (isCancellation(err)) return cancelledError();
  return { type: 'JupyterError', message: e?.message ?? String(err) };
}

export function lostError(reason: string): ExecutionError {
  return {
    type: 'KernelDied',
    message: `The Jupyter kernel was lost while running the code (${reason}). The output that arrived is kept; the next run starts a new kernel.`,
  };
}

/** The kernel's process died mid-run; `restarted`: the server started it again (state gone either way). */
export function kernelDied(restarted: boolean): ExecutionError {
  return {
    type: 'KernelDied',
    message:
      'The Jupyter kernel died while running the code (its process exited or was killed, for example after running out of memory). ' +
      (restarted
        ? 'The server restarted it, so variables from earlier runs are gone.'
        : 'A new kernel will be started for the next run; variables from earlier runs are gone.'),
  };
}

export function connectionLost(url: string, detail: string): ExecutionError {
  const hub = hubUserOf(url);
  // The run's probe found the hub answering for the server (./hub): the server was stopped.
  if (hub && detail.includes(spawnUrl(hub))) return { type: 'JupyterHubServerStopped', message: stoppedWhileRunning(hub) };
  return {
    type: 'JupyterConnectionLost',
    message:
      `Lost the connection to the Jupyter server at ${url} while the code was running (${detail}). ` +
      'The output that arrived is kept. Check that the server is still running' +
      (hub ? ` (a server on JupyterHub may have been stopped: start it at ${spawnUrl(hub)})` : '') +
      '; the next run reconnects or starts a new kernel.',
  };
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** How a run ended, as the error of its item: a stop (with where the code was, if the kernel said), a failure, or the code's own. */
export function finalError(run: {
  stopping?: ExecutionError;
  stopNote: string;
  failure?: ExecutionError;
  completion?: Completion;
}): ExecutionError | undefined {
  if (run.stopping) {
    const seen = completionError(run.completion);
    return {
      ...run.stopping,
      message: run.stopping.message + run.stopNote,
      // Where the code was when it was stopped, if the kernel told us.
      ...(seen?.traceback ? { traceback: seen.traceback } : {}),
      ...(seen?.line ? { line: seen.line } : {}),
    };
  }
  if (run.failure) return run.failure;
  if (!run.completion) return { type: 'ProtocolError', message: 'The run ended without a result.' };
  return completionError(run.completion);
}
