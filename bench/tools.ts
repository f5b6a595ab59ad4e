/**
 * Large tool sets: how big the first request's tool description is for a workspace with 300 managed
 * tools, against listing every schema inline. The tools come from real MCP servers over stdio, through
 * the engine's own MCP source (declarations, connection pool, `tools/list`, schema checks):
 * @modelcontextprotocol/server-everything (from the npm registry) and the generated server
 * test/fixtures/mcp/manyTools.mjs for the rest.
 *
 * Figures (tokens are estimated as characters / 4, as the OpenAI-compatible context check does):
 * - prompt_tokens_tools_300: the `execute_tool_code` description the model gets (names and one-line
 *   descriptions grouped by server, plus how to discover tools);
 * - prompt_tokens_tools_300_inline: the same description with every tool's schemas inline (the baseline);
 * - ratio_tools_300_to_inline (goal: at most 0.10), prompt_tokens_system_300, tool_catalog_300_bytes,
 *   search_tools_us_p50 (one BM25 query over the 300 tools), tools_300_resolve_ms.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { defaultSystemInstruction } from '../src/core/agent/agent';
import { ToolGateway } from '../src/core/gateway/gateway';
import { loadTools } from '../src/core/tools/declarations';
import { defaultMcpPool, disposeDefaultMcpPool } from '../src/core/tools/sources/mcp/pool';
import { mcpServerSpec, resolveMcpTools } from '../src/core/tools/sources/mcp/source';
import { estimateTextTokens, executeToolCodeSpec, inlineToolLines, listsSchemasInline } from '../src/core/tools/modelTools';
import { ToolDiscovery } from '../src/core/gateway/discovery/toolDiscovery';

const ROOT = path.resolve(__dirname, '..');
const TARGET = 300;

function safeName(prefix: string, name: string): string {
  return `${prefix}${name.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

export async function benchTools(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const started = performance.now();
  const everythingJs = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  const servers: { prefix: string; command: string[] }[] = [];
  if (existsSync(everythingJs)) servers.push({ prefix: 'everything_', command: [process.execPath, everythingJs, 'stdio'] });
  servers.push({ prefix: '', command: [process.execPath, path.join(ROOT, 'test/fixtures/mcp/manyTools.mjs'), '--count', String(TARGET)] });
  try {
    const pool = defaultMcpPool();
    const declarations: Record<string, unknown>[] = [];
    for (const s of servers) {
      const listed = await pool.listTools(mcpServerSpec({ command: s.command, tool: '' }, { workspace: ROOT }));
      for (const t of listed) {
        if (declarations.length >= TARGET) break;
        declarations.push({ name: safeName(s.prefix, t.name), mcp: { command: s.command, tool: t.name } });
      }
    }
    const set = await resolveMcpTools(loadTools(declarations, { workspace: ROOT }));
    if (set.errors.length) out.tools_300_errors = set.errors.slice(0, 5).map((e) => e.message);
    out.tools_300_resolve_ms = Math.round(performance.now() - started);
    const tools = new ToolGateway(set.tools).tools();
    out.tools_300_count = tools.length;
    out.tools_300_servers = servers.length;

    const description = executeToolCodeSpec(tools).description;
    const inline = [executeToolCodeSpec([]).description.replace(/No managed tools are declared[^\n]*/, ''), ...inlineToolLines(tools)].join('\n');
    out.prompt_tokens_tools_300 = estimateTextTokens(description);
    out.prompt_tokens_tools_300_inline = estimateTextTokens(inline);
    out.ratio_tools_300_to_inline = Math.round((estimateTextTokens(description) / estimateTextTokens(inline)) * 1000) / 1000;
    out.prompt_tokens_system_300 = estimateTextTokens(
      defaultSystemInstruction(
        'toolCode',
        tools.map((t) => t.name),
        listsSchemasInline(tools),
      ),
    );

    const discovery = new ToolDiscovery(tools);
    out.tool_catalog_300_bytes = Buffer.byteLength(JSON.stringify(discovery.catalog()));
    const queries = ['scale a deployment', 'refund an invoice', 'send an email to a customer', 'echo a message back', 'restart a pod', 'explain a slow query'];
    discovery.search({ query: 'warm up' });
    const times: number[] = [];
    for (let i = 0; i < 600; i++) {
      const t0 = performance.now();
      discovery.search({ query: queries[i % queries.length], limit: 10 });
      times.push((performance.now() - t0) * 1000);
    }
    times.sort((a, b) => a - b);
    out.search_tools_us_p50 = Math.round(times[times.length >> 1]);
    return out;
  } finally {
    await disposeDefaultMcpPool();
  }
}
