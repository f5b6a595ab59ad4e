/**
 * MCP sign-in for the CLI: tokens and client registrations in a 0600 file in the config folder
 * (`$CODEACT_HOME/mcp-auth.json`, or `~/.config/codeact/mcp-auth.json`); the sign-in prints the
 * authorization URL on stderr and opens it in a browser when there is a desktop, then waits for the
 * loopback redirect. `codeact mcp list` and `codeact mcp sign-out [URL | --all]` manage what is kept.
 */
import { mcpServeCommand } from './mcpServe';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { forTerminal } from '../common/untrusted';
import { configDir } from '../core/config/folderTrust';
import { readConfigFile } from '../core/config/workspaceFile';
import { McpSignInError, signedInMcpServers, signOutMcpServer, type McpAuthHost } from '../core/tools/sources/mcp/auth';
import type { McpSecretStore } from '../core/tools/sources/mcp/authStore';
import { writeFileAtomicSync } from '../core/util/atomicFile';
import { terminalQuestions, type TerminalQuestions } from './terminalQuestions';
import { parse, UsageError } from './args';

/** The CLI's sign-in file. */
function cliAuthFile(): string {
  return path.join(configDir(), 'mcp-auth.json');
}

/**
 * A store in one JSON file, written 0600 (its folder 0700) and replaced atomically. A file that is not
 * a regular file or is too large is an error that names it (it is never read blindly).
 */
export function fileSecretStore(file: string = cliAuthFile()): McpSecretStore {
  const read = (): Record<string, string> => {
    const bytes = readConfigFile(file);
    if (bytes === undefined) return {};
    try {
      const v = JSON.parse(bytes.toString('utf8')) as unknown;
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
    } catch {
      return {};
    }
  };
  const write = (data: Record<string, string>) => {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileAtomicSync(file, JSON.stringify(data, null, 2) + '\n', { mode: 0o600 });
  };
  return {
    get: async (k) => {
      const v = read()[k];
      return typeof v === 'string' ? v : undefined;
    },
    set: async (k, v) => write({ ...read(), [k]: v }),
    delete: async (k) => {
      const data = read();
      if (!(k in data)) return;
      delete data[k];
      write(data);
    },
  };
}

/** Opens `url` in the desktop's browser, when there is one; never fails (the URL is printed anyway). */
function openInBrowser(url: string): void {
  const cmd =
    process.platform === 'darwin'
      ? 'open'
      : process.platform === 'win32'
        ? 'explorer'
        : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
          ? 'xdg-open'
          : undefined;
  if (!cmd || process.env.CODEACT_NO_BROWSER) return;
  try {
    const child = spawn(cmd, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    /* printed */
  }
}

/**
 * The CLI's sign-in: a command of the user's, so it signs in when a server asks (it prints the URL; there is
 * no background listing to protect). The link is printed in its turn among the terminal's questions
 * (./terminalQuestions), never in the middle of another one.
 */
export function cliMcpAuthHost(
  secrets: McpSecretStore = fileSecretStore(),
  err: NodeJS.WriteStream = process.stderr,
  questions: TerminalQuestions = terminalQuestions(),
): McpAuthHost {
  return {
    secrets,
    authorize: async ({ label, authorizationUrl }) => {
      if (!err.isTTY && !process.env.CODEACT_MCP_SIGN_IN) {
        throw new McpSignInError(
          `it needs you to sign in in a browser, and this command has no terminal to ask from. Run it in a terminal once (or set CODEACT_MCP_SIGN_IN=1 to print the link anyway).`,
        );
      }
      const say = async () => {
        err.write(
          `\nThe ${forTerminal(label, { line: true })} needs you to sign in. Open this link in a browser (waiting up to 5 minutes):\n\n  ${forTerminal(authorizationUrl.href, { line: true })}\n\n`,
        );
        openInBrowser(authorizationUrl.href);
        return true;
      };
      return questions.interactive ? questions.ask(undefined, () => true, say) : say();
    },
  };
}

const MCP_USAGE = `Usage: codeact mcp serve [options]         CodeAct as an MCP server on stdio (codeact mcp serve --help)
       codeact mcp list                  the MCP servers you are signed in to
       codeact mcp sign-out URL|--all    forget the tokens and client registration of a server (or all)`;

/** `codeact mcp serve …` (./mcpServe), `codeact mcp list`, `codeact mcp sign-out URL|--all`. */
export async function mcpCommand(argv: string[], secrets: McpSecretStore = fileSecretStore()): Promise<number> {
  if (argv[0] === 'serve') return mcpServeCommand(argv.slice(1));
  const { values, positionals } = parse({
    args: argv,
    options: { all: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  const [sub, ...rest] = positionals;
  if (values.help || !sub) {
    process.stdout.write(MCP_USAGE + '\n');
    return values.help ? 0 : 2;
  }
  const servers = await signedInMcpServers(secrets);
  if (sub === 'list') {
    if (values.json) process.stdout.write(JSON.stringify(servers.map(({ serverUrl, label, hasTokens }) => ({ serverUrl, label, signedIn: hasTokens }))) + '\n');
    else if (!servers.length) process.stdout.write('Not signed in to any MCP server.\n');
    else for (const s of servers) process.stdout.write(`${forTerminal(s.serverUrl, { line: true })}${s.hasTokens ? '' : '  (registered, not signed in)'}\n`);
    return 0;
  }
  if (sub === 'sign-out') {
    if (!values.all && rest.length !== 1) throw new UsageError('codeact mcp sign-out takes the server URL (see codeact mcp list), or --all.');
    const gone = values.all ? servers : servers.filter((s) => s.serverUrl === rest[0]);
    if (!gone.length) {
      process.stderr.write(`codeact: not signed in to ${values.all ? 'any MCP server' : forTerminal(rest[0], { line: true })}. See codeact mcp list.\n`);
      return 1;
    }
    for (const s of gone) await signOutMcpServer(secrets, s.key);
    for (const s of gone) process.stdout.write(`Signed out of ${forTerminal(s.serverUrl, { line: true })}.\n`);
    return 0;
  }
  throw new UsageError(`Unknown "codeact mcp" command "${sub}".`);
}
