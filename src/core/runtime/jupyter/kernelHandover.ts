/**
 * Taking back a kernel an earlier process left running for a conversation (a window reload, the CLI's
 * `--continue`): the conversation remembers its kernel's id (SessionHandover in ../types), and its next
 * run reconnects to that kernel when the server still has it, is of the configured kernel spec, and has not
 * sat idle past the idle shutdown (then it is shut down now, as it would have been had the process stayed).
 * The id comes from a file: it is checked before any request, and a kernel that does not qualify is never
 * run in. A kernel whose conversation was not continued within the idle time is ended by the sweep
 * (endLeftKernel; core/turn/sessionSweep), when it is idle.
 */
import type { KernelAPI } from '@jupyterlab/services';
import { formatDuration } from '../../../common/format';
import type { KernelRestClient } from './connection';
import type { JupyterSettings } from './kernelPool';

/** What Jupyter servers give kernels: a UUID. */
const KERNEL_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

/** A kernel to take back: its id, and where to say what came of it (the run's notice). */
export interface LeftKernel {
  id: string;
  said(notice: string): void;
}

/** The left kernel's model when it can be taken back, else why not (in words for the run's notice). */
export async function leftKernel(
  rest: KernelRestClient,
  s: Pick<JupyterSettings, 'kernelName' | 'idleShutdownMs'>,
  id: string,
): Promise<{ model?: KernelAPI.IModel; gone?: string }> {
  if (!KERNEL_ID.test(id)) return { gone: 'the id remembered for it is not a kernel id' };
  let model: KernelAPI.IModel | undefined;
  try {
    model = await rest.getModel(id);
  } catch (err) {
    return { gone: `looking it up failed: ${(err as Error).message}` };
  }
  if (!model || model.id !== id) return { gone: 'the server no longer has it: it was shut down, culled, or the server restarted' };
  if (model.name !== s.kernelName) return { gone: `it is a "${model.name}" kernel and codeact.jupyter.kernelName is "${s.kernelName}"; it was left running` };
  if (model.execution_state === 'dead') return { gone: 'it died' };
  const last = Date.parse(String((model as { last_activity?: unknown }).last_activity ?? ''));
  if (s.idleShutdownMs > 0 && Number.isFinite(last) && Date.now() - last > s.idleShutdownMs) {
    await rest.shutdown(id).catch(() => {});
    return { gone: `it had no run for over ${formatDuration(s.idleShutdownMs)}, so it was shut down` };
  }
  return { model };
}

/**
 * Ends a left kernel no conversation took back in time (core/turn/sessionSweep): only when the server still has
 * it, it is of the configured kernel name and it is idle (a busy kernel is someone's run). 'gone': the server
 * has no such kernel (the id can be forgotten); 'kept': it is busy or another kind of kernel.
 */
export async function endLeftKernel(rest: KernelRestClient, s: Pick<JupyterSettings, 'kernelName'>, id: string): Promise<'ended' | 'gone' | 'kept'> {
  if (!KERNEL_ID.test(id)) return 'gone';
  const model = await rest.getModel(id);
  if (!model || model.id !== id) return 'gone';
  if (model.name !== s.kernelName || model.execution_state !== 'idle') return 'kept';
  await rest.shutdown(id);
  return 'ended';
}
