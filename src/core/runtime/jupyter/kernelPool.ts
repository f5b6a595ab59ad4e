/**
 * The contract between the Jupyter runtime and what runs under it: the resolved settings, what a kernel
 * needs of the runtime that holds it (./kernelHandle), and what a run needs to get a kernel and give it
 * back (./jupyterRun). JupyterRuntime (./jupyterRuntime) implements it; the kernel and the run know only
 * this contract, not the runtime.
 */
import type { RuntimeLimits } from '../types';
import type { KernelRestClient } from './connection';
import type { ArtifactStore } from '../artifacts';

export type JupyterSessionPolicy = 'conversation' | 'execution';

export interface JupyterSettings {
  kernelName: string;
  kernelEnv?: Record<string, string>;
  sessionPolicy: JupyterSessionPolicy;
  limits: RuntimeLimits;
  idleShutdownMs: number;
  interruptGraceMs: number;
  startTimeoutMs: number;
  reconnectGraceMs: number;
  maxFrameBytes: number;
  log: (line: string) => void;
}

/** What a kernel needs of the runtime that holds it: the settings and the server's REST API. */
export interface KernelHost {
  readonly settings: JupyterSettings;
  readonly rest?: KernelRestClient;
}

/** The run a kernel is busy with, as far as the runtime stops it (closing or restarting its session). */
export interface KernelRun {
  stop(kind: 'cancel' | 'timeout'): void;
}

/**
 * What a run needs of the runtime: a kernel to run on (with a notice when earlier state was lost), and
 * to hand it back. `H` is the kernel handle (./kernelHandle), a parameter so that this contract depends
 * on neither side.
 */
export interface KernelPool<H> extends KernelHost {
  /** Where the files a run wrote are copied to. */
  readonly artifacts: ArtifactStore;
  acquire(sessionId: string | undefined): Promise<{ handle: H; notice?: string }>;
  /** After a run: per-execution kernels go away, conversation kernels start their idle clock. */
  afterRun(handle: H): Promise<void>;
  shutdownHandle(handle: H, why: string): Promise<void>;
}
