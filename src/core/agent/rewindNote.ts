/**
 * What the model is told after the person rewinds the code to before an execution (issue 35): said once, at its
 * next request, so it does not build on variables or files that are no longer there. File names are the code's
 * (data: plain paths as they are, others as JSON strings), cut to a few.
 */
import type { RewindOutcome } from '../runtime/types';
import { quoteInline } from '../../common/quoteData';
import { pathForModel } from './executionResult';

const MAX_NAMED = 20;

function named(paths: readonly string[]): string {
  const shown = paths.slice(0, MAX_NAMED).map(pathForModel).join(', ');
  return paths.length > MAX_NAMED ? `${shown} and ${paths.length - MAX_NAMED} more` : shown;
}

/** The note for a rewind to before `what` ("execution 7", or "the state before the last rewind" for a redo). */
export function rewindNote(outcome: RewindOutcome, what: string): string {
  const lines = [`[codeact] The user rewound the code to ${what}.`];
  lines.push(
    outcome.python.restored
      ? 'Python state: restored as it was then (variables, imports, open figures); anything defined after that point is gone.'
      : `Python state: NOT restored (${quoteInline(outcome.python.why, 300)}); the session keeps its current variables.`,
  );
  const f = outcome.files;
  if ('why' in f) lines.push(`Workspace files: not restored (${quoteInline(f.why, 300)}).`);
  else {
    const parts = [];
    if (f.written.length) parts.push(`put back: ${named(f.written)}`);
    if (f.removed.length) parts.push(`removed: ${named(f.removed)}`);
    if (f.failed.length) parts.push(`could not be restored: ${named(f.failed.map((x) => x.path))}`);
    lines.push(`Workspace files: ${parts.length ? parts.join('; ') : 'none needed restoring'}.`);
  }
  lines.push(
    'Not undone: calls to managed tools, network requests, files outside the workspace, and processes that were still running. ' +
      'The conversation above is kept as it was: results of later executions no longer describe the session.',
  );
  return lines.join('\n');
}

/** A rewind's outcome for a person, one line per part (the Python state, the files); `show` makes the code's names safe where they go. */
export function rewoundLines(o: RewindOutcome, show: (text: string) => string): string[] {
  const count = (n: number, what: string) => `${n} file${n === 1 ? '' : 's'} ${what}`;
  const python = o.python.restored ? 'Python state restored.' : `Python state not restored: ${show(o.python.why)}`;
  const f = o.files;
  let files: string;
  if ('why' in f) files = `Files not restored: ${show(f.why)}`;
  else {
    const parts = [f.written.length ? count(f.written.length, 'put back') : '', f.removed.length ? count(f.removed.length, 'removed') : ''].filter(Boolean);
    if (f.failed.length)
      parts.push(
        `${count(f.failed.length, 'not restored')} (${f.failed
          .slice(0, 3)
          .map((x) => show(x.path))
          .join(', ')})`,
      );
    files = parts.length ? `Files: ${parts.join(', ')}.` : 'Files: none needed restoring.';
  }
  return [python, files];
}
