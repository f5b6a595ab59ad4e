/**
 * Conversations persisted as JSON lines in a storage folder: one file per conversation, a `meta`
 * line first, then every event as it happened and every history item (with the provider's replay
 * data) as it was finished. A conversation can be listed, reopened, continued and deleted. The file I/O
 * (./transcriptFile.ts) appends whole records or nothing, repairs a torn tail and reads only regular files
 * within a cap; a record that does not parse is skipped with a notice, never silently. Events are written
 * in batches (200 ms), turn boundaries and history items at once, and a turn's start and end are fsynced.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import * as path from 'node:path';
import { traitsOf } from '../../common/eventTraits';
import { clip } from '../../common/format';
import type { TranscriptEvent } from '../../common/transcript';
import type { ConversationItem } from '../providers/shared/types';
import { writeFileAtomicSync, writeFirstFree } from '../util/atomicFile';
import { randomToken } from '../util/ids';
import { heldElsewhere, heldHere } from './conversationLock';
import { appendRecords, readTranscript, readTranscriptAfter, readTranscriptHead, TranscriptFileError } from './transcriptFile';

/** How much of each file the history list reads (its meta line, turns and patches within it). */
const LIST_SCAN_BYTES = 8 * 1024 * 1024;

interface ConversationMeta {
  id: string;
  title: string;
  createdAt: number;
  provider?: string;
  model?: string;
  mode?: string;
  workspace?: string;
  containerId?: string | null;
  /** The conversation's session that outlives the process (its Jupyter kernel's id; runtime/types: SessionHandover). */
  kernelId?: string | null;
  /** Hosted containers found expired: no request names them again (src/core/providers/shared/expiredContainer.ts). */
  expiredContainers?: string[];
  /** Ends of runs the model was not told yet (a run a reload let go of): said once, on its next turn (src/vscode/reattach.ts). */
  endedNotes?: string[] | null;
}

/** A conversation as the store lists it: its meta, when it last changed, how many turns it has. */

/** What the store tells the person about a damaged or unwritable file; the tests compare against these. */
export const STORE_MESSAGES = {
  notSaved: (file: string, why: string) =>
    `This turn was not saved: writing ${file} failed (${why}). The turns before it are kept. Free some space; the next turn is saved again.`,
  skipped: (file: string, lines: readonly number[]) =>
    `${lines.length} damaged record${lines.length > 1 ? 's' : ''} in ${file} (line ${lines.slice(0, 5).join(', ') + (lines.length > 5 ? ', …' : '')}) ${lines.length > 1 ? 'were' : 'was'} skipped; the rest of the conversation is kept.`,
  firstLineRecovered: (file: string) => `The first line of ${file} (the conversation's title and settings) is damaged; it was recovered from the turns.`,
};

export interface ListedConversation extends ConversationMeta {
  updatedAt: number;
  turns: number;
  /** Why the file is not whole (its first line damaged, or it cannot be read at all) and what to do. */
  damaged?: string;
}

type Line =
  { meta: ConversationMeta } | { t: number; event: TranscriptEvent } | { t: number; item: ConversationItem } | { t: number; patch: Partial<ConversationMeta> };

const ID_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;

export class TranscriptStore {
  constructor(readonly dir: string) {}

  /** Where a conversation is stored (its lock is named after it: ./conversationLock). */
  file(id: string): string {
    if (!ID_PATTERN.test(id)) throw new Error(`"${id}" is not a conversation id.`);
    return path.join(this.dir, `${id}.jsonl`);
  }

  create(meta: Omit<ConversationMeta, 'id' | 'createdAt'> & { id?: string }): Conversation {
    mkdirSync(this.dir, { recursive: true });
    const id = meta.id ?? `c_${new Date().toISOString().slice(0, 10).replace(/-/g, '')}_${randomToken(5)}`;
    const full: ConversationMeta = { ...meta, id, createdAt: Date.now() };
    const first = JSON.stringify({ meta: full }) + '\n';
    writeFileAtomicSync(this.file(id), first, { mode: 0o600, exclusive: true });
    return new Conversation(this.file(id), full, [], [], { seen: Buffer.byteLength(first), ino: statSync(this.file(id)).ino });
  }

