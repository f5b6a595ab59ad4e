/**
 * `codeact mcp serve` (issue 36, point 1): the built CLI as an MCP server on stdio, driven by the official MCP
 * SDK client, with real Python, real command tools and real matplotlib. State lives across calls; a plot is image
 * content; output arrives as progress while the code runs; cancelling a call stops its run and the session goes
 * on; a tool whose policy is `ask` is asked through elicitation (and refused, saying why, when the client cannot
 * be asked); an untrusted folder runs nothing.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import { CLI, CLI_ENV, ROOT, runCli, scriptedModel } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { ensureNode22, onNode22 } from '../support/conformanceSuite';
import { isAlive } from '../../src/core/util/processTree';
import { waitFor } from '../support/wait';
import { makeVenv, makeWheel } from '../support/wheels';

/** The MCP Inspector's command (its launcher: `--cli` runs its CLI). */
const INSPECTOR = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

/** A command tool that says it ran, with its argument. */
const tool = (name: string, approval: 'auto' | 'ask') => ({
  name,
  approval,
  description: `Says it ran (${name}).`,
  command: ['python3', '-c', `import json, sys; a = json.load(sys.stdin); print(json.dumps({"ran": ${JSON.stringify(name)}, "x": a.get("x")}))`],
  inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
});

