/**
 * `codeact chat "<prompt>" --provider openai|anthropic|gemini|openai-compatible --model M [options]`
 *
 * Runs the agent loop headless: the model writes code, it runs in the local guest (or a Jupyter kernel,
 * or the provider's sandbox with --mode hosted), and the answer streams to the terminal. Conversations
 * are saved as JSON lines and can be continued with --continue.
 */
import { homedir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import type { CodeActEvent } from './common/events';
import { sanitizeTerminal, TerminalSanitizer } from './common/terminal';
import { AgentLoop, type AgentMode } from './core/agent/agent';
import { AGENT_PROTOCOLS, type AgentProtocol } from './core/agent/textProtocol';
import { TranscriptStore, titleFrom, type Conversation } from './core/agent/transcriptStore';
import { ToolGateway } from './core/gateway/gateway';
import { ProviderError } from './core/providers/errors';
import { createProvider } from './core/providers/factory';
import type { ProviderId } from './core/providers/types';
import { codeactSetting } from './core/tools/settingsFile';
import { disposeDefaultMcpPool, resolveMcpTools } from './core/tools/mcp';
import type { RuntimeSetting } from './core/runtime/factory';
import { humanPrinter, openWorkspace, parseTimeout, reportDeclarationErrors, runtimeFrom, UsageError } from './cli';

const CHAT_USAGE = `Usage: codeact chat "<prompt>" --provider openai|anthropic|gemini|openai-compatible --model M
         [--base-url URL] [--mode toolCode|hosted|code] [--protocol tools|text] [--workspace DIR] [--max-turns N]
         [--continue SESSION] [--runtime local|jupyter] [--jupyter-url URL] [--timeout SECONDS]
         [--sandbox auto|bubblewrap|none] [--python PATH] [--session conversation|run]
         [--storage DIR] [--json]
       codeact chat --list [--storage DIR]

Keys come from OPENAI_API_KEY, ANTHROPIC_API_KEY, and GEMINI_API_KEY or GOOGLE_API_KEY
(OpenAI-compatible servers usually need none). The Jupyter token comes from CODEACT_JUPYTER_TOKEN.
--protocol text: the model writes \`\`\`python blocks instead of calling functions (models without function calling).`;

export function defaultStorage(): string {
  if (process.env.CODEACT_HOME) return path.join(process.env.CODEACT_HOME, 'conversations');
  const base = process.env.XDG_DATA_HOME || path.join(homedir(), '.local', 'share');
  return path.join(base, 'codeact', 'conversations');
}

const PROVIDERS: ProviderId[] = ['openai', 'anthropic', 'gemini', 'openai-compatible'];
const MODES: AgentMode[] = ['toolCode', 'hosted', 'code'];

export async function chatCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        provider: { type: 'string', short: 'p' },
        model: { type: 'string', short: 'm' },
        'base-url': { type: 'string' },
        mode: { type: 'string' },
        protocol: { type: 'string' },
        workspace: { type: 'string', short: 'w' },
        'max-turns': { type: 'string' },
        continue: { type: 'string', short: 'c' },
        runtime: { type: 'string' },
        'jupyter-url': { type: 'string' },
        'jupyter-kernel': { type: 'string' },
        timeout: { type: 'string', short: 't' },
        sandbox: { type: 'string' },
        python: { type: 'string' },
        session: { type: 'string' },
        storage: { type: 'string' },
        list: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(CHAT_USAGE + '\n');
    return 0;
  }
  const store = new TranscriptStore(values.storage ?? defaultStorage());
  if (values.list) {
    const list = store.list();
    if (values.json) process.stdout.write(JSON.stringify(list) + '\n');
    else if (!list.length) process.stdout.write(`No conversations in ${store.dir}.\n`);
    else for (const c of list) process.stdout.write(`${c.id}  ${new Date(c.updatedAt).toISOString().slice(0, 16).replace('T', ' ')}  ${c.provider ?? ''}/${c.model ?? ''}  ${c.title}\n`);
    return 0;
  }
  if (positionals.length !== 1 || !positionals[0].trim()) throw new UsageError('codeact chat needs one prompt (quote it).\n\n' + CHAT_USAGE);
  const prompt = positionals[0];

  let conversation: Conversation | undefined;
  if (values.continue) {
    if (!store.exists(values.continue)) throw new UsageError(`No conversation "${values.continue}" in ${store.dir} (see codeact chat --list).`);
    conversation = store.open(values.continue);
  }
  const ws = openWorkspace(values.workspace ?? conversation?.meta.workspace);
  const provider = (values.provider ?? conversation?.meta.provider ?? codeactSetting<string>(ws.settings, 'provider')) as ProviderId | undefined;
  if (!provider || !PROVIDERS.includes(provider)) throw new UsageError(`--provider must be one of ${PROVIDERS.join(', ')}${provider ? `, not "${provider}"` : ''}.`);
  const model = values.model ?? conversation?.meta.model ?? codeactSetting<string>(ws.settings, 'model');
  if (!model) throw new UsageError('--model is required (for example gpt-5, claude-sonnet-4-6, gemini-3-flash-preview, or a local model name).');
  const mode = (values.mode ?? conversation?.meta.mode ?? codeactSetting<string>(ws.settings, 'mode') ?? 'toolCode') as AgentMode;
  if (!MODES.includes(mode)) throw new UsageError(`--mode must be toolCode, hosted or code, not "${mode}".`);
  const protocol = (values.protocol ?? codeactSetting<string>(ws.settings, 'agent.protocol') ?? 'tools') as AgentProtocol;
  if (!AGENT_PROTOCOLS.includes(protocol)) throw new UsageError(`--protocol must be tools or text, not "${protocol}".`);
  const maxTurns = values['max-turns'] === undefined ? codeactSetting<number>(ws.settings, 'maxTurns') : Number(values['max-turns']);
  if (maxTurns !== undefined && !(Number.isInteger(maxTurns) && maxTurns > 0)) throw new UsageError(`--max-turns must be a positive integer, not "${values['max-turns']}".`);
  const runtimeKind = (values.runtime ?? codeactSetting<string>(ws.settings, 'runtime') ?? 'local') as RuntimeSetting;
  if (runtimeKind !== 'local' && runtimeKind !== 'jupyter') throw new UsageError(`--runtime must be local or jupyter, not "${runtimeKind}".`);
  // MCP tools without a declared description or schema get them from their servers, so the model sees them.
  ws.toolSet = await resolveMcpTools(ws.toolSet);
  reportDeclarationErrors(ws.toolSet);

  let llm;
  try {
    llm = await createProvider({ provider, baseURL: baseUrlFor(provider, values['base-url'], ws.settings) });
  } catch (e) {
    if (e instanceof ProviderError) {
      process.stderr.write(`codeact: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const sessionPolicy = values.session ?? codeactSetting<string>(ws.settings, 'session.policy') ?? 'conversation';
  if (sessionPolicy !== 'conversation' && sessionPolicy !== 'run') throw new UsageError(`--session must be conversation or run, not "${sessionPolicy}".`);
  const preload = codeactSetting<unknown[]>(ws.settings, 'python.preload');
  // One Python session for the conversation (variables survive between its runs), forked from a warm
  // zygote when modules are preloaded; --session run gives every run a fresh process.
  const runtime = await runtimeFrom(values, ws, {
    session: sessionPolicy,
    preload: Array.isArray(preload) ? preload.filter((m): m is string => typeof m === 'string').slice(0, 64) : [],
    log: () => {},
  });
  const continued = !!conversation && runtime.statePersists && conversation.events.some((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call');
  if (continued && !values.json) {
    process.stderr.write(`${conversation!.id}: continuing in a new Python session; variables from the earlier runs are gone.\n`);
  }

  conversation ??= store.create({ title: titleFrom(prompt), provider, model, mode, workspace: ws.dir });
  const convo = conversation;
  const gateway = new ToolGateway(ws.toolSet.tools);
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const print = values.json ? (e: CodeActEvent) => process.stdout.write(JSON.stringify(e) + '\n') : chatPrinter();
  const agent = new AgentLoop({
    provider: llm,
    model,
    runtime,
    gateway,
    mode,
    protocol,
    inlineToolLimit: codeactSetting<number>(ws.settings, 'toolDiscovery.inlineLimit'),
    maxTurns,
    sessionId: convo.id,
    ...(continued
      ? { sessionNote: 'Note: this conversation is being continued in a new Python session: variables, imports and files from the code above no longer exist; recreate what you need.' }
      : {}),
    executionTimeoutMs: parseTimeout(values.timeout, ws.settings),
    hosted: { containerId: convo.meta.containerId ?? null },
    signal: controller.signal,
    onEvent: (e) => {
      convo.appendEvent(e);
      print(e);
    },
  });
  // Turn markers go to the transcript (so the panel can reopen CLI conversations), not to --json output.
  const turnId = `turn_${Date.now().toString(36)}`;
  const startedAt = Date.now();
  convo.appendEvent({ type: 'codeact.turn.started', turn_id: turnId, prompt, source: 'cli', provider, model, runtime: runtime.kind, started_at: startedAt });
  try {
    const result = await agent.run(convo.history, prompt);
    convo.appendEvent({
      type: 'codeact.turn.ended',
      turn_id: turnId,
      status: result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'stopped' : 'failed',
      duration_ms: Date.now() - startedAt,
      ...(result.error ? { message: result.error.message } : {}),
    });
    convo.appendItems(result.items);
    if (result.containerId !== undefined && result.containerId !== convo.meta.containerId) convo.update({ containerId: result.containerId });
    convo.flush();
    if (!values.json) {
      if (result.text && !result.text.endsWith('\n')) process.stdout.write('\n');
      const u = result.usage.total;
      process.stderr.write(`\n[${convo.id}] ${result.status}; tokens in ${u.input_tokens}, out ${u.output_tokens}. Continue with: codeact chat --continue ${convo.id} "<prompt>"\n`);
      if (result.error && result.status !== 'completed') process.stderr.write(`codeact: ${result.error.message}\n`);
    }
    return result.status === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await runtime.closeSession?.(convo.id);
    await runtime.dispose();
    await disposeDefaultMcpPool();
  }
}

/**
 * The base URL: --base-url, or the workspace's codeact.baseUrl for an OpenAI-compatible server only. A
 * repository's settings must not redirect a first-party provider (and its API key) to a server it chose.
 */
function baseUrlFor(provider: ProviderId, flag: string | undefined, settings: Record<string, unknown>): string | undefined {
  if (flag) return flag;
  const fromSettings = codeactSetting<string>(settings, 'baseUrl') || undefined;
  if (fromSettings && provider !== 'openai-compatible') {
    process.stderr.write(`warning: ignoring codeact.baseUrl from the workspace settings for ${provider} (it would receive your API key); pass --base-url to use it.\n`);
    return undefined;
  }
  return fromSettings;
}

function chatPrinter(): (e: CodeActEvent) => void {
  const base = humanPrinter();
  const tty = process.stdout.isTTY && !process.env.NO_COLOR;
  const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[22m` : s);
  let inCode = false;
  const text = new TerminalSanitizer();
  const code = new TerminalSanitizer();
  return (e) => {
    switch (e.type) {
      case 'response.output_text.delta':
        if (!e.thinking) process.stdout.write(text.write(e.delta));
        break;
      case 'response.code_interpreter_call.in_progress':
        process.stdout.write(dim('\n```python\n'));
        inCode = true;
        break;
      case 'response.code_interpreter_call_code.delta':
        if (inCode) process.stdout.write(dim(code.write(e.delta)));
        break;
      case 'response.code_interpreter_call_code.done':
        if (inCode) process.stdout.write(dim(e.code.endsWith('\n') ? '```\n' : '\n```\n'));
        inCode = false;
        break;
      case 'response.output_item.done':
        if (e.item.type === 'code_interpreter_call') {
          const it = e.item;
          if (it.runtime !== 'local' && it.runtime !== 'jupyter') {
            for (const o of it.outputs) if (o.type === 'logs') (o.stream === 'stderr' ? process.stderr : process.stdout).write(sanitizeTerminal(o.logs.endsWith('\n') ? o.logs : o.logs + '\n'));
          }
          process.stdout.write(sanitizeTerminal(it.status === 'completed' ? dim(`⇒ ${JSON.stringify(it.value ?? null).slice(0, 300)}\n\n`) : `✗ ${it.error?.type ?? 'Error'}: ${it.error?.message ?? ''}\n\n`));
        }
        break;
      case 'codeact.retry':
        process.stderr.write(`${e.message}\n`);
        break;
      case 'error':
        break;
      default:
        base(e);
    }
  };
}
