/** The notices above the transcript (the host's `notice` messages): each with its actions and a close button. */
import type { HostCommand, NoticeMessage } from '../common/protocol';
import { h } from './dom';
import { icon } from './icons';
import { button, toolbarButton } from './viewKit';
import { revealed, revealedPlain } from './reveal';

/** How many notices stay: a new one pushes the oldest out. */
const MAX_NOTICES = 3;

/** Shows `msg` in `area` (the same message twice is shown once); its buttons run host commands. */
export function showNotice(area: HTMLElement, msg: NoticeMessage, command: (command: HostCommand) => void): void {
  for (const el of Array.from(area.children)) {
    if (el.querySelector('.notice-text')?.textContent === revealedPlain(msg.message)) el.remove();
  }
  const actions = (msg.actions ?? []).map((a) => button(a.label, null, () => command(a.command)));
  const note = h(
    'div',
    { class: `notice ${msg.level}`, role: msg.level === 'error' ? 'alert' : 'status' },
    icon(msg.level === 'error' ? 'error' : msg.level === 'warning' ? 'warning' : 'info'),
    h('span', { class: 'notice-text' }, revealed(msg.message)),
    ...actions,
  );
  note.append(toolbarButton('close', 'Dismiss', () => note.remove()));
  area.append(note);
  while (area.children.length > MAX_NOTICES) area.firstElementChild?.remove();
}
