/**
 * Checkpoints of a session's Python state (issue 35, rewind): the host's side of guest/codeact_checkpoint.py.
 *
 * - The state before each run is kept as a paused copy-on-write fork of the session. It is taken right after the
 *   run before ends (off the next run's path: it overlaps the model's next request); the first run of a session
 *   has one taken just before it.
 * - Budgets (codeact.rewind.maxCheckpoints, codeact.rewind.memoryMB): after each checkpoint the guest reports the
 *   unshared memory of every one it holds; the oldest give way first, and each run whose state went says why.
 * - Rewind to run X: the fork of the state before X wakes and serves the session (its variables, imports and
 *   figures as they were); the state just before the rewind is kept first, as a point to redo to. The woken fork
 *   is consumed, so a fresh checkpoint of the restored state takes its place for every point that named it.
 *
 * Ids are ours ('ckp-N'); the points a caller names are run item ids, and the redo points minted here.
 */
import type { HostFrame, GuestFrame, Unchecked } from './guestFrames';
import { isInt } from './guestFrames';
import { formatBytes } from '../../../common/format';
import type { CheckpointUsage } from '../../../common/items';

export interface CheckpointBudget {
  /** Checkpoints kept per session (0: none are taken). */
  max: number;
  /** The most unshared memory they may hold together. */
  memoryBytes: number;
}

export const DEFAULT_CHECKPOINT_BUDGET: CheckpointBudget = { max: 10, memoryBytes: 1024 << 20 };

interface Restored {
  /** The pid of the process that serves the session now (in the guest's namespace). */
  pid: number;
  /** The redo point asked for, when the state just before this rewind could be kept. */
  redo?: string;
}

const RESTORE_TIMEOUT_MS = 120_000;

type Pending = { id: string; resolve: (r: Restored) => void; reject: (e: Error) => void };

export class GuestCheckpoints {
  /** Held by the guest, oldest first: id → unshared bytes. */
  private readonly held = new Map<string, number>();
  /** Point (a run's item id, or a redo point) → the checkpoint of the state before it. */
  private readonly points = new Map<string, string>();
  /** Why a checkpoint is not (or no longer) there. */
  private readonly gone = new Map<string, string>();
  /** A checkpoint of the state now, taken after the last run, for the next one. */
  private fresh?: string;
  private pending?: Pending;
  /** Checkpoint frames sent whose answer has not come: the only ids a `checkpointed` frame may name. */
  private readonly awaiting = new Set<string>();
  /** Rewinds waiting for every checkpoint asked for to be answered (so the budgets' drops are decided). */
  private settling: Array<() => void> = [];
  /** The session ended: nothing more is asked of it. */
  private closed?: string;
  private seq = 0;
  /** The last fork's time in the guest (ms), for the bench. */
  lastMs?: number;

  constructor(
    private readonly send: (frame: HostFrame) => void,
    private readonly budget: CheckpointBudget,
    /** A rewind got no answer: the session is ended (its state is unknown). */
    private readonly stuck?: () => void,
  ) {}

  get enabled(): boolean {
    return this.budget.max > 0;
  }

  /** What the checkpoints hold against their budgets (the variables view shows it); none when they are off. */
  get report(): CheckpointUsage | undefined {
    return this.enabled ? { ...this.usage, max: this.budget.max, budgetBytes: this.budget.memoryBytes } : undefined;
  }

  /** The unshared memory the checkpoints hold, and how many. */
  get usage(): { count: number; bytes: number } {
    let bytes = 0;
    for (const b of this.held.values()) bytes += b;
    return { count: this.held.size, bytes };
  }

  /** Run `itemId` is about to go: the checkpoint frame to send first, unless the last run's is fresh. */
  beforeRun(itemId: string): HostFrame | undefined {
    if (!this.enabled) return undefined;
    // The last run's checkpoint, unless it was refused (a job was running then: it may have ended since).
    if (this.fresh && !this.gone.has(this.fresh)) {
      this.points.set(itemId, this.fresh);
      this.fresh = undefined;
      return undefined;
    }
    this.fresh = undefined;
    const id = this.ask();
    this.points.set(itemId, id);
    return { t: 'checkpoint', id };
  }

