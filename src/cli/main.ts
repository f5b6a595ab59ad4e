/**
 * The `codeact` CLI: the same engine as the extension, headless.
 *
 *   codeact run <file.py|-> [--workspace DIR] [--timeout SECONDS] [--outputs DIR] [--json]
 *   codeact tools [--workspace DIR] [--json]
 *   codeact chat "<prompt>" --provider P --model M [options]
 *   codeact trust [DIR] | --revoke [DIR] | --list
 *   codeact mcp serve | list | sign-out URL|--all
 *   codeact acp [--provider P] [--model M] [options]   (an ACP agent on stdio)
 *   codeact sessions [--json] | end ID|--all
 *   codeact review [PATH...] [--staged keep|revert]   (review mode's staged writes)
 *
 * Exit codes: 0 success, 1 the code (or the model) failed or timed out, 2 usage or configuration errors.
 */
import { forTerminal } from '../common/untrusted';
import { errorCategory } from '../core/util/errors';
import { CODEACT_VERSION } from '../core/util/version';
import { configureDefaultMcpAuth } from '../core/tools/sources/mcp/pool';
import { ACP_SYNOPSIS, acpCommand } from './acp';
import { CHAT_SYNOPSIS, chatCommand } from './chat';
import { cliMcpAuthHost, mcpCommand } from './mcpAuth';
import { runCommand, runSynopsis } from './run';
import { toolsCommand } from './tools';
import { trustCommand } from './trust';
import { sessionsCommand } from './sessions';
import { reviewCommand } from './review';
import { UsageError } from './args';

const USAGE = `Usage:
${runSynopsis('  ')}
  codeact tools [--workspace DIR|FILE.code-workspace [--folder NAME|PATH]] [--trust-workspace] [--json]
  ${CHAT_SYNOPSIS} [options]
  codeact trust [DIR] | codeact trust --revoke [DIR] | codeact trust --list
  codeact mcp serve [--workspace DIR] [options]   (CodeAct as an MCP server on stdio)
  codeact mcp list | codeact mcp sign-out URL|--all
  ${ACP_SYNOPSIS}   (CodeAct as an ACP agent on stdio, for editors)
  codeact sessions [--json] | codeact sessions end ID|--all
  codeact review [PATH...] [--workspace DIR] [--staged keep|revert] [--json]   (review mode's staged writes)
  codeact --help | --version

A folder's .vscode/settings.json is obeyed in full only once the folder is trusted (codeact trust);
--trust-workspace or CODEACT_TRUST_WORKSPACE=1 trusts it for one command (CI). A .code-workspace file's
folders are read as VS Code reads them; its own settings count once it is trusted too (codeact trust FILE).
Run "codeact <command> --help" for a command's options.`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Remote MCP servers that ask for OAuth: sign in (the URL is printed), tokens in the config folder.
  configureDefaultMcpAuth(cliMcpAuthHost());
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest);
      case 'tools':
        return await toolsCommand(rest);
      case 'chat':
        return await chatCommand(rest);
      case 'trust':
        return await trustCommand(rest);
      case 'mcp':
        return await mcpCommand(rest);
      case 'acp':
        return await acpCommand(rest);
      case 'sessions':
        return await sessionsCommand(rest);
      case 'review':
        return await reviewCommand(rest);
      case '--version':
      case '-v':
        process.stdout.write(`${CODEACT_VERSION}\n`);
        return 0;
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(USAGE + '\n');
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`Unknown command "${command}".`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`codeact: ${forTerminal(e.message)}\n\n${USAGE}\n`);
      return 2;
    }
    const category = errorCategory(e);
    if (category === 'config' || category === 'environment') {
      process.stderr.write(`codeact: ${forTerminal((e as Error).message)}\n`);
      return 2;
    }
    throw e;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`codeact: unexpected error: ${forTerminal((err as Error).stack ?? err)}\n`);
      process.exitCode = 1;
    },
  );
}
