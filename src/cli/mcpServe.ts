/**
 * `codeact mcp serve`: CodeAct as an MCP server on stdio (core/mcpServer), for another agent to run Python in a
 * live, sandboxed session of the folder with its managed tools. The folder, its settings and their trust are read
 * as `codeact run` reads them; in a folder that is not trusted nothing runs (each code tool says how to trust it).
 * stdout is the protocol's alone: every warning goes to stderr.
 */
import { TranscriptStore } from '../core/agent/transcriptStore';
import { imageBudgetFrom } from '../core/config/engine';
import { installOptionsFrom } from '../core/config/install';
import { allowancesOverride } from '../core/gateway/approvalPolicy';
import { ToolGateway } from '../core/gateway/gateway';
import { serveMcpHttp } from '../core/mcpServer/http';
import { codeActMcpServer } from '../core/mcpServer/server';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { resolveTools } from '../core/tools/toolSources';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { parse, UsageError } from './args';
import { armStopSignals } from './stopSignals';
import { commandOptions, settingFlagsHelp, settingFlagsUsage, wrapUsage } from './flags';
import { defaultStorage, openWorkspace, reportDeclarationErrors, runtimeFrom } from './workspace';

const SERVE_FLAGS = {
  workspace: { type: 'string', short: 'w' },
  folder: { type: 'string' },
  'trust-workspace': { type: 'boolean' },
  verbose: { type: 'boolean' },
  http: { type: 'boolean' },
  port: { type: 'string' },
  'keep-session': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const SERVE_OPTIONS = commandOptions('run', SERVE_FLAGS);

/** What `--keep-session` takes: a name that is safe in a session id and on a terminal. */
const SESSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function serveSynopsis(lead: string): string {
  return wrapUsage(
    `${lead}codeact mcp serve [--workspace DIR|FILE.code-workspace [--folder NAME|PATH]] [--http [--port N]] [--keep-session NAME]`,
    [settingFlagsUsage('run'), ['[--trust-workspace]', '[--verbose]']],
    lead.length + 'codeact mcp serve '.length,
  );
}

const SERVE_USAGE = [
  serveSynopsis('Usage: '),
  'An MCP server on stdio: execute_tool_code and execute_code run Python in one live, sandboxed session per',
  "MCP session, with the folder's managed tools (approvals are asked through the client's elicitation);",
  'list_variables and restart_session manage it. For example, in Claude Code:',
  '  claude mcp add codeact -- codeact mcp serve --workspace /path/to/project',
  '--http serves Streamable HTTP on 127.0.0.1 instead (--port N; default: a free port), with a bearer token',
  'made for this start: both are printed on stderr. Ctrl+C ends the server and its sessions.',
  "--keep-session NAME: every MCP session runs in the one Python session NAME, kept in the folder's session host",
  'when the server ends: the next server with that name finds its variables (codeact sessions end mcp-NAME ends it).',
  ...settingFlagsHelp('run'),
].join('\n');

export async function mcpServeCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({ args: argv, options: SERVE_OPTIONS });
  if (values.help) {
    process.stdout.write(SERVE_USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new UsageError(`codeact mcp serve takes no arguments (got "${positionals[0]}"); the folder is --workspace DIR.`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (values.port !== undefined && !values.http) throw new UsageError('--port goes with --http.');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port takes a port number (0-65535), not "${values.port}".`);
  if (values['keep-session'] !== undefined && !SESSION_NAME.test(values['keep-session']))
    throw new UsageError(
      `--keep-session takes a name of letters, digits, ".", "_" and "-" (at most 64, starting with a letter or digit), not "${values['keep-session']}".`,
    );
  const session = values['keep-session'] === undefined ? undefined : `mcp-${values['keep-session']}`;
  // One way to stop, armed before anything starts (a second signal exits at once).
  const signals = armStopSignals();
  const ws = openWorkspace(values.workspace, { flags: values, trustOverride: values['trust-workspace'], folder: values.folder });
  // In a folder that is not trusted nothing runs: no guest is started ahead of need either.
  // A named session lives in the folder's session host (as codeact chat's do), so it outlives this server.
  const runtime = await runtimeFrom(ws, { longLived: ws.trust.trusted, sessionHost: !!session && ws.trust.trusted, verbose: values.verbose });
  if (session && ws.trust.trusted && !runtime.sessions.outlivesClient)
    process.stderr.write(
      `codeact: --keep-session ${values['keep-session']}: this runtime keeps no session after the server ends (the runtime is not local, codeact.session.host is "off", or sessions are per run); its MCP sessions share it while the server runs.\n`,
    );
  try {
    ws.toolSet = await resolveTools(ws.toolSet);
    reportDeclarationErrors(ws.toolSet);
    const refusal = ws.trust.trusted
      ? undefined
      : `This folder (${ws.dir}) is not trusted, so CodeAct runs no code in it for an MCP client. ` +
        `To trust it: codeact trust ${JSON.stringify(ws.dir)} (or start the server with --trust-workspace), then restart the server.`;
    const door: Parameters<typeof codeActMcpServer>[0] = {
      runtime,
      gateway: (asking) =>
        new ToolGateway(ws.toolSet.tools, {
          approver: asking.approver,
          policyOverride: allowancesOverride(ws.config.alwaysAllow, asking.session),
          unusable: ws.toolSet.errors,
          ...installOptionsFrom(ws.config, { trusted: ws.trust.trusted, folder: ws.dir, approve: asking.install }),
        }),
      timeoutMs: ws.config.timeoutMs,
      outputChars: ws.config.outputModelChars,
      images: imageBudgetFrom(ws.config),
      maxJobs: ws.config.maxJobs,
      inlineLimit: ws.config.toolsInlineLimit,
      reviewCode: ws.config.reviewCode,
      refusal,
      ...(session ? { session } : {}),
      // Each MCP session is kept as a conversation of codeact chat's store: the panel and `codeact chat --continue` go on with it.
      ...(ws.trust.trusted ? { transcript: { store: new TranscriptStore(defaultStorage()), workspace: ws.dir } } : {}),
    };
    if (signals.signalled) return 0;
    if (values.http) {
      const http = await serveMcpHttp(door, port);
      process.stderr.write(`CodeAct MCP server (Streamable HTTP): ${http.url}\nAuthorization: Bearer ${http.token}\n`);
      await signals.stopped;
      await http.close();
      return 0;
    }
    const server = codeActMcpServer(door);
    // The client went away: stdin ended or closed, or stdout cannot be written (EPIPE).
    const closed = new Promise<void>((resolve) => {
      server.onclose = resolve;
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.stdout.once('error', resolve);
      void signals.stopped.then(resolve);
    });
    await server.connect(new StdioServerTransport());
    await closed;
    await server.close().catch(() => {});
    return 0;
  } finally {
    await runtime.dispose();
    await disposeDefaultMcpPool();
    signals.disarm();
  }
}