  exists(id: string): boolean {
    return ID_PATTERN.test(id) && existsSync(this.file(id));
  }

  open(id: string): Conversation {
    const file = this.file(id);
    if (!existsSync(file)) throw new Error(`No conversation "${id}" in ${this.dir}. List them with "codeact chat --list".`);
    const { text, bytes, ino } = readTranscript(file);
    const parsed = parseLines(text, file);
    let meta = parsed.meta;
    const notices = parsed.notices;
    if (!meta) {
      if (!parsed.events.length && !parsed.items.length)
        throw new TranscriptFileError(`${file} is not a CodeAct conversation (no record in it parses). Move it aside.`);
      meta = recoveredMeta(id, parsed.events, file);
      notices.unshift(STORE_MESSAGES.firstLineRecovered(file));
    }
    for (const patch of parsed.patches) meta = { ...meta, ...patch };
    const convo = new Conversation(file, meta, parsed.events, parsed.items, { seen: wholeEnd(bytes), ino });
    convo.notices.push(...notices);
    convo.damaged = parsed.damaged;
    return convo;
  }

  /**
   * The conversations, newest first. Reads at most LIST_SCAN_BYTES of each regular file: its meta line
   * (or, when that is damaged, its first prompt), its patches and turns; a file that cannot be read is
   * listed as damaged with why.
   */
  list(): ListedConversation[] {
    if (!existsSync(this.dir)) return [];
    const out: ListedConversation[] = [];
    for (const name of readdirSync(this.dir)) {
      const id = name.slice(0, -6);
      if (!name.endsWith('.jsonl') || !ID_PATTERN.test(id)) continue;
      const file = path.join(this.dir, name);
      try {
        out.push(listed(file, id));
      } catch (e) {
        const why = e instanceof TranscriptFileError ? e.message : `${file} cannot be read (${(e as Error).message}).`;
        out.push({ id, title: '(damaged)', createdAt: 0, updatedAt: 0, turns: 0, damaged: why });
      }
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /**
   * The conversations last written before `before` (ms since the epoch), the most recent of them first, at most
   * `max` read (the sweep of left sessions, core/turn/sessionSweep); of the others only the file's date is looked at.
   */
  writtenBefore(before: number, max: number): ListedConversation[] {
    if (!existsSync(this.dir)) return [];
    const old: { id: string; file: string; at: number }[] = [];
    for (const name of readdirSync(this.dir)) {
      const id = name.slice(0, -6);
      if (!name.endsWith('.jsonl') || !ID_PATTERN.test(id)) continue;
      const file = path.join(this.dir, name);
      try {
        const at = statSync(file).mtimeMs;
        if (at < before) old.push({ id, file, at });
      } catch {}
    }
    const out: ListedConversation[] = [];
    for (const o of old.sort((a, b) => b.at - a.at).slice(0, max)) {
      try {
        out.push(listed(o.file, o.id));
      } catch {}
    }
    return out;
  }

  /** Changes a conversation's meta without making it newer (its place in the history stays): the sweep forgetting a left session. */
  patchQuietly(id: string, patch: Partial<ConversationMeta>): void {
    const file = this.file(id);
    const { atime, mtime } = statSync(file);
    appendRecords(file, JSON.stringify({ t: Date.now(), patch }) + '\n', false);
    utimesSync(file, atime, mtime);
  }

  delete(id: string): void {
    rmSync(this.file(id), { force: true });
  }

  clear(): void {
    if (!existsSync(this.dir)) return;
    for (const name of readdirSync(this.dir)) if (name.endsWith('.jsonl') && ID_PATTERN.test(name.slice(0, -6))) this.delete(name.slice(0, -6));
  }
}

/** Why the conversation stopped being saved: which file, and the error (ENOSPC, EIO…), in plain words. */
interface StoreFailure {
  file: string;
  message: string;
}

export class Conversation {
  private pending: string[] = [];
  private timer?: NodeJS.Timeout;
  /** What reading the file found and skipped or repaired, said to the person (the CLI and the panel show them). */
  readonly notices: string[] = [];
  /** Reading found damage (bad records, a damaged first line): see repairDamaged. */
  damaged = false;
  /** Set when a write failed: nothing more is written by this process (the next run appends again). */
  failure?: StoreFailure;
  private failureSeen = false;

  constructor(
    readonly file: string,
    public meta: ConversationMeta,
    readonly events: TranscriptEvent[],
    readonly history: ConversationItem[],
    at: { seen: number; ino: number } = { seen: 0, ino: -1 },
  ) {
    this.seen = at.seen;
    this.ino = at.ino;
  }

  /**
   * How much of the file this object has read or written (bytes, whole records only: a last line still
   * being written, or torn, is not counted): what lies beyond, another process wrote.
   */
  private seen: number;
  /** The file's inode as this object knows it: another one means it was replaced whole (repairDamaged). */
  private ino: number;
  /** This object's last write went into a file replaced since it was read: read it whole again. */
  private replaced = false;

  /**
   * Takes in what another process appended since this object last read or wrote the file (a `codeact chat
   * --continue` while the panel had the conversation open), so the next turn's history has it. Call it while
   * holding the conversation (./conversationLock). Returns the events taken in, for the host to show.
   */
  catchUp(): TranscriptEvent[] {
    this.flush();
    if (this.failure) return [];
    let tail: ReturnType<typeof readTranscriptAfter>;
    try {
      if (this.replaced || statSync(this.file).ino !== this.ino) return this.reload();
      tail = readTranscriptAfter(this.file, this.seen);
    } catch {
      return [];
    }
    return tail ? this.takeIn(tail) : [];
  }

  /**
   * The file was replaced whole (another process repaired it): its history and events are read again in
   * full, as the model's history must be the file's. Nothing new is returned to show (the panel keeps what
   * it shows; reopening the conversation shows the file).
   */
  private reload(): TranscriptEvent[] {
    const { text, bytes, ino } = readTranscript(this.file);
    const parsed = parseLines(text, this.file);
    let meta = parsed.meta ?? this.meta;
    for (const patch of parsed.patches) meta = { ...meta, ...patch };
    this.meta = meta;
    this.events.splice(0, this.events.length, ...parsed.events);
    this.history.splice(0, this.history.length, ...parsed.items);
    this.rewritten(wholeEnd(bytes), ino);
    return [];
  }

  /** The file was (re)written whole from what this object holds: its whole records end at `seen`, in inode `ino`. */
  rewritten(seen: number, ino: number): void {
    this.seen = seen;
    this.ino = ino;
    this.replaced = false;
  }

  /** Records another process wrote (whole lines), added to what this object holds. */
  private takeIn(tail: { text: string; end: number }): TranscriptEvent[] {
    this.seen = tail.end;
    // A leading empty line: the first record is not read as the file's meta line.
    const parsed = parseLines(`\n${tail.text}`, this.file);
    for (const patch of parsed.patches) this.meta = { ...this.meta, ...patch };
    this.events.push(...parsed.events);
    this.history.push(...parsed.items);
    if (parsed.notices.length) this.notices.push(`Damaged records another process appended to ${this.file} were skipped.`);
    return parsed.events;
  }

  get id(): string {
    return this.meta.id;
  }

  appendEvent(event: TranscriptEvent): void {
    this.events.push(event);
    // Live output is kept in memory for the panel, but not written (its traits say not `persisted`): the
    // finished item carries the same (capped) stdout, stderr and displays, so the file would hold every
    // output (every image) twice.
    if (traitsOf(event.type)?.persisted === false) return;
    this.write({ t: Date.now(), event });
  }

  appendItems(items: ConversationItem[]): void {
    for (const item of items) {
      this.history.push(item);
      this.write({ t: Date.now(), item });
    }
    this.flush();
  }

  update(patch: Partial<ConversationMeta>): void {
    this.meta = { ...this.meta, ...patch };
    this.write({ t: Date.now(), patch });
    this.flush();
  }

  private write(line: Line): void {
    if (this.failure) return;
    this.pending.push(JSON.stringify(line));
    this.timer ??= setTimeout(() => this.flush(), 200);
  }

  /**
   * Writes what is pending, whole records or nothing (`durable`: fsynced, for a turn's start and end).
   * Never throws: a failed write sets `failure` (see takeFailure) and stops this process's writes.
   */
  flush(o: { durable?: boolean } = {}): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.pending.length || this.failure) return;
    if (!heldHere(this.file) && heldElsewhere(this.file)) {
      // Another process's turn is writing: ours wait (no repair of its record in progress, no interleaving).
      this.timer = setTimeout(() => this.flush(), 1000);
      this.timer.unref?.();
      return;
    }
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    try {
      const r = appendRecords(this.file, text, !!o.durable);
      if (r.ino !== this.ino) this.replaced = true;
      else {
        // Records another process wrote between this object's last read and this write (outside a turn: a
        // turn holds the conversation) are taken in now, so catchUp never reads ours again.
        if (r.start > this.seen) {
          try {
            const theirs = readTranscriptAfter(this.file, this.seen, r.start);
            if (theirs) this.takeIn(theirs);
          } catch {}
        }
        this.seen = r.size;
      }
      if (r.repaired) {
        this.notices.push(
          `The last record of ${this.file} was cut off (a crash or a full disk); its ${r.repaired.bytes} bytes are kept in ${r.repaired.aside}.`,
        );
      }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOSPC'
          ? 'the disk is full'
          : code === 'EDQUOT'
            ? 'the disk quota is used up'
            : code
              ? `${code}: ${(e as Error).message}`
              : (e as Error).message;
      this.failure = {
        file: this.file,
        message: STORE_MESSAGES.notSaved(this.file, why),
      };
    }
  }

