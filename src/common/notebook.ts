/**
 * Exports a conversation (its transcript events) as a Jupyter notebook (nbformat 4.5): the prompts and
 * answers as Markdown cells, every execution as a code cell with its stdout, stderr, images, value and error.
 *
 * The notebook opens and runs in a plain Jupyter kernel: when its code calls managed tools or ends with
 * `return`, a Markdown cell says what the cells need and a first code cell provides it (./notebookSetup):
 * `call_tool` answering with the results recorded in the conversation, and top-level `return`.
 */
import type { CodeInterpreterCallItem } from './events';
import { setupCode, setupMarkdown, type RecordedCall } from './notebookSetup';
import type { TranscriptEvent } from './transcript';

/** Most bytes of recorded tool results kept in a notebook; later results are left out (their calls say so). */
const MAX_RECORDED_BYTES = 4 * 1024 * 1024;

type Cell =
  | { cell_type: 'markdown'; id: string; metadata: Record<string, unknown>; source: string[] }
  | { cell_type: 'code'; id: string; metadata: Record<string, unknown>; source: string[]; execution_count: number | null; outputs: unknown[] };

function lines(text: string): string[] {
  const parts = text.split('\n');
  return parts.map((p, i) => (i < parts.length - 1 ? p + '\n' : p)).filter((p, i, a) => p !== '' || i < a.length - 1);
}

export interface NotebookOptions {
  title?: string;
  provider?: string;
  model?: string;
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
  for (const e of events) {
    if (e.type === 'codeact.turn.started') {
      cells.push({ cell_type: 'markdown', id: id(), metadata: { codeact: { role: 'user', source: e.source } }, source: lines(`**You:** ${e.prompt}`) });
    } else if (e.type === 'response.output_text.done' && !e.thinking) {
      if (e.text.trim()) cells.push({ cell_type: 'markdown', id: id(), metadata: { codeact: { role: 'assistant' } }, source: lines(e.text) });
      text.delete(e.item_id);
    } else if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') {
      cells.push(codeCell(e.item, id(), ++count));
    }
  }
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
      language_info: { name: 'python' },
      codeact: { exported_at: new Date().toISOString(), provider: options.provider, model: options.model },
    },
    cells,
  };
}

function codeCell(item: CodeInterpreterCallItem, cellId: string, count: number): Cell {
  const outputs: unknown[] = [];
  for (const o of item.outputs) {
    if (o.type === 'logs' && o.logs) outputs.push({ output_type: 'stream', name: o.stream === 'stderr' ? 'stderr' : 'stdout', text: lines(o.logs) });
    else if (o.type === 'image') {
      const m = /^data:(image\/[a-z+.-]+);base64,(.*)$/i.exec(o.url);
      if (m) outputs.push({ output_type: 'display_data', data: { [m[1]]: m[2], 'text/plain': ['<image>'] }, metadata: {} });
    }
  }
  if (item.status === 'completed' && item.value !== undefined && item.value !== null) {
    outputs.push({ output_type: 'execute_result', execution_count: count, data: { 'application/json': item.value, 'text/plain': lines(JSON.stringify(item.value, null, 2)) }, metadata: {} });
  }
  if (item.error) {
    outputs.push({ output_type: 'error', ename: item.error.type, evalue: item.error.message, traceback: (item.error.traceback ?? `${item.error.type}: ${item.error.message}`).split('\n') });
  }
  const metadata: Record<string, unknown> = { codeact: { item_id: item.id, runtime: item.runtime, status: item.status, duration_ms: item.duration_ms } };
  // A cell that failed in the conversation fails again: it must not stop "Run All" (nbclient honours the tag).
  if (item.status !== 'completed') metadata.tags = ['raises-exception'];
  const code = item.tool === 'bash_code_execution' ? `%%bash\n${item.code}` : item.code;
  return { cell_type: 'code', id: cellId, metadata, source: lines(code), execution_count: count, outputs };
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
