/** The empty state: what the panel needs before the first turn (key, model, tools, trust), and example prompts. */
import type { BrokenToolSummary, HostCommand, HostState, ToolSummary } from '../common/protocol';
import { MODES, ourRuntimeOf } from '../common/runtimes';
import { findProvider } from '../common/providers';
import { h } from './dom';
import { icon, type IconName } from './icons';
import { button } from './viewKit';
import { revealed, revealedPlain } from './reveal';

interface EmptyStateActions {
  command(command: HostCommand): void;
  /** Puts an example prompt into the input. */
  example(text: string): void;
}

export function renderEmptyState(el: HTMLElement, host: HostState | undefined, actions: EmptyStateActions): void {
  const provider = host?.providers.find((p) => p.id === host.provider) ?? host?.providers[0];
  const hasKey = Boolean(provider?.hasKey);
  const keyOptional = findProvider(provider?.id)?.keyOptional;
  const hasModel = Boolean(host?.model);
  const tools = host?.tools ?? [];
  const broken = host?.brokenTools ?? [];
  const trusted = host?.trusted !== false;
  const cmd = (command: HostCommand) => () => actions.command(command);

  const step = (done: boolean, iconName: IconName, title: string, detail: string, action: HTMLElement | null) =>
    h(
      'li',
      { class: `step${done ? ' done' : ''}` },
      h('span', { class: 'step-icon', 'aria-hidden': 'true' }, icon(done ? 'pass' : iconName)),
      // A step names the provider, the model and the tools (an endpoint's label, a server's model id, MCP tool names): markers as boxes.
      h('div', { class: 'step-text' }, h('div', { class: 'step-title' }, revealed(title)), h('div', { class: 'step-detail' }, revealed(detail))),
      action,
    );

  const runtime = host?.mode && MODES[host.mode]?.ourRuntime === false ? `in the ${provider?.label ?? 'provider'} sandbox` : ourRuntimeOf(host?.runtime).where;
  const steps = h(
    'ol',
    { class: 'steps', 'aria-label': 'Setup' },
    step(
      hasKey,
      'key',
      keyOptional
        ? 'No API key needed'
        : hasKey
          ? `API key for ${provider?.label ?? 'the provider'} is set`
          : `Set an API key${provider ? ` for ${provider.label}` : ''}`,
      keyOptional
        ? keyOptional
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
    toolsStep(tools, broken, actions, step, !hasKey || !hasModel),
  );
  el.textContent = '';
  el.append(
    h('div', { class: 'hero', 'aria-hidden': 'true' }, icon('sparkle')),
    h('h1', { class: 'empty-title', text: 'Put your tools to work' }),
    h(
      'p',
      { class: 'empty-lede' },
      revealed(`The model writes Python that calls only the managed tools of this workspace, runs it ${runtime}, and shows every step here.`),
    ),
    steps,
  );
  if (!trusted) {
    // First thing under the title: nothing else on this page works until the workspace is trusted.
    el.insertBefore(
      h(
        'div',
        { class: 'trust-warning', role: 'note' },
        icon('lock'),
        h(
          'div',
          null,
          h('strong', { text: 'Restricted mode. ' }),
          h('span', { text: 'This workspace is not trusted, so code execution and workspace-declared tools are off.' }),
        ),
        button('Manage Workspace Trust', null, cmd('manageTrust')),
      ),
      steps,
    );
  }
  const ex = h('div', { class: 'examples', role: 'group', 'aria-label': 'Example prompts' });
  for (const e of examplePrompts(trusted ? tools : []))
    ex.append(
      // It names the workspace's tools; the prompt it puts in the composer is the text as it is.
      h(
        'button',
        { class: 'example', type: 'button', title: e.title === undefined ? undefined : revealedPlain(e.title), onclick: () => actions.example(e.prompt) },
        revealed(e.prompt),
      ),
    );
  el.append(
    h('div', { class: 'examples-label', text: 'Try' }),
    ex,
    h('p', { class: 'hint', text: 'Enter sends · Shift+Enter new line · ↑ ↓ earlier prompts' }),
  );
}

type StepFn = (done: boolean, iconName: IconName, title: string, detail: string, action: HTMLElement | null) => HTMLLIElement;

/** "3 tools ready, 1 broken": the broken ones are named, with why and where to fix them. */
function toolsStep(tools: ToolSummary[], broken: BrokenToolSummary[], actions: EmptyStateActions, step: StepFn, later: boolean): HTMLLIElement {
  const declare = () => actions.command('declareTools');
  if (!tools.length && !broken.length) {
    return step(
      false,
      'tools',
      'Declare the tools the code may call',
      'Add entries to codeact.tools in .vscode/settings.json: a command, an HTTP endpoint or an MCP tool.',
      button('Declare Tools…', 'gear', declare, later ? 'button secondary' : 'button primary'),
    );
  }
  const names =
    tools
      .slice(0, 6)
      .map((t) => t.name)
      .join(', ') + (tools.length > 6 ? ', …' : '');
  const title = `${tools.length} ${tools.length === 1 ? 'tool' : 'tools'} ready${broken.length ? `, ${broken.length} broken` : ''}`;
  if (!broken.length) return step(true, 'tools', title, names, button('Edit Tools', 'gear', declare));
  const li = step(
    false,
    'warning',
    title,
    names || 'None of the declared tools can be used.',
    button('Fix in settings.json', 'edit', declare, 'button primary', 'Open .vscode/settings.json at codeact.tools'),
  );
  li.classList.add('broken');
  const why = h(
    'details',
    { class: 'broken-tools' },
    h('summary', null, revealed(broken.length === 1 ? `Why is ${label(broken[0])} broken?` : `Why are ${broken.length} tools broken?`)),
  );
  const list = h('ul');
  for (const b of broken) list.append(h('li', null, h('code', null, revealed(label(b), { line: true })), h('span', null, revealed(` ${b.message}`))));
  why.append(list);
  li.querySelector('.step-text')?.append(why);
  return li;
}

function label(b: BrokenToolSummary): string {
  return b.name ?? (b.index >= 0 ? `codeact.tools[${b.index}]` : 'codeact.tools');
}

/** Example prompts about the workspace's own tools (or about plain Python when it has none). */
function examplePrompts(tools: ToolSummary[]): { prompt: string; title?: string }[] {
  if (!tools.length) return [{ prompt: 'What could managed tools do in this workspace?' }, { prompt: 'Write Python that lists the 10 largest files here' }];
  const names = tools.map((t) => t.name);
  const list = names.length <= 4 ? joinAnd(names) : `${names.slice(0, 3).join(', ')} and the other ${names.length - 3}`;
  const out: { prompt: string; title?: string }[] = [{ prompt: `What can you do with ${list}?` }];
  const [first, second] = tools;
  out.push({ prompt: `Call ${first.name} once and explain what it returns`, title: first.description });
  if (second)
    out.push({
      prompt: `Use ${first.name} and ${second.name} together to answer a real question`,
      title: [first, second].map((t) => `${t.name}: ${t.description ?? ''}`).join('\n'),
    });
  return out;
}

function joinAnd(xs: string[]): string {
  return xs.length < 2 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
}
