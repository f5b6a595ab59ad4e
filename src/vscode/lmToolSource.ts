/**
 * The `lmTool` tool source: a `codeact.tools` declaration backed by a language-model tool another
 * extension registered (`vscode.lm.tools`), as a managed tool. VS Code is reached through ./lmToolSource.apis.
 */
import type { ManagedTool } from '../core/gateway/toolSet';
import type { ToolDeclaration } from '../common/tools';
import type { LmToolApis } from './lmToolSource.apis';

/** Some of the declarations (codeact.tools, as written) uses a language-model tool: the tool set then depends on which are registered. */
export function declaresLmTool(decls: unknown): boolean {
  return Array.isArray(decls) && decls.some((d) => !!d && typeof d === 'object' && 'lmTool' in d);
}

/** A managed tool backed by a language-model tool another extension registered, or why there is none. */
export function lmToolSource(decl: ToolDeclaration, defaultApproval: 'auto' | 'ask' | 'deny', lm: LmToolApis): ManagedTool | string {
  const name = decl.lmTool!;
  const info = lm.tools().find((t) => t.name === name);
  if (!info) {
    const known = lm
      .tools()
      .map((t) => t.name)
      .sort();
    return `no language-model tool named "${name}" is registered${known.length ? ` (registered: ${known.slice(0, 20).join(', ')})` : ''}`;
  }
  return {
    name: decl.name,
    description: decl.description ?? info.description,
    inputSchema: (decl.inputSchema ?? info.inputSchema ?? { type: 'object' }) as ManagedTool['inputSchema'],
    outputSchema: decl.outputSchema,
    approval: decl.approval ?? defaultApproval,
    expose: decl.expose ?? 'code',
    source: 'lmTool',
    invoke: async (args, ctx) => {
      const text = await lm.invokeTool(name, args, ctx.signal);
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    },
  };
}
