/**
 * VS Code's agent sharing the panel's open conversation through CodeAct's MCP server definition (issue 36, point 3):
 * the extension host's MCP server on loopback HTTP (src/vscode/mcpShareServer), driven by the MCP SDK's own client as
 * VS Code would (its bearer token in the headers the definition gives), over a controller with fake seams. Each
 * execution is a turn of the open conversation in its Python session, headed as an MCP client's; the panel's trust
 * check and its one-turn-at-a-time rule apply; the variables are the conversation's; restarting is the person's.
 */
import * as assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { harness, type Harness } from './fakes';
import { servePanelShare, type PanelShareServer } from '../../src/vscode/mcpShareServer';

const textOf = (r: unknown) => (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('VS Code agent sharing the panel conversation over MCP (mcpShareServer)', function () {
  this.timeout(60_000);
  let h: Harness | undefined;
  let s: PanelShareServer | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close().catch(() => {});
    await s?.close();
    s = undefined;
    await h?.controller.shutdown();
    h?.cleanup();
    h = undefined;
  });

  const connect = async (token = s!.token): Promise<Client> => {
    const client = new Client({ name: 'Visual Studio Code', version: '1.139.0' });
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(s!.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  };

  it("runs each execution as a turn of the panel's open conversation, in its Python session, headed as an MCP client's", async () => {
    h = harness();
    h.runtimes.setup = (r) => {
      r.script = async (req) => ({ value: req.tools === false ? 'no tools' : 'tools', outputs: [{ type: 'logs', logs: `ran ${req.code.length} chars\n` }] });
    };
    s = await servePanelShare(h.controller);
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = await connect();
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['execute_code', 'execute_tool_code', 'list_variables'], 'no restart_session: the person restarts it');
    assert.match(tools.find((t) => t.name === 'execute_tool_code')!.description!, /runs in the Python session of the CodeAct panel's open conversation/);

    const first = await client.callTool({ name: 'execute_tool_code', arguments: { code: 'x = 41' } });
    assert.equal(first.isError, undefined, textOf(first));
    assert.match(textOf(first), /ran 6 chars/);
    assert.match(textOf(first), /"tools"/);
    assert.doesNotMatch(textOf(first), /output_of\(/, 'no execution number is promised: the panel numbers its runs');
    const convo = h.controller.currentConversation;
    assert.ok(convo, 'the run opened a conversation in the panel');
    const second = await client.callTool({ name: 'execute_code', arguments: { code: 'print(x + 1)' } });
    assert.match(textOf(second), /"no tools"/);

    const rt = h.runtimes.last!;
    assert.deepEqual(
      rt.executed.map((r) => [r.sessionId, r.tools]),
      [
        [convo.id, true],
        [convo.id, false],
      ],
      "both ran in the open conversation's Python session; execute_code without call_tool",
    );
    assert.equal(h.controller.currentConversation?.id, convo.id, 'the same conversation');
    const started = convo.events.filter((e) => e.type === 'codeact.turn.started') as Array<{ source?: string; prompt?: string }>;
    assert.deepEqual(
      started.map((e) => [e.source, e.prompt]),
      [
        ['mcp', 'VS Code agent (MCP): execute_tool_code'],
        ['mcp', 'VS Code agent (MCP): execute_code'],
      ],
    );
    const ended = convo.events.filter((e) => e.type === 'codeact.turn.ended') as Array<{ status?: string }>;
    assert.deepEqual(
      ended.map((e) => e.status),
      ['completed', 'completed'],
    );

    // The variables are the conversation's session's; restarting is refused (and not listed).
    assert.match(textOf(await client.callTool({ name: 'list_variables', arguments: {} })), /"total": 0/);
    const restart = await client.callTool({ name: 'restart_session', arguments: {} });
    assert.equal(restart.isError, true);
    assert.match(textOf(restart), /runs code in the CodeAct panel's open conversation: the person restarts its Python session there/);
    assert.deepEqual(rt.restarted, []);
  });

  it('refuses a client without the token; in an untrusted workspace nothing runs; a turn already running in the panel refuses the call', async () => {
    h = harness();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    h.runtimes.setup = (r) => {
      r.script = async (req) => {
        if (req.code === 'hold') {
          entered();
          await held;
        }
        return { value: null };
      };
    };
    s = await servePanelShare(h.controller);
    await assert.rejects(connect('not-the-token'), /401|Unauthorized/);

    const client = await connect();
    // The panel runs a turn of its own: the agent's call is refused, saying why, and nothing of it runs.
    const panelRun = h.controller.runCode('hold', 'Run with Tools');
    await inside;
    const busy = await client.callTool({ name: 'execute_tool_code', arguments: { code: 'print(1)' } });
    assert.equal(busy.isError, true);
    assert.match(textOf(busy), /^Nothing ran: CodeAct is already running "Run with Tools"\. Stop it first/);
    release();
    await panelRun;
    assert.deepEqual(
      h.runtimes.last!.executed.map((r) => r.code),
      ['hold'],
    );

    h.apis.trusted = false;
    const untrusted = await client.callTool({ name: 'execute_tool_code', arguments: { code: 'print(2)' } });
    assert.equal(untrusted.isError, true);
    assert.match(textOf(untrusted), /^Nothing ran: Running code is disabled because this workspace is not trusted/);
    assert.deepEqual(
      h.runtimes.last!.executed.map((r) => r.code),
      ['hold'],
      'nothing ran without trust',
    );
  });
});
