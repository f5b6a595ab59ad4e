/**
 * `codeact chat "<prompt>" --provider … --model M [options]`: the agent loop headless, through the same
 * chat-turn use case as the extension's panel (core/turn/turns.ts). The model writes code, it runs
 * in the conversation's Python session (or a Jupyter kernel, or the provider's sandbox with --mode
 * hosted), and the answer streams to the terminal. Conversations are saved as JSON lines and can be
 * continued with --continue.
 */
import type { TranscriptEvent } from '../common/transcript';
import type { CodeInterpreterCallItem } from '../common/events';
import type { RewindOutcome, Runtime } from '../core/runtime/types';
import { forTerminal } from '../common/untrusted';
import { formatChangeCount } from '../common/rewind';
import { rewindNote, rewoundLines } from '../core/agent/rewindNote';
import { conversationRewindNote, cutConversation, turnAt, turnOfExecution, turnsWere, type ConversationCut } from '../core/agent/conversationRewind';
import { usageSummary, usageSummaryText } from '../common/usage';
import { TranscriptStore, titleFrom, type Conversation } from '../core/agent/transcriptStore';
import { ConversationBusyError, holdConversation } from '../core/agent/conversationLock';
import { settleHeld } from '../core/agent/turnJournal';
import { providerConfigFrom } from '../core/config/engine';
import { ToolGateway } from '../core/gateway/gateway';
import { cliAsking } from './approvalPrompt';
import { ProviderError } from '../core/providers/shared/errors';
import { createProvider } from '../core/providers/factory';
import { CONTINUED_NOTE, isTurnMarker, runChatTurn, STORE_FAILED } from '../core/turn/turns';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { resolveTools } from '../core/tools/toolSources';
import { OUTPUTS_HELP, outputSaverFrom, saveAndReport } from './outputs';
import { awaitEarlierRun } from './earlierRun';
import { chatPrinter } from './print';
import { parse, UsageError } from './args';
import { commandOptions, flagUsage, settingFlagsHelp, settingFlagsUsage, wrapUsage } from './flags';
import { reviewStaged, STAGED_HELP, stagedChoice } from './stagedReview';
import { terminalQuestions } from './terminalQuestions';
import { defaultStorage, openWorkspace, reportDeclarationErrors, reviewsWrites, RUNTIME_FLAGS, runtimeFrom, sweepLeft } from './workspace';
import { keepsCheckpoints, MODES } from '../common/runtimes';

/** `codeact chat "<prompt>" --provider P --model M`, and its options: the setting flags from core/config/keys.ts. */
export const CHAT_SYNOPSIS = `codeact chat "<prompt>" ${flagUsage('provider')} ${flagUsage('model')}`;

export const CHAT_USAGE = `${wrapUsage(
  `Usage: ${CHAT_SYNOPSIS}`,
  [
    ['[--workspace DIR|FILE.code-workspace [--folder NAME|PATH]]', '[--continue SESSION]', '[--storage DIR]'],
    settingFlagsUsage('chat', ['provider', 'model']),
    ['[--outputs DIR]', '[--staged keep|revert]', '[--trust-workspace]', '[--json]', '[--verbose]'],
  ],
  9,
)}
       codeact chat --list [--storage DIR]
       codeact chat --continue SESSION --list         (its executions: the points --rewind goes back to)
       codeact chat --continue SESSION --rewind N [--only code|conversation] "<prompt>"
                    (the Python session and the workspace files back to before execution N, and the
                    conversation to before the turn it ran in, its later turns kept as a branch; then the prompt)

Keys come from OPENAI_API_KEY, ANTHROPIC_API_KEY, and GEMINI_API_KEY or GOOGLE_API_KEY
(OpenAI-compatible servers usually need none).
${[...settingFlagsHelp('chat'), OUTPUTS_HELP, STAGED_HELP].join('\n')}`;

