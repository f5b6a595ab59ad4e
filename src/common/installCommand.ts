/**
 * What a person reads before the code's `install_packages` runs, from one place: the panel's card
 * (src/webview/installApproval.ts), VS Code's dialog when the panel is hidden, and the CLI's prompt. Never
 * cut: the specs are bounded (core/runtime/install/specs), so all of them fit.
 */
import type { InstallRequestInfo } from './events';
import { forDisplay } from './untrusted';

/** What pip always gets before the user's installArgs: no prompts, no version check, no progress bars in the card. */
const PIP_FIXED_ARGS = ['--disable-pip-version-check', '--no-input', '--progress-bar', 'off'] as const;

/** The installer's argv (`uv`: the uv found on PATH), exactly as it runs: the specs after `--`, so none is an option. */
export function installArgv(i: Pick<InstallRequestInfo, 'tool' | 'python' | 'install_args' | 'packages'>, uv = 'uv'): string[] {
  const head = i.tool === 'uv' ? [uv, 'pip', 'install', '--python', i.python] : [i.python, '-m', 'pip', 'install', ...PIP_FIXED_ARGS];
  return [...head, ...i.install_args, '--', ...i.packages];
}

/** One argument as a shell would need it: as it is when plain, else quoted. */
export function quoteArg(a: string): string {
  return /^[\w@%+=:,./<>~!*-]+$/.test(a) ? a : JSON.stringify(a);
}

/** The command line that runs, quoted where a part holds anything but plain characters. */
export function installCommandLine(i: InstallRequestInfo): string {
  return installArgv(i).map(quoteArg).join(' ');
}

/** The venv sentence of an install that makes one first. */
export function venvSentence(i: InstallRequestInfo): string {
  return `${i.refused ?? "The session's Python is a system one"}, so nothing is installed into it. Installing first makes a virtual environment for this folder, ${i.create_venv} (python -m venv --system-site-packages), and installs there. The session restarts with it at your next message, and its variables are lost then.`;
}

/** A dialog's or a prompt's question and the detail under it. */
export function installDialog(i: InstallRequestInfo): { message: string; detail: string } {
  const n = i.packages.length;
  const lines = [
    ...(i.create_venv ? [venvSentence(i), ''] : []),
    `Into: ${forDisplay(i.environment, { line: true })}`,
    'Packages:',
    ...i.packages.map((p) => `  ${forDisplay(p, { line: true })}`),
    '',
    'Runs on this machine, outside the sandbox, with network access:',
    `  ${forDisplay(installCommandLine(i), { line: true })}`,
  ];
  return { message: `CodeAct: install ${n === 1 ? 'a package' : `${n} packages`}?`, detail: lines.join('\n') };
}
