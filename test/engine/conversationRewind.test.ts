import * as assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { conversationRewindNote, cutConversation, turnOfExecution } from '../../src/core/agent/conversationRewind';
import { TranscriptStore, type Conversation } from '../../src/core/agent/transcriptStore';

/** Turn `n` of a conversation as the engine writes it: its start, the prompt and answer items, an execution, its end. */
function turn(c: Conversation, n: number): void {
  const turn_id = `t${n}`;
  c.appendEvent({ type: 'codeact.turn.started', turn_id, prompt: `question ${n}` });
  c.appendItems([{ type: 'message', id: `u${n}`, role: 'user', text: `question ${n}` }]);
  c.appendEvent({ type: 'response.output_text.delta', item_id: `m${n}`, delta: `answer ${n}`, turn_id });
  c.appendItems([{ type: 'message', id: `m${n}`, role: 'assistant', text: `answer ${n}` }]);
  c.appendEvent({
    type: 'response.output_item.done',
    item: { type: 'code_interpreter_call', id: `x${n}`, status: 'completed', code: `x = ${n}`, runtime: 'local', outputs: [] },
    turn_id,
  });
  c.appendEvent({ type: 'codeact.turn.ended', turn_id, status: 'completed' });
  c.flush();
}

describe('conversation rewind (cut back, the rest kept as a branch)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-cut-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('cuts the conversation back to before a turn; the whole one is kept as a branch in the history; the next history is the cut one', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 'Orders', provider: 'openai', model: 'gpt-5' });
    turn(c, 1);
    // Job 1 starts in turn 1 and job 2 in turn 2; both end later, saved without a turn (the session's events).
    c.appendEvent({ type: 'codeact.job', session_id: c.id, job: 1, state: 'running', message: 'job 1 started', turn_id: 't1' });
    turn(c, 2);
    c.appendEvent({ type: 'codeact.job', session_id: c.id, job: 2, state: 'running', message: 'job 2 started', turn_id: 't2' });
    c.appendEvent({ type: 'codeact.job', session_id: c.id, job: 1, state: 'done', message: 'job 1 done' });
    c.appendEvent({ type: 'codeact.job', session_id: c.id, job: 2, state: 'done', message: 'job 2 done' });
    turn(c, 3);
    c.update({ containerId: 'cntr_1' });
    const before = readFileSync(c.file, 'utf8');
    assert.equal(turnOfExecution(c.events, 'x2'), 't2');
    assert.equal(turnOfExecution(c.events, 'nope'), undefined);

    const cut = cutConversation(store, c, 't2');
    assert.deepEqual({ ...cut, branchId: '' }, { branchId: '', branchTitle: 'Orders (before rewind)', turn: 2, prompt: 'question 2', removed: 2 });
    // The object holding the conversation is the cut one (its next request's history), and so is the file.
    assert.deepEqual(
      c.history.map((i) => i.id),
      ['u1', 'm1'],
    );
    assert.deepEqual(
      c.events.filter((e) => e.type === 'codeact.turn.started').map((e) => (e as { turn_id: string }).turn_id),
      ['t1'],
    );
    assert.equal(c.meta.containerId, 'cntr_1', 'the meta patched after the cut is kept');
    assert.deepEqual(
      c.events.filter((e) => e.type === 'codeact.job').map((e) => [(e as { job: number }).job, (e as { state: string }).state]),
      [
        [1, 'running'],
        [1, 'done'],
      ],
      "a kept turn's job keeps its end; the job of a turn cut away goes with it",
    );
    const again = store.open(c.id);
    assert.deepEqual(
      again.history.map((i) => i.id),
      ['u1', 'm1'],
    );
    // The branch holds every record of the original, under its own id and title, with no session of the original's.
    const branch = store.open(cut.branchId);
    assert.equal(branch.meta.title, 'Orders (before rewind)');
    assert.equal(branch.meta.containerId, null);
    assert.deepEqual(
      branch.history.map((i) => i.id),
      ['u1', 'm1', 'u2', 'm2', 'u3', 'm3'],
    );
    assert.equal(readFileSync(branch.file, 'utf8').split('\n').slice(1, -2).join('\n'), before.split('\n').slice(1, -1).join('\n'));
    assert.deepEqual(
      store
        .list()
        .map((l) => [l.id === c.id ? 'cut' : 'branch', l.turns])
        .sort(),
      [
        ['branch', 3],
        ['cut', 1],
      ],
    );

    // The conversation goes on from the cut: a new turn is appended after turn 1.
    turn(c, 4);
    assert.deepEqual(
      store.open(c.id).history.map((i) => i.id),
      ['u1', 'm1', 'u4', 'm4'],
    );
  });

  it('changes nothing when the turn is not in the conversation; a torn last line stays at the end of the branch only', () => {
    const store = new TranscriptStore(dir);
    const c = store.create({ title: 'T' });
    for (const n of [1, 2]) turn(c, n);
    const whole = readFileSync(c.file, 'utf8');
    assert.throws(() => cutConversation(store, c, 't9'), /That turn is not in the conversation .*nothing was changed\./);
    assert.equal(readFileSync(c.file, 'utf8'), whole);
    assert.equal(store.list().length, 1, 'no branch was made');

    appendFileSync(c.file, '{"t":1,"item":{"type":"mess');
    const cut = cutConversation(store, c, 't1');
    assert.ok(!readFileSync(c.file, 'utf8').includes('"mess'), 'the cut conversation is whole records only');
    // The branch ends with the torn bytes, which its next append keeps aside (the store's rule for a torn tail).
    assert.ok(readFileSync(store.file(cut.branchId), 'utf8').endsWith('\n{"t":1,"item":{"type":"mess'));
    const branch = store.open(cut.branchId);
    branch.appendItems([{ type: 'message', id: 'later', role: 'user', text: 'later' }]);
    assert.deepEqual(
      store.open(cut.branchId).history.map((i) => i.id),
      ['u1', 'm1', 'u2', 'm2', 'later'],
    );
  });

  it('tells the model what was rewound, and plainly when the code was not', () => {
    const cut = { branchId: 'b', branchTitle: 'T (before rewind)', turn: 2, prompt: 'Drop the\ncolumns', removed: 2 };
    assert.equal(
      conversationRewindNote(cut, undefined),
      '[codeact] The user rewound the conversation to before their message "Drop the columns" (turn 2): 2 turns were taken out of this conversation. ' +
        'The Python session and the workspace files were not rewound with it.',
    );
    assert.match(
      conversationRewindNote({ ...cut, removed: 1 }, 'The user rewound the code to before execution 3.'),
      /1 turn was taken out.*\nThe user rewound the code/s,
    );
    // A Run with Tools turn's prompt is a label of what ran, not the user's words.
    assert.match(
      conversationRewindNote({ ...cut, prompt: 'orders.py, lines 3-20', source: 'run_with_tools' }, undefined),
      /to before the run "orders\.py, lines 3-20" \(turn 2\)/,
    );
  });
});
