/** `codeact run <file.py|->`: runs a file (or stdin) once, in a fresh guest, with the folder's managed tools. */
import { readFileSync } from 'node:fs';
import type { CodeActEvent } from '../common/events';
import { TranscriptStore } from '../core/agent/transcriptStore';
import { ToolGateway } from '../core/gateway/gateway';
import { cliAsking } from './approvalPrompt';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { resolveTools } from '../core/tools/toolSources';
import { isTurnMarker, runCodeTurn } from '../core/turn/turns';
import { OUTPUTS_HELP, outputSaverFrom, saveAndReport } from './outputs';
import { humanPrinter, printItemResult } from './print';
import { parse, UsageError } from './args';
import { reviewStaged, STAGED_HELP, stagedChoice } from './stagedReview';
import { terminalQuestions } from './terminalQuestions';
import { commandOptions, settingFlagsHelp, settingFlagsUsage, wrapUsage } from './flags';
import { defaultStorage, openWorkspace, reportDeclarationErrors, reviewsWrites, RUNTIME_FLAGS, runtimeFrom, sweepLeft } from './workspace';

/** `codeact run …` and its options, the setting flags from core/config/keys.ts (`lead`: "Usage: " or the indent). */
export function runSynopsis(lead: string): string {
  const first = `${lead}codeact run <file.py|-> [--workspace DIR|FILE.code-workspace [--folder NAME|PATH]]`;
  return wrapUsage(
    first,
    [settingFlagsUsage('run'), ['[--outputs DIR]', '[--staged keep|revert]', '[--trust-workspace]', '[--json]', '[--verbose]']],
    lead.length + 'codeact run '.length,
  );
}

export const RUN_OPTIONS = commandOptions('run', RUNTIME_FLAGS);

export const RUN_USAGE = [runSynopsis('Usage: '), ...settingFlagsHelp('run'), OUTPUTS_HELP, STAGED_HELP].join('\n');

export async function runCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: RUN_OPTIONS,
  });
  if (values.help) {
    process.stdout.write(RUN_USAGE + '\n');
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('codeact run needs exactly one file (or - for stdin).');
  const file = positionals[0];
  let code: string;
  try {
    code = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}.`);
  }
  const saver = outputSaverFrom(values.outputs);
  const ws = openWorkspace(values.workspace, { flags: values, trustOverride: values['trust-workspace'], folder: values.folder });
  // Review mode's staged writes are settled after the run: by --staged, else at the terminal (./stagedReview).
  const staged = stagedChoice(values.staged);
  const questions = terminalQuestions();
  const runtime = await runtimeFrom(ws, { longLived: false, verbose: values.verbose, reviews: !!staged || questions.interactive });
  // Kernels `codeact chat` left running and never continued are shut down meanwhile (awaited before exit).
  const swept = sweepLeft(new TranscriptStore(defaultStorage()), runtime);
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const print = values.json ? (e: CodeActEvent) => process.stdout.write(JSON.stringify(e) + '\n') : humanPrinter();
  try {
    // MCP tools get their descriptions and schemas from their servers, as in the extension and chat.
    ws.toolSet = await resolveTools(ws.toolSet);
    reportDeclarationErrors(ws.toolSet);
    // Approvals, code review, installs and MCP forms are asked in turn on the terminal (./approvalPrompt).
    const asking = cliAsking(ws.config, { dir: ws.dir, trusted: ws.trust.trusted });
    const gateway = new ToolGateway(ws.toolSet.tools, { ...asking.gateway, unusable: ws.toolSet.errors });
    // The same code turn as Run with Tools; with no transcript to save, its markers are not printed either.
    const { item } = await runCodeTurn({
      code,
      label: file === '-' ? 'stdin' : file,
      source: 'cli',
      runtime,
      gateway,
      timeoutMs: ws.config.timeoutMs,
      beforeRun: asking.beforeRun,
      signal: controller.signal,
      onEvent: (e) => {
        if (!isTurnMarker(e)) print(e);
      },
    });
    if (!values.json) printItemResult(item);
    if (saver) saveAndReport(saver, item, !!values.json);
    if (reviewsWrites(ws)) await reviewStaged(runtime, { choice: staged, questions, json: values.json, signal: controller.signal });
    // The setup (a setting, the machine) failed, not the code: as a configuration error, exit 2.
    if (item.status !== 'completed' && item.error?.category) return 2;
    return item.status === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await swept;
    await runtime.dispose();
    await disposeDefaultMcpPool();
  }
}
