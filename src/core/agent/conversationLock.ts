/**
 * One writer per conversation: a lock file beside the transcript (`<id>.lock`) holds the pid of the process
 * that has the conversation open. A second process is told clearly that the conversation is open elsewhere;
 * a lock whose process is dead (a crash) is stale and taken over. Holding is counted per process, so the
 * CLI's command and the turn it runs can both hold the conversation.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** The conversation is open in another live process. */
export class ConversationBusyError extends Error {
  readonly code = 'conversation_busy';
  constructor(
    readonly conversationId: string,
    readonly pid: number,
  ) {
    super(`conversation ${conversationId} is open in another process (pid ${pid}); wait for it or continue a copy.`);
  }
}

const held = new Map<string, number>();

function lockFileOf(transcript: string): string {
  return path.join(path.dirname(transcript), `${path.basename(transcript, '.jsonl')}.lock`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, owned by someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether this process holds the conversation now (a turn of it runs here). */
export function heldHere(transcript: string): boolean {
  return held.has(lockFileOf(transcript));
}

/** The pid holding the conversation's lock, when it is another live process. */
function lockOwner(transcript: string): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(lockFileOf(transcript), 'utf8'), 10);
  } catch {
    return undefined;
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
}

/**
 * Holds the conversation stored in `transcript` for this process; returns the release. Throws
 * ConversationBusyError when another live process holds it.
 */
export function holdConversation(id: string, transcript: string): () => void {
  const file = lockFileOf(transcript);
  const count = held.get(file) ?? 0;
  if (!count) {
    for (let attempt = 0; ; attempt++) {
      try {
        writeFileSync(file, String(process.pid), { flag: 'wx' });
        break;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST' && code !== undefined) {
          // The lock cannot be written (a full disk, a read-only folder): the turn still runs, and the store
          // says itself that it could not save; a half-made lock file is not left to pass for an owner.
          try {
            rmSync(file, { force: true });
          } catch {}
          break;
        }
        if (attempt > 2) throw e;
        const owner = lockOwner(transcript);
        if (owner !== undefined) throw new ConversationBusyError(id, owner);
        // Stale (its process is gone) or ours from before: taken over.
        rmSync(file, { force: true });
      }
    }
  }
  held.set(file, count + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(file) ?? 1) - 1;
    if (left > 0) {
      held.set(file, left);
      return;
    }
    held.delete(file);
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {}
  };
}
