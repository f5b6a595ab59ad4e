/**
 * The tool-source catalogue (core/tools/toolSources.ts, common/tools.ts): a descriptor and a row for every
 * source kind, and each fact in them is what the code does: a declaration of the kind loads into a tool of
 * that kind, its tools are listed under its heading, the manifest's schema of codeact.tools takes it, and
 * the async phase both hosts run (`resolveTools`) is the kinds' own.
 */
import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { TOOL_SOURCE_INFO, TOOL_SOURCE_KINDS, type ToolSourceKind } from '../../src/common/tools';
import { toolGroup } from '../../src/core/gateway/discovery/toolCatalog';
import { loadTools } from '../../src/core/tools/declarations';
import type { McpClientPool } from '../../src/core/tools/sources/mcp/pool';
import { hostLaunches, needsResolving, resolveTools, TOOL_SOURCES } from '../../src/core/tools/toolSources';
import { managedTool } from '../support/managedTool';

const REPO = path.resolve(__dirname, '..', '..');

/** A valid declaration of every kind (the compiler asks for a row when a kind is added). */
const SAMPLES: Record<ToolSourceKind, Record<string, unknown>> = {
  command: { name: 'cmd', command: ['python3', 'tools/cmd.py'] },
  http: { name: 'web', http: { url: 'https://example.com/{q}', allowedHosts: ['example.com'] } },
  mcp: { name: 'stdio', mcp: { command: ['node', 'servers/s.js'], tool: 'add' } },
  lmTool: { name: 'other', lmTool: 'vendor_search' },
};

/** A pool that lists one tool and is never connected (the async phase asks it). */
const listingPool = (listed: string[]) =>
  ({
    listTools: async () => {
      listed.push('add');
      return [{ name: 'add', description: 'Adds two numbers.', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }];
    },
  }) as unknown as McpClientPool;

describe('tool sources: one descriptor per kind', () => {
  it('every kind has a descriptor and a row of facts, in the same order (the order messages name them in)', () => {
    assert.deepEqual(Object.keys(TOOL_SOURCES), TOOL_SOURCE_KINDS);
    assert.deepEqual(Object.keys(TOOL_SOURCE_INFO), TOOL_SOURCE_KINDS);
    assert.deepEqual(Object.keys(SAMPLES), TOOL_SOURCE_KINDS);
    for (const kind of TOOL_SOURCE_KINDS) {
      const d = TOOL_SOURCES[kind];
      assert.equal(typeof d.check, 'function', kind);
      assert.equal(typeof d.build, 'function', kind);
      assert.equal(typeof d.launches, 'function', kind);
    }
    const [none] = loadTools([{ name: 'x' }], { workspace: REPO }).errors;
    assert.match(none.message, new RegExp(`give exactly one of ${TOOL_SOURCE_KINDS.map((k) => `"${k}"`).join(', ')}\\.`));
  });

  it("a declaration of each kind loads into a tool of that kind, listed under the kind's heading", () => {
    const lmTools = (decl: { name: string }) => managedTool({ name: decl.name, source: 'lmTool' });
    const set = loadTools(Object.values(SAMPLES), { workspace: REPO, lmTools, mcpPool: listingPool([]) });
    assert.deepEqual(set.errors, []);
    assert.deepEqual(
      set.tools.map((t) => t.source),
      TOOL_SOURCE_KINDS,
    );
    for (const kind of TOOL_SOURCE_KINDS) assert.equal(toolGroup(managedTool({ source: kind })), TOOL_SOURCE_INFO[kind].group);
    assert.equal(toolGroup(managedTool({ source: 'mcp', group: 'MCP server "x"' })), 'MCP server "x"', "a tool's own group comes first");
    assert.equal(toolGroup(managedTool({ source: 'test' })), 'test tools', "a host's own source");
  });

  it('lmTool tools are built by the host: without its lmTools the declaration says so, with them their answer is the tool or the problem', () => {
    const alone = loadTools([SAMPLES.lmTool], { workspace: REPO });
    assert.deepEqual(alone.tools, []);
    assert.equal(alone.errors[0].message, '"lmTool" tools are not available here.');
    const missing = loadTools([SAMPLES.lmTool], { workspace: REPO, lmTools: () => 'no language-model tool named "vendor_search" is registered' });
    assert.equal(missing.errors[0].message, 'No language-model tool named "vendor_search" is registered.');
    // The host's tool gets the approval the one precedence table decides.
    const built = loadTools([{ ...SAMPLES.lmTool, approval: 'ask' }], { workspace: REPO, lmTools: (d) => managedTool({ name: d.name, source: 'lmTool' }) });
    assert.equal(built.tools[0].approval, 'ask');
  });

  it('what each kind launches on the host is what its descriptor says, read from the raw declaration', () => {
    for (const kind of TOOL_SOURCE_KINDS) {
      const launch = TOOL_SOURCES[kind].launches(SAMPLES[kind]);
      assert.deepEqual(hostLaunches([SAMPLES[kind]]), launch ? [{ tool: SAMPLES[kind].name, ...launch }] : [], kind);
    }
  });

  it("resolveTools runs each kind's async phase: an MCP tool gets its server's description and schema, other tools pass through", async () => {
    const listed: string[] = [];
    const set = loadTools([SAMPLES.command, SAMPLES.mcp], { workspace: REPO, mcpPool: listingPool(listed) });
    assert.equal(needsResolving(set), true);
    assert.equal(needsResolving(loadTools([SAMPLES.command], { workspace: REPO })), false);
    assert.equal(set.tools[1].description, '');
    const resolved = await resolveTools(set);
    assert.deepEqual(listed, ['add']);
    assert.equal(resolved.tools[0], set.tools[0]);
    assert.equal(resolved.tools[1].description, 'Adds two numbers.');
    assert.deepEqual(resolved.tools[1].inputSchema, { type: 'object', properties: { a: { type: 'number' } } });
  });

  it('both hosts reach the async phase only through resolveTools (no host imports a kind of source directly)', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => (statSync(path.join(dir, n)).isDirectory() ? files(path.join(dir, n)) : [path.join(dir, n)]));
    const hosts = [...files(path.join(REPO, 'src', 'cli')), ...files(path.join(REPO, 'src', 'vscode'))].filter((f) => f.endsWith('.ts'));
    const direct = hosts.filter((f) => /resolveMcpTools|core\/tools\/sources\/mcp\/source/.test(readFileSync(f, 'utf8')));
    assert.deepEqual(direct, []);
    const using = hosts.filter((f) => /\bresolveTools\(/.test(readFileSync(f, 'utf8'))).map((f) => path.relative(REPO, f));
    assert.ok(using.includes(path.join('src', 'vscode', 'workspaceTools.ts')), using.join(', '));
    assert.ok(
      using.some((f) => f.startsWith(path.join('src', 'cli'))),
      using.join(', '),
    );
  });

  it("the manifest's schema of codeact.tools takes every kind, and its description names each", () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    const tools = manifest.contributes.configuration.properties['codeact.tools'];
    for (const kind of TOOL_SOURCE_KINDS) {
      assert.ok(tools.items.properties[kind], `codeact.tools has no schema for "${kind}"`);
      assert.ok(tools.markdownDescription.includes(`\`${kind}\``), `the description of codeact.tools does not name "${kind}"`);
    }
  });
});
