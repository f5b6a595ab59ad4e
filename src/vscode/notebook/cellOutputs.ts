/**
 * One execution's events written as a notebook cell's outputs, the way VS Code and the ipynb format keep
 * them: stdout and stderr as stream outputs (consecutive text of one stream appended to one output), each
 * display as its whole MIME bundle (so VS Code's own renderers draw images, HTML, markdown and JSON), the
 * managed-tool calls as one compact list (name, arguments, duration, outcome), then the returned value as
 * an execute_result and a failure as a notebook error with the user's own traceback.
 *
 * No `vscode` here: the cell is reached through `CellSink` (./kernel.apis binds it to a
 * `NotebookCellExecution`), so the tests run it in plain Node. Output metadata follows VS Code's ipynb
 * serializer (`outputType`, `metadata`, `executionCount`), so saving writes display_data, execute_result,
 * stream and error outputs, and reopening brings them back.
 *
 * The code's stdout, stderr and traceback are text from outside: they reach the cell through
 * ../../common/untrusted's TerminalStream (`carriageReturns`: VS Code's renderer draws colours and redraws a
 * line itself), so an invisible or bidirectional character shows as its marker (`<U+202E>`) and no escape
 * sequence but a safe colour passes. What the cell holds is what it shows, and a saved notebook keeps that.
 */
import type { CodeActEvent, CodeInterpreterCallItem, DisplayOutput, StreamName } from '../../common/events';
import { capDisplayImages } from '../../common/displays';
import { isBinary, isNbformatJson, mimeText } from '../../common/mimeTypes';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../common/imageHeader';
import { clip, formatElapsed } from '../../common/format';
import { publicMetadata } from '../../common/notebook';
import { fileLabel } from '../../common/outputLabels';
import { forDisplay, forTerminalOutput, SgrState, TerminalStream } from '../../common/untrusted';

export const STDOUT_MIME = 'application/vnd.code.notebook.stdout';
export const STDERR_MIME = 'application/vnd.code.notebook.stderr';
export const ERROR_MIME = 'application/vnd.code.notebook.error';

export interface OutputItemData {
  mime: string;
  data: Uint8Array;
}

export interface CellOutputData {
  items: OutputItemData[];
  metadata?: Record<string, unknown>;
}

/** The cell an execution writes into (a `NotebookCellExecution`, or a test's record). */
export interface CellSink {
  clearOutput(): PromiseLike<void>;
  /** Appends an output; resolves with its handle for the calls below. */
  appendOutput(output: CellOutputData): PromiseLike<number>;
  appendOutputItems(handle: number, items: OutputItemData[]): PromiseLike<void>;
  replaceOutputItems(handle: number, items: OutputItemData[]): PromiseLike<void>;
}

/** Most tool calls the list names one by one; the rest are counted. */
const LISTED_CALLS = 50;
/** Longest arguments and error text a listed call shows. */
const ARGS_CHARS = 160;
/** Stream text waits this long for more before it is written (a flood of small prints becomes few writes). */
const STREAM_FLUSH_MS = 40;

const encoder = new TextEncoder();
const utf8 = (text: string) => encoder.encode(text);

