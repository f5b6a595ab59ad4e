/**
 * The event traits (src/common/eventTraits.ts) are complete, and each says what the code does: one event of
 * every type goes through the panel's batcher, the transcript store, the panel's reducer and the CLI's
 * printers, and each does what the type's row says.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chatPrinter, humanPrinter } from '../../src/cli/print';
import { createEventBatcher } from '../../src/common/eventBatcher';
import { EVENT_TRAITS, isTurnMarker, traitsOf, type EventType } from '../../src/common/eventTraits';
import type { EventsMessage } from '../../src/common/protocol';
import { applyEvent, buildTranscript, type TranscriptEvent, type TranscriptModel } from '../../src/common/transcript';
import { totalsOfEvents } from '../../src/common/usage';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { captureOutput } from '../support/captureOutput';

type Sample<T extends EventType> = Extract<TranscriptEvent, { type: T }>;

/** One event of every type (the compiler asks for each), for the turn `T1` of PRELUDE, about execution `x`. */
const SAMPLES: { [T in EventType]: Sample<T> } = {
  'response.output_text.delta': { type: 'response.output_text.delta', item_id: 'm1', delta: 'Hi\n' },
  'response.output_text.done': { type: 'response.output_text.done', item_id: 'm1', text: 'Hi' },
  'response.reasoning_text.delta': { type: 'response.reasoning_text.delta', item_id: 'r1', delta: 'hmm' },
  'response.reasoning_text.done': { type: 'response.reasoning_text.done', item_id: 'r1', text: 'hmm' },
  'response.code_interpreter_call.in_progress': { type: 'response.code_interpreter_call.in_progress', item_id: 'x', runtime: 'local' },
  'response.code_interpreter_call_code.delta': { type: 'response.code_interpreter_call_code.delta', item_id: 'x', delta: 'print(1)' },
  'response.code_interpreter_call_code.done': { type: 'response.code_interpreter_call_code.done', item_id: 'x', code: 'print(1)' },
  'response.code_interpreter_call.interpreting': { type: 'response.code_interpreter_call.interpreting', item_id: 'x' },
  'response.code_interpreter_call.completed': { type: 'response.code_interpreter_call.completed', item_id: 'x' },
  'response.output_item.added': { type: 'response.output_item.added', item: { type: 'message', id: 'm2', role: 'assistant', text: '' } },
  'response.output_item.done': {
    type: 'response.output_item.done',
    item: { type: 'code_interpreter_call', id: 'h1', status: 'completed', code: 'print(2)', runtime: 'openai', outputs: [{ type: 'logs', logs: '2\n' }] },
  },
  'response.function_call_arguments.delta': { type: 'response.function_call_arguments.delta', item_id: 'f1', call_id: 'c1', delta: '{"q":' },
  'response.function_call_arguments.done': {
    type: 'response.function_call_arguments.done',
    item_id: 'f1',
    call_id: 'c1',
    name: 'lookup',
    arguments: '{"q":1}',
  },
  'codeact.output.delta': { type: 'codeact.output.delta', item_id: 'x', stream: 'stdout', delta: 'hello\n' },
  'codeact.output.display': { type: 'codeact.output.display', item_id: 'x', output: { type: 'display', data: { 'text/plain': 'a table' } } },
  'codeact.tool_call.started': { type: 'codeact.tool_call.started', item_id: 'x', call_id: 't1', name: 'search', arguments: { q: 1 } },
  'codeact.tool_call.completed': { type: 'codeact.tool_call.completed', item_id: 'x', call_id: 't1', name: 'search', output: 'ok', duration_ms: 3 },
  'codeact.approval.requested': { type: 'codeact.approval.requested', approval_id: 'a2', kind: 'tool', name: 'search', arguments: {} },
  'codeact.approval.resolved': { type: 'codeact.approval.resolved', approval_id: 'a1', decision: 'allow_once' },
  'codeact.elicitation.requested': {
    type: 'codeact.elicitation.requested',
    elicitation_id: 'el2',
    item_id: 'x',
    form: { server: 'srv', message: 'Which one?', fields: [] },
  },
  'codeact.elicitation.resolved': { type: 'codeact.elicitation.resolved', elicitation_id: 'el1', item_id: 'x', action: 'cancel' },
  'codeact.retry': { type: 'codeact.retry', attempt: 1, delay_ms: 1000, status: 429, message: 'Rate limited; retrying in 1 s (attempt 2 of 4).' },
  'codeact.session': { type: 'codeact.session', session_id: 's1', state: 'ended', reason: 'idle', message: 'The Python session ended (idle).' },
  'codeact.job': { type: 'codeact.job', session_id: 's1', job: 1, state: 'done', item_id: 'x', seconds: 2, message: 'Background job 1 finished after 2.00 s.' },
  'codeact.job.output': { type: 'codeact.job.output', session_id: 's1', job: 1, delta: 'line 1\n' },
  'codeact.job.notes': { type: 'codeact.job.notes', session_id: 's1', jobs: [1], text: '[codeact] Background job ended since your last step:' },
  'codeact.context.usage': { type: 'codeact.context.usage', used_tokens: 10, window_tokens: 100, compact_at_tokens: 80 },
  'codeact.context.compacted': {
    type: 'codeact.context.compacted',
    turn_id: 'T1',
    before_tokens: 900,
    after_tokens: 200,
    summary: 'earlier',
    kept_turns: 1,
    method: 'summary',
    usage: { input_tokens: 40, output_tokens: 8, total_tokens: 48 },
  },
  'codeact.notebook.cell': { type: 'codeact.notebook.cell', item_id: 'x', notebook: 'file:///w/a.ipynb', name: 'a.ipynb' },
  'codeact.usage.summary': {
    type: 'codeact.usage.summary',
    conversation_id: 'c',
    turn: { input_tokens: 1, output_tokens: 1, cached_tokens: 0, total_tokens: 2, unpriced: 0 },
    conversation: { input_tokens: 1, output_tokens: 1, cached_tokens: 0, total_tokens: 2, unpriced: 0 },
  },
  'response.completed': { type: 'response.completed', response: { id: 'resp1', usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } } },
  error: { type: 'error', message: 'The model failed.', code: 'server_error' },
  'codeact.turn.started': { type: 'codeact.turn.started', turn_id: 'T2', prompt: 'next' },
  'codeact.turn.ended': { type: 'codeact.turn.ended', turn_id: 'T1', status: 'completed' },
};

