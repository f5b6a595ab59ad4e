/**
 * The sweep of sessions left running for conversations that were never continued (a Jupyter kernel each
 * `codeact chat` or window leaves on its server: runtime/types SessionHandover). When a runtime whose sessions
 * outlive the process starts in a workspace (the CLI's chat, the extension's runtime cache), the conversations of
 * the transcript store that remember a session and were last written longer ago than the runtime's idle time get
 * it ended (only when the server still has it, it is of the configured kind and idle: never a busy one) and
 * forget its id. Bounded (the most recently written old conversations, at most SWEEP_READ read and SWEEP_MAX
 * ended), one sweep of a store at a time, and never in the way of the first run: the caller does not wait for it,
 * and whatever fails is logged.
 */
import { heldElsewhere, heldHere } from '../agent/conversationLock';
import type { TranscriptStore } from '../agent/transcriptStore';
import type { Runtime } from '../runtime/types';

/** Old conversations read per sweep, at most (the most recently written first). */
const SWEEP_READ = 32;
/** Left sessions asked about per sweep, at most. */
const SWEEP_MAX = 8;

/** Stores being swept now (by folder): a second sweep of one waits for none and does nothing. */
const sweeping = new Set<string>();

interface SweepOptions {
  log(line: string): void;
  /** A conversation not to touch (the one open in the panel, whose next run takes its kernel back). */
  skip?(id: string): boolean;
}

/** What one sweep did: conversations whose session was ended, and those whose session was kept (busy, another kind). */
interface SweepResult {
  ended: string[];
  kept: string[];
}

export async function sweepLeftSessions(store: TranscriptStore, runtime: Runtime, o: SweepOptions): Promise<SweepResult> {
  const result: SweepResult = { ended: [], kept: [] };
  const handover = runtime.sessions.handover;
  if (!handover || !(handover.idleMs > 0) || sweeping.has(store.dir)) return result;
  sweeping.add(store.dir);
  try {
    await Promise.resolve(); // the caller's start goes first
    const old = store
      .writtenBefore(Date.now() - handover.idleMs, SWEEP_READ)
      .filter((c) => typeof c.kernelId === 'string' && c.kernelId !== '' && !o.skip?.(c.id))
      .slice(0, SWEEP_MAX);
    for (const c of old) {
      // A conversation a turn holds (here or in another process) is in use: its session is not left.
      const file = store.file(c.id);
      if (heldHere(file) || heldElsewhere(file)) continue;
      try {
        const outcome = await handover.endLeft(c.kernelId!);
        if (outcome === 'kept') {
          result.kept.push(c.id);
          continue;
        }
        store.patchQuietly(c.id, { kernelId: null });
        if (outcome === 'ended') {
          result.ended.push(c.id);
          o.log(`[codeact] Shut down the session ${c.kernelId} left running for conversation ${c.id}: it was not continued within the idle time.`);
        }
      } catch (err) {
        o.log(`[codeact] Could not end the session left running for conversation ${c.id}: ${(err as Error).message}`);
      }
    }
  } catch (err) {
    o.log(`[codeact] The sweep of sessions left running failed: ${(err as Error).message}`);
  } finally {
    sweeping.delete(store.dir);
  }
  return result;
}
