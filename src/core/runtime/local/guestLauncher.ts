/**
 * Launching local guests, apart from the sessions that keep them (./sessionPool): a cold start in the
 * sandbox, or a fork of the warm zygote (zygote.ts) with a fallback to cold starts (logged once), the
 * next guest started ahead of need (`prestart`), and the one-shot guests that run one execution and end
 * with it (their teardown awaited by dispose).
 */
import type { ArtifactStore } from '../artifacts';
import { guestDirFor } from '../guest/sources';
import type { RuntimeLimits } from '../types';
import { ColdGuest, makeHostWorkdir, newMarker, type GuestHandle } from './guestProcess';
import type { CheckpointBudget } from './checkpoints';
import { GuestSession } from './guestSession';
import { DEFAULT_SESSIONS } from './sessionPool';
import { resolvePython } from './python';
import { planLaunch, type LaunchPlan, type SandboxOptions } from './sandbox';
import { firstTimeShown } from './usernsDiagnosis';
import { WorkdirCleaner } from './workdirCleanup';
import { Zygote, ZygoteGuest } from './zygote';

export interface GuestLaunchOptions {
  /** Interpreter command or path; default `python3`. */
  python?: string;
  sandbox?: SandboxOptions;
  /** Receives one-time warnings, such as "running without a sandbox". */
  onWarning?: (message: string) => void;
  /** Whole-tree cgroup limits where they can be created (default true). */
  cgroups?: boolean;
  /** At most this many sessions stay alive; default 4. */
  maxAlive?: number;
  /** How long Stop or a timeout may take to interrupt a session's code before it is killed; default 3 s. */
  interruptGraceMs?: number;
  /** Fork guests from a warm zygote (default false). */
  zygote?: boolean;
  /** Modules the zygote imports once (implies `zygote`). */
  preload?: string[];
  /** Keep the next guest started ahead of need (default false). */
  prestart?: boolean;
  /** Diagnostics (zygote start, fallbacks). */
  log?: (line: string) => void;
}

export class GuestLauncher {
  private warned = false;
  private readonly oneShots = new Set<GuestSession>();
  /** Teardowns of ended one-shot guests still finishing (awaited by dispose). */
  private readonly teardowns = new Set<Promise<void>>();
  private zygote?: Promise<Zygote | undefined>;
  private zygoteStarts = 0;
  private zygoteWarned = false;
  private spare?: Promise<GuestSession>;
  private disposed = false;
  /** Removes host working folders in the background; one that will not go is reported and retried on dispose. */
  private readonly cleaner: WorkdirCleaner;

  constructor(
    private readonly options: GuestLaunchOptions,
    private readonly session: { limits: RuntimeLimits; maxFrameBytes: number; artifacts: ArtifactStore; checkpoints?: CheckpointBudget },
  ) {
    this.cleaner = new WorkdirCleaner((m) => {
      options.log?.(m);
      options.onWarning?.(m);
    });
  }

  private get useZygote(): boolean {
    return this.options.zygote === true || (this.options.preload?.length ?? 0) > 0;
  }

  /** Resolves once the guest started ahead of need (with prestart) is ready. */
  async warm(): Promise<void> {
    await this.spare?.catch(() => undefined);
  }

  /** A guest for one execution, ended by {@link endOneShot}. */
  async oneShot(): Promise<GuestSession> {
    const session = await this.fresh(false);
    this.oneShots.add(session);
    return session;
  }

  /** Ends a one-shot guest after its run; resolves when the run may return. */
  async endOneShot(session: GuestSession): Promise<void> {
    this.oneShots.delete(session);
    const clean = session.end();
    const guest = session.guest;
    const teardown = guest.exited.then(() => guest.release());
    // The result is announced already. A guest alone in its own PID namespace that ended cleanly is
    // past recall once SIGKILL is sent (the kernel takes everything in the namespace with it), so the
    // run returns now and its teardown (the namespace's, milliseconds; the folder's) finishes behind
    // it, awaited by dispose. Otherwise this waits, without blocking the event loop, until the guest
    // is gone and the run's folder with it (or reported as left behind).
    if (clean && guest instanceof ZygoteGuest && guest.ownNamespace) this.track(teardown);
    else await teardown;
  }

  private track(teardown: Promise<void>): void {
    const t = teardown.catch(() => {}).finally(() => this.teardowns.delete(t));
    this.teardowns.add(t);
  }

  /** Kills the one-shot guests, waits for teardowns, ends the spare guest and the zygote, then settles the working folders. */
  async dispose(): Promise<void> {
    this.disposed = true;
    for (const s of this.oneShots) s.kill('CodeAct is shutting down');
    // Ended guests report their exit through the zygote within milliseconds; a zygote that no longer
    // answers is disposed below, which ends them all, so the wait is bounded.
    await Promise.race([Promise.all(this.teardowns), new Promise<void>((resolve) => setTimeout(resolve, 3000).unref())]);
    const spare = this.spare;
    this.spare = undefined;
    void spare?.then((g) => (g.kill('CodeAct is shutting down'), g.guest.release())).catch(() => {});
    await spare?.catch(() => undefined);
    const z = this.zygote;
    this.zygote = undefined;
    (await z?.catch(() => undefined))?.dispose();
    await this.settleCleanup();
  }

