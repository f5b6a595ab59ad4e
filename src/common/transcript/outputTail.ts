/** The bounded tail of an execution's output that the panel keeps (the host keeps the full text). */
import type { StreamName } from '../events';
import { OUTPUT_TAIL_MAX_CHARS, OUTPUT_TAIL_MAX_LINES, type OutputChunk, type OutputTail } from './model';

export function appendOutput(tail: OutputTail, stream: StreamName, text: string, maxLines = OUTPUT_TAIL_MAX_LINES, maxChars = OUTPUT_TAIL_MAX_CHARS): void {
  if (!text) return;
  const lines = countNewlines(text);
  tail.totalChars += text.length;
  tail.totalLines += lines;
  const last = tail.chunks[tail.chunks.length - 1];
  if (last && last.stream === stream && last.text.length + text.length <= 16 * 1024) {
    last.text += text;
    last.lines += lines;
  } else {
    tail.chunks.push({ stream, text, lines });
  }
  tail.chars += text.length;
  tail.lines += lines;
  trimTail(tail, maxLines, maxChars);
}

function trimTail(tail: OutputTail, maxLines: number, maxChars: number): void {
  let drop = 0;
  while (drop < tail.chunks.length && (tail.lines > maxLines || tail.chars > maxChars)) {
    const first = tail.chunks[drop];
    const excessLines = tail.lines - maxLines;
    const excessChars = tail.chars - maxChars;
    if (first.lines <= excessLines || first.text.length <= excessChars) {
      tail.lines -= first.lines;
      tail.chars -= first.text.length;
      drop++;
      continue;
    }
    // Cut inside the first chunk: after the excess-th newline, and at least excessChars in.
    let cut = 0;
    if (excessLines > 0) cut = indexAfterNthNewline(first.text, excessLines);
    if (excessChars > cut) {
      const nl = first.text.indexOf('\n', excessChars);
      cut = nl >= 0 ? nl + 1 : excessChars;
    }
    const removed = first.text.slice(0, cut);
    const removedLines = countNewlines(removed);
    first.text = first.text.slice(cut);
    first.lines -= removedLines;
    tail.lines -= removedLines;
    tail.chars -= removed.length;
    break;
  }
  if (drop) tail.chunks.splice(0, drop);
}

function indexAfterNthNewline(text: string, n: number): number {
  let idx = -1;
  for (let i = 0; i < n; i++) {
    idx = text.indexOf('\n', idx + 1);
    if (idx < 0) return text.length;
  }
  return idx + 1;
}

export function countNewlines(text: string): number {
  let n = 0;
  let i = text.indexOf('\n');
  while (i >= 0) {
    n++;
    i = text.indexOf('\n', i + 1);
  }
  return n;
}

/** The last `n` characters of the tail, as chunks (used by renderers to append what they have not shown). */
export function tailSlice(tail: OutputTail, n: number): OutputChunk[] {
  const out: OutputChunk[] = [];
  let need = n;
  for (let i = tail.chunks.length - 1; i >= 0 && need > 0; i--) {
    const c = tail.chunks[i];
    if (c.text.length <= need) {
      out.push(c);
      need -= c.text.length;
    } else {
      const text = c.text.slice(c.text.length - need);
      out.push({ stream: c.stream, text, lines: countNewlines(text) });
      need = 0;
    }
  }
  return out.reverse();
}

export function outputText(tail: OutputTail, stream?: StreamName): string {
  return tail.chunks
    .filter((c) => !stream || c.stream === stream)
    .map((c) => c.text)
    .join('');
}

export function emptyTail(): OutputTail {
  return { chunks: [], chars: 0, lines: 0, totalChars: 0, totalLines: 0 };
}
