/**
 * The history going back to a provider: an earlier response of the same provider as its raw parts
 * (verbatim, in their original order), everything else item by item in a neutral form. Each adapter says
 * how to write each piece in its wire format; the walk is the same for all.
 */
import type { FunctionCallItem, FunctionCallOutputItem, OutputItem } from '../../../common/events';
import type { ConversationItem, ProviderId } from './types';
import { displayModelText } from '../../../common/displays';

/**
 * A neutral text rendering of a hosted item another provider produced (for cross-provider history).
 * None for our own runtimes' code items: their result reaches the model as a function_call_output.
 */
export function foreignItemText(item: OutputItem): string | undefined {
  if (isLocalRuntimeItem(item)) return undefined;
  if (item.type === 'code_interpreter_call') {
    const out = item.outputs
      .map((o) =>
        o.type === 'logs' ? (o.stream === 'stderr' ? `[stderr]\n${o.logs}` : o.logs) : o.type === 'image' ? '[image]' : o.type === 'display' ? displayModelText(o) : `[file ${o.filename ?? o.file_id ?? ''}]`,
      )
      .join('\n');
    return `[Code I ran in the ${item.runtime} sandbox]\n\`\`\`\n${item.code}\n\`\`\`\n[Output${item.exit_code != null ? `, exit code ${item.exit_code}` : ''}]\n${out}`;
  }
  if (item.type === 'text_editor_call') {
    const res = item.error ? `error ${item.error.code}${item.error.message ? `: ${item.error.message}` : ''}` : JSON.stringify(item.result ?? null);
    return `[Text editor ${item.command} ${item.path ?? ''}] ${res}`;
  }
  return undefined;
}

/** True for code items run by our own runtimes: their result reaches the model as a function_call_output. */
export function isLocalRuntimeItem(item: OutputItem): boolean {
  return item.type === 'code_interpreter_call' && (item.runtime === 'local' || item.runtime === 'jupyter');
}

type HistorySegment =
  | { kind: 'replay'; turn: string; parts: unknown[] }
  | { kind: 'item'; item: ConversationItem };

/**
 * Splits the history into segments: the replay parts of one response of `provider` (sorted by their
 * index, in the position of the response's first item) and everything else item by item.
 */
function segmentHistory(history: ConversationItem[], provider: ProviderId): HistorySegment[] {
  const out: HistorySegment[] = [];
  const byTurn = new Map<string, { kind: 'replay'; turn: string; parts: unknown[]; indexed: { index: number; data: unknown }[] }>();
  for (const item of history) {
    const r = item.replay;
    if (r && r.provider === provider && Array.isArray(r.parts) && r.parts.length > 0) {
      let seg = byTurn.get(r.turn);
      if (!seg) {
        seg = { kind: 'replay', turn: r.turn, parts: [], indexed: [] };
        byTurn.set(r.turn, seg);
        out.push(seg);
      }
      seg.indexed.push(...r.parts);
      continue;
    }
    out.push({ kind: 'item', item });
  }
  for (const seg of byTurn.values()) {
    const seen = new Set<number>();
    seg.parts = seg.indexed
      .slice()
      .sort((a, b) => a.index - b.index)
      .filter((p) => (seen.has(p.index) ? false : (seen.add(p.index), true)))
      .map((p) => p.data);
  }
  return out.map((s) => (s.kind === 'replay' ? { kind: 'replay', turn: s.turn, parts: s.parts } : s));
}

/** How an adapter writes each piece of the history. */
export interface HistoryWriter {
  /** The raw parts of one earlier response of `provider`, to send back verbatim (absent: no replay). */
  replay?: { provider: ProviderId; write(parts: unknown[]): void };
  user(text: string): void;
  /** The text of an earlier assistant message (thinking left out). */
  assistant(text: string): void;
  /** The neutral text of another provider's hosted item; default: as assistant text. */
  foreign?(text: string): void;
  call(item: FunctionCallItem): void;
  output(item: FunctionCallOutputItem): void;
}

/** Walks the history in order, handing each piece to the adapter's writer. */
export function writeHistory(history: ConversationItem[], w: HistoryWriter): void {
  const segments: HistorySegment[] = w.replay ? segmentHistory(history, w.replay.provider) : history.map((item) => ({ kind: 'item', item }));
  for (const seg of segments) {
    if (seg.kind === 'replay') {
      w.replay?.write(seg.parts);
      continue;
    }
    const item = seg.item;
    switch (item.type) {
      case 'message':
        if (item.role === 'user') w.user(item.text);
        else if (!item.thinking && item.text) w.assistant(item.text);
        break;
      case 'function_call':
        w.call(item);
        break;
      case 'function_call_output':
        w.output(item);
        break;
      default: {
        const t = foreignItemText(item);
        if (t) (w.foreign ?? w.assistant)(t);
      }
    }
  }
}
