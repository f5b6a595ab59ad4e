/**
 * Exports a conversation (its transcript events) as a Jupyter notebook (nbformat 4.5): the prompts and
 * answers as Markdown cells, every execution as a code cell with its outputs in the order they happened:
 * stdout and stderr as streams, each display with its whole MIME bundle (`text/html`, images, markdown,
 * JSON…) and metadata as display_data (the last expression's as execute_result), hosted sandboxes'
 * images as display_data, the files the code wrote named, then the value and the error.
 *
 * The notebook opens and runs in a plain Jupyter kernel: when its code calls managed tools or ends with
 * `return`, a Markdown cell says what the cells need and a first code cell provides it (./notebookSetup):
 * `call_tool` answering with the results recorded in the conversation, and top-level `return`.
 *
 * The outputs are kept as data, as the code wrote them (invisible and bidirectional characters included,
 * as in the transcript and the `--json` events): a file is not a screen. CodeAct shows them with markers
 * wherever it draws them (the panel, a CodeAct kernel's cells: ../vscode/notebook/cellOutputs).
 */
import { base64ToText, parseDataUrl } from './dataUrl';
import { capDisplayImages } from './displays';
import { isImage, isNbformatJson, isText, mimeText } from './mimeTypes';
import { DEFAULT_MAX_IMAGE_PIXELS } from './imageHeader';
import type { CodeInterpreterCallItem, ContextCompacted } from './events';
import { formatCount } from './format';
import { fileLabel } from './outputLabels';
import { setupCode, setupMarkdown, type RecordedCall } from './notebookSetup';
import { eventsByTurn, type TranscriptEvent } from './transcript';

/** Most bytes of recorded tool results kept in a notebook; later results are left out (their calls say so). */
const MAX_RECORDED_BYTES = 4 * 1024 * 1024;

type Cell =
  | { cell_type: 'markdown'; id: string; metadata: Record<string, unknown>; source: string[] }
  | { cell_type: 'code'; id: string; metadata: Record<string, unknown>; source: string[]; execution_count: number | null; outputs: unknown[] };

function lines(text: string): string[] {
  const parts = text.split('\n');
  return parts.map((p, i) => (i < parts.length - 1 ? p + '\n' : p)).filter((p, i, a) => p !== '' || i < a.length - 1);
}

interface NotebookOptions {
  title?: string;
  provider?: string;
  model?: string;
  /** codeact.outputs.maxImageMegapixels, in pixels: an image over it is exported as its note (default DEFAULT_MAX_IMAGE_PIXELS). */
  maxImagePixels?: number;
}

