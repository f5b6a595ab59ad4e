/**
 * The `codeact` CLI: the same engine as the extension, headless.
 *
 *   codeact run <file.py|-> [--workspace DIR] [--timeout SECONDS] [--json]
 *   codeact tools [--workspace DIR] [--json]
 *
 * Exit codes: 0 success, 1 the code (or the model) failed or timed out, 2 usage or configuration errors.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { CodeActEvent, CodeInterpreterCallItem } from './common/events';
import { sanitizeTerminal, TerminalSanitizer } from './common/terminal';
import { ToolGateway } from './core/gateway/gateway';
import type { LocalRuntimeOptions } from './core/runtime/local/localRuntime';
import { createRuntime, RuntimeConfigError, type RuntimeSetting } from './core/runtime/factory';
import type { Runtime } from './core/runtime/types';
import type { SandboxSetting } from './core/runtime/local/sandbox';
import { formatDeclarationError, loadTools, type ToolSet } from './core/tools/declarations';
import { disposeDefaultMcpPool, resolveMcpTools } from './core/tools/mcp';
import { codeactSetting, readWorkspaceSettings, SettingsError } from './core/tools/settingsFile';
import { chatCommand } from './cliChat';

export class UsageError extends Error {}

const USAGE = `Usage:
  codeact run <file.py|-> [--workspace DIR] [--timeout SECONDS] [--sandbox auto|bubblewrap|none] [--python PATH]
              [--runtime local|jupyter] [--jupyter-url URL] [--jupyter-kernel NAME] [--json]
  codeact tools [--workspace DIR] [--json]
  codeact chat "<prompt>" --provider openai|anthropic|gemini|openai-compatible --model M [options]
  codeact --help | --version

Run "codeact <command> --help" for a command's options.`;

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
const red = (s: string) => (color ? `\x1b[31m${s}\x1b[39m` : s);
const green = (s: string) => (color ? `\x1b[32m${s}\x1b[39m` : s);

export interface Workspace {
  dir: string;
  settings: Record<string, unknown>;
  toolSet: ToolSet;
}

export function openWorkspace(dir: string | undefined): Workspace {
  const ws = path.resolve(dir ?? process.cwd());
  const settings = readWorkspaceSettings(ws);
  const toolSet = loadTools(codeactSetting(settings, 'tools'), { workspace: ws });
  return { dir: ws, settings, toolSet };
}

export function reportDeclarationErrors(toolSet: ToolSet): void {
  for (const e of toolSet.errors) process.stderr.write(`${red('warning:')} ${sanitizeTerminal(formatDeclarationError(e))} (this tool is unavailable)\n`);
}

export function sandboxFrom(values: { sandbox?: string }, settings: Record<string, unknown>): SandboxSetting {
  const s = values.sandbox ?? codeactSetting<string>(settings, 'sandbox.kind') ?? 'auto';
  if (!['auto', 'bubblewrap', 'none', 'sandbox-exec'].includes(s)) throw new UsageError(`--sandbox must be auto, bubblewrap or none, not "${s}".`);
  return s as SandboxSetting;
}

export function parseTimeout(raw: string | undefined, settings: Record<string, unknown>): number | undefined {
  const value = raw ?? codeactSetting<number | string>(settings, 'timeoutSeconds');
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--timeout must be a positive number of seconds, not "${value}".`);
  return Math.round(n * 1000);
}

function parse<T extends ParseArgsConfig['options']>(config: { args: string[]; options: T }) {
  try {
    return parseArgs({ args: config.args, options: config.options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** Human rendering of the event stream: the code's output as it comes, a line per tool call. Colours pass, other control sequences do not. */
