/**
 * Review mode in the CLI (codeact.sandbox.reviewWrites with the workspace mounted readwrite): the code's writes to
 * the workspace are staged in its own view and reach the workspace only when kept (core/runtime/local/
 * stagedWorkspace.ts). After `codeact run`'s run and after each `codeact chat` turn, what is staged is listed on
 * stderr and settled:
 * - `--staged keep` or `--staged revert` settles all of it without asking (no terminal needed);
 * - else, at a terminal, the person keeps all of it (k), reverts all of it (r) or answers file by file (o). Where
 *   the session outlives the command (a session host: `codeact chat`, `codeact review`), Enter leaves it staged,
 *   and `codeact review` or the next chat in the folder lists it again; elsewhere the staged writes end with the
 *   command, so Enter asks again.
 * A command that can do neither refuses to run before any code does (./workspace.ts `runtimeFrom`).
 * The paths are the code's: printed through the terminal sanitiser.
 */
import { changePaths, describeChange, settledRows, type FileChange } from '../common/rewind';
import type { Runtime } from '../core/runtime/types';
import { UsageError } from './args';
import { plain, shown } from './print';
import { indent, type Asking, type TerminalQuestions } from './terminalQuestions';

export type StagedChoice = 'keep' | 'revert';

export const STAGED_HELP = `--staged keep|revert: with codeact.sandbox.reviewWrites on, keep the code's staged writes in the workspace, or
  revert them, without asking (else they are listed after the run and asked about at the terminal).`;

/** Staged changes listed by name at most (then a count). */
const MAX_LISTED = 20;

/** The `--staged` flag's value, checked. */
export function stagedChoice(value: unknown): StagedChoice | undefined {
  if (value === undefined) return undefined;
  if (value === 'keep' || value === 'revert') return value;
  throw new UsageError(`--staged takes keep or revert, not ${JSON.stringify(value)}.`);
}

/** What the review did, by the changes' paths (a rename by its new name). */
export interface StagedReview {
  kept: string[];
  reverted: string[];
  failed: { path: string; why: string }[];
  /** Still staged: the person left them (a session that outlives the command), or did not answer. */
  left: string[];
}

const line = (c: FileChange) => describeChange(c, (p) => shown(p, { line: true }));

/**
 * Lists what the runtime has staged and settles it (`choice`, else the person at the terminal). Resolves with
 * what was done, undefined when nothing was staged, or null when the list could not be read (said on stderr).
 * What was said goes to stderr; with `json`, a `{"type":"codeact.staged",…}` line to stdout as well.
 */
