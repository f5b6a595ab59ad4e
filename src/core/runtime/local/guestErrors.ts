/**
 * How a local guest's failures read: a crash named by its signal, and a resource limit named as such
 * ("memory limit 2g exceeded") instead of a bare error.
 */
import type { CodeInterpreterCallItem, ExecutionError } from '../../../common/events';
import type { RunCgroup } from './cgroup';
import type { LaunchPlan } from './sandbox';

const SIGNAL_TEXT: Partial<Record<NodeJS.Signals, string>> = {
  SIGSEGV: 'a segmentation fault (often a C stack overflow from very deep recursion)',
  SIGABRT: 'an abort',
  SIGKILL: 'SIGKILL',
  SIGXCPU: 'the CPU time limit',
  SIGBUS: 'a bus error',
};

export function crashError(code: number | null, sig: NodeJS.Signals | null, stderr: string): ExecutionError {
  const tail = stderr.trim().split('\n').slice(-5).join('\n');
  if (sig) {
    return {
      type: 'Crash',
      message: `The Python process died from ${SIGNAL_TEXT[sig] ?? sig} before returning a result.` + (tail ? `\n${tail}` : ''),
    };
  }
  // bubblewrap reports its child's death by signal as 128 + n.
  if (code !== null && code > 128 && code < 160) {
    const name = signalName(code - 128);
    return {
      type: 'Crash',
      message:
        `The Python process died from ${(name && SIGNAL_TEXT[name]) ?? name ?? `signal ${code - 128}`} before returning a result.` + (tail ? `\n${tail}` : ''),
    };
  }
  return {
    type: 'Crash',
    message:
      `The Python process exited with code ${code} before returning a result (the code may have called os._exit or closed the host pipe).` +
      (tail ? `\n${tail}` : ''),
  };
}

function signalName(n: number): NodeJS.Signals | undefined {
  const table: Record<number, NodeJS.Signals> = { 6: 'SIGABRT', 7: 'SIGBUS', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM', 24: 'SIGXCPU', 25: 'SIGXFSZ' };
  return table[n];
}

/** Names a resource limit that was hit, instead of a bare crash. */
export function annotateLimit(item: CodeInterpreterCallItem, plan?: LaunchPlan, cgroup?: RunCgroup): void {
  const err = item.error;
  if (!err || !plan) return;
  const limits = plan.info.limits ?? {};
  const tb = `${err.message}\n${err.traceback ?? ''}`;
  const sandboxed = plan.info.kind === 'bubblewrap';
  if (
    err.type === 'MemoryError' ||
    (err.type === 'Crash' && cgroup?.memoryExceeded()) ||
    (/Errno 12\]|Cannot allocate memory/.test(tb) && cgroup?.memoryExceeded())
  ) {
    const what = err.type === 'MemoryError' ? 'MemoryError' : 'the process tree, files in the working directory, /tmp and /dev/shm included';
    err.message = `memory limit ${limits.memory} exceeded (${what}). Use less memory or raise codeact.sandbox.limits.memory.`;
  } else if (sandboxed && /Errno 28\]|No space left on device/.test(tb)) {
    // The working directory, /tmp and /dev/shm are tmpfs of fileSize each; the rest of the file system is read-only.
    err.message =
      `disk limit ${limits.fileSize} exceeded (No space left on device): ${err.message}. ` +
      'The working directory, /tmp and /dev/shm each hold at most codeact.sandbox.limits.fileSize: write less, or raise it.';
  } else if (/Errno 27\]|File too large/.test(tb)) {
    err.message = `file size limit ${limits.fileSize} exceeded: ${err.message}. Write smaller files or raise codeact.sandbox.limits.fileSize.`;
  } else if (err.type === 'Crash' && /CPU time limit|SIGXCPU/.test(err.message)) {
    err.message = `CPU time limit ${limits.cpuSeconds} s exceeded. ${err.message}`;
  } else if ((/Errno 11\]|Resource temporarily unavailable/.test(tb) && /fork|spawn|Popen|thread/i.test(tb)) || cgroup?.pidsExceeded()) {
    err.message = `process limit reached (${limits.processes ?? 'the system limit'} processes): ${err.message}`;
  } else if (/Errno 24\]|Too many open files/.test(tb)) {
    err.message = `open file limit ${limits.openFiles} reached: ${err.message}`;
  }
}