const textOf = (r: unknown) =>
  ((r as CallToolResult).content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n');

describe('codeact mcp serve: CodeAct as an MCP server on stdio', function () {
  this.timeout(120_000);
  let ws: string;
  const clients: Client[] = [];

  before(function () {
    if (!existsSync(CLI)) this.skip();
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-mcp-serve-'));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool('note_auto', 'auto'), tool('note_ask', 'ask')] }));
  });
  after(() => rmSync(ws, { recursive: true, force: true }));
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close().catch(() => {});
  });

  async function connect(
    o: { elicit?: (r: ElicitRequest) => Promise<unknown>; env?: NodeJS.ProcessEnv; workspace?: string; python?: string; args?: string[] } = {},
  ): Promise<Client> {
    const client = new Client({ name: 'codeact-test', version: '1.0.0' }, { capabilities: o.elicit ? { elicitation: {} } : {} });
    if (o.elicit) client.setRequestHandler(ElicitRequestSchema, o.elicit as never);
    const env = { ...CLI_ENV, ...o.env } as Record<string, string>;
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', 'serve', '--workspace', o.workspace ?? ws, '--python', o.python ?? '/usr/bin/python3', ...(o.args ?? [])],
        env,
        stderr: 'pipe',
      }),
    );
    clients.push(client);
    return client;
  }

  const run = (c: Client, code: string, extra: Record<string, unknown> = {}, options = {}) =>
    c.callTool({ name: 'execute_tool_code', arguments: { code, ...extra } }, undefined, options) as Promise<CallToolResult>;

  it('lists its tools, keeps state across calls, lists variables, restarts, and returns a plot as an image', async () => {
    const c = await connect();
    const { tools } = await c.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['execute_code', 'execute_tool_code', 'list_variables', 'restart_session']);
    const etc = tools.find((t) => t.name === 'execute_tool_code')!;
    assert.match(etc.description ?? '', /note_auto/);
    assert.match(etc.description ?? '', /call_tool/);

    assert.equal((await run(c, 'x = 41')).isError, undefined);
    const r = await run(c, 'return x + 1');
    assert.match(textOf(r), /42/);
    const vars = textOf(await c.callTool({ name: 'list_variables', arguments: {} }));
    assert.match(vars, /"name": "x"/);

    const plot = await run(c, 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()');
    const image = plot.content.find((p) => p.type === 'image') as { data: string; mimeType: string } | undefined;
    assert.ok(image, `no image in ${JSON.stringify(plot.content).slice(0, 500)}`);
    assert.equal(image.mimeType, 'image/png');
    assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG');

    assert.match(textOf(await c.callTool({ name: 'restart_session', arguments: {} })), /restarted/);
    const gone = await run(c, 'return x');
    assert.equal(gone.isError, true);
    assert.match(textOf(gone), /NameError/);
  });

  it('links the files its code created or changed in the workspace (MCP resource links); a deleted one is only listed', async () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'codeact-mcp-links-'));
    try {
      mkdirSync(path.join(folder, '.vscode'));
      writeFileSync(path.join(folder, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.sandbox.mountWorkspace': 'readwrite' }));
      writeFileSync(path.join(folder, 'old.csv'), 'a\n1\n');
      writeFileSync(path.join(folder, 'gone.txt'), 'bye\n');
      mkdirSync(path.join(folder, 'out'));
      const c = await connect({ workspace: folder });
      const at = (f: string) => JSON.stringify(path.join(folder, f));
      const r = await run(
        c,
        [`open(${at('out/report.txt')}, "w").write("hi")`, `open(${at('old.csv')}, "a").write("2\\n")`, 'import os', `os.remove(${at('gone.txt')})`].join('\n'),
      );
      assert.equal(r.isError, undefined, textOf(r));
      const links = r.content.filter((p) => p.type === 'resource_link') as { uri: string; name: string; description?: string; mimeType?: string }[];
      assert.deepEqual(links.map((l) => [l.name, l.uri, l.description, l.mimeType]).sort(), [
        ['old.csv', pathToFileURL(path.join(folder, 'old.csv')).href, 'changed by this execution', 'text/csv'],
        ['out/report.txt', pathToFileURL(path.join(folder, 'out', 'report.txt')).href, 'created by this execution', 'text/plain'],
      ]);
      assert.match(textOf(r), /gone\.txt/, 'the deleted file is in the list of changes');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('sends output as progress while the code runs, and a cancelled call stops its run while the session goes on', async () => {
    const c = await connect();
    await run(c, 'y = 7');
    const messages: string[] = [];
    const controller = new AbortController();
    const call = run(
      c,
      'import time\nprint("ready", flush=True)\ntime.sleep(600)',
      {},
      {
        signal: controller.signal,
        onprogress: (p: { message?: string }) => {
          messages.push(p.message ?? '');
          if (p.message?.includes('ready')) controller.abort();
        },
      },
    );
    await assert.rejects(call, /abort/i);
    assert.ok(
      messages.some((m) => m.includes('ready')),
      JSON.stringify(messages),
    );
    // The session is alive and not busy: the next call runs at once and sees y (a run still sleeping would hold it).
    assert.match(textOf(await run(c, 'return y * 6')), /42/);
  });

  it('asks a tool whose policy is ask through elicitation, with its arguments, and obeys the answer', async () => {
    const asked: string[] = [];
    let answer = 'allow';
    const c = await connect({
      elicit: async (req) => {
        asked.push(String(req.params.message));
        return { action: 'accept', content: { decision: answer } };
      },
    });
    const call = 'try:\n    return await call_tool("note_ask", x="hello")\nexcept Exception as e:\n    return "refused: " + str(e)';
    assert.match(textOf(await run(c, call)), /"ran":"note_ask"/);
    assert.equal(asked.length, 1);
    assert.match(asked[0], /"note_ask"/);
    assert.match(asked[0], /"x": "hello"/); // the arguments, all of them, as the person reads them
    answer = 'deny';
    assert.match(textOf(await run(c, call)), /refused: .*denied/i);
    // An auto tool is not asked about.
    assert.match(textOf(await run(c, 'return await call_tool("note_auto", x="a")')), /"ran":"note_auto"/);
    assert.equal(asked.length, 2);
  });

  it('install_packages: asked through elicitation with the exact command, then the next code imports it; no elicitation, no install', async () => {
    // Not under /tmp: the sandbox gives the guest a /tmp of its own, which would hide the folder's .venv.
    const parent = mkdtempSync(path.join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-mcp-install-'));
    try {
      const folder = path.join(parent, 'project');
      const wheels = path.join(parent, 'wheels');
      mkdirSync(path.join(folder, '.vscode'), { recursive: true });
      makeWheel(wheels, 'codeact-demo-pkg', '1.0', 'VALUE = 42');
      const python = makeVenv(path.join(folder, '.venv'));
      writeFileSync(path.join(folder, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.python.installArgs': ['--no-index', '--find-links', wheels] }));
      const install = 'r = await install_packages(["codeact-demo-pkg==1.0"])\nprint(r["message"])';

      const mute = await connect({ workspace: folder, python });
      assert.match(textOf(await run(mute, install)), /cannot ask them \(it does not support elicitation\)/);

      const asked: string[] = [];
      const c = await connect({
        workspace: folder,
        python,
        elicit: async (req) => {
          asked.push(String(req.params.message));
          return { action: 'accept', content: { decision: 'install' } };
        },
      });
      const r = await run(c, install);
      assert.equal(r.isError, undefined, textOf(r));
      assert.equal(asked.length, 1);
      assert.match(asked[0], /codeact-demo-pkg==1\.0/);
      assert.match(asked[0], /pip install/);
      assert.ok(asked[0].includes(path.join(folder, '.venv')), asked[0]);
      assert.match(textOf(await run(c, 'import codeact_demo_pkg\nreturn codeact_demo_pkg.VALUE')), /42/);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('refuses a tool that needs approval when the client cannot be asked (no elicitation), saying why', async () => {
    const c = await connect();
    const r = await run(c, 'try:\n    return await call_tool("note_ask", x="hello")\nexcept Exception as e:\n    return "refused: " + str(e)');
    assert.match(textOf(r), /refused: .*does not support elicitation/);
    assert.doesNotMatch(textOf(r), /"ran"/);
  });

  it('runs nothing in a folder that is not trusted, and says how to trust it', async () => {
    const c = await connect({ env: { CODEACT_TRUST_WORKSPACE: undefined } });
    const marker = path.join(ws, 'ran.txt');
    const r = await run(c, `open(${JSON.stringify(marker)}, "w").write("x")`);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /not trusted/);
    assert.match(textOf(r), /codeact trust/);
    assert.equal(existsSync(marker), false);
    assert.equal((await c.callTool({ name: 'restart_session', arguments: {} })).isError, true);
  });

  it('exits when its client closes stdin, and leaves no Python behind', async () => {
    // No sandbox, so that the pid the code reads is the host's (in bubblewrap it is the sandbox's own).
    const child = spawn(process.execPath, [CLI, 'mcp', 'serve', '--workspace', ws, '--python', '/usr/bin/python3', '--sandbox', 'none'], {
      env: CLI_ENV,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const send = (m: unknown) => child.stdin.write(JSON.stringify(m) + '\n');
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'execute_tool_code', arguments: { code: 'import os\nreturn os.getpid()' } } });
    await waitFor(() => out.includes('"id":2'), { what: 'the answer to the call', timeoutMs: 60_000 });
    const answer = JSON.parse(out.split('\n').find((l) => l.includes('"id":2'))!) as { result: CallToolResult };
    const pid = Number(/"value":(\d+)/.exec(textOf(answer.result))?.[1]);
    assert.ok(pid > 0 && isAlive(pid), textOf(answer.result));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.stdin.end();
    assert.equal(await exited, 0);
    await waitFor(() => !isAlive(pid), { what: "the session's Python to end", timeoutMs: 30_000 });
  });

  it('--keep-session NAME: the MCP Inspector CLI calls execute_tool_code through two servers in turn, and the second reads what the first defined', async function () {
    this.timeout(300_000);
    await ensureNode22();
    // The Inspector starts each server itself, with only the environment it is given (-e): the test's config folder,
    // its session hosts' folder, and trust for the folder.
    const env = ['CODEACT_HOME', 'XDG_RUNTIME_DIR', 'CODEACT_TRUST_WORKSPACE'].flatMap((k) => ['-e', `${k}=${CLI_ENV[k]}`]);
    const server = [process.execPath, CLI, 'mcp', 'serve', '--workspace', ws, '--python', '/usr/bin/python3', '--keep-session', 'demo'];
    const inspector = (...args: string[]) => onNode22([INSPECTOR, '--cli', ...env, ...server, ...args], 120_000, ws);
    const listed = await inspector('--method', 'tools/list');
    assert.equal(listed.code, 0, listed.out);
    assert.match(listed.out, /"name": "execute_tool_code"/);
    const first = await inspector('--method', 'tools/call', '--tool-name', 'execute_tool_code', '--tool-arg', 'code=x = 41\nreturn x');
    assert.equal(first.code, 0, first.out);
    assert.match(first.out, /\\"value\\":41/);
    // Another server process, another MCP session: the same Python session, kept in the folder's session host.
    const second = await inspector('--method', 'tools/call', '--tool-name', 'execute_tool_code', '--tool-arg', 'code=return x + 1');
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, /\\"value\\":42/);
    // It is the session host's session mcp-demo, which codeact sessions ends.
    const sessions = await runCli(['sessions', '--json']);
    assert.ok(
      (JSON.parse(sessions.stdout) as { id: string }[]).some((x) => x.id === 'mcp-demo'),
      sessions.stdout,
    );
    assert.equal((await runCli(['sessions', 'end', 'mcp-demo'])).code, 0);
    const third = await inspector('--method', 'tools/call', '--tool-name', 'execute_tool_code', '--tool-arg', 'code=return x');
    assert.match(third.out, /NameError/);
  });

  it("keeps each MCP session as a conversation of codeact chat's store, an execution a turn of it; `codeact chat --continue` goes on with a kept session's", async () => {
    const store = new TranscriptStore(path.join(CLI_ENV.CODEACT_HOME!, 'conversations'));
    const before = new Set(store.list().map((x) => x.id));
    const c = await connect();
    await run(c, 'kept_a = 20');
    assert.match(textOf(await run(c, 'print(kept_a + 1)')), /21/);
    await c.close();
    const made = store.list().filter((x) => !before.has(x.id));
    assert.equal(made.length, 1, JSON.stringify(made));
    assert.equal(made[0].title, 'codeact-test (MCP)');
    assert.equal(realpathSync(made[0].workspace!), realpathSync(ws));
    const events = store.open(made[0].id).events;
    assert.deepEqual(
      events.flatMap((e) => (e.type === 'codeact.turn.started' ? [[e.source, e.prompt]] : [])),
      [
        ['mcp', 'codeact-test: execute_tool_code'],
        ['mcp', 'codeact-test: execute_tool_code'],
      ],
    );
    assert.deepEqual(
      events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item.code] : [])),
      ['kept_a = 20', 'print(kept_a + 1)'],
    );
    assert.deepEqual(
      events.flatMap((e) => (e.type === 'codeact.turn.ended' ? [e.status] : [])),
      ['completed', 'completed'],
    );

    // A kept Python session (--keep-session NAME) is the conversation mcp-NAME: codeact chat goes on with it, variables and all.
    const k = await connect({ args: ['--keep-session', 'chatted'] });
    await run(k, 'shared_v = 7');
    await k.close();
    assert.ok(store.exists('mcp-chatted'));
    const model = await startServerFor('openai-compatible', 'ollama');
    try {
      model.push(turn().call('execute_tool_code', { code: 'print(f"six times: {shared_v * 6}")' }), turn().text('It is 42.'));
      const chat = await runCli([
        'chat',
        'What is shared_v times six?',
        ...scriptedModel(model.url, store.dir),
        '--workspace',
        ws,
        '--python',
        '/usr/bin/python3',
        '--continue',
        'mcp-chatted',
      ]);
      assert.equal(chat.code, 0, chat.stderr);
      assert.match(chat.stdout, /six times: 42/);
      assert.doesNotMatch(chat.stdout + chat.stderr, /NameError/);
    } finally {
      await model.close();
    }
  });
});
