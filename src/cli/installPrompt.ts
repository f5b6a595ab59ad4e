/**
 * The CLI's approval of the code's `install_packages`: the same facts as the panel's card (common/installCommand),
 * on stderr, and a y/N question on the terminal. Without a terminal (stdin not a TTY: CI, a pipe) nobody can
 * approve, so there is no approver and the code is told so.
 */
import { createInterface } from 'node:readline';
import { installDialog } from '../common/installCommand';
import { forTerminal } from '../common/untrusted';
import { installInfo } from '../core/runtime/install/approvalText';
import type { InstallApprover } from '../core/runtime/install/installer';

export function cliInstallApprover(
  input: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): InstallApprover | undefined {
  if (!input.isTTY) return undefined;
  return (req) =>
    new Promise((resolve) => {
      const dialog = installDialog(installInfo(req));
      output.write(`\n${forTerminal(dialog.message)}\n${forTerminal(dialog.detail)}\n`);
      const rl = createInterface({ input, output, terminal: false });
      const done = (answer: 'allowed' | 'denied' | { unanswered: string }) => {
        req.signal.removeEventListener('abort', onAbort);
        rl.close();
        resolve(answer);
      };
      const onAbort = () => done({ unanswered: 'no answer: the run was stopped' });
      req.signal.addEventListener('abort', onAbort, { once: true });
      rl.question(req.createVenv ? 'Create .venv and install? [y/N] ' : 'Install? [y/N] ', (a) => done(/^\s*y(es)?\s*$/i.test(a) ? 'allowed' : 'denied'));
    });
}