  /** A run ended and its session lives on: the frame that keeps the state now for the next run. */
  afterRun(): HostFrame | undefined {
    if (!this.enabled || this.fresh) return undefined;
    this.fresh = this.ask();
    return { t: 'checkpoint', id: this.fresh, ...(this.measureNow() ? { measure: true as const } : {}) };
  }

  /**
   * Whether the guest reads every checkpoint's memory this time (a read costs a round trip to each paused fork and its
   * smaps: about a millisecond for ten): every 4th checkpoint, and each one once they hold half the budget.
   */
  private measureNow(): boolean {
    return this.seq % 4 === 0 || this.usage.bytes * 2 > this.budget.memoryBytes;
  }

  /** Whether `point` names a run of this session (kept or not). */
  has(point: string): boolean {
    return this.points.has(point);
  }

  /** Why the state before `point` cannot be restored, or undefined when it can. */
  unavailable(point: string): string | undefined {
    const id = this.points.get(point);
    if (!id) return 'no checkpoint was taken before it';
    if (this.held.has(id)) return undefined;
    return this.gone.get(id) ?? 'its checkpoint is still being taken';
  }

  /**
   * Wakes the state before `point`; the caller holds the session's turn (no run is going on). `redo`: a point
   * that will name the state just before this rewind, when it can be kept.
   */
  async restore(point: string, redo?: string): Promise<Restored> {
    // A checkpoint still being taken (the one after the last run) may push an older one out of the budget: what can
    // be restored is decided once every checkpoint asked for has answered, the same however fast the guest forks.
    await this.settled();
    return this.restoreNow(point, redo);
  }

