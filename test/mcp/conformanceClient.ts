/**
 * The client the MCP conformance suite (`@modelcontextprotocol/conformance`) drives, one process per
 * scenario: `conformance client --command "tsx test/mcp/conformanceClient.ts" --scenario NAME` runs it
 * with the scenario's server URL as its last argument, the scenario's name in MCP_CONFORMANCE_SCENARIO
 * and its context (pre-registered client credentials) in MCP_CONFORMANCE_CONTEXT.
 *
 * It goes through CodeAct's own path: a `codeact.tools` declaration of an `mcp` tool with that URL,
 * `loadToolsAsync` (which lists the server's tools through the MCP client pool), and a call through the
 * tool gateway; OAuth through the pool's sign-in (core/tools/sources/mcp/auth.ts) with an in-memory
 * store and a "browser" that fetches the authorization URL and follows its redirect to our loopback
 * listener; a server's elicitation form is answered as shown (its defaults). Exit code 0 when the calls succeeded.
 */
import type { McpOAuthConfig, ToolDeclaration } from '../../src/common/tools';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { loadToolsAsync } from '../../src/core/tools/declarations';
import { memorySecretStore } from '../../src/core/tools/sources/mcp/authStore';
import { McpClientPool } from '../../src/core/tools/sources/mcp/pool';

/** What each scenario's server offers: the tool to call and its arguments. */
const CALLS: Record<string, { tool?: string; args?: Record<string, unknown> }> = {
  initialize: {},
  tools_call: { tool: 'add_numbers', args: { a: 5, b: 3 } },
  'elicitation-sep1034-client-defaults': { tool: 'test_client_elicitation_defaults', args: {} },
  'sse-retry': { tool: 'test_reconnection', args: {} },
};

async function main(): Promise<number> {
  const url = process.argv[process.argv.length - 1];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}') as { client_id?: string; client_secret?: string };
  const oauth: McpOAuthConfig | undefined = context.client_id
    ? { clientId: context.client_id, ...(context.client_secret ? { clientSecret: context.client_secret } : {}) }
    : undefined;
  const pool = new McpClientPool({
    connectTimeoutMs: 20_000,
    callTimeoutMs: 20_000,
    log: (line) => process.stderr.write(`[pool] ${line}\n`),
    auth: {
      secrets: memorySecretStore(),
      signInTimeoutMs: 20_000,
      authorize: async ({ authorizationUrl }) => {
        // The "browser": the authorization server redirects at once (the conformance AS consents for the user).
        const res = await fetch(authorizationUrl, { redirect: 'manual' });
        const location = res.headers.get('location');
        if (!location) throw new Error(`the authorization server did not redirect (HTTP ${res.status})`);
        await fetch(location);
        return true;
      },
    },
  });
  try {
    const plan = CALLS[scenario] ?? {};
    // Auth scenarios' servers list one tool; the others name theirs above. The declaration leaves the
    // schema out, so loading it lists the server's tools (tools/list) as CodeAct does.
    const probe = await pool.listTools({ kind: 'http', url, ...(oauth ? { oauth } : {}) }, { interactive: true });
    const tool = plan.tool ?? probe[0]?.name;
    if (!tool) return 0; // initialize: connected and listed.
    const decl: ToolDeclaration = { name: 'conformance_tool', mcp: { url, tool, ...(oauth ? { oauth } : {}) } };
    const set = await loadToolsAsync([decl], { workspace: process.cwd(), mcpPool: pool });
    if (set.errors.length) throw new Error(set.errors.map((e) => e.message).join('; '));
    // The "person" submits a form as shown: each field prefilled with its default (SEP-1034), nothing typed.
    const gateway = new ToolGateway(set.tools, {
      elicitor: async (prompt) => ({
        action: 'accept',
        content: Object.fromEntries(prompt.fields.filter((f) => f.default !== undefined).map((f) => [f.key, f.default!])),
      }),
    });
    const out = await gateway.call({ itemId: 'item_1', callId: 'call_1', name: 'conformance_tool', arguments: plan.args ?? {} }, new AbortController().signal);
    process.stderr.write(`[client] ${tool}: ${JSON.stringify(out).slice(0, 500)}\n`);
    return 0;
  } finally {
    await pool.dispose();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`[client] failed: ${(e as Error)?.stack ?? e}\n`);
    process.exit(1);
  },
);
