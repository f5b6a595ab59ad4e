/**
 * A turn's events as ACP `session/update`s (core/acpAgent/agent.ts): the model's text as message chunks (its
 * thinking as thought chunks); each execution as one `execute` tool call: its code as the model writes it, its output
 * as it comes, then its result as the model reads it, its images, and the files its code changed as the call's
 * locations (small text files also as diffs); each managed-tool call its code made as a tool call of its own.
 *
 * Bounded before any work: the live output kept per execution is its last {@link LIVE_CHARS} characters, and a
 * burst of output goes out as one update per {@link LIVE_MS} (an update replaces the call's whole content).
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import * as path from 'node:path';
import type { SessionUpdate, ToolCallContent, ToolCallLocation } from '@agentclientprotocol/sdk';
import type { CodeInterpreterCallItem } from '../../common/events';
import type { TranscriptEvent } from '../../common/transcript';
import { formatChangeCount } from '../../common/rewind';
import { executionImages, executionSummary, withinPixelCap } from '../agent/executionResult';
import type { ImageBudget } from '../providers/shared/types';
import { blobPath } from '../runtime/rewind/fileStore';

/** The live output an execution's tool call shows (its tail; the result has what the model reads). */
const LIVE_CHARS = 32_000;
/** Output that comes within this many ms goes out as one update. */
const LIVE_MS = 50;
/** Files named as an execution's locations, at most (the count says the rest). */
const MAX_LOCATIONS = 200;
/** Files an execution's result shows as diffs, at most, and the largest text shown as one (either side). */
const MAX_DIFFS = 20;
const MAX_DIFF_BYTES = 64 * 1024;
const SHA256 = /^[0-9a-f]{64}$/;

/**
 * The text of a small regular file: no link followed, no FIFO waited on, read only up to {@link MAX_DIFF_BYTES}
 * (the size is checked first); undefined when it is not one, is binary (a NUL byte), or is larger.
 */
function smallText(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_DIFF_BYTES) return undefined;
    const buf = Buffer.alloc(st.size);
    const bytes = buf.subarray(0, readSync(fd, buf, 0, st.size, 0));
    return bytes.includes(0) ? undefined : bytes.toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

interface Execution {
  code: string;
  out: string;
  timer?: NodeJS.Timeout;
}

interface UpdateOptions {
  /** The folder the changed files' paths are relative to. */
  folder: string;
  /** A conversation replayed (session/load): no diffs read (each is a read of the store), and code is sent once, whole. */
  replay?: boolean;
  /** codeact.outputs.modelChars: the result's budget. */
  outputChars?: number;
  images?: ImageBudget;
}

