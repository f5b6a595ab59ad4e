/**
 * The transcript's file I/O: whole records or nothing, and only regular files, read within a cap.
 * - An append writes whole lines. A file that does not end in a newline (a crash or a full disk cut its
 *   last line) is repaired first: the torn tail is kept in a file beside it, then cut off. A write that
 *   fails (ENOSPC, EIO) is truncated back to the size before it, so the file still ends with a whole record.
 * - A read opens without following a symbolic link and without blocking (a FIFO), checks that it is a
 *   regular file, not empty and under MAX_TRANSCRIPT_BYTES, and reads that many bytes at most.
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { CodeActError } from '../util/errors';
import { writeAll, writeFileAtomicSync } from '../util/atomicFile';

/** The largest conversation file read (a conversation past it is refused, said clearly). */
const MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024;

/** A stored conversation that cannot be read: what it is and what to do. */
export class TranscriptFileError extends CodeActError {
  readonly category = 'environment' as const;
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

const MOVE_ASIDE = 'CodeAct reads only regular files there: move it out of the conversations folder.';

/** Opens a stored conversation for reading or appending, refusing what is not a regular file. Returns its fd and size. */
function openChecked(file: string, flags: number): { fd: number; size: number; ino: number } {
  let fd: number;
  try {
    fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new TranscriptFileError(`${file} is a symbolic link, not a conversation. ${MOVE_ASIDE}`);
    if (code === 'EISDIR') throw new TranscriptFileError(`${file} is a folder, not a conversation. ${MOVE_ASIDE}`);
    if (code === 'ENXIO') throw new TranscriptFileError(`${file} is a FIFO (named pipe), not a conversation. ${MOVE_ASIDE}`);
    throw new TranscriptFileError(`Cannot open ${file} (${code ?? (e as Error).message}).`);
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new TranscriptFileError(`${file} is ${kindOf(st)}, not a conversation. ${MOVE_ASIDE}`);
  }
  return { fd, size: st.size, ino: st.ino };
}

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n <= 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** A whole stored conversation's text, checked (regular, not empty, within the cap), its bytes as they are, and its inode. */
export function readTranscript(file: string): { text: string; bytes: Buffer; ino: number } {
  const { fd, size, ino } = openChecked(file, constants.O_RDONLY);
  try {
    if (size === 0) throw new TranscriptFileError(`${file} is empty (zero bytes): no conversation was saved in it. Delete it or move it aside.`);
    if (size > MAX_TRANSCRIPT_BYTES) {
      throw new TranscriptFileError(
        `${file} is ${Math.round(size / 1048576)} MiB, over the ${MAX_TRANSCRIPT_BYTES / 1048576} MiB CodeAct reads for one conversation. Start a new conversation.`,
      );
    }
    const buf = readAt(fd, size, 0);
    return { text: buf.toString('utf8'), bytes: buf, ino };
  } finally {
    closeSync(fd);
  }
}

/** The first `max` bytes of a stored conversation (for the list), checked like readTranscript; also its size. */
export function readTranscriptHead(file: string, max: number): { text: string; size: number } {
  const { fd, size } = openChecked(file, constants.O_RDONLY);
  try {
    if (size === 0) throw new TranscriptFileError(`${file} is empty (zero bytes).`);
    return { text: readAt(fd, Math.min(size, max), 0).toString('utf8'), size };
  } finally {
    closeSync(fd);
  }
}

/**
 * The whole records another process appended after byte `from` (what a Conversation has not seen), and where
 * they end; a torn last line is left for later. Undefined when the file did not grow (or shrank: a repair).
 */
export function readTranscriptAfter(file: string, from: number, to?: number): { text: string; end: number } | undefined {
  const opened = openChecked(file, constants.O_RDONLY);
  const fd = opened.fd;
  const size = to === undefined ? opened.size : Math.min(to, opened.size);
  try {
    if (size <= from) return undefined;
    if (size > MAX_TRANSCRIPT_BYTES)
      throw new TranscriptFileError(`${file} grew over the ${MAX_TRANSCRIPT_BYTES / 1048576} MiB CodeAct reads for one conversation.`);
    const buf = readAt(fd, size - from, from);
    const whole = buf.lastIndexOf(0x0a) + 1;
    return whole ? { text: buf.subarray(0, whole).toString('utf8'), end: from + whole } : undefined;
  } finally {
    closeSync(fd);
  }
}

/** What an append did beyond writing: the torn tail it kept aside; where the records were written (bytes). */
interface AppendResult {
  repaired?: { aside: string; bytes: number };
  start: number;
  size: number;
  /** The inode written to: another than the one read means the file was replaced meanwhile (a repair). */
  ino: number;
}

/**
 * Appends `text` (whole lines) to `file`: repairs a torn last line first, and on a failed write cuts the
 * file back to its size before it (then throws). `durable`: fsync before returning.
 */
export function appendRecords(file: string, text: string, durable: boolean): AppendResult {
  const { fd, size: before, ino } = openChecked(file, constants.O_RDWR | constants.O_APPEND);
  let size = before;
  const result: AppendResult = { start: size, size, ino };
  try {
    if (size > 0 && readAt(fd, 1, size - 1)[0] !== 0x0a) {
      // Find the last newline (backwards, a chunk at a time): everything after it is the torn record.
      let end = size;
      let lastNl = -1;
      while (end > 0 && lastNl < 0) {
        const start = Math.max(0, end - 65536);
        const chunk = readAt(fd, end - start, start);
        const i = chunk.lastIndexOf(0x0a);
        if (i >= 0) lastNl = start + i;
        end = start;
      }
      const keep = lastNl + 1;
      const aside = `${file}.torn-${Date.now()}`;
      writeFileAtomicSync(aside, readAt(fd, size - keep, keep), { mode: 0o600, exclusive: true });
      ftruncateSync(fd, keep);
      result.repaired = { aside, bytes: size - keep };
      size = keep;
    }
    try {
      const bytes = Buffer.from(text, 'utf8');
      result.start = size;
      writeAll(fd, bytes);
      if (durable) fsyncSync(fd);
      result.size = size + bytes.length;
    } catch (e) {
      try {
        ftruncateSync(fd, size);
      } catch {
        /* the next append repairs the tail */
      }
      throw e;
    }
    return result;
  } finally {
    closeSync(fd);
  }
}