/** What `--continue` says (on stderr) after closing a turn a crash cut off, after the conversation's id. */
export const LAST_TURN_INTERRUPTED = 'the last turn was interrupted (CodeAct ended while it ran); what completed is kept.';

export const CHAT_OPTIONS = commandOptions('chat', {
  continue: { type: 'string', short: 'c' },
  storage: { type: 'string' },
  list: { type: 'boolean' },
  rewind: { type: 'string' },
  only: { type: 'string' },
  ...RUNTIME_FLAGS,
} as const);

function parseChat(argv: string[]) {
  return parse({ args: argv, options: CHAT_OPTIONS });
}

type ChatValues = ReturnType<typeof parseChat>['values'];

export async function chatCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseChat(argv);
  if (values.help) {
    process.stdout.write(CHAT_USAGE + '\n');
    return 0;
  }
  const store = new TranscriptStore(values.storage ?? defaultStorage());
  if (values.list && values.continue) return listPoints(store, values.continue, !!values.json);
  if (values.rewind !== undefined && !values.continue) throw new UsageError('--rewind needs --continue SESSION (the conversation to rewind).');
  if (values.only !== undefined && (values.rewind === undefined || !['code', 'conversation'].includes(values.only)))
    throw new UsageError('--only goes with --rewind N and is "code" (the conversation stays) or "conversation" (the code stays).');
  if (values.list) {
    const list = store.list();
    if (values.json) process.stdout.write(JSON.stringify(list) + '\n');
    else if (!list.length) process.stdout.write(`No conversations in ${forTerminal(store.dir, { line: true })}.\n`);
    else
      for (const c of list)
        process.stdout.write(
          `${c.id}  ${new Date(c.updatedAt).toISOString().slice(0, 16).replace('T', ' ')}  ${forTerminal(`${c.provider ?? ''}/${c.model ?? ''}`, { line: true })}  ${forTerminal(c.title, { line: true })}${c.damaged ? `  [damaged: ${forTerminal(c.damaged, { line: true })}]` : ''}\n`,
        );
    return 0;
  }
  if (positionals.length !== 1 || !positionals[0].trim()) throw new UsageError('codeact chat needs one prompt (quote it).\n\n' + CHAT_USAGE);
  const prompt = positionals[0];

  let conversation: Conversation | undefined;
  // The conversation is this process's until the command ends (another one is told it is open here).
  let release: (() => void) | undefined;
  if (values.continue) {
    if (!store.exists(values.continue)) throw new UsageError(`No conversation "${values.continue}" in ${store.dir} (see codeact chat --list).`);
    conversation = store.open(values.continue);
    try {
      release = holdConversation(conversation.id, conversation.file);
    } catch (e) {
      if (!(e instanceof ConversationBusyError)) throw e;
      process.stderr.write(`codeact: ${forTerminal(e.message)}\n`);
      if (values.json) process.stdout.write(JSON.stringify({ type: 'error', message: e.message, code: e.code }) + '\n');
      return 1;
    }
    // What another process wrote meanwhile is read, a damaged file kept beside a repaired copy, and a turn a
    // crash cut off closed as interrupted, its completed steps kept (core/agent/turnJournal).
    const { closed } = settleHeld(conversation);
    // What reading it skipped, recovered or kept is said before the turn (on stderr, also with --json).
    for (const n of conversation.notices) process.stderr.write(`codeact: ${forTerminal(n)}\n`);
    if (closed.length && !values.json) process.stderr.write(`${forTerminal(conversation.id, { line: true })}: ${LAST_TURN_INTERRUPTED}\n`);
  }
  try {
    return await chatIn(store, conversation, prompt, values);
  } finally {
    release?.();
  }
}

