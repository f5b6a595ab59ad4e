/**
 * Exports a conversation (its transcript events) as a Jupyter notebook (nbformat 4.5): the prompts and
 * answers as Markdown cells, every execution as a code cell with its stdout, stderr, images, value and error.
 */
import type { CodeInterpreterCallItem } from './events';
import type { TranscriptEvent } from './transcript';

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
  return {
    cell_type: 'code',
    id: cellId,
    metadata: { codeact: { item_id: item.id, runtime: item.runtime, status: item.status, duration_ms: item.duration_ms } },
    source: lines(item.code),
    execution_count: count,
    outputs,
  };
}