export function humanPrinter(): (e: CodeActEvent) => void {
  const clean = { stdout: new TerminalSanitizer(), stderr: new TerminalSanitizer() };
  return (e) => {
    switch (e.type) {
      case 'codeact.output.delta':
        (e.stream === 'stderr' ? process.stderr : process.stdout).write(clean[e.stream === 'stderr' ? 'stderr' : 'stdout'].write(e.delta));
        break;
      case 'codeact.tool_call.completed': {
        const args = JSON.stringify(lastArgs.get(e.call_id) ?? {});
        lastArgs.delete(e.call_id);
        const mark = e.error === undefined ? green('✓') : red('✗');
        const detail = e.error === undefined ? '' : ` ${red(sanitizeTerminal(e.error.split('\n')[0]))}`;
        process.stdout.write(`${dim('→')} ${sanitizeTerminal(e.name)}(${sanitizeTerminal(truncate(args, 160))}) ${mark} ${dim(`${Math.round(e.duration_ms)} ms`)}${detail}\n`);
        break;
      }
      case 'codeact.tool_call.started':
        lastArgs.set(e.call_id, e.arguments);
        break;
    }
  };
}
const lastArgs = new Map<string, unknown>();

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

export function printItemResult(item: CodeInterpreterCallItem): void {
  if (item.status === 'completed') {
    process.stdout.write(`${green('⇒')} ${sanitizeTerminal(JSON.stringify(item.value ?? null, null, 2))}\n`);
  } else if (item.error) {
    const e = item.error;
    if (e.traceback) process.stderr.write(red(sanitizeTerminal(e.traceback.endsWith('\n') ? e.traceback : e.traceback + '\n')));
    else process.stderr.write(red(sanitizeTerminal(`${e.type}: ${e.message}\n`)));
  }
}