export async function reviewStaged(
  runtime: Runtime,
  o: {
    choice?: StagedChoice;
    questions: TerminalQuestions;
    json?: boolean;
    signal?: AbortSignal;
    /** List them and leave them staged (`codeact review` with no one to ask). */
    listOnly?: boolean;
    /** Only these files (as listed; a rename by either name). */
    paths?: readonly string[];
  },
): Promise<StagedReview | undefined | null> {
  const staged = runtime.staged;
  if (!staged) return undefined;
  const err = (text: string) => process.stderr.write(`${plain()}${text}\n`);
  let changes: FileChange[];
  try {
    changes = (await staged.list()).changes;
  } catch (e) {
    err(`codeact: the staged writes could not be listed: ${shown((e as Error).message, { line: true })}`);
    return null;
  }
  if (o.paths) {
    const asked = new Set(o.paths);
    const unknown = o.paths.filter((p) => !changes.some((c) => c.path === p || c.from === p));
    if (unknown.length) err(`Not staged: ${unknown.map((p) => shown(p, { line: true })).join(', ')}`);
    changes = changes.filter((c) => asked.has(c.path) || (c.from !== undefined && asked.has(c.from)));
  }
  if (!changes.length) return undefined;
  const canLeave = !!runtime.sessions.outlivesClient;
  const listed = changes.slice(0, MAX_LISTED).map((c) => `  ${line(c)}`);
  if (changes.length > MAX_LISTED) listed.push(`  …and ${changes.length - MAX_LISTED} more`);
  err(`[${changes.length} file${changes.length === 1 ? '' : 's'} staged by the code, not in the workspace yet]\n${listed.join('\n')}`);

  let keep: FileChange[] = [];
  let revert: FileChange[] = [];
  if (o.choice) (o.choice === 'keep' ? keep : revert).push(...changes);
  else if (!o.listOnly) {
    const answer = await o.questions.ask(
      o.signal,
      () => null,
      (q) => ask(q, changes, canLeave),
    );
    if (answer) ({ keep, revert } = answer);
  }
  const out: StagedReview = { kept: [], reverted: [], failed: [], left: [] };
  for (const [chosen, verb] of [
    [keep, 'keep'],
    [revert, 'revert'],
  ] as const) {
    if (!chosen.length) continue;
    try {
      const rows = settledRows(chosen, await (verb === 'keep' ? staged.keep(changePaths(chosen)) : staged.discard(changePaths(chosen))));
      (verb === 'keep' ? out.kept : out.reverted).push(...rows.reverted);
      out.failed.push(...rows.failed);
    } catch (e) {
      out.failed.push(...chosen.map((c) => ({ path: c.path, why: (e as Error).message })));
    }
  }
  const settled = new Set([...keep, ...revert]);
  out.left = changes.filter((c) => !settled.has(c)).map((c) => c.path);
  const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`;
  if (out.kept.length) err(`Kept ${files(out.kept.length)} in the workspace.`);
  if (out.reverted.length)
    err(
      `Reverted ${files(out.reverted.length)}: the code's writes to ${out.reverted.length === 1 ? 'it' : 'them'} are dropped, and the workspace keeps its own.`,
    );
  for (const f of out.failed) err(`Not settled: ${shown(f.path, { line: true })}: ${shown(f.why, { line: true })}`);
  if (out.left.length)
    err(
      canLeave
        ? `${files(out.left.length)} left staged: the code still sees ${out.left.length === 1 ? 'it' : 'them'}, the workspace does not; codeact review (or the next codeact chat in this folder) asks again.`
        : `${files(out.left.length)} not kept: ${out.left.length === 1 ? 'it' : 'they'} never reached the workspace, and ended with this command.`,
    );
  if (o.json) process.stdout.write(JSON.stringify({ type: 'codeact.staged', ...out }) + '\n');
  return out;
}

/** The question at the terminal: all, none or one by one (null: no answer, or the run stopped). */
async function ask(q: Asking, changes: FileChange[], canLeave: boolean): Promise<{ keep: FileChange[]; revert: FileChange[] } | null> {
  const prompt = `Keep them in the workspace: all (k), none, reverting them (r), or one by one (o)${canLeave ? '; Enter leaves them staged' : ''}? `;
  for (;;) {
    const a = await q.line(prompt);
    if (a === null) return null;
    const t = a.trim().toLowerCase();
    if (t === '' && canLeave) return { keep: [], revert: [] };
    if (t === 'k') return { keep: changes, revert: [] };
    if (t === 'r') return { keep: [], revert: changes };
    if (t === 'o') break;
    q.say(indent('Answer k, r or o.') + '\n');
  }
  const keep: FileChange[] = [];
  const revert: FileChange[] = [];
  for (const c of changes) {
    for (;;) {
      const a = await q.line(`Keep ${line(c)}? (y/n) `);
      if (a === null) return keep.length || revert.length ? { keep, revert } : null;
      const t = a.trim().toLowerCase();
      if (t === 'y' || t === 'n') {
        (t === 'y' ? keep : revert).push(c);
        break;
      }
      q.say(indent('Answer y to keep it, n to revert it.') + '\n');
    }
  }
  return { keep, revert };
}