async function chatIn(store: TranscriptStore, conversation: Conversation | undefined, prompt: string, values: ChatValues): Promise<number> {
  const meta = conversation?.meta;
  const ws = openWorkspace(values.workspace ?? meta?.workspace, {
    flags: values,
    // A continued conversation keeps its provider, model and mode unless a flag says otherwise.
    fallback: { provider: meta?.provider, model: meta?.model, mode: meta?.mode },
    trustOverride: values['trust-workspace'],
    folder: values.folder,
  });
  const config = ws.config;
  if (!config.model) throw new UsageError('--model is required (for example gpt-5, claude-sonnet-4-6, gemini-3-flash-preview, or a local model name).');
  // MCP tools without a declared description or schema get them from their servers, so the model sees them.
  ws.toolSet = await resolveTools(ws.toolSet);
  reportDeclarationErrors(ws.toolSet);
  // Executions are numbered through the conversation (a continued one goes on from its earlier executions).
  const earlier = conversation?.events.filter((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call').length ?? 0;
  const saver = outputSaverFrom(values.outputs, earlier + 1);
  // Review mode's staged writes are settled after the turn: by --staged, else at the terminal (./stagedReview).
  const staged = stagedChoice(values.staged);
  const questions = terminalQuestions();
  const runtime = await runtimeFrom(ws, {
    longLived: config.preload.length > 0,
    sessionHost: true,
    verbose: values.verbose,
    reviews: !!staged || questions.interactive,
  });
  // Kernels earlier chats left running and never continued are shut down meanwhile (awaited before exit).
  const swept = sweepLeft(store, runtime, conversation?.id);
  // A Jupyter kernel the last `codeact chat` left running is taken back by the first run (which says if it is gone).
  const kernelBack = !!conversation && !!runtime.sessions.handover && typeof conversation.meta.kernelId === 'string';
  const ranCode =
    !!conversation &&
    runtime.sessions.persist &&
    !kernelBack &&
    conversation.events.some((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call');
  // With a session host (codeact.session.host), the conversation's session may still be alive there.
  const live = !!conversation && runtime.sessions.has(conversation.id);
  const continued = ranCode && !live;
  if (continued && !values.json) process.stderr.write(`${conversation!.id}: continuing in a new Python session; variables from the earlier runs are gone.\n`);
  if (ranCode && live && !values.json)
    process.stderr.write(`${conversation!.id}: continuing in its live Python session; variables from the earlier runs are still there.\n`);

  const convo =
    conversation ?? store.create({ title: titleFrom(prompt), provider: config.provider, model: config.model, mode: config.mode, workspace: ws.dir });
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // --json prints the event vocabulary; the turn markers go to the transcript only.
  const printEvent: (e: TranscriptEvent) => void = values.json
    ? (e) => {
        if (!isTurnMarker(e)) process.stdout.write(JSON.stringify(e) + '\n');
      }
    : chatPrinter();
  const print = (e: TranscriptEvent) => {
    printEvent(e);
    // The human printer leaves errors to the end of the turn; a turn that is not being saved is said at once.
    if (!values.json && e.type === 'error' && e.code === STORE_FAILED) process.stderr.write(`codeact: ${forTerminal(e.message)}\n`);
    if (saver && e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') saveAndReport(saver, e.item, !!values.json);
  };
  // Where this turn's events start in the conversation (for the usage report at the end).
  let turnStart = convo.events.length;
  // Approvals, code review, installs and MCP forms are asked in turn on the terminal (./approvalPrompt).
  const asking = cliAsking(config, { dir: ws.dir, trusted: ws.trust.trusted });
  try {
    // A run an earlier (killed) codeact chat left going in this live session: shown to its end, not waited behind silently.
    if (live && !(await awaitEarlierRun(runtime, convo.id, controller.signal))) {
      process.stderr.write('codeact: stopped; nothing was sent to the model.\n');
      return 1;
    }
    const rewound = values.rewind !== undefined ? await rewindTo(store, convo, runtime, values, live) : undefined;
    if (rewound === null) return 1;
    turnStart = convo.events.length;
    const turn = await runChatTurn({
      conversation: convo,
      prompt,
      source: 'cli',
      config,
      provider: () => createProvider(providerConfigFrom(config, undefined)),
      runtime,
      gateway: new ToolGateway(ws.toolSet.tools, { ...asking.gateway, unusable: ws.toolSet.errors }),
      // Hosted code runs in the provider's sandbox, where it cannot be stopped before it runs.
      ...(MODES[config.mode].ourRuntime && asking.beforeRun ? { agent: { beforeRun: asking.beforeRun } } : {}),
      ...(continued || rewound ? { sessionNote: [continued ? CONTINUED_NOTE : '', rewound ?? ''].filter(Boolean).join('\n') } : {}),
      signal: controller.signal,
      onEvent: print,
    });
    const result = turn.result;
    // What the turn's code staged (and what an earlier chat left staged), before the summary.
    if (reviewsWrites(ws)) await reviewStaged(runtime, { choice: staged, questions, json: values.json, signal: controller.signal });
    if (!result) {
      // The provider could not be built (no key, a bad URL) or failed outright: a configuration error.
      process.stderr.write(`codeact: ${forTerminal(turn.error?.message)}\n`);
      return turn.error?.code === 'internal' ? 1 : 2;
    }
    // Tokens of the turn and of the conversation (cached included), cost where a price is known, the window.
    const summary = usageSummary(convo.id, convo.events, turnStart);
    if (values.json) process.stdout.write(JSON.stringify(summary) + '\n');
    else {
      if (result.text && !result.text.endsWith('\n')) process.stdout.write('\n');
      process.stderr.write(`\n[${convo.id}] ${result.status}; ${usageSummaryText(summary)}. Continue with: codeact chat --continue ${convo.id} "<prompt>"\n`);
      if (result.error && result.status !== 'completed') process.stderr.write(`codeact: ${forTerminal(result.error.message)}\n`);
    }
    return result.status === 'completed' ? 0 : 1;
  } catch (e) {
    if (e instanceof ProviderError) {
      process.stderr.write(`codeact: ${forTerminal(e.message)}\n`);
      return 2;
    }
    throw e;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // A Jupyter kernel stays on its server for `--continue` (taken back within the idle time, else shut down then);
    // a session host keeps the session for the next --continue (codeact sessions end ends it).
    await swept;
    if (runtime.sessions.handover) await runtime.sessions.handover.release();
    else {
      if (!runtime.sessions.outlivesClient) await runtime.sessions.close(convo.id);
      await runtime.dispose();
    }
    await disposeDefaultMcpPool();
  }
}

/** The executions of a conversation, numbered as `--rewind N` names them. */
function executionsOf(convo: Conversation): CodeInterpreterCallItem[] {
  const out: CodeInterpreterCallItem[] = [];
  for (const e of convo.events) if (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') out.push(e.item);
  return out;
}

/** `--continue ID --list`: the points of a conversation (its executions), as `--rewind N` numbers them. */
function listPoints(store: TranscriptStore, id: string, json: boolean): number {
  if (!store.exists(id)) throw new UsageError(`No conversation "${id}" in ${store.dir} (see codeact chat --list).`);
  const items = executionsOf(store.open(id));
  if (json) {
    const points = items.map((it, i) => ({
      n: i + 1,
      id: it.id,
      status: it.status,
      session: it.session?.id ?? null,
      changes: it.changes?.changes.length ?? 0,
    }));
    process.stdout.write(JSON.stringify(points) + '\n');
  } else if (!items.length) process.stdout.write('No executions in this conversation yet: nothing to rewind to.\n');
  else
    for (const [i, it] of items.entries()) {
      const first = it.code.split('\n').find((l: string) => l.trim()) ?? '';
      const changed = it.changes?.changes.length ? `  ${formatChangeCount(it.changes.changes.length)}` : '';
      const where = it.session && keepsCheckpoints(it.runtime) ? '' : '  (no checkpoint: not a local Python session)';
      process.stdout.write(
        `${String(i + 1).padStart(3)}  ${forTerminal(it.status.padEnd(10), { line: true })} ${forTerminal(first.slice(0, 70), { line: true })}${changed}${where}\n`,
      );
    }
  return 0;
}

/**
 * `--rewind N`: the conversation's live session and the workspace files go back to before its execution N (the
 * runtime's checkpoints), and the conversation to before the turn that execution ran in (its turns from there on
 * kept as a branch: core/agent/conversationRewind); `--only` does one of the two. What was done is said on stderr,
 * and what the model is told is returned (null: failed, nothing sent).
 */
async function rewindTo(store: TranscriptStore, convo: Conversation, runtime: Runtime, values: ChatValues, live: boolean): Promise<string | null> {
  const json = !!values.json;
  const items = executionsOf(convo);
  const at = Number(values.rewind);
  if (!Number.isSafeInteger(at) || at < 1 || at > items.length)
    throw new UsageError(`--rewind takes an execution number from 1 to ${items.length} (see --list).`);
  const fail = (message: string) => {
    process.stderr.write(`codeact: ${forTerminal(message)}\n`);
    if (json) process.stdout.write(JSON.stringify({ type: 'error', message, code: 'rewind' }) + '\n');
    return null;
  };
  const code = values.only !== 'conversation';
  const turnId = values.only !== 'code' ? turnOfExecution(convo.events, items[at - 1].id) : undefined;
  if (values.only !== 'code' && !turnId)
    return fail(`Execution ${at} is in no turn of this conversation's file, so the conversation cannot be rewound; nothing was.`);
  if (code && !runtime.rewind)
    return fail(
      'This runtime keeps no checkpoints (only the local Python runtime does); nothing was rewound. --only conversation rewinds the conversation alone.',
    );
  if (code && !live)
    return fail(
      "This conversation's Python session is gone (it ended, or its session host did), so its code cannot be rewound; nothing was, and nothing was sent to the model. --only conversation rewinds the conversation alone.",
    );
  // With the conversation, the code goes back to where the conversation does: before the turn's first execution.
  const first = turnId ? turnAt(convo.events, turnId)?.firstExecution : undefined;
  const point = code && first ? items.findIndex((it) => it.id === first) + 1 || at : at;
  let outcome: RewindOutcome | undefined;
  try {
    if (code) outcome = await runtime.rewind!(items[point - 1].id);
  } catch (e) {
    return fail(`${(e as Error).message} Nothing was sent to the model.`);
  }
  let cut: ConversationCut | undefined;
  try {
    if (turnId) cut = cutConversation(store, convo, turnId);
  } catch (e) {
    if (!outcome) return fail(`${(e as Error).message} Nothing was sent to the model.`);
    // The code is rewound already: the turn goes on, and the model is told what was done.
    process.stderr.write(
      `codeact: the code was rewound, but the conversation could not be (${forTerminal((e as Error).message, { line: true })}); it goes on uncut.\n`,
    );
  }
  const said = [
    outcome ? rewoundLines(outcome, (t) => forTerminal(t, { line: true })).join(' ') : '',
    cut
      ? `The conversation is back to before turn ${cut.turn}; from there on, ${turnsWere(cut.removed, 'is')} kept as ${cut.branchId} (codeact chat --continue ${cut.branchId}).`
      : '',
  ];
  const where = `before execution ${code ? point : at}${point !== at && code ? ` (the first of execution ${at}'s turn)` : ''}`;
  if (json)
    process.stdout.write(
      JSON.stringify({ type: 'codeact.rewound', execution: code ? point : at, ...(outcome ?? {}), ...(cut ? { conversation: cut } : {}) }) + '\n',
    );
  else process.stderr.write(`${convo.id}: rewound to ${where}. ${said.filter(Boolean).join(' ')}\n`);
  const note = outcome ? rewindNote(outcome, `before execution ${point}`) : undefined;
  return cut ? conversationRewindNote(cut, note) : note!;
}
