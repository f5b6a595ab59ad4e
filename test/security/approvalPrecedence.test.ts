/**
 * Approval precedence is one table (src/core/gateway/approvalPolicy.ts), and a folder
 * only tightens. A tool a trusted folder declares with `"approval": "auto"` does not run unasked when the
 * person's own `codeact.approval.default` is `ask`, and is refused when it is `deny`: for command, http
 * and MCP declarations, in the extension (VS Code's settings layers, WorkspaceTools, Approvals) and in
 * the CLI (its user settings file, the folder's .vscode/settings.json, the built `codeact run`).
 * Real tools: python3 for the command (it leaves a marker file when it runs), a loopback HTTP server that
 * counts its requests, and the test MCP server on stdio.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { APPROVAL_ORDER, decideApproval, type ToolApprovalFacts } from '../../src/core/gateway/approvalPolicy';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import type { ToolGateway } from '../../src/core/gateway/gateway';
import { disposeDefaultMcpPool } from '../../src/core/tools/sources/mcp/pool';
import { Approvals } from '../../src/vscode/approvals';
import { vscodeReader } from '../../src/vscode/settingsReader';
import { WorkspaceTools } from '../../src/vscode/workspaceTools';
import { runCli } from '../support/cli';
import { FakeApprovalsApis, FakeLog } from '../vscode/fakes';
import { REFUSALS } from '../../src/core/gateway/gateway';

const ROOT = path.resolve(__dirname, '../..');
const MCP_SERVER = path.join(ROOT, 'test/fixtures/mcp/server.mjs');
const NAMES = ['cmd_tool', 'http_tool', 'mcp_tool'];

/** VS Code's `inspect` over a user and a workspace settings object. */
function fakeConfiguration(user: Record<string, unknown>, workspace: Record<string, unknown>) {
  return { inspect: (key: string) => ({ key, globalValue: user[`codeact.${key}`], workspaceValue: workspace[`codeact.${key}`] }) as never };
}

