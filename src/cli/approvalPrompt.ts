/**
 * What the CLI asks the person while code runs, all in turn on one terminal (./terminalQuestions): a tool
 * whose policy is `ask` (Allow once, Allow for this session, Deny), the code itself under
 * `codeact.approval.reviewCode` (all of it, then Run or Deny), `install_packages` (./installPrompt) and MCP
 * servers' forms (./elicitPrompt). `codeact run` and `codeact chat` build their gateway from here.
 *
 * Without a terminal (stdin not a TTY: CI, a pipe) nobody can answer: an `ask` tool is refused by the gateway
 * with its clear error, code under review does not run (the error says why), installs are refused, forms
 * are declined.
 */
import { jobAsks } from '../common/tools';
import { forTerminal } from '../common/untrusted';
import type { EngineConfig } from '../core/config/resolve';
import { installOptionsFrom } from '../core/config/install';
import { allowancesOverride } from '../core/gateway/approvalPolicy';
import type { ApprovalOutcome, Approver, GatewayOptions } from '../core/gateway/gateway';
import type { BeforeRun } from '../core/runtime/types';
import { terminalElicitor } from './elicitPrompt';
import { cliInstallApprover, STOPPED } from './installPrompt';
import { indent, terminalQuestions, type TerminalQuestions } from './terminalQuestions';

interface CliAsking {
  gateway: GatewayOptions;
  /** The code review hook (codeact.approval.reviewCode); undefined when it is off. */
  beforeRun?: BeforeRun;
}

/** Everything `codeact run` and `codeact chat` ask, for the folder `folder`. */
export function cliAsking(config: EngineConfig, folder: { dir: string; trusted: boolean }, questions: TerminalQuestions = terminalQuestions()): CliAsking {
  // "Allow for this session": for as long as this command runs.
  const session = new Set<string>();
  return {
    gateway: {
      ...(questions.interactive ? { approver: toolApprover(questions, session) } : {}),
      policyOverride: allowancesOverride(config.alwaysAllow, session),
      elicitor: terminalElicitor(questions),
      ...installOptionsFrom(config, { trusted: folder.trusted, folder: folder.dir, approve: cliInstallApprover(questions) }),
    },
    ...(config.reviewCode ? { beforeRun: codeReview(questions) } : {}),
  };
}

function toolApprover(questions: TerminalQuestions, session: Set<string>): Approver {
  return (req) =>
    questions.ask(
      req.signal,
      (): ApprovalOutcome => ({ unanswered: STOPPED }),
      async (q): Promise<ApprovalOutcome> => {
        // A call asked while an earlier one was answered "for this session" runs without asking.
        if (session.has(req.tool.name)) return 'allowed';
        const args = JSON.stringify(req.arguments ?? {}, null, 2) ?? '{}';
        const who = req.job === undefined ? 'The code calls' : `${jobAsks(req.job)} (it runs in the background of this session): it calls`;
        q.say(
          `\n${q.shown(`${who} the tool "${forTerminal(req.tool.name, { line: true })}", which needs your approval. Its arguments, all of them:`)}\n${q.shown(indent(args))}\n`,
        );
        const a = await q.line('Allow once (y), allow for this session (s), or deny (n)? [n] ');
        if (q.cancelled) return { unanswered: STOPPED };
        const answer = a?.trim().toLowerCase() ?? '';
        if (answer === 's' || answer === 'session') {
          session.add(req.tool.name);
          return 'allowed';
        }
        return answer === 'y' || answer === 'yes' ? 'allowed' : 'denied';
      },
    );
}

type Verdict = Awaited<ReturnType<BeforeRun>>;

/** Code review: the whole code, numbered, then Run or Deny. Without a terminal the code does not run. */
function codeReview(questions: TerminalQuestions): BeforeRun {
  return (request, signal) => {
    if (!questions.interactive)
      return Promise.resolve({
        error: {
          type: 'Denied',
          message:
            'codeact.approval.reviewCode is on, and nobody can review the code here (stdin is not a terminal), so it did not run. Run the command in a terminal, or turn code review off in your own settings.',
        },
      });
    return questions.ask(
      signal,
      (): Verdict => ({ error: { type: 'Cancelled', message: `The code did not run (${STOPPED}).` } }),
      async (q): Promise<Verdict> => {
        const lines = request.code.split('\n');
        const width = String(lines.length).length;
        q.say(`\nThe code below asks to run (codeact.approval.reviewCode is on). All of it, ${lines.length} line${lines.length === 1 ? '' : 's'}:\n`);
        q.say(lines.map((l, i) => `${String(i + 1).padStart(width)} | ${q.shown(l)}`).join('\n') + '\n');
        const a = await q.line('Run this code? [y/N] ');
        if (q.cancelled) return { error: { type: 'Cancelled', message: `The code did not run (${STOPPED}).` } };
        if (a !== null && /^\s*y(es)?\s*$/i.test(a)) return { code: request.code };
        return { error: { type: 'Denied', message: 'The user declined to run this code.' } };
      },
    );
  };
}