const TYPES = Object.keys(SAMPLES) as EventType[];

/** A running turn T1 with what the samples answer: a function call, an approval, a form and a running job. */
const PRELUDE: TranscriptEvent[] = [
  { type: 'codeact.turn.started', turn_id: 'T1', prompt: 'first' },
  { type: 'response.output_item.added', item: { type: 'function_call', id: 'f1', call_id: 'c1', name: 'lookup', status: 'in_progress' } },
  { type: 'codeact.approval.requested', approval_id: 'a1', kind: 'tool', name: 'search', arguments: {} },
  { type: 'codeact.elicitation.requested', elicitation_id: 'el1', item_id: 'x', form: { server: 'srv', message: 'Which?', fields: [] } },
  { type: 'codeact.job', session_id: 's1', job: 1, state: 'running', item_id: 'x', message: 'Background job 1 is running.' },
];

/** The sample as a host saves and sends it: marked with its turn (markers name their own). */
function inTurn(type: EventType): TranscriptEvent {
  const e = SAMPLES[type];
  return isTurnMarker(e) ? e : { ...e, turn_id: 'T1' };
}

/** Everything `fn` writes, on stdout and stderr. */
function capture(fn: () => void): string {
  const { stdout, stderr } = captureOutput(fn);
  return stdout + stderr;
}

const withoutCount = (m: TranscriptModel) => JSON.stringify({ ...m, events: 0 });