  /** The write failure, once (so a host says it one time). */
  takeFailure(): StoreFailure | undefined {
    if (!this.failure || this.failureSeen) return undefined;
    this.failureSeen = true;
    return this.failure;
  }
}

/**
 * Keeps a damaged conversation (records that do not parse, a damaged first line) as it was, beside it as
 * `ID.jsonl.damaged-TIME`, and goes on in a repaired copy under its name: the first line (recovered when
 * damaged), then every whole record as it was, byte for byte; a torn last line stays at the end for the
 * next append to keep aside (./transcriptFile). Nothing is deleted, and the damage is said once, not at
 * every reopening. Call it only while holding the conversation (./conversationLock). Returns the notice.
 */
export function repairDamaged(convo: Conversation): string | undefined {
  if (!convo.damaged) return undefined;
  convo.damaged = false;
  let notice: string;
  try {
    // What another process appended since it was opened is taken in first: the copy is written from the file.
    convo.catchUp();
    const { text, bytes: original } = readTranscript(convo.file);
    const parsed = parseLines(text, convo.file);
    if (!parsed.damaged) return undefined;
    const first = parsed.meta ? [] : [JSON.stringify({ meta: recoveredMeta(convo.id, parsed.events, convo.file) })];
    const repaired = [...first, ...parsed.whole].join('\n') + '\n' + parsed.torn;
    const stamp = `${convo.file}.damaged-${Date.now()}`;
    const aside = writeFirstFree([stamp, `${stamp}-${randomToken(4)}`], original, { mode: 0o600, exclusive: true });
    writeFileAtomicSync(convo.file, repaired, { mode: 0o600 });
    convo.rewritten(Buffer.byteLength(repaired) - Buffer.byteLength(parsed.torn), statSync(convo.file).ino);
    notice = `The damaged file is kept as it was in ${aside}; the conversation goes on in a repaired copy (whole records only) in ${convo.file}.`;
  } catch (e) {
    notice = `The damaged file ${convo.file} could not be repaired (${(e as Error).message}); it is left as it is and read around the damage.`;
  }
  convo.notices.push(notice);
  return notice;
}

