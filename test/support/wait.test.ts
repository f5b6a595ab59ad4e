import * as assert from 'node:assert/strict';
import { Emitter } from '../../src/common/emitter';
import { barrier, until, waitFor } from './wait';

describe('test waits: waitFor, until, barrier', () => {
  it('waitFor resolves when the predicate holds, counts a throw as "not yet", and names what timed out', async () => {
    let n = 0;
    await waitFor(() => {
      if (++n < 3) throw new Error('not yet');
      return true;
    });
    assert.equal(n, 3);
    await assert.rejects(
      waitFor(() => false, { timeoutMs: 50, what: 'nothing' }),
      /timed out after 50 ms waiting for nothing/,
    );
  });

  it('until resolves with the first matching value of an Emitter or an onX function, and unsubscribes', async () => {
    const e = new Emitter<number>();
    const seen = until(e, (v) => v > 1);
    e.fire(1);
    e.fire(2);
    assert.equal(await seen, 2);
    assert.equal(e.size, 0);
    const listeners = new Set<(v: string) => void>();
    const onText = (l: (v: string) => void) => (listeners.add(l), { dispose: () => void listeners.delete(l) });
    const text = until(onText);
    for (const l of [...listeners]) l('hi');
    assert.equal(await text, 'hi');
    assert.equal(listeners.size, 0);
    await assert.rejects(
      until(e, () => true, { timeoutMs: 20, what: 'a number' }),
      /waiting for a number/,
    );
    assert.equal(e.size, 0);
  });

  it('a barrier opens once, from outside', async () => {
    const gate = barrier<string>();
    assert.equal(gate.isOpen, false);
    gate.open('go');
    assert.equal(gate.isOpen, true);
    assert.equal(await gate.opened, 'go');
  });
});