describe('event traits', () => {
  it('has a row for every event type and for no other, and a type it does not know has none', () => {
    assert.deepEqual(Object.keys(EVENT_TRAITS).sort(), [...TYPES].sort());
    for (const type of TYPES) assert.equal(SAMPLES[type].type, type);
    assert.equal(traitsOf('codeact.from_a_newer_host'), undefined);
    assert.equal(traitsOf('constructor'), undefined);
  });

  it('delta: the panel batcher merges two adjacent events of one item exactly when the type is a delta', () => {
    for (const type of TYPES) {
      const posted: EventsMessage[] = [];
      const batcher = createEventBatcher(
        (m) => posted.push(m),
        () => undefined,
      );
      batcher.pushAll([SAMPLES[type], SAMPLES[type]]);
      batcher.flush();
      assert.equal(posted[0].events.length, EVENT_TRAITS[type].delta ? 1 : 2, type);
    }
  });

  it('persisted: the transcript store writes an event to the file exactly when the type is persisted', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-traits-'));
    try {
      const store = new TranscriptStore(dir);
      const convo = store.create({ title: 'traits' });
      for (const type of TYPES) convo.appendEvent(inTurn(type));
      assert.equal(convo.events.length, TYPES.length, 'every event is kept in memory for the panel');
      convo.flush();
      const saved = new Set(store.open(convo.id).events.map((e) => e.type));
      for (const type of TYPES) assert.equal(saved.has(type), EVENT_TRAITS[type].persisted, type);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('panel: the reducer changes the model exactly when the panel shows the type', () => {
    for (const type of TYPES) {
      const model = buildTranscript(PRELUDE);
      const before = withoutCount(model);
      applyEvent(model, inTurn(type));
      assert.equal(withoutCount(model) !== before, EVENT_TRAITS[type].panel, type);
    }
  });

  it('turnMarker: only a marker starts or ends a turn in the panel; any other event stays in the turn it names', () => {
    const turns = (m: TranscriptModel) => JSON.stringify(m.turns.map((t) => [t.id, t.status]));
    for (const type of TYPES) {
      const model = buildTranscript(PRELUDE);
      const before = turns(model);
      applyEvent(model, inTurn(type));
      assert.equal(turns(model) !== before, EVENT_TRAITS[type].turnMarker, type);
      assert.equal(isTurnMarker(SAMPLES[type]), EVENT_TRAITS[type].turnMarker, type);
    }
  });

  it("usage: the totals count a model request's usage exactly in the types that report one, where the row says", () => {
    for (const type of TYPES) {
      const { totals } = totalsOfEvents([SAMPLES[type]]);
      const at = EVENT_TRAITS[type].usage;
      const sample = SAMPLES[type] as { response?: { usage?: { total_tokens: number } }; usage?: { total_tokens: number } };
      const expected = at === 'response' ? sample.response?.usage?.total_tokens : at === 'event' ? sample.usage?.total_tokens : 0;
      assert.ok(at === false || expected! > 0, `${type}: its sample reports usage`);
      assert.equal(totals.total_tokens, expected, type);
    }
  });

  it('printed: `codeact run` prints the `run` types, `codeact chat` the `run` and `chat` types, and neither the others', () => {
    /** What a chat has printed before: the code card the code events continue, the answer a CR of which is held. */
    const before: Partial<Record<EventType, TranscriptEvent[]>> = {
      'response.code_interpreter_call_code.delta': [SAMPLES['response.code_interpreter_call.in_progress']],
      'response.code_interpreter_call_code.done': [SAMPLES['response.code_interpreter_call.in_progress']],
      'response.output_text.done': [{ type: 'response.output_text.delta', item_id: 'm1', delta: 'Hi\r' }],
    };
    for (const type of TYPES) {
      const printed = EVENT_TRAITS[type].printed;
      const chat = chatPrinter();
      capture(() => (before[type] ?? []).forEach(chat));
      assert.equal(capture(() => chat(SAMPLES[type])) !== '', printed !== 'none', `chat: ${type}`);
      const e = SAMPLES[type];
      if (isTurnMarker(e)) continue;
      const run = humanPrinter();
      assert.equal(capture(() => run(e)) !== '', printed === 'run', `run: ${type}`);
    }
  });
});
