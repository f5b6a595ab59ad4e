/**
 * The CLI's approval of the code's `install_packages`: the same facts as the panel's card (common/installCommand),
 * on stderr, and a y/N question, asked in its turn on the terminal (./terminalQuestions). Without a terminal
 * (stdin not a TTY: CI, a pipe) nobody can approve, so there is no approver and the code is told so.
 */
import { installDialog } from '../common/installCommand';
import { installInfo } from '../core/runtime/install/approvalText';
import type { InstallApprover } from '../core/runtime/install/installer';
import { terminalQuestions, type TerminalQuestions } from './terminalQuestions';

/** Why a question that was never answered did not run. */
export const STOPPED = 'no answer: the run was stopped';

export function cliInstallApprover(questions: TerminalQuestions = terminalQuestions()): InstallApprover | undefined {
  if (!questions.interactive) return undefined;
  return (req) =>
    questions.ask(
      req.signal,
      () => ({ unanswered: STOPPED }),
      async (q) => {
        const dialog = installDialog(installInfo(req));
        q.say(`\n${q.shown(dialog.message)}\n${q.shown(dialog.detail)}\n`);
        const a = await q.line(req.createVenv ? 'Create .venv and install? [y/N] ' : 'Install? [y/N] ');
        if (q.cancelled) return { unanswered: STOPPED };
        return a !== null && /^\s*y(es)?\s*$/i.test(a) ? 'allowed' : 'denied';
      },
    );
}
