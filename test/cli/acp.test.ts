/**
 * `codeact acp` (issue 36, point 2): the built CLI as an ACP agent on stdio, driven by a client built on the
 * official `@agentclientprotocol/sdk`, against a scripted model on loopback (the OpenAI-compatible wire), with
 * real Python, a real command tool and real files. A full turn streams the model's text and shows the execution as
 * a tool call with its code, live output, result and the file it wrote; the tool's approval is a permission request
 * answered by the client; cancel stops a run mid-way and the session takes the next prompt; an untrusted folder
 * gets no session; the conversation is one `codeact chat --continue` can go on with.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, type ClientContext, type RequestPermissionRequest, type SessionNotification } from '@agentclientprotocol/sdk';
import { everyHost } from '../../src/core/sessionHost/launch';
import { CLI, CLI_ENV, runCli, scriptedModel, TEST_RUNTIME_DIR } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { waitFor } from '../support/wait';
import { processesWithCmdline } from '../../src/core/util/processTree';

const tool = {
  name: 'note',
  approval: 'ask',
  description: 'Keeps a note.',
  command: ['python3', '-c', 'import json, sys; a = json.load(sys.stdin); print(json.dumps({"kept": a.get("x")}))'],
  inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
};

type Asked = RequestPermissionRequest;
type Answer = (r: Asked) => Promise<{ outcome: { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' } }>;

describe('codeact acp: CodeAct as an ACP agent on stdio', function () {
  this.timeout(120_000);
  let ws: string;
  let storage: string;
  let server: WireServer;
  const children: ChildProcess[] = [];
  /** The model, the store and the interpreter every command of these tests uses (the scripted model on loopback). */
  const common = () => [...scriptedModel(server.url, storage), '--python', '/usr/bin/python3'];

  before(function () {
    if (!existsSync(CLI)) this.skip();
  });
  beforeEach(async () => {
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-acp-'));
    storage = mkdtempSync(path.join(tmpdir(), 'codeact-acp-store-'));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool], 'codeact.sandbox.mountWorkspace': 'readwrite' }));
    server = await startServerFor('openai-compatible', 'ollama');
  });
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.stdin?.end();
      if (c.exitCode === null) await new Promise((r) => c.once('exit', r));
    }
    await server.close();
    rmSync(ws, { recursive: true, force: true });
    rmSync(storage, { recursive: true, force: true });
  });

  /** Starts `codeact acp` and runs `op` on a connected client; every update and permission request is kept. */
  async function withAgent<T>(
    op: (ctx: ClientContext, seen: { updates: SessionNotification[]; asked: Asked[] }) => Promise<T>,
    o: { answer?: Answer; env?: NodeJS.ProcessEnv } = {},
  ): Promise<{ value: T; stderr: string; exit: Promise<number | null> }> {
    const env = { ...CLI_ENV, ...o.env } as Record<string, string>;
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    const child = spawn(process.execPath, [CLI, 'acp', ...common()], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const seen = { updates: [] as SessionNotification[], asked: [] as Asked[] };
    const app = client({ name: 'codeact-test' })
      .onNotification('session/update', ({ params }) => {
        seen.updates.push(params);
      })
      .onRequest('session/request_permission', async ({ params }) => {
        seen.asked.push(params);
        return o.answer ? await o.answer(params) : { outcome: { outcome: 'cancelled' } };
      });
    const stream = ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
    const value = await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentInfo?.name, 'codeact');
      assert.equal(init.agentCapabilities?.loadSession, true);
      return op(ctx, seen);
    });
    child.stdin!.end();
    return { value, stderr, exit };
  }

  const updatesOf = (seen: { updates: SessionNotification[] }, kind: string) => seen.updates.map((n) => n.update).filter((u) => u.sessionUpdate === kind);
  const textOfContent = (u: object) =>
    (((u as { content?: unknown }).content as { type: string; content?: { type: string; text?: string } }[] | undefined) ?? [])
      .map((c) => (c.type === 'content' && c.content?.type === 'text' ? c.content.text : ''))
      .join('\n');

  it('a full turn: the execution as a tool call with its code, live output, result and file; the approval asked; the text streamed', async () => {
    const code = [
      'print("step one", flush=True)',
      `open(${JSON.stringify(ws)} + "/out.csv", "w").write("a,b\\n1,2\\n")`,
      `open(${JSON.stringify(ws)} + "/notes.txt", "w").write("new\\n")`,
      'r = await call_tool("note", x="keep \\u202e this")',
      'kept = r["kept"]',
      'return kept',
    ].join('\n');
    writeFileSync(path.join(ws, 'notes.txt'), 'old\n');
    server.push(turn().call('execute_tool_code', { code }));
    server.push(turn().text('I kept the note and wrote out.csv.'));
    const { value, exit } = await withAgent(
      async (ctx, seen) => {
        const session = await ctx.buildSession(ws).start();
        const r = await session.prompt('Keep a note and write out.csv.');
        return { stop: r.stopReason, sessionId: session.sessionId, seen };
      },
      { answer: async () => ({ outcome: { outcome: 'selected', optionId: 'allow' } }) },
    );
    assert.equal(await exit, 0);
    const { stop, sessionId, seen } = value;
    assert.equal(stop, 'end_turn');
    // The model's text, streamed as message chunks.
    const said = updatesOf(seen, 'agent_message_chunk')
      .map((u) => (u as { content: { text: string } }).content.text)
      .join('');
    assert.equal(said, 'I kept the note and wrote out.csv.');
    // The execution: one `execute` tool call, pending, then its code, running, and its result.
    const calls = updatesOf(seen, 'tool_call') as { toolCallId: string; kind?: string; title: string }[];
    const exec = calls.find((c) => c.kind === 'execute');
    assert.ok(exec, JSON.stringify(calls));
    const ofExec = (updatesOf(seen, 'tool_call_update') as { toolCallId: string; status?: string; content?: unknown; locations?: { path: string }[] }[]).filter(
      (u) => u.toolCallId === exec.toolCallId,
    );
    assert.ok(ofExec.some((u) => u.status === 'in_progress'));
    assert.ok(
      ofExec.some((u) => textOfContent(u).includes('print("step one"')),
      'the code is shown',
    );
    const last = ofExec[ofExec.length - 1];
    assert.equal(last.status, 'completed');
    assert.match(textOfContent(last), /step one/);
    assert.match(textOfContent(last), /keep/);
    assert.deepEqual(last.locations?.map((l) => l.path).sort(), [path.join(ws, 'notes.txt'), path.join(ws, 'out.csv')]);
    assert.match(textOfContent(last), /2 files changed:\n`{3,}\n(created out\.csv\nchanged notes\.txt|changed notes\.txt\ncreated out\.csv)\n`{3,}/);
    assert.equal(readFileSync(path.join(ws, 'out.csv'), 'utf8'), 'a,b\n1,2\n');
    // The new file as a diff, which the editor shows as one.
    assert.deepEqual(
      (last.content as { type: string; path?: string }[]).filter((c) => c.type === 'diff').sort((a, b) => a.path!.localeCompare(b.path!)),
      [
        { type: 'diff', path: path.join(ws, 'notes.txt'), oldText: 'old\n', newText: 'new\n' },
        { type: 'diff', path: path.join(ws, 'out.csv'), oldText: null, newText: 'a,b\n1,2\n' },
      ],
    );
    // The managed tool's call is a tool call of its own, and its approval was asked with every argument, the
    // invisible character shown.
    const note = calls.find((c) => c.title === 'call_tool("note")');
    assert.ok(note, JSON.stringify(calls));
    assert.equal(seen.asked.length, 1);
    const q = seen.asked[0];
    assert.equal(q.sessionId, sessionId);
    // The question is shown on the call it is about; that call ends under its own title again.
    assert.equal(q.toolCall.toolCallId, note.toolCallId);
    const noteEnd = (updatesOf(seen, 'tool_call_update') as { toolCallId: string; status?: string; title?: string }[])
      .filter((u) => u.toolCallId === note.toolCallId)
      .pop();
    assert.deepEqual([noteEnd?.status, noteEnd?.title], ['completed', 'call_tool("note")']);
    assert.deepEqual(
      q.options.map((o) => [o.optionId, o.kind]),
      [
        ['allow', 'allow_once'],
        ['allow_session', 'allow_always'],
        ['deny', 'reject_once'],
      ],
    );
    assert.match(textOfContent(q.toolCall), /the tool "note".*\n\n\{\n {2}"x": "keep <U\+202E> this"\n\}/s);
    // The conversation is saved where codeact chat finds it.
    const list = await runCli(['chat', '--list', '--json', '--storage', storage]);
    const listed = JSON.parse(list.stdout) as { id: string; title: string }[];
    assert.deepEqual(
      listed.map((c) => [c.id, c.title]),
      [[sessionId, 'Keep a note and write out.csv.']],
    );
    // codeact chat --continue goes on with it, in its live Python session (the session host kept it).
    server.push(turn().call('execute_tool_code', { code: 'return kept[:4]' }));
    server.push(turn().text('It says keep.'));
    const more = await runCli(['chat', '--continue', sessionId, 'What did you keep?', ...common(), '--json'], {}, '', ws);
    assert.equal(more.code, 0, more.stderr);
    assert.match(more.stdout, /"value":"keep"/);
  });

  it('a denied approval reaches the code; cancel stops a run mid-way, and the session takes the next prompt', async () => {
    const sleeper = `codeact-acp-sleeper-${process.pid}`;
    server.push(
      turn().call('execute_tool_code', { code: 'try:\n    await call_tool("note", x="a")\nexcept Exception as e:\n    print("refused:", e)\nreturn 1' }),
    );
    server.push(turn().text('Denied.'));
    server.push(
      turn().call('execute_tool_code', {
        code: `import subprocess, sys, time\np = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${sleeper}"])\nprint("ready", p.pid, flush=True)\ntime.sleep(600)`,
      }),
    );
    server.push(turn().call('execute_tool_code', { code: 'return 6 * 7' }));
    server.push(turn().text('It is 42.'));
    const { value } = await withAgent(
      async (ctx, seen) => {
        const session = await ctx.buildSession(ws).start();
        const denied = await session.prompt('Try the note.');
        const deniedOut = textOfContent((updatesOf(seen, 'tool_call_update') as { status?: string }[]).filter((u) => u.status).pop()!);
        const prompt = session.prompt('Sleep.');
        await waitFor(() => /ready \d+/.test(updatesOf(seen, 'tool_call_update').map(textOfContent).join('\n')), {
          what: 'the live output "ready"',
          timeoutMs: 60_000,
        });
        await ctx.notify('session/cancel', { sessionId: session.sessionId });
        const cancelled = await prompt;
        // Stop kills what the run started: its subprocess is gone, not left running in the session.
        await waitFor(() => processesWithCmdline(sleeper).length === 0, { what: "the run's subprocess to be killed", timeoutMs: 30_000 });
        const next = await session.prompt('And 6 * 7?');
        return { denied: denied.stopReason, deniedOut, cancelled: cancelled.stopReason, next: next.stopReason, text: seen };
      },
      { answer: async () => ({ outcome: { outcome: 'selected', optionId: 'deny' } }) },
    );
    assert.equal(value.denied, 'end_turn');
    assert.match(value.deniedOut, /refused:.*denied/i);
    assert.equal(value.cancelled, 'cancelled');
    assert.equal(value.next, 'end_turn');
    const said = updatesOf(value.text, 'agent_message_chunk')
      .map((u) => (u as { content: { text: string } }).content.text)
      .join('');
    assert.equal(said, 'Denied.It is 42.');
    // The cancelled run's turn asked the model nothing more: its next request is the next prompt's.
    assert.equal(server.turns.length, 5);
    assert.match(server.turns[3].rawBody, /And 6 \* 7\?/);
    assert.doesNotMatch(server.turns[2].rawBody, /And 6 \* 7\?/);
  });

  it('session/load: a codeact chat conversation opens in the editor, replayed, and goes on in its live Python session', async () => {
    server.push(turn().call('execute_tool_code', { code: 'y = 7\nreturn y' }));
    server.push(turn().text('y is 7.'));
    const chat = await runCli(['chat', 'Set y.', ...common(), '--workspace', ws, '--json']);
    assert.equal(chat.code, 0, chat.stderr);
    const id = (JSON.parse(chat.stdout.trim().split('\n').pop()!) as { conversation_id: string }).conversation_id;
    server.push(turn().call('execute_tool_code', { code: 'return y * 6' }));
    server.push(turn().text('It is 42.'));
    const { value } = await withAgent(async (ctx, seen) => {
      // An id the store does not have, and the right id from another folder: refused, nothing replayed.
      await assert.rejects(ctx.request('session/load', { sessionId: 'c_20260101_0000000000', cwd: ws, mcpServers: [] }), /not found/i);
      await assert.rejects(
        ctx.request('session/load', { sessionId: id, cwd: storage, mcpServers: [] }),
        /This conversation works in .*: load it with that folder as cwd/,
      );
      assert.equal(seen.updates.length, 0);
      await ctx.request('session/load', { sessionId: id, cwd: ws, mcpServers: [] });
      // The replay comes before the answer; its last update is the answer's text.
      const said = () =>
        seen.updates
          .map((n) => n.update)
          .filter((u) => u.sessionUpdate === 'agent_message_chunk')
          .map((u) => (u as { content: { text: string } }).content.text)
          .join('');
      await waitFor(() => said() === 'y is 7.', { what: 'the replayed answer', timeoutMs: 30_000 });
      const replayed = seen.updates.splice(0);
      const r = await ctx.request('session/prompt', { sessionId: id, prompt: [{ type: 'text', text: 'Times six?' }] });
      return { replayed, stop: r.stopReason, after: seen.updates };
    });
    // What the conversation said and ran, replayed in order: the prompt, the execution with its code and result, the answer.
    const kinds = value.replayed.map((n) => n.update.sessionUpdate);
    assert.equal(kinds[0], 'user_message_chunk');
    assert.equal((value.replayed[0].update as { content: { text: string } }).content.text, 'Set y.');
    const execDone = value.replayed.map((n) => n.update).filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed');
    assert.equal(execDone.length, 1);
    assert.match(textOfContent(execDone[0]), /y = 7/);
    assert.equal(
      value.replayed
        .map((n) => n.update)
        .filter((u) => u.sessionUpdate === 'agent_message_chunk')
        .map((u) => (u as { content: { text: string } }).content.text)
        .join(''),
      'y is 7.',
    );
    assert.ok(kinds.indexOf('tool_call') > 0 && kinds.indexOf('tool_call') < kinds.indexOf('agent_message_chunk'), kinds.join());
    // It goes on where it was: y is still defined, and the model was not told of a new session.
    assert.equal(value.stop, 'end_turn');
    const last = value.after.map((n) => n.update).filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed');
    assert.match(textOfContent(last[last.length - 1]), /"value":42/);
    assert.doesNotMatch(server.turns[2].rawBody, /new Python session/);
    assert.match(server.turns[2].rawBody, /Set y\./);
  });

  it('an untrusted folder gets no session, saying how to trust it; nothing runs', async () => {
    const { value } = await withAgent(
      async (ctx) => {
        try {
          await ctx.buildSession(ws).start();
          return 'started';
        } catch (e) {
          return (e as Error).message;
        }
      },
      { env: { CODEACT_TRUST_WORKSPACE: undefined } },
    );
    assert.match(value, /is not trusted, so CodeAct runs no code in it/);
    assert.match(value, /codeact trust/);
    assert.equal(server.requests.length, 0);
    // Nothing was started for it: no session host.
    assert.deepEqual(await everyHost({ XDG_RUNTIME_DIR: TEST_RUNTIME_DIR }), []);
  });
});
