/**
 * The workspace bar above the prompt: in a multi-root workspace, the folder the chat's turns run in (its
 * settings, tools and runtime), with a picker of the workspace's folders; a conversation's folder that is no
 * longer open is said plainly, with the picker to continue elsewhere. Also the Python environment that runs
 * the code, when the host knows it, with "Change" (CodeAct: Select Python Environment). Hidden when there is
 * neither (one folder, no interpreter known).
 */
import type { HostState, WebviewToHost } from '../common/protocol';
import { h } from './dom';
import { icon } from './icons';
import { revealed, revealedPlain } from './reveal';

export class WorkspaceBar {
  readonly el: HTMLElement;
  private last = '';

  constructor(private readonly post: (m: WebviewToHost) => void) {
    this.el = h('div', { class: 'workspace-bar', role: 'group', 'aria-label': 'Workspace', hidden: true });
  }

  render(host: Pick<HostState, 'workspace' | 'python' | 'busy'> | undefined): void {
    const ws = host?.workspace ?? undefined;
    const python = host?.python;
    const busy = Boolean(host?.busy);
    const key = JSON.stringify([ws ?? null, python ?? null, busy]);
    if (key === this.last) return;
    this.last = key;
    this.el.textContent = '';
    this.el.hidden = !ws && !python;
    delete this.el.dataset.state;
    if (ws) this.el.append(this.folderRow(ws, busy));
    if (python) {
      this.el.append(
        h(
          'div',
          { class: 'workspace-row python-row' },
          icon('box'),
          h(
            'span',
            { class: 'workspace-text' },
            /^python\b/i.test(python.label) ? null : h('span', { class: 'workspace-label', text: 'Python ' }),
            h(
              'span',
              { class: 'workspace-name', title: revealedPlain(`${python.path} (${python.source})`, { line: true }) },
              revealed(python.label, { line: true }),
            ),
          ),
          h(
            'button',
            {
              class: 'chip-button',
              type: 'button',
              title: 'Pick the Python environment that runs the code (CodeAct: Select Python Environment)',
              onclick: () => this.post({ type: 'python.select' }),
            },
            h('span', { text: 'Change' }),
          ),
        ),
      );
    }
  }

  private folderRow(ws: NonNullable<HostState['workspace']>, busy: boolean): HTMLElement {
    const gone = Boolean(ws.folder?.gone);
    if (gone) this.el.dataset.state = 'gone';
    const select = h('select', {
      class: 'select workspace-select',
      'aria-label': gone ? 'Continue in folder' : 'Folder the chat runs in',
      title: busy ? 'Stop the running turn to change its folder' : "The workspace folder whose settings, tools and runtime this chat's turns use",
    });
    select.disabled = busy;
    if (gone || !ws.folder) select.append(h('option', { value: '', text: gone ? 'Continue in…' : 'Pick a folder', disabled: true, selected: true }));
    for (const f of ws.folders) {
      const option = h('option', { value: f.path, text: revealedPlain(f.name, { line: true }), title: revealedPlain(f.path, { line: true }) });
      if (!gone && f.path === ws.folder?.path) option.selected = true;
      select.append(option);
    }
    select.addEventListener('change', () => {
      if (select.value) this.post({ type: 'workspace.folder', path: select.value });
    });
    if (gone) {
      return h(
        'div',
        { class: 'workspace-row folder-row' },
        icon('warning'),
        h(
          'span',
          { class: 'workspace-text' },
          h('span', { class: 'workspace-name', title: revealedPlain(ws.folder!.path, { line: true }) }, revealed(ws.folder!.name, { line: true })),
          h('span', { text: ' is not open in this window.' }),
        ),
        select,
      );
    }
    return h('div', { class: 'workspace-row folder-row' }, icon('folder'), h('span', { class: 'workspace-label', text: 'Folder' }), select);
  }
}
