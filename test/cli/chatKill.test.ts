/**
 * `codeact chat` killed with SIGKILL in the middle of a turn, then `--continue`d: the next request to the
 * model (as the wire server receives it) holds what completed (the prompt, each finished execution with its
 * result), a "result lost" output for each call the kill cut off, and a note that the turn was interrupted;
 * the transcript closes the turn as interrupted. Each kill waits for a barrier (a line in the transcript, a
 * marker file the code or the tool writes, the next request arriving), never a clock.
 * Killed during compaction (its summary request held, or the compacted request held): the history is whole.
 * Two processes on one conversation: the second is told it is open elsewhere, and writes nothing into it.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, runCli, CLI_ENV } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';
import { waitFor } from '../support/wait';
import { RESULT_LOST } from '../../src/core/agent/turnJournal';
import { startTimeOf } from '../../src/core/util/processTree';
import { CONVERSATION_BUSY } from '../../src/core/agent/conversationLock';
import { LAST_TURN_INTERRUPTED } from '../../src/cli/chat';

/** A message of an OpenAI-compatible request, as the wire server received it. */
interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

const MODEL = ['--provider', 'openai-compatible', '--model', 'qwen2.5-coder:7b'];

describe('codeact chat killed mid-turn, then --continue', function () {
  this.timeout(120_000);
  let dir: string;
  let storage: string;
  let ws: string;
  let server: WireServer;
  const children: ChildProcess[] = [];
  /** The processes the markers named, with their start times when seen. */
  const leftovers: { pid: number; start: string | undefined }[] = [];
  const remember = (marker: string) => {
    const pid = Number(readFileSync(marker, 'utf8'));
    leftovers.push({ pid, start: startTimeOf(pid) });
  };

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-kill-'));
    storage = path.join(dir, 'conv');
    ws = path.join(dir, 'ws');
    mkdirSync(path.join(ws, '.vscode'), { recursive: true });
    // A direct tool that says it started (its pid in a marker file), then hangs.
    const tool = `import os, pathlib, time; pathlib.Path(${JSON.stringify(path.join(dir, 'tool.marker'))}).write_text(str(os.getpid())); time.sleep(600)`;
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({
        'codeact.tools': [
          {
            name: 'slow_lookup',
            description: 'Looks something up, slowly.',
            command: ['python3', '-c', tool],
            expose: 'direct',
            inputSchema: { type: 'object', properties: {} },
          },
        ],
      }),
    );
    server = await startServerFor('openai-compatible', 'ollama');
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    // What the killed CLI left running (the code's process, the hung tool): the reaper's part, not this test's.
    for (const { pid, start } of leftovers.splice(0)) {
      // Only what still is that process (a pid that ended may be another suite's by now).
      if (start === undefined || startTimeOf(pid) !== start) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `codeact chat` started, not awaited: the test kills it. */
  function start(args: string[]): ChildProcess {
    const child = spawn(process.execPath, [CLI, 'chat', ...args, ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws], {
      cwd: ROOT,
      env: { ...CLI_ENV },
      stdio: 'ignore',
    });
    children.push(child);
    return child;
  }

  async function kill(child: ChildProcess): Promise<void> {
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }

  function transcript(): string {
    const files = existsSync(storage) ? readdirSync(storage).filter((f) => f.endsWith('.jsonl')) : [];
    return files.length ? readFileSync(path.join(storage, files[0]), 'utf8') : '';
  }

  function conversationId(): string {
    return readdirSync(storage)
      .find((f) => f.endsWith('.jsonl'))!
      .slice(0, -'.jsonl'.length);
  }

  /** Continues the conversation with one more prompt (answered "Done."); returns the messages the model was sent. */
  async function continueIt(): Promise<{ messages: ChatMessage[]; stderr: string }> {
    const asked = server.turns.length;
    server.push(turn().text('Done.'));
    const r = await runCli(['chat', 'And now?', '--continue', conversationId(), ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(server.turns.length, asked + 1, r.stderr);
    return { messages: server.turns[asked].body.messages, stderr: r.stderr };
  }

  /** The tool messages (results) of the history, and whether every call has one. */
  function results(messages: ChatMessage[]): string[] {
    const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const answered = messages.filter((m) => m.role === 'tool');
    assert.deepEqual(answered.map((m) => m.tool_call_id).sort(), [...calls].sort(), 'every call in the history has its result');
    return answered.map((m) => String(m.content));
  }

  function assertClosed(messages: ChatMessage[], streamed?: string): void {
    const note = messages.filter((m) => m.role === 'assistant' && /this turn was interrupted/.test(String(m.content)));
    assert.equal(note.length, 1, JSON.stringify(messages));
    if (streamed) assert.match(String(note[0].content), new RegExp(streamed));
    assert.equal(messages[messages.length - 1].content, 'And now?');
    const ended = transcript()
      .split('\n')
      .filter((l) => l.includes('"codeact.turn.ended"'))
      .map((l) => JSON.parse(l).event);
    assert.equal(ended.filter((e) => e.interrupted === true).length, 1, 'the cut-off turn is closed as interrupted');
  }

  const NOTES = `Keep these notes: ${'note '.repeat(1400)}`;
  const KEPT = `Kept: ${'kept '.repeat(1400)}`;

  /**
   * An 8k window (7,168 tokens usable, compaction at 5,376) and a first turn whose prompt and answer use about
   * 4,000 tokens: the second turn's code returns about 850 more, so its next request compacts, and stand-ins
   * cannot help (the bulk is the first turn's messages): a summary request goes out. Returns a function that
   * puts the settings back (the default window).
   */
  async function compactingConversation(): Promise<() => void> {
    const settings = path.join(ws, '.vscode', 'settings.json');
    const saved = readFileSync(settings, 'utf8');
    // A window that holds the first chat and the next request, but not the request after the 3000-character result
    // (it grows with the fixed prose of execute_tool_code's description).
    writeFileSync(settings, JSON.stringify({ ...JSON.parse(saved), 'codeact.openaiCompatible.contextWindow': 8704 }));
    server.push(turn().text(KEPT));
    const first = await runCli(['chat', NOTES, ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws]);
    assert.equal(first.code, 0, first.stderr);
    server.push(turn().call('execute_tool_code', { code: "return 'y' * 3000" }));
    return () => writeFileSync(settings, saved);
  }

  it('killed while the model streams its answer: the prompt and the text streamed so far reach the model, with the note', async () => {
    server.push(fault.silence(turn().text('Partial answer so far', { chunks: ['Partial ', 'answer so far'] }), 3));
    const child = start(['What is the total?']);
    await waitFor(() => transcript().includes('answer so far'), { what: 'the streamed text in the transcript' });
    await kill(child);
    const { messages, stderr } = await continueIt();
    assert.ok(stderr.includes(LAST_TURN_INTERRUPTED), stderr);
    assert.deepEqual(
      messages.filter((m) => m.role === 'user').map((m) => m.content),
      ['What is the total?', 'And now?'],
    );
    assertClosed(messages, 'Partial answer so far');
  });

  it('killed while code runs: the call gets a "result lost" output', async () => {
    const marker = path.join(dir, 'code.marker');
    const code = `import os, time\nopen(${JSON.stringify(marker)}, 'w').write(str(os.getpid()))\ntime.sleep(600)`;
    server.push(turn().call('execute_tool_code', { code }));
    const child = start(['Run the slow job.', '--sandbox', 'none']);
    await waitFor(() => existsSync(marker) && readFileSync(marker, 'utf8').length > 0, { what: 'the code to start' });
    remember(marker);
    await kill(child);
    const { messages } = await continueIt();
    const out = results(messages);
    assert.equal(out.length, 1);
    assert.ok(out[0].includes(RESULT_LOST), out[0]);
    assertClosed(messages);
  });

  it('killed during a tool call: the call gets a "result lost" output', async () => {
    const marker = path.join(dir, 'tool.marker');
    server.push(turn().call('slow_lookup', {}));
    const child = start(['Look it up.']);
    await waitFor(() => existsSync(marker) && readFileSync(marker, 'utf8').length > 0, { what: 'the tool to start' });
    remember(marker);
    await kill(child);
    const { messages } = await continueIt();
    assert.deepEqual(
      messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name)),
      ['slow_lookup'],
    );
    const out = results(messages);
    assert.ok(out[0].includes(RESULT_LOST), out[0]);
    assertClosed(messages);
  });

  it('killed after one execution completed, before the next request: the execution and its result are kept', async () => {
    server.push(turn().call('execute_tool_code', { code: 'return 6 * 7' }), fault.noResponse());
    const child = start(['Multiply.']);
    await waitFor(() => server.turns.length === 2, { what: 'the request after the execution' });
    await kill(child);
    const { messages } = await continueIt();
    const code = messages.flatMap((m) => (m.tool_calls ?? []).map((c) => JSON.parse(c.function.arguments).code));
    assert.deepEqual(code, ['return 6 * 7']);
    const out = results(messages);
    assert.equal(out.length, 1);
    assert.match(out[0], /42/);
    assert.ok(!out[0].includes(RESULT_LOST), out[0]);
    assertClosed(messages);
  });

  it('killed while the compaction summary request is in flight: the history is whole, nothing in the file is damaged', async () => {
    const largeWindow = await compactingConversation();
    server.push(fault.noResponse());
    const child = start(['Make it longer.', '--continue', conversationId()]);
    await waitFor(() => server.turns.length === 3, { what: 'the compaction summary request' });
    const summary = server.turns[2].body as { messages: ChatMessage[]; tools?: unknown[] };
    assert.ok(!summary.tools?.length, 'the request held is the summary request (no tools)');
    assert.match(String(summary.messages.at(-1)?.content), /Keep these notes/);
    await kill(child);
    const before = transcript();
    // The continuation's window is large, so its request carries the whole history rather than a summary of it.
    largeWindow();
    const { messages, stderr } = await continueIt();
    assert.ok(stderr.includes(LAST_TURN_INTERRUPTED), stderr);
    assert.doesNotMatch(stderr, /damaged|skipped/i);
    assert.deepEqual(
      messages.filter((m) => m.role === 'user').map((m) => String(m.content).slice(0, 17)),
      ['Keep these notes:', 'Make it longer.', 'And now?'],
    );
    assert.equal(messages.filter((m) => m.role === 'user')[0].content, NOTES, 'the first prompt word for word');
    assert.equal(messages.find((m) => m.role === 'assistant' && String(m.content).startsWith('Kept:'))?.content, KEPT);
    const out = results(messages);
    assert.equal(out.length, 1);
    assert.ok(out[0].includes('y'.repeat(3000)), 'the completed execution keeps its result');
    assert.ok(!out[0].includes(RESULT_LOST), out[0]);
    assertClosed(messages);
    // Nothing in the file is damaged: every line is a whole record, and what the killed run wrote is still there.
    const after = transcript();
    assert.ok(after.startsWith(before), 'the continuation only appended');
    for (const line of after.split('\n').slice(0, -1)) JSON.parse(line);
    assert.ok(after.endsWith('\n'));
    assert.deepEqual(
      readdirSync(storage).filter((f) => !f.endsWith('.jsonl') && !f.endsWith('.lock')),
      [],
      'no torn or damaged copies',
    );
  });

  it('killed after compaction, while the compacted request is held: --continue rebuilds the compacted view, every call with its result', async () => {
    await compactingConversation();
    server.push(turn().text('The notes, summarised.'), fault.noResponse());
    const child = start(['Make it longer.', '--continue', conversationId()]);
    await waitFor(() => server.turns.length === 4 && transcript().includes('"codeact.context.compacted"'), { what: 'the compacted request' });
    await kill(child);
    // The same small window: the continuation sends the compacted view (no second summary request).
    const { messages } = await continueIt();
    const users = messages.filter((m) => m.role === 'user').map((m) => String(m.content));
    assert.equal(users.length, 2, JSON.stringify(users));
    assert.ok(users[0].startsWith('[codeact: earlier turns of this conversation were compacted'), users[0].slice(0, 200));
    assert.match(users[0], /The notes, summarised\./);
    assert.ok(users[0].endsWith('Make it longer.'), 'the kept step follows the summary');
    const out = results(messages);
    assert.equal(out.length, 1);
    assert.ok(out[0].includes('y'.repeat(3000)), 'the execution before the compaction keeps its result');
    assertClosed(messages);
  });

  it('two processes on one conversation: the second is told it is open elsewhere and writes nothing', async () => {
    server.push(turn().text('Hello.'));
    const first = await runCli(['chat', 'Hi.', ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws]);
    assert.equal(first.code, 0, first.stderr);
    const id = conversationId();
    // Every saved event names its turn (the panel and the export group by it).
    const events = transcript()
      .split('\n')
      .filter((l) => l.includes('"event":'))
      .map((l) => JSON.parse(l).event);
    assert.ok(events.length > 2);
    assert.deepEqual(new Set(events.map((e) => e.turn_id)).size, 1, JSON.stringify(events));
    assert.ok(events.every((e) => typeof e.turn_id === 'string'));
    server.push(fault.noResponse());
    const holder = start(['Take your time.', '--continue', id]);
    await waitFor(() => server.turns.length === 2, { what: 'the first process to be in its turn' });
    const second = await runCli(['chat', 'Me too.', '--continue', id, ...MODEL, '--base-url', server.url, '--storage', storage, '--workspace', ws]);
    assert.equal(second.code, 1, second.stderr);
    assert.ok(second.stderr.includes(CONVERSATION_BUSY(id, holder.pid!, path.join(storage, `${id}.lock`))), second.stderr);
    assert.equal(server.turns.length, 2, 'the second process sent nothing to the model');
    assert.doesNotMatch(transcript(), /Me too/);
    // Its holder killed, the lock is stale: the next process continues, and the cut-off turn is closed.
    await kill(holder);
    const { messages } = await continueIt();
    assert.deepEqual(
      messages.filter((m) => m.role === 'user').map((m) => m.content),
      ['Hi.', 'Take your time.', 'And now?'],
    );
    assertClosed(messages);
  });
});
