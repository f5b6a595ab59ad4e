/**
 * The CLI's line of questions (src/cli/terminalQuestions.ts) over real readline, on streams that say they
 * are a terminal: a question cancelled while it waits is never shown, one cancelled while it is shown ends
 * at once, and neither takes the line typed for the question after it.
 */
import * as assert from 'node:assert/strict';
import type { Asking } from '../../src/cli/terminalQuestions';
import { fakeTerminal } from '../support/fakeTerminal';

/** A question that prints its name and returns the line typed for it ("(none)" when it ends without one). */
const named = (name: string) => async (q: Asking) => {
  q.say(`[${name}]`);
  return (await q.line(`${name}? `)) ?? '(none)';
};

const settle = () => new Promise((r) => setImmediate(r));

describe('cli: the terminal questions, one at a time', () => {
  it('a question cancelled while it waits is never shown; one cancelled while shown ends; the next line goes to the next question', async () => {
    const t = fakeTerminal();
    const first = new AbortController();
    const waiting = new AbortController();
    const a = t.questions.ask(first.signal, () => 'never asked', named('first'));
    const b = t.questions.ask(waiting.signal, () => 'never asked', named('waiting'));
    const c = t.questions.ask(undefined, () => 'never asked', named('last'));
    await settle();
    assert.match(t.shown(), /\[first\]first\? $/);
    assert.doesNotMatch(t.shown(), /\[waiting\]|\[last\]/);
    waiting.abort();
    assert.equal(await b, 'never asked');
    first.abort();
    assert.equal(await a, '(none)');
    await settle();
    assert.match(t.shown(), /\[last\]last\? $/);
    t.input.write('the answer\n');
    assert.equal(await c, 'the answer');
    assert.doesNotMatch(t.shown(), /\[waiting\]/, 'the cancelled question was never shown');
  });

  it('two questions asked at once: the second is shown only after the first is answered, and each gets its own line', async () => {
    const t = fakeTerminal();
    const a = t.questions.ask(undefined, () => '', named('one'));
    const b = t.questions.ask(undefined, () => '', named('two'));
    await settle();
    assert.doesNotMatch(t.shown(), /\[two\]/);
    t.input.write('for one\n');
    assert.equal(await a, 'for one');
    await settle();
    assert.match(t.shown(), /\[two\]two\? $/);
    t.input.write('for two\n');
    assert.equal(await b, 'for two');
  });
});
