/**
 * One local guest process, however it was started: a cold start (a new Python process, in its
 * sandbox) or a child forked by the warm zygote. The session logic talks to either through the same
 * three streams (the protocol channel, stdout, stderr) and the same controls: interrupt (SIGINT to the
 * Python process: KeyboardInterrupt in the user's code) and kill (the whole process tree).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Duplex, Readable } from 'node:stream';
import { createRunCgroup, wrapJoin, type RunCgroup } from './cgroup';
import { hostPidOf, killByMarker, killTree } from '../../util/processTree';
import { SECCOMP_FD, type LaunchPlan, type LaunchRole } from './sandbox';
import { sendSeccompProgram } from './seccomp';
import type { WorkdirCleaner } from './workdirCleanup';
import { releasePlaceholders } from './workspaceMount';
import { randomToken } from '../../util/ids';
import { ownTempDir } from './tempFolders';

export interface GuestExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Where a guest's process tree is found from the host (to measure it): the host PID at its root, or, inside a
 * sandbox's PID namespace, the host PID the namespace hangs under and the guest's PID in that namespace.
 */
export type GuestRoot = { pid: number } | { under: number; nsPid: number };

export interface GuestHandle {
  readonly origin: 'cold' | 'zygote';
  /** Where its process tree is (undefined before it started or where it cannot be known). */
  readonly root?: GuestRoot;
  readonly proto: Duplex;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly plan: LaunchPlan;
  readonly cgroup?: RunCgroup;
  /** Settles when the guest process is gone. */
  readonly exited: Promise<GuestExit>;
  readonly alive: boolean;
  /** The PID the guest reported for itself (in its own PID namespace when sandboxed). */
  setReportedPid(pid: number): void;
  /** The host PID at the root of the guest's process tree (every process it starts is under it), while it lives. */
  treeRoot(): number | undefined;
  /** The PID the guest reported for itself, if it did. */
  readonly selfPid: number | undefined;
  /** SIGINT to the Python process: KeyboardInterrupt in the user's code, the process lives on. */
  interrupt(): void;
  /**
   * Kills the guest and every process it started. `clean`: the guest has already killed its own
   * descendants (a one-shot run that reported its result), so only its process group is left.
   */
  kill(clean?: boolean): void;
  /**
   * Frees what the launch holds on the host (working folder, cgroup, workspace placeholders). Call
   * after kill(). Settles when the working folder is gone, or reported as left behind; never rejects.
   */
  release(): Promise<void>;
}

interface ColdLaunch {
  plan: LaunchPlan;
  role: LaunchRole;
  marker: string;
  /** The host folder the guest works in without a sandbox (removed on release). */
  hostWorkdir?: string;
  useCgroups: boolean;
  /** Extra processes the cgroup allows (a zygote holds several guests). */
  pidsMax?: number;
  /** The memory the cgroup allows the whole tree (default: the memory limit). */
  memoryMax?: number;
  /** Removes the host working folder on release. */
  cleaner: WorkdirCleaner;
}

/** A host folder for a guest without a sandbox: empty, private, removed with the guest. */
export function makeHostWorkdir(): string {
  return ownTempDir('run');
}

export function newMarker(): string {
  return randomToken(12);
}

/** A guest (or zygote) started as a new process. */
export class ColdGuest implements GuestHandle {
  readonly origin = 'cold' as const;
  readonly proto: Duplex;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly cgroup?: RunCgroup;
  readonly exited: Promise<GuestExit>;
  private readonly child: ChildProcess;
  private gone = false;
  private reportedPid?: number;
  private hostPid?: number;