function base64Bytes(b64: string): Uint8Array {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

/** A display's bundle as output items; values of the wrong shape are left out. */
function displayItems(d: DisplayOutput): OutputItemData[] {
  const items: OutputItemData[] = [];
  for (const [mime, value] of Object.entries(d.data ?? {})) {
    if (isNbformatJson(mime)) {
      if (value !== undefined) items.push({ mime, data: utf8(JSON.stringify(value)) });
      continue;
    }
    const text = mimeText(value);
    if (text === undefined) continue;
    items.push({ mime, data: isBinary(mime) ? base64Bytes(text.replace(/\s+/g, '')) : utf8(text) });
  }
  return items;
}

/** A code span that holds `text` whatever backticks it has, on one line, its invisible characters shown. */
export function codeSpan(text: string): string {
  const flat = forDisplay(text, { line: true });
  const longest = Math.max(0, ...(flat.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') || flat.startsWith(' ') ? ' ' : '';
  return `${fence}${pad}${flat}${pad}${fence}`;
}

function argsText(args: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(args ?? {}) ?? '{}';
  } catch {
    s = String(args);
  }
  return clip(s, ARGS_CHARS);
}

interface CallLine {
  name: string;
  args: string;
  status: 'running' | 'ok' | 'error';
  durationMs?: number;
  error?: string;
}

/** The compact list of an execution's managed-tool calls: markdown for VS Code, plain text for other readers. */
export function toolCallsOutput(calls: readonly CallLine[], more: number): OutputItemData[] {
  const total = calls.length + more;
  const md = [`**Managed tools** · ${total} call${total === 1 ? '' : 's'}`, ''];
  const plain = [`Managed tools: ${total} call${total === 1 ? '' : 's'}`];
  for (const c of calls) {
    const outcome = c.status === 'running' ? 'running…' : c.status === 'ok' ? 'ok' : `failed: ${clip(forDisplay(c.error), ARGS_CHARS)}`;
    const took = c.durationMs !== undefined ? ` · ${formatElapsed(c.durationMs)}` : '';
    const mark = c.status === 'ok' ? '✓' : c.status === 'error' ? '✗' : '…';
    md.push(`- ${mark} ${codeSpan(c.name)} ${codeSpan(c.args)}${took} · ${c.status === 'error' ? codeSpan(outcome) : outcome}`);
    plain.push(`${mark} ${forDisplay(c.name, { line: true })}(${forDisplay(c.args, { line: true })})${took} · ${outcome}`);
  }
  if (more > 0) {
    md.push(`- … and ${more} more`);
    plain.push(`… and ${more} more`);
  }
  return [
    { mime: 'text/markdown', data: utf8(md.join('\n')) },
    { mime: 'text/plain', data: utf8(plain.join('\n')) },
  ];
}

/** A whole text of the code's output (a traceback) as a cell shows it: see the module's comment. */
const shownOutput = (text: string) => forTerminalOutput(text, new SgrState(), { carriageReturns: true });

/** The error output of a failed execution: VS Code's error renderer shows the traceback (the user's lines). */
function errorOutput(item: CodeInterpreterCallItem): CellOutputData | undefined {
  const e = item.error;
  if (!e) return undefined;
  // Stop or Interrupt: said as a notebook says it.
  const name = forDisplay(e.type === 'Cancelled' ? 'Interrupted' : e.type, { line: true });
  const message = shownOutput(e.message);
  const stack = e.traceback !== undefined ? shownOutput(e.traceback) : `${name}: ${message}`;
  const traceback = stack.replace(/\n$/, '').split('\n');
  return {
    items: [{ mime: ERROR_MIME, data: utf8(JSON.stringify({ name, message, stack })) }],
    metadata: { outputType: 'error', originalError: { output_type: 'error', ename: name, evalue: message, traceback } },
  };
}

/**
 * Writes one execution into one cell, in order. Every call on the sink is chained (a cell's outputs must
 * arrive in the order they happened); stream text is gathered for a few milliseconds first.
 */
export class CellOutputWriter {
  private chain: Promise<unknown> = Promise.resolve();
  private pendingStream?: { stream: StreamName; text: string };
  /** Each stream's sanitiser (it holds a cut escape sequence or surrogate pair for the next chunk). */
  private readonly clean: Partial<Record<StreamName, TerminalStream>> = {};
  private flushTimer?: ReturnType<typeof setTimeout>;
  private lastStream?: { stream: StreamName; handle: Promise<number> };
  /** display_id -> its output, for updates. */
  private readonly displays = new Map<string, Promise<number>>();
  private readonly calls = new Map<string, CallLine>();
  private moreCalls = 0;
  private callsOutput?: Promise<number>;
  private callsDirty = false;
  /** Something arrived live (stream text or a display): the finished item's outputs are not written again. */
  private live = false;
  private sawResult = false;

  constructor(
    private readonly sink: CellSink,
    private readonly order: () => number | undefined,
    /** codeact.outputs.maxImageMegapixels, in pixels: no image over it reaches the cell (VS Code would decode it). */
    private readonly maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS,
  ) {}

  private then<T>(step: () => PromiseLike<T>): Promise<T> {
    const next = this.chain.then(step, step);
    this.chain = next.catch(() => undefined);
    return next;
  }

  clear(): void {
    void this.then(() => this.sink.clearOutput());
  }

  /** One event of the execution (the runtime's vocabulary). */
  onEvent(e: CodeActEvent): void {
    switch (e.type) {
      case 'codeact.output.delta':
        this.live = true;
        this.stream(e.stream, e.delta);
        break;
      case 'codeact.output.display':
        this.live = true;
        this.flushStream();
        this.display(e.output, e.update === true);
        break;
      case 'codeact.tool_call.started':
        if (e.kind) break;
        if (this.calls.size >= LISTED_CALLS) this.moreCalls++;
        else this.calls.set(e.call_id, { name: e.name, args: argsText(e.arguments), status: 'running' });
        this.callsChanged();
        break;
      case 'codeact.tool_call.completed': {
        if (e.kind) break;
        const c = this.calls.get(e.call_id);
        if (!c) break;
        c.status = e.error !== undefined ? 'error' : 'ok';
        c.error = e.error;
        c.durationMs = e.duration_ms;
        this.callsChanged();
        break;
      }
      default:
        // The other events write nothing into the cell.
        break;
    }
  }

  /** The finished item: what did not arrive live, the value and the error. Resolves when all is written. */
  async finish(item: CodeInterpreterCallItem): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.endStreams();
    this.flushStream();
    this.writeCalls();
    if (!this.live) {
      for (const o of item.outputs) {
        if (o.type === 'logs') {
          if (o.logs) this.stream(o.stream === 'stderr' ? 'stderr' : 'stdout', o.logs);
          this.endStreams();
          this.flushStream();
        } else if (o.type === 'display') this.display(o, false);
      }
    }
    // The appends are chained: `await this.chain` below waits for them all.
    for (const o of item.outputs) {
      if (o.type === 'file')
        void this.append({
          items: [{ mime: 'text/plain', data: utf8(`[file ${forDisplay(fileLabel(o), { line: true })}${o.note ? `: ${forDisplay(o.note)}` : ''}]`) }],
          metadata: { outputType: 'display_data', metadata: {} },
        });
    }
    if (!this.sawResult && item.status === 'completed' && item.value !== undefined && item.value !== null) {
      const text = typeof item.value === 'string' ? JSON.stringify(item.value) : JSON.stringify(item.value, null, 2);
      void this.append({
        items: [
          { mime: 'application/json', data: utf8(JSON.stringify(item.value)) },
          { mime: 'text/plain', data: utf8(text) },
        ],
        metadata: { outputType: 'execute_result', executionCount: this.order() ?? null, metadata: {} },
      });
    }
    const err = errorOutput(item);
    if (err) void this.append(err);
    await this.chain;
  }

  private append(output: CellOutputData): Promise<number> {
    return this.then(() => this.sink.appendOutput(output));
  }

  private stream(stream: StreamName, raw: string): void {
    const clean = (this.clean[stream] ??= new TerminalStream({ colours: new SgrState(), carriageReturns: true }));
    const text = clean.write(raw);
    if (this.pendingStream && this.pendingStream.stream !== stream) this.flushStream();
    if (this.pendingStream) this.pendingStream.text += text;
    else this.pendingStream = { stream, text };
    this.flushSoon();
  }

  /** The end of the streams: what their sanitisers hold (half of a surrogate pair cut off) is written. */
  private endStreams(): void {
    for (const name of Object.keys(this.clean) as StreamName[]) {
      const rest = this.clean[name]!.end();
      delete this.clean[name];
      if (!rest) continue;
      if (this.pendingStream && this.pendingStream.stream !== name) this.flushStream();
      if (this.pendingStream) this.pendingStream.text += rest;
      else this.pendingStream = { stream: name, text: rest };
    }
  }

  private flushSoon(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.flushStream();
      this.writeCalls();
    }, STREAM_FLUSH_MS);
  }

  private flushStream(): void {
    const p = this.pendingStream;
    this.pendingStream = undefined;
    if (!p || !p.text) return;
    const item = { mime: p.stream === 'stderr' ? STDERR_MIME : STDOUT_MIME, data: utf8(p.text) };
    if (this.lastStream?.stream === p.stream) {
      const handle = this.lastStream.handle;
      void this.then(async () => this.sink.appendOutputItems(await handle, [item]));
    } else {
      this.lastStream = { stream: p.stream, handle: this.append({ items: [item], metadata: { outputType: 'stream' } }) };
    }
  }

  private display(shown: DisplayOutput, update: boolean): void {
    // Each image's header within the pixel cap before the cell (VS Code's renderer) gets it: else its note.
    const d = capDisplayImages(shown, this.maxImagePixels);
    const items = displayItems(d);
    if (!items.length) return;
    const known = d.display_id ? this.displays.get(d.display_id) : undefined;
    if (update && known) {
      void this.then(async () => this.sink.replaceOutputItems(await known, items));
      return;
    }
    if (d.result) this.sawResult = true;
    const metadata = d.result
      ? { outputType: 'execute_result', executionCount: this.order() ?? null, metadata: publicMetadata(d.metadata) }
      : { outputType: 'display_data', metadata: publicMetadata(d.metadata) };
    const handle = this.append({ items, metadata });
    this.lastStream = undefined;
    if (d.display_id) this.displays.set(d.display_id, handle);
  }

  private callsChanged(): void {
    this.callsDirty = true;
    // The list is written with the stream text (at most every few milliseconds), not at every call.
    if (!this.callsOutput) this.writeCalls();
    else this.flushSoon();
  }

  private writeCalls(): void {
    if (!this.callsDirty) return;
    this.callsDirty = false;
    const items = toolCallsOutput([...this.calls.values()], this.moreCalls);
    if (!this.callsOutput) {
      this.flushStream();
      this.callsOutput = this.append({ items, metadata: { outputType: 'display_data', metadata: { codeact: { kind: 'tool_calls' } } } });
      this.lastStream = undefined;
    } else {
      const handle = this.callsOutput;
      void this.then(async () => this.sink.replaceOutputItems(await handle, items));
    }
  }
}
