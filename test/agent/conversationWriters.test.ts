/**
 * Two processes on one conversation, at the edges a review found: a record still being written when the
 * file is read, a file another process repaired (replaced whole), a turn that ended between reading the file
 * and holding it, a writer that died while another had the conversation open, a prompt a crash lost before
 * it was saved, and the lock itself (a pid reused by another process, the message naming the lock file, a
 * write outside a turn while another process holds the conversation).
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { TranscriptEvent } from '../../src/common/transcript';
import { CONVERSATION_BUSY, ConversationBusyError, holdConversation } from '../../src/core/agent/conversationLock';
import { repairDamaged, TranscriptStore, type Conversation } from '../../src/core/agent/transcriptStore';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { runCodeTurn } from '../../src/core/turn/turns';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { noSessions, type Runtime } from '../../src/core/runtime/types';
import { closeInterrupted } from '../../src/vscode/conversationMemory';
import { waitFor } from '../support/wait';
import { INTERRUPTED_NOTE, RESULT_LOST } from '../../src/core/agent/turnJournal';

const user = (id: string, text: string) => ({ type: 'message', id, role: 'user', text }) as ConversationItem;
const call = (id: string, callId: string) => ({ type: 'function_call', id, call_id: callId, name: 'execute_code', arguments: '{}' }) as ConversationItem;
const output = (id: string, callId: string) => ({ type: 'function_call_output', id, call_id: callId, output: '"done"' }) as ConversationItem;
const started = (turnId: string, prompt: string) =>
  ({ type: 'codeact.turn.started', turn_id: turnId, prompt, source: 'chat', started_at: 1 }) as TranscriptEvent;
const ended = (turnId: string) => ({ type: 'codeact.turn.ended', turn_id: turnId, status: 'completed', duration_ms: 1 }) as TranscriptEvent;
const record = (o: object) => JSON.stringify({ t: 1, ...o }) + '\n';
const ids = (c: Conversation) => c.history.map((i) => ('id' in i ? i.id : ''));

/** A process that holds a conversation's lock until killed (a live owner other than this test). */
function holder(file: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(file)}, String(process.pid)); setInterval(() => {}, 1000);`], {
    stdio: 'ignore',
  });
  return waitFor(() => existsSync(file) && readFileSync(file, 'utf8') === String(child.pid), { what: 'the holder to write its lock' }).then(() => child);
}

describe('two processes on one conversation: the edges', () => {
  let dir: string;
  let store: TranscriptStore;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-writers-'));
    store = new TranscriptStore(dir);
  });
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a record still being written when the file is read is taken in whole once it is finished', () => {
    const a = store.create({ title: 't' });
    a.appendItems([user('m1', 'one')]);
    const line = record({ item: user('m2', 'two') });
    appendFileSync(a.file, line.slice(0, 30));
    const panel = store.open(a.id);
    appendFileSync(a.file, line.slice(30) + record({ item: user('m3', 'three') }));
    panel.catchUp();
    assert.deepEqual(ids(panel), ['m1', 'm2', 'm3']);
    assert.equal(
      panel.notices.filter((n) => /damaged/i.test(n)).length,
      1,
      'only the open-time notice of the cut line (it was cut then), none for the finished record',
    );
  });

  it('a file another process repaired (replaced whole) is read again whole: nothing missed, nothing twice', () => {
    const a = store.create({ title: 't' });
    a.appendItems([user('m1', 'one'), call('fc1', 'c1')]);
    appendFileSync(a.file, '{not json}\n');
    const panel = store.open(a.id);
    // The CLI continues: it repairs the file (a new inode, another layout), then writes more.
    const cli = store.open(a.id);
    const release = holdConversation(cli.id, cli.file);
    repairDamaged(cli);
    cli.appendItems([output('o1', 'c1'), user('m2', 'two')]);
    release();
    panel.catchUp();
    assert.deepEqual(ids(panel), ['m1', 'fc1', 'o1', 'm2']);
    // And what the panel writes next goes after, read back once.
    panel.appendItems([user('m3', 'three')]);
    assert.deepEqual(ids(store.open(a.id)), ['m1', 'fc1', 'o1', 'm2', 'm3']);
  });

  it('a turn that ended between reading the file and holding it is not closed as interrupted', () => {
    const a = store.create({ title: 't' });
    a.appendEvent(started('turn_A', 'p'));
    a.appendItems([user('m1', 'p'), call('fc1', 'c1')]);
    a.flush();
    const late = store.open(a.id);
    a.appendItems([output('o1', 'c1')]);
    a.appendEvent(ended('turn_A'));
    a.flush();
    // The panel reopens it (closing a turn a reload cut off): it holds the conversation, then reads what came.
    closeInterrupted(late);
    const text = readFileSync(a.file, 'utf8');
    assert.ok(!text.includes(RESULT_LOST) && !text.includes(INTERRUPTED_NOTE), text);
    assert.doesNotMatch(text, /interrupted/);
  });

  it('a writer that died mid-turn is closed when the next turn holds the conversation, right after its steps; a prompt it never saved is kept', async () => {
    const a = store.create({ title: 't' });
    a.appendEvent(started('turn_A', 'first'));
    a.appendItems([user('m1', 'first')]);
    a.appendEvent(ended('turn_A'));
    a.flush();
    const panel = store.open(a.id);
    // The CLI's turn: its start marker, then it dies before its prompt was saved.
    a.appendEvent(started('turn_B', 'second, lost'));
    a.flush();
    const told: TranscriptEvent[] = [];
    const runtime: Runtime = {
      kind: 'jupyter',
      sessions: noSessions,
      execute: async (r) => ({ type: 'code_interpreter_call', id: 'x', status: 'completed', code: r.code, runtime: 'jupyter', outputs: [] }),
      dispose: async () => {},
    };
    await runCodeTurn({
      conversation: panel,
      code: 'x = 1',
      label: 'run',
      source: 'run_with_tools',
      runtime: async () => runtime,
      gateway: async () => new ToolGateway([]),
      timeoutMs: 5000,
      onEvent: (e) => told.push(e),
    });
    const closedB = told.findIndex((e) => e.type === 'codeact.turn.ended' && e.turn_id === 'turn_B');
    const startedMine = told.findIndex((e) => e.type === 'codeact.turn.started' && e.turn_id !== 'turn_B');
    assert.ok(closedB >= 0 && closedB < startedMine, 'the dead turn is closed (and shown closed) before this turn starts');
    const again = store.open(a.id);
    const texts = again.history.map((i) =>
      i.type === 'message' ? `${i.role}: ${/^\[CodeAct note: this turn was interrupted/.test(i.text) ? '(the note)' : i.text}` : i.type,
    );
    assert.deepEqual(texts.slice(0, 3), ['user: first', 'user: second, lost', 'assistant: (the note)']);
  });

  it('the lock: a pid reused by another process is stale; a live holder is named with the lock file; a write outside a turn waits for the holder', async () => {
    const a = store.create({ title: 't' });
    const lock = path.join(dir, `${a.id}.lock`);
    // A live process (this test's parent) with another start time than the lock says: a reused pid.
    writeFileSync(lock, `${process.ppid} 1`);
    const release = holdConversation(a.id, a.file);
    release();
    assert.equal(existsSync(lock), false, 'taken over, then released');

    const child = await holder(lock);
    children.push(child);
    assert.throws(
      () => holdConversation(a.id, a.file),
      (e: unknown) => e instanceof ConversationBusyError && e.message === CONVERSATION_BUSY(a.id, child.pid!, lock),
    );
    // The panel writes outside a turn (a patch) while the CLI holds it: the write waits, nothing is appended.
    const size = readFileSync(a.file).length;
    a.update({ title: 'renamed' });
    assert.equal(readFileSync(a.file).length, size, 'nothing written while another process holds the conversation');
    child.kill('SIGKILL');
    await waitFor(() => child.exitCode !== null || child.signalCode !== null, { what: 'the holder to die' });
    a.flush();
    assert.match(readFileSync(a.file, 'utf8'), /"renamed"/);
  });
});