describe('security: approvals: one precedence table, and folders only tighten', function () {
  this.timeout(120_000);
  let dir: string;
  let server: Server;
  let httpHits = 0;
  let port = 0;
  const marker = () => path.join(dir, 'command-ran');

  /** The three tools, each `"approval": "auto"` unless `approval` says otherwise. */
  const tools = (approval: string | undefined = 'auto') => {
    const a = approval === undefined ? {} : { approval };
    return [
      {
        name: 'cmd_tool',
        command: ['python3', '-c', 'import json, sys; open(sys.argv[1], "w").write("x"); print(json.dumps({"ran": "command"}))', marker()],
        ...a,
      },
      { name: 'http_tool', http: { url: `http://127.0.0.1:${port}/ran`, allowedHosts: [`127.0.0.1:${port}`] }, ...a },
      { name: 'mcp_tool', mcp: { command: [process.execPath, MCP_SERVER], tool: 'add' }, inputSchema: { type: 'object' }, ...a },
    ];
  };
  const args: Record<string, Record<string, unknown>> = { cmd_tool: {}, http_tool: {}, mcp_tool: { a: 1, b: 2 } };

  before(async () => {
    server = createServer((_req, res) => {
      httpHits++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ran": "http"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    await disposeDefaultMcpPool();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-approval-')));
    httpHits = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('the table', () => {
    const all = <T>(xs: readonly T[]) => xs;
    const declaredValues = [undefined, ...APPROVAL_ORDER];
    it('a folder never makes a tool looser than your own default; your own declaration and your allowances still count', () => {
      const rank = (p: string) => APPROVAL_ORDER.indexOf(p as never);
      for (const declared of declaredValues)
        for (const userDefault of all(APPROVAL_ORDER))
          for (const folderDefault of all(APPROVAL_ORDER)) {
            // codeact.approval.default as resolved: a folder's only when stricter than yours.
            const def = rank(folderDefault) > rank(userDefault) ? folderDefault : userDefault;
            const facts: ToolApprovalFacts = { declared, declaredIn: 'folder', default: def, userDefault };
            const got = decideApproval(facts).policy;
            const what = JSON.stringify({ declared, userDefault, folderDefault });
            assert.ok(rank(got) >= rank(userDefault), `${what}: a folder's tool runs "${got}", looser than your "${userDefault}"`);
            assert.ok(rank(got) >= rank(declared ?? def), `${what}: "${got}" is looser than the folder's own "${declared ?? def}"`);
            if (declared === 'deny' || userDefault === 'deny') assert.equal(got, 'deny', `${what}: not denied`);
            // Your allowance (alwaysAllow, "Allow for this session") lifts "ask", never "deny".
            assert.equal(decideApproval(facts, 'auto').policy, got === 'deny' ? 'deny' : 'auto', `${what}: with your allowance`);
            // The same declaration in your own settings: it says what it says.
            const mine = decideApproval({ ...facts, declaredIn: 'user', default: userDefault }).policy;
            assert.equal(mine, declared ?? userDefault, `${what}: your own declaration`);
          }
    });
  });

  describe('in the extension (VS Code settings layers, WorkspaceTools, Approvals)', () => {
    async function gateway(user: Record<string, unknown>, workspace: Record<string, unknown>) {
      const settings = resolveEngineConfig(vscodeReader(fakeConfiguration(user, workspace)), { trusted: true }).config;
      const apis = new FakeApprovalsApis();
      apis.always = (user['codeact.approval.alwaysAllow'] as string[] | undefined) ?? [];
      const log = new FakeLog();
      const approvals = new Approvals({ apis, emit: () => {}, log, panelVisible: () => false });
      const wt = new WorkspaceTools({
        apis: { showWarningMessage: async () => undefined, executeCommand: async () => undefined } as never,
        lmTools: { tools: () => [], invokeTool: async () => '' } as never,
        settings: () => settings,
        trusted: () => true,
        workspaceFolder: () => dir,
        approvals,
        log,
      });
      return { gw: await wt.gateway(), apis };
    }
    const call = (gw: ToolGateway, name: string) =>
      gw.call({ itemId: 'exec_1', callId: `call_${name}`, name, arguments: args[name] }, new AbortController().signal).then(
        (value) => ({ value, error: undefined as string | undefined }),
        (e: Error) => ({ value: undefined as unknown, error: e.message }),
      );

    it('your default "ask": a folder\'s "auto" tools (command, http, mcp) each ask first, and do not run when you deny', async () => {
      const { gw, apis } = await gateway({ 'codeact.approval.default': 'ask' }, { 'codeact.tools': tools('auto') });
      apis.answers = ['Deny', 'Deny', 'Deny'];
      for (const name of NAMES) {
        const r = await call(gw, name);
        assert.match(String(r.error), new RegExp(`The user denied the call to "${name}"`), `${name} ran unasked: ${JSON.stringify(r.value)}`);
      }
      assert.deepEqual(
        apis.dialogs.map((d) => d.message),
        NAMES.map((n) => `CodeAct: allow the tool "${n}"?`),
      );
      assert.equal(existsSync(marker()), false, 'the command tool ran');
      assert.equal(httpHits, 0, 'the http tool ran');
    });

    it('your default "ask": after you allow it, the folder\'s tool runs', async () => {
      const { gw, apis } = await gateway({ 'codeact.approval.default': 'ask' }, { 'codeact.tools': tools('auto') });
      apis.answers = ['Allow Once', 'Allow Once', 'Allow Once'];
      assert.deepEqual((await call(gw, 'cmd_tool')).value, { ran: 'command' });
      assert.deepEqual((await call(gw, 'http_tool')).value, { ran: 'http' });
      assert.deepEqual((await call(gw, 'mcp_tool')).value, { sum: 3 });
      assert.equal(apis.dialogs.length, 3);
    });

    it('your default "deny": a folder\'s "auto" tools are refused without asking, saying why', async () => {
      const { gw, apis } = await gateway({ 'codeact.approval.default': 'deny', 'codeact.approval.alwaysAllow': NAMES }, { 'codeact.tools': tools('auto') });
      for (const name of NAMES) {
        const r = await call(gw, name);
        assert.match(
          String(r.error),
          new RegExp(
            `The tool "${name}" is denied: your codeact.approval.default is "deny", and a folder's settings may make approvals stricter, never looser`,
          ),
        );
      }
      assert.equal(apis.dialogs.length, 0);
      assert.equal(existsSync(marker()), false);
      assert.equal(httpHits, 0);
    });

    it('a folder\'s "approval.default": "auto" does not loosen yours either', async () => {
      const { gw, apis } = await gateway({ 'codeact.approval.default': 'ask' }, { 'codeact.approval.default': 'auto', 'codeact.tools': tools(undefined) });
      apis.answers = ['Deny'];
      assert.ok(String((await call(gw, 'cmd_tool')).error).includes(REFUSALS.userDenied('cmd_tool')));
      assert.equal(apis.dialogs.length, 1);
    });

    it('your own declaration of "auto" (user settings) and your alwaysAllow still run without asking', async () => {
      const mine = await gateway({ 'codeact.approval.default': 'ask', 'codeact.tools': tools('auto') }, {});
      assert.deepEqual((await call(mine.gw, 'cmd_tool')).value, { ran: 'command' });
      assert.deepEqual((await call(mine.gw, 'mcp_tool')).value, { sum: 3 });
      const allowed = await gateway({ 'codeact.approval.default': 'ask', 'codeact.approval.alwaysAllow': ['http_tool'] }, { 'codeact.tools': tools('auto') });
      assert.deepEqual((await call(allowed.gw, 'http_tool')).value, { ran: 'http' });
      assert.equal(mine.apis.dialogs.length + allowed.apis.dialogs.length, 0);
    });
  });

  describe("in the CLI (its user settings file, the folder's settings, `codeact run`)", () => {
    const CODE =
      NAMES.map((n) => `try:\n    r_${n} = await call_tool("${n}", **${JSON.stringify(args[n])})\nexcept Exception as e:\n    r_${n} = str(e)`).join('\n') +
      `\nreturn {${NAMES.map((n) => `"${n}": r_${n}`).join(', ')}}\n`;
    async function run(userDefault: string) {
      const home = path.join(dir, 'home');
      mkdirSync(home);
      writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ 'codeact.approval.default': userDefault }));
      mkdirSync(path.join(dir, '.vscode'));
      writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': tools('auto') }));
      const r = await runCli(['run', '-', '--json', '--sandbox', 'none', '--workspace', dir], { CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '1' }, CODE);
      const done = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; item?: { value?: Record<string, unknown> } })
        .find((e) => e.type === 'response.output_item.done');
      assert.ok(done?.item?.value, `no result:\n${r.stderr}\n${r.stdout}`);
      return done.item.value;
    }

    it('your default "ask": a trusted folder\'s "auto" tools do not run (nobody can approve them in the CLI), and the error says why', async () => {
      const value = await run('ask');
      for (const name of NAMES) {
        assert.match(
          String(value[name]),
          new RegExp(
            `The tool "${name}" needs approval \\(your codeact.approval.default is "ask", and a folder's settings may make approvals stricter, never looser`,
          ),
          `${name}: ${JSON.stringify(value[name])}`,
        );
      }
      assert.equal(existsSync(marker()), false, 'the command tool ran');
      assert.equal(httpHits, 0, 'the http tool ran');
    });

    it('your default "deny": refused, and the error says why', async () => {
      const value = await run('deny');
      for (const name of NAMES) assert.match(String(value[name]), new RegExp(`The tool "${name}" is denied: your codeact.approval.default is "deny"`));
      assert.equal(existsSync(marker()), false);
      assert.equal(httpHits, 0);
    });

    it('your default "auto": the folder\'s tools run (the test can see them run)', async () => {
      const value = await run('auto');
      assert.deepEqual(value, { cmd_tool: { ran: 'command' }, http_tool: { ran: 'http' }, mcp_tool: { sum: 3 } });
      assert.equal(existsSync(marker()), true);
    });
  });
});