export function conversationToNotebook(events: readonly TranscriptEvent[], options: NotebookOptions = {}): Record<string, unknown> {
  const cells: Cell[] = [];
  let n = 0;
  const id = () => `cell-${(++n).toString(36).padStart(4, '0')}`;
  let count = 0;
  const text = new Map<string, string>();
  if (options.title) cells.push({ cell_type: 'markdown', id: id(), metadata: {}, source: lines(`# ${options.title}`) });
  const calls = recordedCalls(events);
  const codes = events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item.code] : []));
  if (calls.length || codes.some((c) => /\bcall_tool\b|^\s*return\b/m.test(c))) {
    const discovery = codes.some((c) => /^\s*(from\s+tools\s+import|import\s+tools)\b/m.test(c));
    cells.push({ cell_type: 'markdown', id: id(), metadata: { codeact: { role: 'setup' } }, source: lines(setupMarkdown(calls.length, discovery)) });
    cells.push({ cell_type: 'code', id: id(), metadata: { codeact: { role: 'setup' } }, source: lines(setupCode(calls)), execution_count: null, outputs: [] });
  }
  // Where the latest prompt's cell is, while nothing followed it: a compaction before the turn's first request goes above it.
  let promptAt = -1;
  // Grouped by turn: two processes that wrote one conversation never put one turn's code under the other's prompt.
  for (const e of eventsByTurn(events)) {
    if (e.type === 'codeact.turn.started') {
      promptAt = cells.length;
      cells.push({ cell_type: 'markdown', id: id(), metadata: { codeact: { role: 'user', source: e.source } }, source: lines(`**You:** ${e.prompt}`) });
      continue;
    }
    if (e.type === 'codeact.context.compacted') {
      const cell = compactionCell(e, id());
      if (promptAt >= 0 && promptAt === cells.length - 1) cells.splice(promptAt++, 0, cell);
      else cells.push(cell);
      continue;
    }
    const before = cells.length;
    if (e.type === 'response.output_text.done' && !e.thinking) {
      if (e.text.trim()) cells.push({ cell_type: 'markdown', id: id(), metadata: { codeact: { role: 'assistant' } }, source: lines(e.text) });
      text.delete(e.item_id);
    } else if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') {
      cells.push(codeCell(e.item, id(), ++count, options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS));
    }
    if (cells.length !== before) promptAt = -1;
  }
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      // CodeAct's kernel (VS Code with CodeAct selects it); a plain Jupyter asks for a kernel, and the setup cell makes Python 3 do.
      kernelspec: { name: 'codeact', display_name: 'CodeAct (Python with your managed tools)', language: 'python' },
      language_info: { name: 'python' },
      codeact: { exported_at: new Date().toISOString(), provider: options.provider, model: options.model },
    },
    cells,
  };
}

/** The compaction boundary: what the model was sent instead of the cells above (which stay, every one). */
function compactionCell(e: ContextCompacted, cellId: string): Cell {
  const kept = Number(e.kept_turns) || 0;
  const counts = `${formatCount(Number(e.before_tokens) || 0)} → ${formatCount(Number(e.after_tokens) || 0)} tokens; the last ${kept === 1 ? 'step stays' : `${kept} steps stay`} verbatim`;
  const summary = String(e.summary ?? '');
  const text = !summary
    ? `**Earlier tool results shortened** (${counts}). The cells above are kept in full; the model was sent short stand-ins for their older tool results.`
    : `**Earlier turns summarised** (${counts}). The cells above are kept in full; from here on the model was sent this summary instead of them:\n\n${summary
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\n')}`;
  return {
    cell_type: 'markdown',
    id: cellId,
    metadata: { codeact: { role: 'compaction', method: e.method, before_tokens: e.before_tokens, after_tokens: e.after_tokens, kept_turns: e.kept_turns } },
    source: lines(`---\n\n${text}`),
  };
}

function codeCell(item: CodeInterpreterCallItem, cellId: string, count: number, maxPixels: number): Cell {
  const outputs: unknown[] = [];
  let hasResult = false;
  for (const o of item.outputs) {
    if (o.type === 'logs') {
      if (o.logs) outputs.push({ output_type: 'stream', name: o.stream === 'stderr' ? 'stderr' : 'stdout', text: lines(o.logs) });
    } else if (o.type === 'display') {
      // Jupyter or VS Code decodes what the file holds: each image's header within the pixel cap, else its note.
      const data = bundleData(capDisplayImages(o, maxPixels).data);
      if (!data) continue;
      const metadata = publicMetadata(o.metadata);
      if (o.result) {
        hasResult = true;
        outputs.push({ output_type: 'execute_result', execution_count: count, data, metadata });
      } else outputs.push({ output_type: 'display_data', data, metadata });
    } else if (o.type === 'image') {
      outputs.push({
        output_type: 'display_data',
        data: bundleData(capDisplayImages({ type: 'display', data: imageData(o.url) }, maxPixels).data),
        metadata: {},
      });
    } else if (o.type === 'file') {
      const note = o.note;
      outputs.push({ output_type: 'display_data', data: { 'text/plain': [`[file ${fileLabel(o)}${note ? `: ${note}` : ''}]`] }, metadata: {} });
    }
  }
  if (!hasResult && item.status === 'completed' && item.value !== undefined && item.value !== null) {
    outputs.push({
      output_type: 'execute_result',
      execution_count: count,
      data: { 'application/json': item.value, 'text/plain': lines(JSON.stringify(item.value, null, 2)) },
      metadata: {},
    });
  }
  if (item.error) {
    outputs.push({
      output_type: 'error',
      ename: item.error.type,
      evalue: item.error.message,
      traceback: (item.error.traceback ?? `${item.error.type}: ${item.error.message}`).split('\n'),
    });
  }
  const metadata: Record<string, unknown> = { codeact: { item_id: item.id, runtime: item.runtime, status: item.status, duration_ms: item.duration_ms } };
  // A cell that failed in the conversation fails again: it must not stop "Run All" (nbclient honours the tag).
  if (item.status !== 'completed') metadata.tags = ['raises-exception'];
  const code = item.tool === 'bash_code_execution' ? `%%bash\n${item.code}` : item.code;
  return { cell_type: 'code', id: cellId, metadata, source: lines(code), execution_count: count, outputs };
}

