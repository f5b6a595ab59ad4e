/**
 * The MCP door's approvals (issue 36, point 5), in process: the real MCP SDK client and server over the SDK's
 * in-memory transport pair, a real local Python session, and managed tools whose `invoke` counts its runs. A
 * client that never answers an elicitation does not hold the run (the question ends as no answer); a client
 * cannot widen approvals (a `deny` tool is refused without asking, whatever the client would answer).
 */
import * as assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { MCP_ASKING } from '../../src/core/mcpServer/asking';
import { codeActMcpServer } from '../../src/core/mcpServer/server';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { managedTool } from '../support/managedTool';

const textOf = (r: unknown) => ((r as CallToolResult).content ?? []).map((c) => (c as { text?: string }).text ?? '').join('\n');
const CALL = (name: string) => `try:\n    return await call_tool("${name}", x="hi")\nexcept Exception as e:\n    return "refused: " + str(e)`;

describe('MCP door: approvals through elicitation', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'none' } });
  after(() => runtime.dispose());

  async function connect(elicit: () => Promise<unknown>) {
    const ran: string[] = [];
    const tools = ['ask', 'deny'].map((approval) =>
      managedTool({ name: `t_${approval}`, approval: approval as 'ask' | 'deny', invoke: async () => (ran.push(approval), { ok: true }) }),
    );
    const server = codeActMcpServer({
      runtime,
      gateway: (asking) => new ToolGateway(tools, { approver: asking.approver, policyOverride: () => undefined }),
      timeoutMs: 60_000,
      images: { maxImages: 0, maxBytes: 0 },
      answerMs: 500,
    });
    const client = new Client({ name: 'test', version: '1' }, { capabilities: { elicitation: {} } });
    let asked = 0;
    client.setRequestHandler(ElicitRequestSchema, (() => (asked++, elicit())) as never);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a), client.connect(b)]);
    const run = (code: string) => client.callTool({ name: 'execute_tool_code', arguments: { code } });
    return { client, server, run, ran, asked: () => asked };
  }

  it('a question the client never answers ends as no answer, and the run goes on', async () => {
    const c = await connect(() => new Promise(() => {}));
    const r = await c.run(CALL('t_ask'));
    assert.match(textOf(r), /refused: .*did not run/);
    assert.ok(textOf(r).includes(MCP_ASKING.noAnswer(500)), textOf(r));
    assert.deepEqual(c.ran, []);
    // The session answers the next call.
    assert.match(textOf(await c.run('return 6 * 7')), /42/);
    await c.client.close();
  });

  it('a client cannot widen approvals: a deny tool is refused without asking', async () => {
    const c = await connect(async () => ({ action: 'accept', content: { decision: 'allow_session' } }));
    const r = await c.run(CALL('t_deny'));
    assert.match(textOf(r), /refused: /);
    assert.equal(c.asked(), 0);
    assert.deepEqual(c.ran, []);
    // "Allow for this session" covers that tool for this MCP session only: asked once, then allowed.
    assert.match(textOf(await c.run(CALL('t_ask'))), /"ok":true/);
    assert.match(textOf(await c.run(CALL('t_ask'))), /"ok":true/);
    assert.equal(c.asked(), 1);
    assert.deepEqual(c.ran, ['ask', 'ask']);
    await c.client.close();
  });
});
