/**
 * `codeact review [PATH…]`: review mode's staged writes (codeact.sandbox.reviewWrites) that this folder's session host
 * keeps, without a chat turn: listed, then kept or reverted at the terminal, or by `--staged keep|revert` (./stagedReview).
 * Without a terminal and without --staged it only lists them. It attaches to the host that runs for the folder and
 * never starts one (a new host would have nothing staged).
 */
import { parse, UsageError } from './args';
import { reviewStaged, STAGED_HELP, stagedChoice } from './stagedReview';
import { terminalQuestions } from './terminalQuestions';
import { liveHostRuntime, openWorkspace, reviewsWrites, RUNTIME_FLAGS } from './workspace';

const REVIEW_SYNOPSIS = 'codeact review [PATH...] [--workspace DIR|FILE.code-workspace [--folder NAME|PATH]] [--staged keep|revert] [--json]';

const REVIEW_USAGE = `Usage: ${REVIEW_SYNOPSIS} [--trust-workspace] [--verbose]

Lists the writes the code staged in this folder (codeact.sandbox.reviewWrites on, the workspace mounted readwrite),
kept by the folder's session host, and asks at the terminal whether to keep them in the workspace or revert them:
all of them, or one by one. PATH... limits it to those files (as listed, relative to the folder).
${STAGED_HELP}
Without a terminal and without --staged, the staged writes are listed and left as they are.`;

export async function reviewCommand(argv: string[]): Promise<number> {
  // The run and chat flags that say which folder and how to report (no --outputs: nothing runs).
  const { outputs: _outputs, ...options } = RUNTIME_FLAGS;
  const { values, positionals } = parse({ args: argv, options });
  if (values.help) {
    process.stdout.write(REVIEW_USAGE + '\n');
    return 0;
  }
  const choice = stagedChoice(values.staged);
  const ws = openWorkspace(values.workspace, { trustOverride: values['trust-workspace'], folder: values.folder });
  if (!reviewsWrites(ws))
    throw new UsageError(
      'Review mode is off for this folder (codeact.sandbox.reviewWrites, with codeact.sandbox.mountWorkspace "readwrite"): the code writes the workspace itself, so nothing is staged.',
    );
  const runtime = await liveHostRuntime(ws, values.verbose);
  if (!runtime) {
    process.stderr.write(
      'No session host runs for this folder, so nothing is staged there. What an ended one had staged and not kept stays under ~/.cache/codeact/stage (its log names the folder).\n',
    );
    if (values.json) process.stdout.write(JSON.stringify({ type: 'codeact.staged', kept: [], reverted: [], failed: [], left: [] }) + '\n');
    return 0;
  }
  try {
    const questions = terminalQuestions();
    const done = await reviewStaged(runtime, {
      choice,
      questions,
      json: values.json,
      listOnly: !choice && !questions.interactive,
      ...(positionals.length ? { paths: positionals } : {}),
    });
    if (done === null) return 1; // it said why
    if (!done) {
      process.stderr.write('Nothing is staged in this folder.\n');
      if (values.json) process.stdout.write(JSON.stringify({ type: 'codeact.staged', kept: [], reverted: [], failed: [], left: [] }) + '\n');
    }
    return done?.failed.length ? 1 : 0;
  } finally {
    await runtime.dispose();
  }
}