async function runCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: {
      workspace: { type: 'string', short: 'w' },
      timeout: { type: 'string', short: 't' },
      sandbox: { type: 'string' },
      python: { type: 'string' },
      runtime: { type: 'string' },
      'jupyter-url': { type: 'string' },
      'jupyter-kernel': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'Usage: codeact run <file.py|-> [--workspace DIR] [--timeout SECONDS] [--sandbox auto|bubblewrap|none] [--python PATH]\n' +
        '                   [--runtime local|jupyter] [--jupyter-url URL] [--jupyter-kernel NAME] [--json]\n' +
        'The Jupyter token comes from CODEACT_JUPYTER_TOKEN.\n',
    );
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('codeact run needs exactly one file (or - for stdin).');
  const file = positionals[0];
  let code: string;
  try {
    code = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}.`);
  }
  const ws = openWorkspace(values.workspace);
  reportDeclarationErrors(ws.toolSet);
  const timeoutMs = parseTimeout(values.timeout, ws.settings);
  const runtime = await runtimeFrom(values, ws);
  const gateway = new ToolGateway(ws.toolSet.tools);
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const onEvent = values.json ? (e: CodeActEvent) => process.stdout.write(JSON.stringify(e) + '\n') : humanPrinter();
  try {
    const item = await runtime.execute({ code, timeoutMs }, { onEvent, onToolCall: gateway.handler, signal: controller.signal });
    if (!values.json) printItemResult(item);
    if (item.status !== 'completed' && CONFIG_ERRORS.has(item.error?.type ?? '')) return 2;
    return item.status === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await runtime.dispose();
    await disposeDefaultMcpPool();
  }
}

/** codeact.python.path, or the older codeact.python. */
function pythonSetting(settings: Record<string, unknown>): string | undefined {
  const p = codeactSetting<unknown>(settings, 'python.path') ?? codeactSetting<unknown>(settings, 'python');
  return typeof p === 'string' && p ? p : undefined;
}

/** Errors that mean the setup is wrong, not the code: exit 2. */
const CONFIG_ERRORS = new Set(['PythonNotFoundError', 'SandboxUnavailableError', 'JupyterAuthError', 'JupyterUnreachable', 'JupyterKernelNotFound', 'JupyterConfigError', 'JupyterNotFound']);

/** The runtime the options and settings ask for: the local guest (default) or a Jupyter kernel. */
export async function runtimeFrom(
  values: { runtime?: string; sandbox?: string; python?: string; 'jupyter-url'?: string; 'jupyter-kernel'?: string },
  ws: Workspace,
  local: Partial<LocalRuntimeOptions> = {},
): Promise<Runtime> {
  const kind = (values.runtime ?? codeactSetting<string>(ws.settings, 'runtime') ?? 'local') as RuntimeSetting;
  if (kind !== 'local' && kind !== 'jupyter') throw new UsageError(`--runtime must be local or jupyter, not "${kind}".`);
  try {
    return await createRuntime({
      runtime: kind,
      local: {
        python: values.python ?? pythonSetting(ws.settings),
        sandbox: {
          kind: sandboxFrom(values, ws.settings),
          network: codeactSetting<boolean>(ws.settings, 'sandbox.network'),
          mountWorkspace: codeactSetting(ws.settings, 'sandbox.mountWorkspace'),
          limits: codeactSetting(ws.settings, 'sandbox.limits'),
          workspace: ws.dir,
        },
        onWarning: (m) => process.stderr.write(`${red('warning:')} ${m}\n`),
        ...local,
      },
      jupyter: {
        url: values['jupyter-url'] ?? codeactSetting<string>(ws.settings, 'jupyter.url'),
        token: process.env.CODEACT_JUPYTER_TOKEN,
        kernelName: values['jupyter-kernel'] ?? codeactSetting<string>(ws.settings, 'jupyter.kernelName'),
      },
    });
  } catch (e) {
    if (e instanceof RuntimeConfigError) throw new UsageError(e.message);
    throw e;
  }
}

async function toolsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: { workspace: { type: 'string', short: 'w' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write('Usage: codeact tools [--workspace DIR] [--json]\n');
    return 0;
  }
  if (positionals.length) throw new UsageError(`codeact tools takes no arguments (got ${positionals.join(' ')}).`);
  const ws = openWorkspace(values.workspace);
  // MCP tools: ask their servers for descriptions and schemas, and report servers that fail.
  let toolSet = ws.toolSet;
  try {
    toolSet = await resolveMcpTools(ws.toolSet);
  } finally {
    await disposeDefaultMcpPool();
  }
  const { tools, errors } = toolSet;
  const sorted = [...tools].sort((a, b) => a.name.localeCompare(b.name));
  if (values.json) {
    process.stdout.write(
      JSON.stringify({
        workspace: ws.dir,
        tools: sorted.map((t) => ({ name: t.name, description: t.description, source: t.source, approval: t.approval, expose: t.expose, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null })),
        errors,
      }) + '\n',
    );
  } else {
    if (!sorted.length && !errors.length) process.stdout.write(`No managed tools declared in ${path.join(ws.dir, '.vscode', 'settings.json')} (codeact.tools).\n`);
    for (const t of sorted) process.stdout.write(`${t.name}  ${dim(`[${t.source}${t.approval !== 'auto' ? `, ${t.approval}` : ''}]`)}  ${sanitizeTerminal(t.description)}\n`);
    for (const e of errors) process.stdout.write(`${red('error:')} ${sanitizeTerminal(formatDeclarationError(e))}\n`);
  }
  return errors.length ? 2 : 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest);
      case 'tools':
        return await toolsCommand(rest);
      case 'chat':
        return await chatCommand(rest);
      case '--version':
      case '-v':
        process.stdout.write(`${VERSION}\n`);
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
      process.stderr.write(`codeact: ${e.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (e instanceof SettingsError || (e as Error).name === 'SettingsError' || (e as Error).name === 'PythonNotFoundError' || (e as Error).name === 'SandboxUnavailableError') {
      process.stderr.write(`codeact: ${(e as Error).message}\n`);
      return 2;
    }
    throw e;
  }
}

declare const __CODEACT_VERSION__: string | undefined;
const VERSION = typeof __CODEACT_VERSION__ === 'string' ? __CODEACT_VERSION__ : '0.1.0';

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`codeact: unexpected error: ${(err as Error).stack ?? err}\n`);
      process.exitCode = 1;
    },
  );
}
