/**
 * The extension host killed mid-turn: what the turn journaled (the prompt, a finished execution with its
 * result, a call still running) is in the transcript, and no end marker. The reload reopens the conversation
 * with the turn closed as interrupted (the panel marks it), every completed step kept for the model, the
 * unfinished call answered "result lost", and a note to the model.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildTranscript, runningJobs } from '../../src/common/transcript';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { ConversationMemory, endJobsLeftRunning } from '../../src/vscode/conversationMemory';
import { INTERRUPTED_NOTE, RESULT_LOST } from '../../src/core/agent/turnJournal';

describe('a conversation reopened after the extension host was killed mid-turn', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-reopen-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('closes the cut-off turn as interrupted and keeps every completed step, with result-lost outputs and a note for the model', () => {
    const store = new TranscriptStore(dir);
    const convo = store.create({ title: 'Slow report' });
    // What the journal saved before the kill: the turn's start, its prompt, two calls, one result.
    convo.appendEvent({ type: 'codeact.turn.started', turn_id: 'turn_1', prompt: 'Run the report', source: 'chat' });
    convo.appendItems([
      { type: 'message', id: 'msg_user_1', role: 'user', text: 'Run the report' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'execute_tool_code', arguments: '{"code":"return 1"}' },
      { type: 'function_call', id: 'fc_2', call_id: 'call_2', name: 'execute_tool_code', arguments: '{"code":"sleep()"}' },
      { type: 'function_call_output', id: 'out_1', item_id: 'fc_1', call_id: 'call_1', name: 'execute_tool_code', output: 'execution 1: 1' },
    ]);
    const state = new Map<string, unknown>([['codeact.openConversation', convo.id]]);
    const memory = new ConversationMemory(store, { get: (k: string) => state.get(k), update: async (k: string, v: unknown) => void state.set(k, v) } as never);

    const reopened = memory.restoreOpen();
    assert.ok(reopened);
    const turns = buildTranscript(reopened.events).turns;
    assert.deepEqual(
      turns.map((t) => [t.prompt, t.status, t.interrupted]),
      [['Run the report', 'stopped', true]],
    );
    // As saved: a second reopen reads the same, and closes nothing again.
    const again = store.open(convo.id);
    assert.equal(again.events.filter((e) => e.type === 'codeact.turn.ended').length, 1);
    const history = again.history.map((i) => [i.type, 'call_id' in i ? i.call_id : '', 'output' in i ? i.output : 'text' in i ? i.text : '']);
    assert.deepEqual(history.slice(0, 4), [
      ['message', '', 'Run the report'],
      ['function_call', 'call_1', ''],
      ['function_call', 'call_2', ''],
      ['function_call_output', 'call_1', 'execution 1: 1'],
    ]);
    assert.equal(history[4][0], 'function_call_output');
    assert.equal(history[4][1], 'call_2');
    assert.ok(String(history[4][2]).includes(RESULT_LOST), String(history[4][2]));
    assert.equal(history[5][0], 'message');
    assert.ok(String(history[5][2]).startsWith(INTERRUPTED_NOTE), String(history[5][2]));
  });

  it('ends the background jobs it shows running when their session went with the window, once, so no card or strip says they run', () => {
    const store = new TranscriptStore(dir);
    const convo = store.create({ title: 'Jobs' });
    convo.appendEvent({ type: 'codeact.turn.started', turn_id: 'turn_1', prompt: 'Count', source: 'chat' });
    convo.appendEvent({ type: 'codeact.job', session_id: convo.id, job: 1, state: 'running', message: 'Background job 1 is running.' });
    convo.appendEvent({ type: 'codeact.job', session_id: convo.id, job: 2, state: 'running', message: 'Background job 2 is running.' });
    convo.appendEvent({ type: 'codeact.job', session_id: convo.id, job: 2, state: 'done', seconds: 1, message: 'Background job 2 finished after 1.00 s.' });
    convo.appendEvent({ type: 'codeact.turn.ended', turn_id: 'turn_1', status: 'completed' });
    convo.flush();
    const state = new Map<string, unknown>([['codeact.openConversation', convo.id]]);
    const memory = new ConversationMemory(store, { get: (k: string) => state.get(k), update: async (k: string, v: unknown) => void state.set(k, v) } as never);
    // Restoring alone ends none: a session host may keep the session, and its jobs go on there.
    const restored = memory.restoreOpen()!;
    assert.deepEqual(
      runningJobs(buildTranscript(restored.events)).map((j) => j.job),
      [1],
    );
    const reopened = endJobsLeftRunning(restored);
    assert.deepEqual(runningJobs(buildTranscript(reopened.events)), []);
    const ended = store.open(convo.id).events.filter((e) => e.type === 'codeact.job' && e.state === 'ended');
    assert.deepEqual(
      ended.map((e) => e.type === 'codeact.job' && [e.job, e.message]),
      [[1, 'Background job 1 ended with its Python session (VS Code closed or reloaded); its result is gone.']],
    );
    endJobsLeftRunning(memory.restoreOpen()!);
    assert.equal(store.open(convo.id).events.filter((e) => e.type === 'codeact.job' && e.state === 'ended').length, 1, 'said once');
  });
});
