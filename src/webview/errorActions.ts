/**
 * The buttons of a failed turn's error card, chosen by the error's code (the provider's normalised codes,
 * src/core/providers/shared/errors.ts, and the agent's own): what fixes this failure, and nothing else.
 * Retry sends the turn's prompt again; Open Settings goes to the exact setting; Show Log is always there.
 */
import { findProvider } from '../common/providers';
import type { ErrorView, TurnView } from '../common/transcript';
import type { IconName } from './icons';
import { textButton, type ViewContext } from './viewKit';

interface Action {
  label: string;
  icon: IconName;
  run(): void;
}

/** Codes a second try may fix: the provider was busy, cut the stream, or failed on its side. */
const TRANSIENT = new Set(['rate_limit', 'server', 'stream_cut', 'malformed_stream', 'internal', 'bad_request']);

export function errorActions(item: ErrorView, turn: TurnView | undefined, ctx: ViewContext): HTMLButtonElement[] {
  const code = item.code ?? '';
  const local = findProvider(turn?.provider)?.localServer === true;
  const setting = (label: string, id: string): Action => ({
    label: `Open Settings: ${label}`,
    icon: 'gear',
    run: () => ctx.post({ type: 'command', command: 'openSettings', setting: id }),
  });
  const command = (label: string, icon: IconName, c: 'setApiKey' | 'selectModel'): Action => ({
    label,
    icon,
    run: () => ctx.post({ type: 'command', command: c }),
  });
  const retry: Action | undefined =
    turn?.prompt !== undefined && (turn.source === undefined || turn.source === 'chat')
      ? { label: 'Retry', icon: 'debugRerun', run: () => ctx.post({ type: 'send', text: turn.prompt! }) }
      : undefined;

  const actions: (Action | undefined)[] = [];
  if (code === 'auth') actions.push(command('Set API Key…', 'key', 'setApiKey'), retry);
  else if (code === 'unknown_model')
    actions.push(
      command('Select Model…', 'sparkle', 'selectModel'),
      setting('Model', 'codeact.model'),
      local ? setting('Base URL', 'codeact.baseURL') : undefined,
    );
  else if (code === 'context_overflow') actions.push({ label: 'New Conversation', icon: 'add', run: () => ctx.post({ type: 'newConversation' }) });
  else if (code === 'tools_unsupported') actions.push(setting('Protocol', 'codeact.agent.protocol'), retry);
  else if (code === 'max_turns') actions.push(retry, setting('Max Turns', 'codeact.maxTurns'));
  else if (code === 'hosted_unsupported') actions.push(setting('Mode', 'codeact.mode'));
  else if (code === 'stream_stalled') actions.push(retry, setting('Stream Timeouts', 'codeact.modelStream'));
  else if (TRANSIENT.has(code) || !code) actions.push(retry, code === 'server' && local ? setting('Base URL', 'codeact.baseURL') : undefined);
  actions.push({ label: 'Show Log', icon: 'terminal', run: () => ctx.post({ type: 'command', command: 'showLog' }) });
  return actions.filter((a): a is Action => !!a).map((a, i) => textButton(a.label, a.run, i === 0 && a.label !== 'Show Log' ? 'primary' : 'secondary', a.icon));
}
