/**
 * The approval card of the code's `install_packages`: every package spec as it will be passed, the
 * environment it goes into, the `.venv` made first when the session's Python is a system one, and the
 * command line that runs (pip or uv, with codeact.python.installArgs). A person approves only what they
 * can fully read, so nothing here is folded: the specs are at most 20 of at most 200 characters each.
 */
import type { ApprovalView } from '../common/transcript';
import { installArgv, quoteArg, venvSentence } from '../common/installCommand';
import { h } from './dom';
import { icon } from './icons';
import { revealed } from './reveal';
import { textButton } from './viewKit';

export function installTitle(item: ApprovalView): HTMLElement[] {
  const n = item.install?.packages.length ?? 0;
  return [h('span', { text: `Install ${n === 1 ? 'a package' : `${n} packages`}?` })];
}

export function installBody(item: ApprovalView): HTMLElement[] {
  const i = item.install;
  if (!i) return [h('p', { class: 'desc', text: 'The code asks to install packages.' })];
  const out: HTMLElement[] = [];
  if (i.create_venv) {
    out.push(h('p', { class: 'approval-warning', role: 'note' }, icon('warning'), h('span', null, revealed(venvSentence(i)))));
  }
  out.push(
    h(
      'p',
      { class: 'desc' },
      `The code asks to install ${i.packages.length === 1 ? 'this package' : 'these packages'} with ${i.tool} into `,
      h('strong', null, revealed(i.environment, { line: true })),
      ':',
    ),
  );
  out.push(h('ul', { class: 'install-specs', 'aria-label': 'Packages to install' }, ...i.packages.map((p) => h('li', null, h('code', null, revealed(p))))));
  out.push(
    h('p', { class: 'desc', text: 'It runs on this machine, outside the sandbox, with network access (a package built from source runs its own build code):' }),
  );
  // One span per argument: a line breaks between arguments (never inside "--no-input"), and only a long path breaks inside.
  const code = h('code', null);
  installArgv(i).forEach((a, n) => {
    if (n) code.append(' ');
    code.append(h('span', { class: a.length > 32 ? 'arg long' : 'arg' }, revealed(quoteArg(a), { line: true })));
  });
  out.push(h('pre', { class: 'code approval-code install-command', tabindex: '0', 'aria-label': 'Command that runs' }, code));
  return out;
}

export function installActions(decide: (d: 'allow_once' | 'deny') => void, item: ApprovalView): HTMLElement[] {
  return [
    textButton(item.install?.create_venv ? 'Create .venv and install' : 'Install', () => decide('allow_once'), 'primary'),
    textButton('Deny', () => decide('deny'), 'danger'),
  ];
}
