/**
 * The notebook bar above the prompt: which open notebook the chat's turns work in, and the person's say
 * over it. On the CodeAct kernel: "Working in analysis.ipynb" with a button that switches the target off
 * (and back on). Not on it (another kernel, or none selected yet): it says plainly that the agent cannot see
 * another kernel's variables, and offers to select the CodeAct kernel. Hidden when no notebook is active.
 */
import type { NotebookTargetState, WebviewToHost } from '../common/protocol';
import { h } from './dom';
import { icon } from './icons';
import { revealed, revealedPlain } from './reveal';

export class NotebookTargetBar {
  readonly el: HTMLElement;
  private last = '';

  constructor(private readonly post: (m: WebviewToHost) => void) {
    this.el = h('div', { class: 'notebook-target', role: 'group', 'aria-label': 'Notebook', hidden: true });
  }

  render(state: NotebookTargetState | null | undefined): void {
    const key = JSON.stringify(state ?? null);
    if (key === this.last) return;
    this.last = key;
    this.el.textContent = '';
    this.el.hidden = !state;
    if (!state) return;
    const name = h('span', { class: 'notebook-name', title: revealedPlain(state.uri, { line: true }) }, revealed(state.name, { line: true }));
    const button = (label: string, title: string, message: WebviewToHost) =>
      h('button', { class: 'chip-button', type: 'button', title, onclick: () => this.post(message) }, h('span', { text: label }));
    this.el.dataset.state = !state.codeact ? 'other-kernel' : state.on ? 'on' : 'off';
    if (!state.codeact) {
      this.el.append(
        icon('warning'),
        h(
          'span',
          { class: 'notebook-text' },
          name,
          h('span', { text: ' is not on the CodeAct kernel: the agent cannot see the variables of another kernel.' }),
        ),
        button(
          'Use CodeAct kernel',
          `Select the CodeAct kernel for ${revealedPlain(state.name, { line: true })}, so the agent works in it (the other kernel's variables do not carry over)`,
          {
            type: 'notebook.useKernel',
            uri: state.uri,
          },
        ),
      );
      return;
    }
    if (state.on) {
      this.el.append(
        icon('notebook'),
        h('span', { class: 'notebook-text' }, h('span', { text: 'Working in ' }), name),
        button('Stop working here', `Turns stop adding cells to ${revealedPlain(state.name, { line: true })}; code runs in the chat's own session`, {
          type: 'notebook.target',
          uri: state.uri,
          on: false,
        }),
      );
    } else {
      this.el.append(
        icon('notebook'),
        h('span', { class: 'notebook-text' }, name, h('span', { text: ' is open; turns do not work in it.' })),
        button('Work in notebook', `Turns add their code as cells of ${revealedPlain(state.name, { line: true })} and run them on its session`, {
          type: 'notebook.target',
          uri: state.uri,
          on: true,
        }),
      );
    }
  }
}
