/**
 * The long-output scenario: code that prints exactly 60,000 characters (numbered rows, then
 * a last line) and then fails, a follow-up that reads the whole text back with output_of(1), and the
 * checks of what the model read: the beginning and the end around one note whose counts are exact.
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

export const TOTAL_CHARS = 60_000;
export const LAST_LINE = 'LAST LINE before the failure';
export const EXCEPTION = 'ValueError: the data ran out';

function row(i: number): string {
  return `row ${String(i).padStart(5, '0')} ${'x'.repeat(i % 37)}\n`;
}

/** How many rows, and the dots that pad the last line so that the whole output is TOTAL_CHARS. */
function layout(): { rows: number; pad: number } {
  let used = 0;
  let rows = 0;
  while (used + row(rows).length + LAST_LINE.length + 1 <= TOTAL_CHARS) used += row(rows++).length;
  return { rows, pad: TOTAL_CHARS - used - LAST_LINE.length - 1 };
}

/** Exactly what LONG_FAILING_CODE prints. */
export function expectedStdout(): string {
  const { rows, pad } = layout();
  let text = '';
  for (let i = 0; i < rows; i++) text += row(i);
  return `${text}${LAST_LINE}${'.'.repeat(pad)}\n`;
}

export const LONG_FAILING_CODE = (() => {
  const { rows, pad } = layout();
  return [
    `for i in range(${rows}):`,
    '    print(f"row {i:05d} " + "x" * (i % 37))',
    `print("${LAST_LINE}" + "." * ${pad})`,
    'raise ValueError("the data ran out")',
  ].join('\n');
})();

/** Reads the first execution's whole output back, as a later run of the session. */
export const FOLLOW_UP_CODE = [
  'import hashlib',
  't = output_of(1)',
  'return {"chars": len(t), "lines": t.count("\\n"), "sha256": hashlib.sha256(t.encode()).hexdigest(), "last": t.splitlines()[-1], "same_as_last": t == last_output()}',
].join('\n');

/** What FOLLOW_UP_CODE returns when it read the whole text. */
export function expectedFollowUp(): Record<string, unknown> {
  const full = expectedStdout();
  return {
    chars: TOTAL_CHARS,
    lines: full.split('\n').length - 1,
    sha256: createHash('sha256').update(full, 'utf8').digest('hex'),
    last: full.trimEnd().split('\n').pop(),
    same_as_last: true,
  };
}

const NOTE = /…\[codeact: ([\d,]+) characters? \(([\d,]+) lines?\) of stdout left out here; ([^\]]*)\]…\n/g;

/**
 * Checks a cut stdout against the whole text: one note; before it a beginning and after it an end of the
 * whole text, together at most `budget` characters with the note; the note's counts are exactly what is
 * missing between them; the end is the larger part and holds the last line. Returns the pointer the note gives.
 */
export function assertHeadAndTail(cut: string, full: string, budget: number): string {
  const notes = [...cut.matchAll(NOTE)];
  assert.equal(notes.length, 1, `one note in the cut output, found ${notes.length}: ${cut.slice(0, 200)}…`);
  const m = notes[0];
  const head = cut.slice(0, m.index);
  const tail = cut.slice(m.index! + m[0].length);
  assert.ok(full.startsWith(head), 'the text before the note is the beginning of the output');
  assert.ok(full.endsWith(tail), 'the text after the note is the end of the output');
  const missing = full.slice(head.length, full.length - tail.length);
  assert.equal(Number(m[1].replace(/,/g, '')), missing.length, 'the characters left out, exactly');
  assert.equal(Number(m[2].replace(/,/g, '')), missing.split('\n').length - 1, 'the lines left out, exactly');
  assert.ok(head.endsWith('\n') && missing.endsWith('\n'), 'the cuts fall at line ends');
  assert.ok(cut.length <= budget, `${cut.length} characters, over the budget of ${budget}`);
  assert.ok(head.length >= budget * 0.3 && tail.length >= budget * 0.5, `head ${head.length}, tail ${tail.length}: the beginning and (more of) the end`);
  assert.ok(tail.includes(LAST_LINE), 'the last line survives');
  return m[3];
}