  /** Resolves once no checkpoint answer is outstanding (or the session ended; at most RESTORE_TIMEOUT_MS). */
  private settled(): Promise<void> {
    if (!this.awaiting.size || this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, RESTORE_TIMEOUT_MS);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.settling.push(done);
    });
  }

  private wakeSettled(): void {
    if (this.awaiting.size && !this.closed) return;
    const waiting = this.settling;
    this.settling = [];
    for (const w of waiting) w();
  }

  private restoreNow(point: string, redo?: string): Promise<Restored> {
    if (this.closed) return Promise.reject(new Error(`The Python session has ended (${this.closed}).`));
    const why = this.unavailable(point);
    if (why) return Promise.reject(new Error(`The Python state before that execution cannot be restored: ${why}.`));
    if (this.pending) return Promise.reject(new Error('A rewind of this session is already under way.'));
    const id = this.points.get(point)!;
    const keep = this.mint();
    return new Promise<Restored>((resolve, reject) => {
      // The guest answers within 30 s (its wait for the woken fork) plus its reads of the checkpoints' memory.
      const timer = setTimeout(() => {
        if (this.pending?.id !== id) return;
        this.pending = undefined;
        reject(new Error('The Python session did not answer the rewind within 2 minutes; it was ended.'));
        this.stuck?.();
      }, RESTORE_TIMEOUT_MS);
      this.pending = {
        id,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      this.send({ t: 'restore', id, keep: redo ? keep : null });
    }).then((r) => {
      this.held.delete(id);
      // The state just before the rewind: the guest's copy made for it, else the one taken after the last run (the same
      // state: nothing ran since). One of them is enough.
      let before = r.redo;
      if (this.fresh && this.held.has(this.fresh)) {
        if (before) this.drop(this.fresh, 'the session was rewound');
        else before = this.fresh;
      }
      this.fresh = undefined;
      // The woken fork is the session now: a new checkpoint of this state stands for every point that named it.
      const again = this.ask();
      for (const [p, c] of this.points) if (c === id) this.points.set(p, again);
      this.send({ t: 'checkpoint', id: again });
      this.fresh = again;
      if (before && redo) {
        this.points.set(redo, before);
        return { pid: r.pid, redo };
      }
      return { pid: r.pid };
    });
  }

  /** The session ended: a rewind waiting for its answer fails. */
  ended(reason: string): void {
    this.closed = reason;
    this.pending?.reject(new Error(`The Python session ended (${reason}).`));
    this.pending = undefined;
    for (const id of this.held.keys()) this.forget(id, `the session ended (${reason})`);
    this.held.clear();
    this.wakeSettled();
  }

  /** A checkpoint frame from the guest; returns what was wrong with it, if anything. */
  onFrame(frame: Unchecked<Extract<GuestFrame, { t: 'checkpointed' | 'restored' }>>): string | undefined {
    if (typeof frame.id !== 'string') return 'a checkpoint frame without an id';
    if (frame.t === 'checkpointed') {
      // Only an answer to a checkpoint asked for (the guest's code could write frames of its own).
      if (!this.awaiting.delete(frame.id)) return 'an unexpected checkpointed frame';
      if (typeof frame.ms === 'number') this.lastMs = frame.ms;
      if (frame.ok !== true) this.forget(frame.id, typeof frame.error === 'string' ? `it was not taken: ${frame.error.slice(0, 300)}` : 'it was not taken');
      const wrong = this.update(frame.held);
      this.wakeSettled();
      return wrong;
    }
    const pending = this.pending;
    if (!pending || pending.id !== frame.id) return 'an unexpected restored frame';
    this.pending = undefined;
    if (frame.ok !== true || !isInt(frame.pid)) {
      pending.reject(
        new Error(`The Python state could not be restored: ${typeof frame.error === 'string' ? frame.error.slice(0, 300) : 'the guest did not say why'}.`),
      );
      return undefined;
    }
    const wrong = this.update(frame.held);
    pending.resolve({ pid: frame.pid, ...(typeof frame.kept === 'string' ? { redo: frame.kept } : {}) });
    return wrong;
  }

  /** The guest's list of what it holds; then the oldest give way while over a budget. */
  private update(held: unknown): string | undefined {
    if (held === undefined) return undefined;
    if (!Array.isArray(held) || held.length > 1000) return 'a malformed checkpoint list';
    const now = new Map<string, number>();
    for (const h of held) {
      if (!Array.isArray(h) || typeof h[0] !== 'string' || !this.minted(h[0]) || !isInt(h[1]) || (h[1] as number) < -1) return 'a malformed checkpoint list';
      // -1: not read this time; the last figure stands (a new one holds next to nothing).
      now.set(h[0], (h[1] as number) < 0 ? (this.held.get(h[0]) ?? 0) : (h[1] as number));
    }
    for (const id of this.held.keys()) if (!now.has(id)) this.forget(id, this.gone.get(id) ?? 'the guest no longer holds it');
    this.held.clear();
    for (const [id, bytes] of now) this.held.set(id, bytes);
    let { count, bytes } = this.usage;
    for (const [id, size] of this.held) {
      if (count <= this.budget.max && bytes <= this.budget.memoryBytes) break;
      this.drop(
        id,
        count > this.budget.max
          ? `it was dropped to keep ${this.budget.max} checkpoints (codeact.rewind.maxCheckpoints)`
          : `it was dropped to keep checkpoints under ${formatBytes(this.budget.memoryBytes)} of memory (codeact.rewind.memoryMB)`,
      );
      count--;
      bytes -= size;
    }
    return undefined;
  }

  private mint(): string {
    return `ckp-${++this.seq}`;
  }

  /** A new id, asked of the guest (its `checkpointed` answer is expected). */
  private ask(): string {
    const id = this.mint();
    this.awaiting.add(id);
    return id;
  }

  /** Whether `id` is one of ours. */
  private minted(id: string): boolean {
    const m = /^ckp-(\d{1,9})$/.exec(id);
    return !!m && Number(m[1]) <= this.seq;
  }

  /** The guest lets go of checkpoint `id`; `why` is what a rewind to it says. */
  private drop(id: string, why: string): void {
    this.forget(id, why);
    this.held.delete(id);
    this.send({ t: 'drop', id });
  }

  /** Why `id` is gone (the last 1,000 reasons are kept). */
  private forget(id: string, why: string): void {
    this.gone.set(id, why);
    if (this.gone.size > 1000) this.gone.delete(this.gone.keys().next().value!);
  }
}
