/**
 * Which MCP server a tool names, said three ways: its spec (stdio argv or HTTP URL), a label safe to
 * show, and the key the pool shares one connection by.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { clip } from '../../../../common/format';
import type { McpOAuthConfig } from '../../../../common/tools';
import type { StdioServerSpec } from './stdioTransport';

export type McpServerSpec = StdioServerSpec | McpHttpServerSpec;
/** How the server is reached: a program this host starts (`stdio`) or an HTTP endpoint. Only this module compares it. */
export type McpServerKind = McpServerSpec['kind'];
export interface McpHttpServerSpec {
  kind: 'http';
  url: string;
  /** `mcp.oauth` of the declaration (a pre-registered client, scopes). */
  oauth?: McpOAuthConfig;
}

/** The server is a program this host starts, spoken to on its stdin and stdout. */
export function isStdioServer(spec: McpServerSpec): spec is StdioServerSpec {
  return spec.kind === 'stdio';
}

/** The server is a streamable HTTP endpoint, reached and never started (it may ask for a sign-in). */
export function isHttpServer(spec: McpServerSpec): spec is McpHttpServerSpec {
  return spec.kind === 'http';
}

/** A short human name of the server, safe to show (no environment, no URL query). */
export function mcpServerLabel(spec: McpServerSpec): string {
  if (spec.kind === 'http') {
    try {
      const u = new URL(spec.url);
      return `MCP server at ${u.origin}${u.pathname}`;
    } catch {
      return 'MCP server at an invalid URL';
    }
  }
  const cmd = spec.argv.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
  return `MCP server "${clip(cmd, 120)}"`;
}

export function serverKey(spec: McpServerSpec): string {
  return spec.kind === 'http'
    ? JSON.stringify(['http', spec.url, spec.oauth?.clientId ?? null, spec.oauth?.scope ?? null])
    : JSON.stringify(['stdio', spec.argv, spec.cwd, Object.entries(spec.env).sort(([a], [b]) => (a < b ? -1 : 1))]);
}

/** The error of a tool the server does not have: it lists the tools the server has. */
export function missingToolMessage(spec: McpServerSpec, tool: string, tools: Tool[]): string {
  const names = tools.map((t) => t.name).sort();
  return (
    `the ${mcpServerLabel(spec)} has no tool "${tool}". ` +
    (names.length ? `Its tools: ${names.join(', ')}.` : 'It lists no tools.') +
    ' Fix "mcp.tool" in codeact.tools.'
  );
}