/**
 * A display's MIME bundle as nbformat keeps it: JSON types as they are, text types as lists of lines,
 * base64 as one string; a value of the wrong shape is left out. Undefined when nothing is left.
 */
function bundleData(data: unknown): Record<string, unknown> | undefined {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [mime, value] of Object.entries(data as Record<string, unknown>)) {
    if (isNbformatJson(mime)) {
      if (value !== undefined) out[mime] = value;
      continue;
    }
    const text = mimeText(value);
    if (text === undefined) continue;
    out[mime] = isText(mime) ? lines(text) : text;
  }
  return Object.keys(out).length ? out : undefined;
}

/** A display's metadata without our private keys (`codeact`, at the top and per MIME type). */
export function publicMetadata(metadata: unknown): Record<string, unknown> {
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata as Record<string, unknown>)) {
    if (key === 'codeact') continue;
    if (value && typeof value === 'object' && !Array.isArray(value) && 'codeact' in value) {
      const { codeact: _private, ...rest } = value as Record<string, unknown>;
      out[key] = rest;
    } else out[key] = value;
  }
  return out;
}

/** A hosted sandbox's image as a MIME bundle: raster types as base64, SVG as text; a remote URL as text only. */
function imageData(url: string): Record<string, unknown> {
  const parsed = parseDataUrl(url);
  if (!parsed || !isImage(parsed.mime)) return { 'text/plain': [`<image at ${String(url).slice(0, 500)}>`] };
  if (isText(parsed.mime)) {
    const svg = base64ToText(parsed.base64);
    return svg === undefined ? { 'text/plain': ['<image>'] } : { [parsed.mime]: lines(svg), 'text/plain': ['<image>'] };
  }
  return { [parsed.mime]: parsed.base64, 'text/plain': ['<image>'] };
}

/** The managed-tool calls of the conversation with their results, in order (discovery calls left out). */
function recordedCalls(events: readonly TranscriptEvent[]): RecordedCall[] {
  const started = new Map<string, unknown>();
  const out: RecordedCall[] = [];
  let bytes = 0;
  for (const e of events) {
    if (e.type === 'codeact.tool_call.started' && !e.kind) started.set(`${e.item_id}\u0000${e.call_id}`, e.arguments);
    if (e.type !== 'codeact.tool_call.completed' || e.kind) continue;
    const call: RecordedCall = { name: e.name, arguments: started.get(`${e.item_id}\u0000${e.call_id}`) ?? {} };
    if (e.error !== undefined) call.error = e.error;
    else call.output = e.output ?? null;
    const size = JSON.stringify(call).length;
    if (bytes + size > MAX_RECORDED_BYTES) {
      delete call.output;
      call.dropped = true;
    } else bytes += size;
    out.push(call);
  }
  return out;
}
