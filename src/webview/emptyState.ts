/** The empty state: what the panel needs before the first turn (key, model, tools, trust), and example prompts. */
import type { HostCommand, HostState } from '../common/protocol';
import { h } from './dom';
import { icon, type IconName } from './icons';
import { button } from './viewKit';

export interface EmptyStateActions {
  command(command: HostCommand): void;
  /** Puts an example prompt into the input. */
  example(text: string): void;
}

export function renderEmptyState(el: HTMLElement, host: HostState | undefined, actions: EmptyStateActions): void {
  const provider = host?.providers.find((p) => p.id === host.provider) ?? host?.providers[0];
  const hasKey = Boolean(provider?.hasKey);
  const localServer = provider?.id === 'openai-compatible';
  const hasModel = Boolean(host?.model);
  const tools = host?.tools ?? [];
  const trusted = host?.trusted !== false;
  const cmd = (command: HostCommand) => () => actions.command(command);

  const step = (done: boolean, iconName: IconName, title: string, detail: string, action: HTMLElement | null) =>
    h(
      'li',
      { class: `step${done ? ' done' : ''}` },
      h('span', { class: 'step-icon', 'aria-hidden': 'true' }, icon(done ? 'pass' : iconName)),
      h('div', { class: 'step-text' }, h('div', { class: 'step-title', text: title }), h('div', { class: 'step-detail', text: detail })),
      action,
    );

  const runtime = host?.mode === 'hosted' ? `in the ${provider?.label ?? 'provider'} sandbox` : host?.runtime === 'jupyter' ? 'on your Jupyter kernel' : 'in a local Python sandbox';
  const steps = h(
    'ol',
    { class: 'steps', 'aria-label': 'Setup' },
    step(
      hasKey,
      'key',
      localServer ? 'No API key needed' : hasKey ? `API key for ${provider?.label ?? 'the provider'} is set` : `Set an API key${provider ? ` for ${provider.label}` : ''}`,
      localServer
        ? 'OpenAI-compatible servers such as Ollama, vLLM and llama.cpp usually need none; set one with Set API Key… if yours does.'
        : hasKey
          ? 'Kept in VS Code SecretStorage (or read from the environment); never written to settings or logs.'
          : 'Keys go to VS Code SecretStorage. An environment variable works too.',
      hasKey ? null : button('Set API Key…', 'key', cmd('setApiKey'), 'button primary'),
    ),
    step(
      hasModel,
      'sparkle',
      hasModel ? `Model: ${provider?.models.find((m) => m.id === host?.model)?.label ?? host?.model}` : 'Choose a provider and model',
      hasModel ? `${provider?.label ?? ''} — change it any time in the picker below.` : 'Pick one in the picker below or from the list of models.',
      hasModel ? null : button('Select Model…', 'sparkle', cmd('selectModel'), hasKey ? 'button primary' : 'button secondary'),
    ),
    step(
      tools.length > 0,
      'tools',
      tools.length ? `${tools.length} managed ${tools.length === 1 ? 'tool' : 'tools'} declared` : 'Declare the tools the code may call',
      tools.length ? tools.slice(0, 6).map((t) => t.name).join(', ') + (tools.length > 6 ? ', …' : '') : 'Add entries to codeact.tools in .vscode/settings.json: a command, an HTTP endpoint or an MCP tool.',
      button(tools.length ? 'Edit Tools' : 'Declare Tools…', 'gear', cmd('declareTools'), tools.length || !hasKey || !hasModel ? 'button secondary' : 'button primary'),
    ),
  );
  el.textContent = '';
  el.append(
    h('div', { class: 'hero', 'aria-hidden': 'true' }, icon('sparkle')),
    h('h1', { class: 'empty-title', text: 'Put your tools to work' }),
    h('p', { class: 'empty-lede', text: `The model writes Python that calls only the managed tools of this workspace, runs it ${runtime}, and shows every step here.` }),
    steps,
  );
  if (!trusted) {
    // First thing under the title: nothing else on this page works until the workspace is trusted.
    el.insertBefore(
      h(
        'div',
        { class: 'trust-warning', role: 'note' },
        icon('lock'),
        h('div', null, h('strong', { text: 'Restricted mode. ' }), h('span', { text: 'This workspace is not trusted, so code execution and workspace-declared tools are off.' })),
        button('Manage Workspace Trust', null, cmd('manageTrust')),
      ),
      steps,
    );
  }
  const examples = ['What can you do with my tools?', 'Summarise the open orders and flag any that are late', 'Plot revenue per day for the last two weeks'];
  const ex = h('div', { class: 'examples', role: 'group', 'aria-label': 'Example prompts' });
  for (const e of examples)
    ex.append(
      h('button', {
        class: 'example',
        type: 'button',
        text: e,
        onclick: () => actions.example(e),
      }),
    );
  el.append(h('div', { class: 'examples-label', text: 'Try' }), ex, h('p', { class: 'hint', text: 'Enter sends · Shift+Enter new line · ↑ ↓ earlier prompts' }));
}
