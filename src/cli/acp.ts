/**
 * `codeact acp`: CodeAct as an ACP agent on stdio (core/acpAgent), for an editor that hosts agents over the Agent
 * Client Protocol. Each ACP session opens its folder (`cwd`) as `codeact chat` opens one: settings, managed tools,
 * trust, provider and model (the setting flags given here apply to every session). Conversations are saved where
 * `codeact chat` saves them, so `codeact chat --continue ID` goes on with one. stdout is the protocol's alone:
 * every warning goes to stderr.
 */
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { Readable, Writable } from 'node:stream';
import { codeActAcpAgent, type AcpFolder } from '../core/acpAgent/agent';
import { TranscriptStore } from '../core/agent/transcriptStore';
import { providerConfigFrom } from '../core/config/engine';
import { installOptionsFrom } from '../core/config/install';
import { allowancesOverride } from '../core/gateway/approvalPolicy';
import { ToolGateway } from '../core/gateway/gateway';
import { createProvider } from '../core/providers/factory';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { resolveTools } from '../core/tools/toolSources';
import { forTerminal } from '../common/untrusted';
import { parse, UsageError } from './args';
import { armStopSignals } from './stopSignals';
import { commandOptions, settingFlagsHelp, settingFlagsUsage, wrapUsage } from './flags';
import { defaultStorage, openWorkspace, reportDeclarationErrors, runtimeFrom } from './workspace';

const ACP_OPTIONS = commandOptions('chat', {
  storage: { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const);

export const ACP_SYNOPSIS = 'codeact acp [--provider P] [--model M] [options]';

const ACP_USAGE = [
  wrapUsage(`Usage: ${ACP_SYNOPSIS}`, [settingFlagsUsage('chat'), ['[--storage DIR]', '[--verbose]']], 'Usage: codeact acp '.length),
  'An ACP agent on stdio, for an editor that hosts agents over the Agent Client Protocol. Each session works in',
  "its folder (the cwd the editor gives), with that folder's settings, managed tools and trust: a folder that is",
  "not trusted gets no session (codeact trust DIR). Approvals, installs and code review are the editor's permission",
  'requests. Conversations are saved as codeact chat saves them (codeact chat --continue ID). For example, in Zed:',
  '  "agent_servers": { "CodeAct": { "type": "custom", "command": "codeact", "args": ["acp", "--provider", "anthropic", "--model", "claude-sonnet-4-6"] } }',
  ...settingFlagsHelp('chat'),
].join('\n');

export async function acpCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({ args: argv, options: ACP_OPTIONS });
  if (values.help) {
    process.stdout.write(ACP_USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new UsageError(`codeact acp takes no arguments (got "${positionals[0]}"); each session's folder is the cwd the editor gives.`);
  const log = (line: string) => process.stderr.write(`codeact: ${forTerminal(line)}\n`);
  // One way to stop, armed before anything starts (a second signal exits at once).
  const signals = armStopSignals();

  const open = async (cwd: string, earlier?: { provider?: string; model?: string; mode?: string }): Promise<AcpFolder> => {
    // A reopened conversation keeps its provider, model and mode unless a flag says otherwise (as codeact chat --continue).
    const ws = openWorkspace(cwd, {
      flags: values,
      ...(earlier ? { fallback: { provider: earlier.provider, model: earlier.model, mode: earlier.mode } } : {}),
    });
    const untrusted =
      `This folder (${ws.dir}) is not trusted, so CodeAct runs no code in it. ` +
      `To trust it: codeact trust ${JSON.stringify(ws.dir)}, then start a new session.`;
    // Nothing is started for a folder that is not trusted (no session host, no tools' servers).
    if (!ws.trust.trusted) throw new Error(untrusted);
    const config = ws.config;
    if (!config.model) throw new Error("No model is set: start codeact acp with --model (or set codeact.model in the folder's or your user settings).");
    ws.toolSet = await resolveTools(ws.toolSet);
    reportDeclarationErrors(ws.toolSet);
    const runtime = await runtimeFrom(ws, { longLived: true, sessionHost: true, verbose: values.verbose });
    return {
      dir: ws.dir,
      config,
      trusted: ws.trust.trusted,
      untrusted,
      runtime,
      gateway: (asking) =>
        new ToolGateway(ws.toolSet.tools, {
          approver: asking.approver,
          policyOverride: allowancesOverride(config.alwaysAllow, asking.session),
          unusable: ws.toolSet.errors,
          ...installOptionsFrom(config, { trusted: ws.trust.trusted, folder: ws.dir, approve: asking.install }),
        }),
      provider: () => createProvider(providerConfigFrom(config, undefined)),
      dispose: () => runtime.dispose(),
    };
  };

  const door = codeActAcpAgent({ store: new TranscriptStore(values.storage ?? defaultStorage()), open, log });
  const connection = door.app.connect(
    ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>),
  );
  try {
    // The editor went away (stdin ended: the connection closes), or a signal.
    await Promise.race([connection.closed, signals.stopped, new Promise((resolve) => process.stdout.once('error', resolve))]);
    return 0;
  } finally {
    connection.close();
    await door.end();
    await disposeDefaultMcpPool();
    signals.disarm();
  }
}
