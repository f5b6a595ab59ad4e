/**
 * `# %%` cells in Python files (the convention of VS Code's Python extension, Spyder and Jupytext).
 * Pure, line-based: lines are 0-based.
 */

interface CellRange {
  /** The `# %%` marker line, or 0 for the implicit first cell before any marker. */
  start: number;
  /** The last line of the cell (inclusive). */
  end: number;
  /** The first line of code (after the marker). */
  codeStart: number;
  title?: string;
}

const MARKER = /^\s*#\s*%%(.*)$/;

/** All cells of a file; empty when it has no marker. */
export function findCells(lines: readonly string[]): CellRange[] {
  const markers: number[] = [];
  lines.forEach((l, i) => {
    if (MARKER.test(l)) markers.push(i);
  });
  if (!markers.length) return [];
  const cells: CellRange[] = [];
  if (markers[0] > 0 && lines.slice(0, markers[0]).some((l) => l.trim())) {
    cells.push({ start: 0, end: markers[0] - 1, codeStart: 0 });
  }
  markers.forEach((m, k) => {
    const end = k + 1 < markers.length ? markers[k + 1] - 1 : lines.length - 1;
    const title =
      MARKER.exec(lines[m])![1]
        .replace(/^\s*\[markdown\]/, '')
        .trim() || undefined;
    cells.push({ start: m, end, codeStart: m + 1, ...(title ? { title } : {}) });
  });
  return cells;
}

/** The cell that holds `line`, when the file has cells. */
export function cellAt(lines: readonly string[], line: number): CellRange | undefined {
  return findCells(lines).find((c) => line >= c.start && line <= c.end);
}

/** The code of a range, with trailing blank lines trimmed; returns the last line that has code. */
export function codeOf(lines: readonly string[], from: number, to: number): { code: string; lastLine: number } {
  let last = to;
  while (last > from && !lines[last]?.trim()) last--;
  return { code: lines.slice(from, last + 1).join('\n') + '\n', lastLine: last };
}
