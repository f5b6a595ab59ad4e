/** `codeact tools`: the folder's managed tools (MCP ones with their servers' schemas) and every declaration error. */
import { forTerminal } from '../common/untrusted';
import { settingsPath } from '../core/config/workspaceFile';
import { formatDeclarationError } from '../core/gateway/toolSet';
import { disposeDefaultMcpPool } from '../core/tools/sources/mcp/pool';
import { resolveTools } from '../core/tools/toolSources';
import { dim, red } from './print';
import { parse, UsageError } from './args';
import { openWorkspace } from './workspace';

export async function toolsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: {
      workspace: { type: 'string', short: 'w' },
      folder: { type: 'string' },
      'trust-workspace': { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write('Usage: codeact tools [--workspace DIR|FILE.code-workspace [--folder NAME|PATH]] [--trust-workspace] [--json]\n');
    return 0;
  }
  if (positionals.length) throw new UsageError(`codeact tools takes no arguments (got ${positionals.join(' ')}).`);
  const ws = openWorkspace(values.workspace, { trustOverride: values['trust-workspace'], folder: values.folder });
  // MCP tools: ask their servers for descriptions and schemas, and report servers that fail.
  let toolSet = ws.toolSet;
  try {
    toolSet = await resolveTools(ws.toolSet);
  } finally {
    await disposeDefaultMcpPool();
  }
  const { tools, errors } = toolSet;
  const sorted = [...tools].sort((a, b) => a.name.localeCompare(b.name));
  if (values.json) {
    process.stdout.write(
      JSON.stringify({
        workspace: ws.dir,
        trusted: ws.trust.trusted,
        tools: sorted.map((t) => ({
          name: t.name,
          description: t.description,
          source: t.source,
          approval: t.approval,
          expose: t.expose,
          inputSchema: t.inputSchema,
          outputSchema: t.outputSchema ?? null,
        })),
        errors,
      }) + '\n',
    );
  } else {
    if (!sorted.length && !errors.length)
      process.stdout.write(
        `No managed tools${ws.trust.trusted ? ` declared in ${forTerminal(settingsPath(ws.dir), { line: true })} (codeact.tools)` : ' (the folder is not trusted)'}.\n`,
      );
    for (const t of sorted)
      process.stdout.write(
        `${forTerminal(t.name, { line: true })}  ${dim(`[${t.source}${t.approval !== 'auto' ? `, ${t.approval}` : ''}]`)}  ${forTerminal(t.description, { line: true })}\n`,
      );
    for (const e of errors) process.stdout.write(`${red('error:')} ${forTerminal(formatDeclarationError(e))}\n`);
  }
  return errors.length ? 2 : 0;
}
