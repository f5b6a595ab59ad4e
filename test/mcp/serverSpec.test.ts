/**
 * The MCP server kinds (src/core/tools/sources/mcp/serverSpec.ts owns them and alone compares their names):
 * every kind is told by exactly one of the module's predicates, and gets a label and a connection key of its
 * own. A new kind does not compile here until it has an example, and fails until the predicates know it.
 */
import * as assert from 'node:assert/strict';
import { isHttpServer, isStdioServer, mcpServerLabel, serverKey, type McpServerKind, type McpServerSpec } from '../../src/core/tools/sources/mcp/serverSpec';

const EXAMPLES: { [K in McpServerKind]: Extract<McpServerSpec, { kind: K }> } = {
  stdio: { kind: 'stdio', argv: ['mcp-server', '--flag'], cwd: '/work', env: { B: '2', A: '1' } },
  http: { kind: 'http', url: 'https://mcp.example.com/mcp?token=secret' },
};

describe('MCP server kinds', () => {
  it('are each told by exactly one predicate, and each has its own label and key', () => {
    const specs: McpServerSpec[] = Object.values(EXAMPLES);
    for (const spec of specs) assert.equal(Number(isStdioServer(spec)) + Number(isHttpServer(spec)), 1, spec.kind);
    assert.ok(isStdioServer(EXAMPLES.stdio) && isHttpServer(EXAMPLES.http));
    assert.equal(mcpServerLabel(EXAMPLES.stdio), 'MCP server "mcp-server --flag"');
    assert.equal(mcpServerLabel(EXAMPLES.http), 'MCP server at https://mcp.example.com/mcp', 'no query in the label');
    assert.equal(new Set(specs.map(serverKey)).size, specs.length);
    assert.equal(serverKey(EXAMPLES.stdio), serverKey({ ...EXAMPLES.stdio, env: { A: '1', B: '2' } }), 'the environment in any order');
  });
});