/**
 * Parses the file's lines: a bad record is skipped and counted (a torn last line too), never silently.
 * `whole` holds the lines of the records that parse, as they are; `torn`, a last line without its newline;
 * `damaged`, whether anything but such a tail is bad (or the first line is no meta line).
 */
function parseLines(text: string, file: string) {
  let meta: ConversationMeta | undefined;
  const events: TranscriptEvent[] = [];
  const items: ConversationItem[] = [];
  const patches: Partial<ConversationMeta>[] = [];
  const notices: string[] = [];
  const bad: number[] = [];
  const whole: string[] = [];
  const lines = text.split('\n');
  const torn = lines[lines.length - 1];
  lines.forEach((raw, i) => {
    if (!raw.trim()) return;
    let line: Line;
    try {
      line = JSON.parse(raw);
    } catch {
      bad.push(i + 1);
      return;
    }
    if (!line || typeof line !== 'object') return void bad.push(i + 1);
    else if ('meta' in line && i === 0) meta = line.meta;
    else if ('event' in line) events.push(line.event);
    else if ('item' in line) items.push(line.item);
    else if ('patch' in line) patches.push(line.patch);
    else return void bad.push(i + 1);
    if (i < lines.length - 1) whole.push(raw);
  });
  const damaged = !meta || bad.some((n) => n < lines.length || !torn);
  const firstBad = bad[0] === 1 ? bad.slice(1) : bad;
  if (firstBad.length) notices.push(STORE_MESSAGES.skipped(file, firstBad));
  return { meta, events, items, patches, notices, whole, torn, damaged };
}