const text = (t: string): ToolCallContent => ({ type: 'content', content: { type: 'text', text: t } });
/** `t` in a code fence longer than any run of backticks in it, so the text cannot close it (or be read as markdown). */
const fenced = (t: string, lang = '') => {
  let longest = 2;
  let run = 0;
  for (let i = 0; i < t.length; i++) {
    run = t.charCodeAt(i) === 96 ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${t}${t.endsWith('\n') ? '' : '\n'}${fence}`;
};

/** Turns one turn's events into session updates, in order; `end` sends what is still held. */
export class AcpUpdates {
  private readonly executions = new Map<string, Execution>();
  /** Managed-tool calls shown (their ids), so a completion without a start is not shown alone. */
  private readonly calls = new Set<string>();
  private ended = false;

  constructor(
    private readonly send: (update: SessionUpdate) => void,
    private readonly o: UpdateOptions,
  ) {}

  on(e: TranscriptEvent): void {
    if (this.ended) return;
    switch (e.type) {
      case 'response.output_text.delta':
        if (e.delta) this.send({ sessionUpdate: e.thinking ? 'agent_thought_chunk' : 'agent_message_chunk', content: { type: 'text', text: e.delta } });
        return;
      // An execution starts (as the model begins to write it, or as a hosted item): one tool call.
      case 'response.code_interpreter_call.in_progress':
        return this.start(e.item_id, '');
      case 'response.output_item.added':
        if (e.item.type === 'code_interpreter_call') this.start(e.item.id, e.item.code ?? '');
        return;
      // The code streams in as the model writes it (coalesced as the output is).
      case 'response.code_interpreter_call_code.delta': {
        const x = this.executions.get(e.item_id);
        if (!x || this.o.replay) return;
        x.code += e.delta;
        x.timer ??= setTimeout(() => this.live(e.item_id), LIVE_MS);
        return;
      }
      case 'response.code_interpreter_call_code.done': {
        const x = this.executions.get(e.item_id);
        if (!x) return;
        clearTimeout(x.timer);
        x.timer = undefined;
        x.code = e.code;
        this.send({ sessionUpdate: 'tool_call_update', toolCallId: e.item_id, rawInput: { code: e.code }, content: [text(fenced(e.code, 'python'))] });
        return;
      }
      case 'response.code_interpreter_call.interpreting':
        if (this.executions.has(e.item_id)) this.send({ sessionUpdate: 'tool_call_update', toolCallId: e.item_id, status: 'in_progress' });
        return;
      case 'codeact.output.delta': {
        const x = this.executions.get(e.item_id);
        if (!x) return;
        x.out = (x.out + e.delta).slice(-LIVE_CHARS);
        x.timer ??= setTimeout(() => this.live(e.item_id), LIVE_MS);
        return;
      }
      case 'codeact.tool_call.started':
        if (e.kind === 'discovery') return;
        this.calls.add(`${e.item_id}/${e.call_id}`);
        this.send({
          sessionUpdate: 'tool_call',
          toolCallId: `${e.item_id}/${e.call_id}`,
          title: `call_tool("${e.name}")`,
          kind: 'other',
          status: 'in_progress',
          rawInput: e.arguments,
        });
        return;
      case 'codeact.tool_call.completed': {
        const id = `${e.item_id}/${e.call_id}`;
        if (!this.calls.delete(id)) return;
        // Its title again: an approval asked about it showed its question there.
        this.send({
          sessionUpdate: 'tool_call_update',
          toolCallId: id,
          title: `call_tool("${e.name}")`,
          status: e.error === undefined ? 'completed' : 'failed',
          ...(e.error === undefined ? { rawOutput: e.output, content: [] } : { rawOutput: { error: e.error }, content: [text(fenced(e.error))] }),
        });
        return;
      }
      case 'response.output_item.done':
        if (e.item.type === 'code_interpreter_call') this.done(e.item);
        return;
      // A turn that ended (replayed: an interrupted one) leaves nothing open under the turns after it.
      case 'codeact.turn.ended':
        return this.closeOpen();
      default:
        return;
    }
  }

  private start(id: string, code: string) {
    if (this.executions.has(id)) return;
    this.executions.set(id, { code, out: '' });
    this.send({ sessionUpdate: 'tool_call', toolCallId: id, title: 'Run Python', kind: 'execute', status: 'pending', rawInput: { code } });
  }

  /** A person's prompt, as it is replayed (session/load). */
  user(text: string): void {
    if (!this.ended && text) this.send({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text } });
  }

  /**
   * The turn is over: what is held goes out, and what is still open (an execution the model was writing when the turn
   * was stopped, a tool call that never ended) ends as failed. Nothing is sent after.
   */
  end(): void {
    if (this.ended) return;
    this.closeOpen();
    this.ended = true;
  }

  /** What is still open ends as failed (what was held of it goes out first). */
  private closeOpen() {
    for (const [id, x] of this.executions) {
      this.live(id);
      this.send({ sessionUpdate: 'tool_call_update', toolCallId: id, status: 'failed', title: 'Run Python', rawInput: { code: x.code } });
    }
    for (const id of this.calls) this.send({ sessionUpdate: 'tool_call_update', toolCallId: id, status: 'failed' });
    this.executions.clear();
    this.calls.clear();
  }

  /** The execution's code and its output so far. */
  private live(id: string) {
    const x = this.executions.get(id);
    if (!x?.timer) return;
    clearTimeout(x.timer);
    x.timer = undefined;
    this.send({ sessionUpdate: 'tool_call_update', toolCallId: id, content: [text(fenced(x.code, 'python')), ...(x.out ? [text(fenced(x.out))] : [])] });
  }

  private done(done: CodeInterpreterCallItem) {
    const item = this.o.images ? withinPixelCap(done, this.o.images.maxPixels) : done;
    const x = this.executions.get(item.id);
    if (x?.timer) clearTimeout(x.timer);
    this.executions.delete(item.id);
    const content: ToolCallContent[] = [text(fenced(item.code, 'python')), text(fenced(executionSummary(item, { outputChars: this.o.outputChars }), 'json'))];
    for (const img of executionImages(item, 'this execution', this.o.images))
      content.push({ type: 'content', content: { type: 'image', data: img.data, mimeType: img.mime_type } });
    const changes = item.changes?.changes ?? [];
    const root = item.changes?.root ?? this.o.folder;
    const locations: ToolCallLocation[] = changes
      .filter((c) => c.kind !== 'deleted')
      .slice(0, MAX_LOCATIONS)
      .map((c) => ({ path: path.join(root, ...c.path.split('/')) }));
    if (!this.o.replay) content.push(...diffs(item.changes, root));
    if (changes.length) {
      const lines = changes.slice(0, MAX_LOCATIONS).map((c) => `${c.kind} ${c.path}${c.from ? ` (from ${c.from})` : ''}`);
      if (changes.length > MAX_LOCATIONS) lines.push(`and ${changes.length - MAX_LOCATIONS} more`);
      content.push(text(`${formatChangeCount(changes.length)}:\n${fenced(lines.join('\n'))}`));
    }
    // Its title and input again: a review or an install asked about it showed its question there.
    this.send({
      sessionUpdate: 'tool_call_update',
      toolCallId: item.id,
      title: 'Run Python',
      rawInput: { code: item.code },
      status: item.status === 'completed' ? 'completed' : 'failed',
      content,
      ...(locations.length ? { locations } : {}),
      rawOutput: { status: item.status, ...(item.error ? { error: item.error } : {}), ...(changes.length ? { changes } : {}) },
    });
  }
}

/**
 * The small text files an execution created or changed, as ACP diffs (the editor shows them as such): both sides
 * from the rewind store that kept them when the run ended (its earlier and its new bytes, by digest), never from the
 * workspace now, which the code may have changed since, or made a link to elsewhere. A file that is not a small text
 * file, or whose bytes were not kept, is left to the list of changes.
 */
function diffs(changes: CodeInterpreterCallItem['changes'], root: string): ToolCallContent[] {
  const out: ToolCallContent[] = [];
  const store = changes?.store;
  if (!store) return out;
  const kept = (digest: string | null | undefined) => (digest && SHA256.test(digest) ? smallText(blobPath(store, digest)) : undefined);
  for (const c of changes?.changes ?? []) {
    if (out.length >= MAX_DIFFS) break;
    if (c.kind !== 'created' && c.kind !== 'changed') continue;
    const file = path.join(root, ...c.path.split('/'));
    const rel = path.relative(root, file);
    if (!rel || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
    const newText = kept(c.after?.digest);
    const oldText = c.kind === 'created' ? null : kept(c.before?.digest);
    if (newText === undefined || oldText === undefined) continue;
    out.push({ type: 'diff', path: file, oldText, newText });
  }
  return out;
}