  constructor(private readonly launch: ColdLaunch) {
    const { plan } = launch;
    // Sandboxed guests get cgroups where they can be made (root, or a delegated subtree): a pids cgroup,
    // because RLIMIT_NPROC does not bind root, and a memory cgroup, because RLIMIT_AS is per process and
    // does not count tmpfs pages (the working directory, /tmp and /dev/shm live in memory).
    this.cgroup =
      launch.useCgroups && plan.pidNamespace
        ? createRunCgroup(`${launch.role}-${launch.marker}`, {
            pidsMax: launch.pidsMax ?? plan.treeLimits.pids,
            memoryBytes: launch.memoryMax ?? plan.treeLimits.memoryBytes,
          })
        : undefined;
    const { command, args } = wrapJoin(plan.command, plan.args, this.cgroup?.procsFiles ?? []);
    if (this.cgroup) plan.info.limits = { ...plan.info.limits, scope: `process tree (cgroup: ${this.cgroup.controllers.join(', ')})` };
    const stdio: Array<'ignore' | 'pipe'> = ['ignore', 'pipe', 'pipe', 'pipe'];
    if (plan.seccomp) stdio[SECCOMP_FD] = 'pipe';
    const child = spawn(command, args, {
      cwd: plan.cwd,
      env: this.cgroup ? { ...plan.env, CODEACT_CGROUPS: this.cgroup.procsFiles.join(' ') } : plan.env,
      stdio,
      detached: true,
    });
    // bwrap reads the seccomp program to its end before it sets up the sandbox.
    if (plan.seccomp) sendSeccompProgram(child, SECCOMP_FD, plan.seccomp);
    this.child = child;
    this.proto = child.stdio[3] as Duplex;
    this.stdout = child.stdout!;
    this.stderr = child.stderr!;
    for (const s of [this.proto, this.stdout, this.stderr]) s.on('error', () => {});
    this.exited = new Promise<GuestExit>((resolve) => {
      child.on('exit', (code, signal) => {
        this.gone = true;
        resolve({ code, signal });
      });
      child.on('error', (err) => {
        this.gone = true;
        this.launchError = err;
        resolve({ code: null, signal: null });
      });
    });
  }

  launchError?: Error;

  get plan(): LaunchPlan {
    return this.launch.plan;
  }

  get alive(): boolean {
    return !this.gone;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get root(): GuestRoot | undefined {
    return this.child.pid ? { pid: this.child.pid } : undefined;
  }

  setReportedPid(pid: number): void {
    // A rewind hands the session to another process (./checkpoints): its host PID is looked up again.
    if (pid !== this.reportedPid) this.hostPid = undefined;
    this.reportedPid = pid;
  }

  get selfPid(): number | undefined {
    return this.reportedPid;
  }

  treeRoot(): number | undefined {
    return this.gone ? undefined : this.child.pid;
  }

  interrupt(): void {
    const pid = this.child.pid;
    if (!pid || this.gone) return;
    let target: number | undefined = pid;
    if (this.launch.plan.pidNamespace) {
      // Inside bubblewrap the Python process is a grandchild with a PID of its own namespace.
      this.hostPid ??= this.reportedPid ? hostPidOf(pid, this.reportedPid) : undefined;
      target = this.hostPid;
    }
    if (!target) return;
    try {
      process.kill(target, 'SIGINT');
    } catch {}
  }

  kill(clean = false): void {
    const pid = this.child.pid;
    if (!pid) return;
    if (this.launch.plan.pidNamespace) {
      // The kernel tears the PID namespace down with bubblewrap's init.
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    } else if (clean) {
      // The guest killed its descendants before it reported: only its own process group is left.
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
    } else {
      // Freeze and kill the tree (the guest is a child subreaper, so orphans are in it), then anything
      // that still carries the launch's marker in its environment.
      killTree(pid);
      killByMarker('CODEACT_RUN', this.launch.marker);
    }
  }

  /** Idempotent: every call waits for the one removal. */
  release(): Promise<void> {
    this.releasing ??= (async () => {
      void this.cgroup?.remove();
      if (this.launch.plan.placeholders) releasePlaceholders(this.launch.plan.placeholders);
      if (this.launch.hostWorkdir) await this.launch.cleaner.remove(this.launch.hostWorkdir);
    })();
    return this.releasing;
  }
  private releasing?: Promise<void>;
}

/** Calls `then` once `stream` has ended (or at once if it has), or after half a second at most. */
export function whenDrained(stream: NodeJS.ReadableStream & { destroyed?: boolean; readableEnded?: boolean }, then: () => void): void {
  if (stream.destroyed || stream.readableEnded) return then();
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    then();
  };
  const timer = setTimeout(once, 500);
  for (const e of ['end', 'close']) stream.once(e, once);
}
