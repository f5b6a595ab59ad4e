/**
 * Conversations persisted as JSON lines in a storage folder: one file per conversation, a `meta`
 * line first, then every event as it happened and every history item (with the provider's replay
 * data) as it was finished. A conversation can be listed, reopened, continued and deleted; a crash
 * loses at most the last few hundred milliseconds.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { clip } from '../../common/format';
import type { TranscriptEvent } from '../../common/transcript';
import type { ConversationItem } from '../providers/shared/types';
import { randomToken } from '../util/ids';

interface ConversationMeta {
  id: string;
  title: string;
  createdAt: number;
  provider?: string;
  model?: string;
  mode?: string;
  workspace?: string;
  containerId?: string | null;
  /** Hosted containers found expired: no request names them again (src/core/providers/shared/expiredContainer.ts). */
  expiredContainers?: string[];
}

/** A conversation as the store lists it: its meta, when it last changed, how many turns it has. */
interface ListedConversation extends ConversationMeta {
  updatedAt: number;
  turns: number;
}

type Line =
  { meta: ConversationMeta } | { t: number; event: TranscriptEvent } | { t: number; item: ConversationItem } | { t: number; patch: Partial<ConversationMeta> };

const ID_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;

export class TranscriptStore {
  constructor(readonly dir: string) {}

  private file(id: string): string {
    if (!ID_PATTERN.test(id)) throw new Error(`"${id}" is not a conversation id.`);
    return path.join(this.dir, `${id}.jsonl`);
  }

  create(meta: Omit<ConversationMeta, 'id' | 'createdAt'> & { id?: string }): Conversation {
    mkdirSync(this.dir, { recursive: true });
    const id = meta.id ?? `c_${new Date().toISOString().slice(0, 10).replace(/-/g, '')}_${randomToken(5)}`;
    const full: ConversationMeta = { ...meta, id, createdAt: Date.now() };
    writeFileSync(this.file(id), JSON.stringify({ meta: full }) + '\n', { flag: 'wx' });
    return new Conversation(this.file(id), full, [], []);
  }

  exists(id: string): boolean {
    return ID_PATTERN.test(id) && existsSync(this.file(id));
  }

  open(id: string): Conversation {
    const file = this.file(id);
    if (!existsSync(file)) throw new Error(`No conversation "${id}" in ${this.dir}. List them with "codeact chat --list".`);
    let meta: ConversationMeta | undefined;
    const events: TranscriptEvent[] = [];
    const items: ConversationItem[] = [];
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      if (!raw.trim()) continue;
      let line: Line;
      try {
        line = JSON.parse(raw);
      } catch {
        continue; // a torn last line after a crash
      }
      if ('meta' in line) meta = line.meta;
      else if ('event' in line) events.push(line.event);
      else if ('item' in line) items.push(line.item);
      else if ('patch' in line && meta) meta = { ...meta, ...line.patch };
    }
    if (!meta) throw new Error(`${file} is not a CodeAct transcript (no meta line).`);
    return new Conversation(file, meta, events, items);
  }

  /** The conversations, newest first. Reads each file's meta line and counts its turns without parsing the rest. */
  list(): ListedConversation[] {
    if (!existsSync(this.dir)) return [];
    const out: ListedConversation[] = [];
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.jsonl') || !ID_PATTERN.test(name.slice(0, -6))) continue;
      try {
        const file = path.join(this.dir, name);
        const text = readFileSync(file, 'utf8');
        const first = JSON.parse(text.slice(0, text.indexOf('\n') >>> 0)) as { meta?: ConversationMeta };
        if (!first.meta) continue;
        let meta = first.meta;
        for (const m of text.matchAll(/^\{"t":\d+,"patch":(.*)\}$/gm)) {
          try {
            meta = { ...meta, ...(JSON.parse(m[1]) as Partial<ConversationMeta>) };
          } catch {}
        }
        // Every turn has a start marker (chat, Run with Tools, failed or stopped ones too); older files only their prompts.
        const started = (text.match(/"event":\{"type":"codeact\.turn\.started"/g) ?? []).length;
        const turns = started || (text.match(/"item":\{"type":"message","id":"[^"]*","role":"user"/g) ?? []).length;
        out.push({ ...meta, updatedAt: statSync(file).mtimeMs, turns });
      } catch {}
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  delete(id: string): void {
    rmSync(this.file(id), { force: true });
  }

  clear(): void {
    if (!existsSync(this.dir)) return;
    for (const name of readdirSync(this.dir)) if (name.endsWith('.jsonl') && ID_PATTERN.test(name.slice(0, -6))) this.delete(name.slice(0, -6));
  }
}

export class Conversation {
  private pending: string[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    readonly file: string,
    public meta: ConversationMeta,
    readonly events: TranscriptEvent[],
    readonly history: ConversationItem[],
  ) {}

  get id(): string {
    return this.meta.id;
  }

  appendEvent(event: TranscriptEvent): void {
    this.events.push(event);
    // Live output is kept in memory for the panel, but not written: the finished item carries the same
    // (capped) stdout, stderr and displays, so the file would hold every output (every image) twice.
    if (event.type === 'codeact.output.delta' || event.type === 'codeact.output.display') return;
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
    this.pending.push(JSON.stringify(line));
    this.timer ??= setTimeout(() => this.flush(), 200);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.pending.length) return;
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    appendFileSync(this.file, text);
  }
}

/** A short title from the first prompt. */
export function titleFrom(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return clip(line, 60) || 'Untitled';
}