/** Where the whole records of `bytes` end (after its last newline): a last line without one is not yet whole. */
export function wholeEnd(bytes: Buffer): number {
  return bytes.lastIndexOf(0x0a) + 1;
}

/** A conversation's meta when its first line is damaged: its id, and a title from its first prompt. */
function recoveredMeta(id: string, events: TranscriptEvent[], file: string): ConversationMeta {
  const started = events.find((e) => e.type === 'codeact.turn.started');
  const prompt = started && 'prompt' in started && typeof started.prompt === 'string' ? started.prompt : '';
  const s = started as { provider?: string; model?: string } | undefined;
  return {
    id,
    title: titleFrom(prompt || path.basename(file)),
    createdAt: 0,
    ...(s?.provider ? { provider: s.provider } : {}),
    ...(s?.model ? { model: s.model } : {}),
  };
}

/** One file as the history list shows it, from its first LIST_SCAN_BYTES. */
function listed(file: string, id: string): ListedConversation {
  const { text, size } = readTranscriptHead(file, LIST_SCAN_BYTES);
  // The last line in the scanned part may be cut by the scan itself: only whole lines are looked at.
  const whole = size > text.length ? text.slice(0, text.lastIndexOf('\n') + 1) : text;
  const nl = whole.indexOf('\n');
  let meta: ConversationMeta | undefined;
  let damaged: string | undefined;
  try {
    const first = JSON.parse(nl < 0 ? whole : whole.slice(0, nl)) as { meta?: ConversationMeta };
    meta = first && typeof first === 'object' && first.meta && typeof first.meta.title === 'string' ? first.meta : undefined;
  } catch {}
  if (!meta) {
    const events: TranscriptEvent[] = [];
    for (const m of whole.matchAll(/^\{"t":\d+,"event":(\{"type":"codeact\.turn\.started".*)\}$/gm)) {
      try {
        events.push(JSON.parse(m[1]) as TranscriptEvent);
        break;
      } catch {}
    }
    if (!events.length && !/^\{"t":\d+,"(event|item)":/m.test(whole))
      throw new TranscriptFileError(`${file} is not a CodeAct conversation (its first line does not parse). Move it aside.`);
    meta = recoveredMeta(id, events, file);
    damaged = `its first line (title and settings) is damaged; continuing it recovers them from its turns (${file})`;
  }
  for (const m of whole.matchAll(/^\{"t":\d+,"patch":(.*)\}$/gm)) {
    try {
      meta = { ...meta, ...(JSON.parse(m[1]) as Partial<ConversationMeta>) };
    } catch {}
  }
  // Every turn has a start marker (chat, Run with Tools, failed or stopped ones too); older files only their prompts.
  const started = (whole.match(/"event":\{"type":"codeact\.turn\.started"/g) ?? []).length;
  const turns = started || (whole.match(/"item":\{"type":"message","id":"[^"]*","role":"user"/g) ?? []).length;
  let updatedAt = 0;
  try {
    updatedAt = statSync(file).mtimeMs;
  } catch {}
  return { ...meta, id, updatedAt, turns, ...(damaged ? { damaged } : {}) };
}

/** A short title from the first prompt. */
export function titleFrom(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return clip(line, 60) || 'Untitled';
}