  /** Waits for working folders being removed, retries the ones that would not go, and names what is left. */
  private async settleCleanup(): Promise<void> {
    const left = await this.cleaner.settle();
    if (!left.length) return;
    const m =
      `${left.length} working folder(s) could not be removed and are left on disk: ${left.map((d) => `${d} (${this.cleaner.leftovers.get(d)})`).join('; ')}. ` +
      'Remove them by hand (umount anything mounted inside first).';
    this.options.log?.(m);
    this.options.onWarning?.(m);
  }

  private subreaper(guest: GuestHandle): boolean {
    if (guest instanceof ZygoteGuest) return !guest.ownNamespace;
    return !guest.plan.pidNamespace;
  }

  /**
   * A started guest that has run nothing yet: the one started ahead of need (its limits applied, ready),
   * or a new one. `waitReady`: a session waits for it; a one-shot run sends its code right behind init.
   */
  async fresh(waitReady: boolean): Promise<GuestSession> {
    const spare = this.spare;
    this.spare = undefined;
    let session: GuestSession | undefined;
    if (spare) session = await spare.catch(() => undefined);
    if (!session?.alive) {
      session = await this.startSession();
      if (waitReady) await session.started;
    }
    if (this.options.prestart && !this.disposed) {
      const next = this.startSession().then(async (s) => (await s.started, s));
      next.catch(() => {});
      this.spare = next;
    }
    return session;
  }

  private async startSession(): Promise<GuestSession> {
    const guest = await this.newGuest();
    const session = new GuestSession(guest, { ...this.session, interruptGraceMs: this.options.interruptGraceMs ?? 3000 });
    session.onDeath(() => void guest.exited.then(() => guest.release()));
    session.started = session.start(guest.plan.rlimits, this.subreaper(guest));
    session.started.catch(() => {});
    return session;
  }

  private async newGuest(): Promise<GuestHandle> {
    if (this.useZygote) {
      const z = await this.getZygote();
      if (z) {
        try {
          return await z.fork();
        } catch (err) {
          this.logOnce(`${(err as Error).message}; code starts cold instead.`);
        }
      }
    }
    return this.coldGuest();
  }

  private async coldGuest(): Promise<GuestHandle> {
    const python = await resolvePython(this.options.python ?? 'python3');
    const marker = newMarker();
    // The host folder is made only for a launch without a sandbox.
    const plan = await planLaunch(python, guestDirFor(python.executable), { role: 'guest', marker, workdir: makeHostWorkdir }, this.options.sandbox);
    this.warnOnce(plan);
    return new ColdGuest({ plan, role: 'guest', marker, hostWorkdir: plan.hostWorkdir, useCgroups: this.options.cgroups !== false, cleaner: this.cleaner });
  }

  private getZygote(): Promise<Zygote | undefined> {
    const current = this.zygote;
    if (current) {
      return current.then((z) => {
        if (z?.alive) return z;
        if (this.zygote === current && this.zygoteStarts < 3 && !this.disposed) this.zygote = undefined;
        return this.zygote ? undefined : this.getZygote();
      });
    }
    if (this.zygoteStarts >= 3 || this.disposed) return Promise.resolve(undefined);
    this.zygoteStarts++;
    const starting = (async () => {
      const python = await resolvePython(this.options.python ?? 'python3');
      const z = await Zygote.start({
        python,
        guestDir: guestDirFor(python.executable),
        sandbox: this.options.sandbox,
        preload: this.options.preload ?? [],
        useCgroups: this.options.cgroups !== false,
        maxGuests: (this.options.maxAlive ?? DEFAULT_SESSIONS.maxAlive) + 2,
        onWarning: (m) => this.options.onWarning?.(m),
        cleaner: this.cleaner,
      });
      this.warnOnce(z.plan);
      this.options.log?.(`warm Python process ready${this.options.preload?.length ? ` (preloaded ${this.options.preload.join(', ')})` : ''}`);
      return z;
    })().catch((err) => {
      this.logOnce(`The warm Python process could not start (${(err as Error).message}); code starts cold instead.`);
      return undefined;
    });
    this.zygote = starting;
    return starting;
  }

  /**
   * A launch's warning, once per runtime, its detail to the log; the fallback to no sandbox once per process
   * (an extension session, a CLI run), however many runtimes the settings build: later ones only log it.
   */
  private warnOnce(plan: LaunchPlan | undefined): void {
    const warning = plan?.warning;
    if (!warning || this.warned) return;
    this.warned = true;
    if (plan.info.kind === 'none' && !firstTimeShown(warning)) this.options.log?.(warning);
    else {
      this.options.onWarning?.(warning);
      if (plan.warningDetail) this.options.log?.(plan.warningDetail);
    }
  }

  private logOnce(line: string): void {
    if (this.zygoteWarned) return;
    this.zygoteWarned = true;
    this.options.log?.(line);
  }
}
