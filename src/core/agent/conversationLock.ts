/**
 * One writer per conversation: a lock file beside the transcript (`<id>.lock`) names the process that has
 * the conversation open (its pid and start time, so a reused pid is not taken for it). A second process is
 * told clearly that the conversation is open elsewhere, and which file to delete if that is wrong; a lock
 * whose process is gone (a crash) is stale and taken over. Holding is counted per process, so the CLI's
 * command and the turn it runs can both hold the conversation.
 *
 * The lock appears whole: it is written under a private name and linked into place (`link` fails when the
 * name exists), so no reader ever sees an empty lock. A stale lock is taken over by renaming it to a private
 * name and checking that what was renamed is the stale lock that was read (else it is put back): two
 * processes that both found it stale cannot both take it, and neither removes a lock it did not read.
 */
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { randomToken } from '../util/ids';
import { isAlive, startTimeOf } from '../util/processTree';

/** What the person reads when the conversation is open in another live process. */
export const CONVERSATION_BUSY = (conversationId: string, pid: number, lockFile: string) =>
  `conversation ${conversationId} is open in another process (pid ${pid}); wait for it or continue a copy. ` +
  `If no CodeAct process is using it, delete ${lockFile}.`;

/** The conversation is open in another live process. */
export class ConversationBusyError extends Error {
  readonly code = 'conversation_busy';
  constructor(
    readonly conversationId: string,
    readonly pid: number,
    readonly lockFile: string,
  ) {
    super(CONVERSATION_BUSY(conversationId, pid, lockFile));
  }
}

const held = new Map<string, number>();

function lockFileOf(transcript: string): string {
  return path.join(path.dirname(transcript), `${path.basename(transcript, '.jsonl')}.lock`);
}

/** What this process writes in a lock: its pid and start time. */
function ownContent(): string {
  return `${process.pid} ${startTimeOf(process.pid) ?? ''}`.trim();
}

/** The live process a lock's content names (not this one), or undefined when it is stale. */
function liveOwner(content: string): number | undefined {
  const [pidText, start] = content.trim().split(/\s+/);
  const pid = Number.parseInt(pidText ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return undefined;
  // A start time that differs: the pid was reused by another process (after a reboot, say).
  if (start && startTimeOf(pid) !== undefined && startTimeOf(pid) !== start) return undefined;
  return pid;
}

function readLock(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether this process holds the conversation now (a turn of it runs here). */
export function heldHere(transcript: string): boolean {
  return held.has(lockFileOf(transcript));
}

/**
 * Holds the conversation stored in `transcript` for this process; returns the release. Throws
 * ConversationBusyError when another live process holds it.
 */
export function holdConversation(id: string, transcript: string): () => void {
  const file = lockFileOf(transcript);
  const count = held.get(file) ?? 0;
  if (!count) take(id, file);
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
      if (readLock(file)?.trim() === ownContent()) rmSync(file, { force: true });
    } catch {}
  };
}

/** Puts this process's lock in place, taking over a stale one; throws ConversationBusyError when a live process has it. */
function take(id: string, file: string): void {
  const mine = `${file}.${process.pid}-${randomToken(6)}`;
  try {
    writeFileSync(mine, ownContent(), { flag: 'wx', mode: 0o600 });
  } catch {
    // The lock cannot be written (a full disk, a read-only folder): the turn still runs, and the store says
    // itself that it could not save. Nobody else's lock is touched.
    rmQuiet(mine);
    return;
  }
  try {
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        linkSync(mine, file);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return;
      }
      const seen = readLock(file);
      if (seen === undefined) continue; // released meanwhile
      const owner = liveOwner(seen);
      if (owner !== undefined) throw new ConversationBusyError(id, owner, file);
      // Stale: moved aside under a private name, and put back if it is not the one read (another process's, just made).
      const aside = `${file}.stale-${process.pid}-${randomToken(6)}`;
      try {
        renameSync(file, aside);
      } catch {
        continue; // taken or released by another process meanwhile
      }
      const moved = readLock(aside);
      if (moved !== seen) {
        try {
          linkSync(aside, file);
        } catch {}
        rmQuiet(aside);
        const other = liveOwner(moved ?? '');
        if (other !== undefined) throw new ConversationBusyError(id, other, file);
        continue;
      }
      rmQuiet(aside);
    }
    const last = liveOwner(readLock(file) ?? '');
    if (last !== undefined) throw new ConversationBusyError(id, last, file);
  } finally {
    rmQuiet(mine);
  }
}

function rmQuiet(file: string): void {
  try {
    rmSync(file, { force: true });
  } catch {}
}

/** Whether another live process holds the conversation now (its writes go first; ours wait). */
export function heldElsewhere(transcript: string): boolean {
  return heldBy(transcript) !== undefined;
}

/** The other live process that holds the conversation now, and its lock file; none when no other does. */
export function heldBy(transcript: string): { pid: number; lockFile: string } | undefined {
  const lockFile = lockFileOf(transcript);
  const content = readLock(lockFile);
  const pid = content === undefined ? undefined : liveOwner(content);
  return pid === undefined ? undefined : { pid, lockFile };
}
