/**
 * The host's side of rich outputs on the local guest: each display is placed where its markers stand in
 * stdout and stderr, whatever order the pipes and the protocol channel deliver them in; nothing is lost when
 * a marker or a frame never comes; and the caps refuse what is too big with one clear note.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, DisplayOutput } from '../../src/common/events';
import { ArtifactStore, safeRelativePath } from '../../src/core/runtime/artifacts';
import { DisplayBudget, normaliseDisplay } from '../../src/core/runtime/displays';
import { GuestRun, MarkerScanner } from '../../src/core/runtime/local/guestRun';
import { DEFAULT_LIMITS } from '../../src/core/runtime/types';

function newRun(): { run: GuestRun; events: CodeActEvent[] } {
  const events: CodeActEvent[] = [];
  const run = new GuestRun(1, { code: '' }, { onEvent: (e) => events.push(e) }, DEFAULT_LIMITS, 'exec_t', 1000);
  return { run, events };
}

const marker = (run: GuestRun, seq: number) => `\u0000codeact-display:${run.endToken}:${seq}\u0000`;
const end = (run: GuestRun) => `\u0000codeact-end:${run.endToken}\u0000`;
const png = (name: string): DisplayOutput => ({ type: 'display', data: { 'image/png': name, 'text/plain': `<${name}>` } });
const both = { stdout: true, stderr: true };

/** The live events as a compact trace: "out:a", "err:x", "display:p1". */
function trace(events: CodeActEvent[]): string[] {
  const t: string[] = [];
  for (const e of events) {
    if (e.type === 'codeact.output.delta') t.push(`${e.stream === 'stderr' ? 'err' : 'out'}:${e.delta}`);
    else if (e.type === 'codeact.output.display') t.push(`display:${String(e.output.data['image/png'])}${e.update ? '(update)' : ''}`);
  }
  return t;
}

describe('rich outputs on the local guest: order, caps, files (host side)', () => {
  it('finds the display markers and the end token, split anywhere across chunks', () => {
    const s = new MarkerScanner('tok');
    const stream = Buffer.from(`a\u0000b\u0000codeact-display:tok:7\u0000c\u0000codeact-display:other:1\u0000d\u0000codeact-end:tok\u0000ignored`);
    const pieces: unknown[] = [];
    for (let i = 0; i < stream.length; i++) pieces.push(...s.push(stream.subarray(i, i + 1)));
    const text = pieces
      .map((p) => (Buffer.isBuffer(p) ? p.toString('latin1') : typeof p === 'string' ? `<${p}>` : `<display ${(p as { seq: number }).seq}>`))
      .join('');
    // A NUL that starts no marker of this run (another token) is text; nothing after the end token is the run's.
    assert.equal(text, 'a\u0000b<display 7>c\u0000codeact-display:other:1\u0000d<end>');
  });

  it('a display frame that comes before its place waits for the text before it; the text after it waits for the display', () => {
    const { run, events } = newRun();
    run.onDisplay(1, png('p1'), both, false);
    assert.deepEqual(trace(events), [], 'nothing is shown before its place is reached');
    run.onOutput('stdout', Buffer.from(`before\n${marker(run, 1)}after\n`));
    assert.deepEqual(trace(events), ['out:before\n'], 'stderr has not reached the marker yet: the display waits, and so does "after"');
    run.onOutput('stderr', Buffer.from(`warn\n${marker(run, 1)}`));
    assert.deepEqual(trace(events), ['out:before\n', 'err:warn\n', 'display:p1', 'out:after\n']);
  });

  it('a marker that comes before its frame holds the text after it until the frame comes', () => {
    const { run, events } = newRun();
    run.onOutput('stdout', Buffer.from(`one\n${marker(run, 1)}two\n${marker(run, 2)}three\n`));
    run.onOutput('stderr', Buffer.from(`${marker(run, 1)}${marker(run, 2)}`));
    assert.deepEqual(trace(events), ['out:one\n']);
    run.onDisplay(1, png('p1'), both, false);
    assert.deepEqual(trace(events), ['out:one\n', 'display:p1', 'out:two\n']);
    run.onDisplay(2, png('p2'), both, false);
    assert.deepEqual(trace(events), ['out:one\n', 'display:p1', 'out:two\n', 'display:p2', 'out:three\n']);
    run.onOutput('stdout', Buffer.from(end(run)));
    run.onOutput('stderr', Buffer.from(end(run)));
    assert.ok(run.ended.stdout && run.ended.stderr);
    run.endOutput();
    const outputs = run.out.outputs();
    assert.deepEqual(
      outputs.map((o) => (o.type === 'logs' ? `logs:${o.logs}` : o.type === 'display' ? `display:${String(o.data['image/png'])}` : o.type)),
      ['logs:one\n', 'display:p1', 'logs:two\n', 'display:p2', 'logs:three\n'],
    );
  });

  it('a display marked on stdout only does not wait for stderr; a refused display still passes its place', () => {
    const { run, events } = newRun();
    run.onOutput('stdout', Buffer.from(`a\n${marker(run, 1)}b\n${marker(run, 2)}c\n`));
    run.onDisplay(1, png('p1'), { stdout: true, stderr: false }, false);
    run.onDisplay(2, null, { stdout: true, stderr: false }, false);
    assert.deepEqual(trace(events), ['out:a\n', 'display:p1', 'out:b\n', 'out:c\n']);
  });

  it('loses nothing when a marker never gets its frame (the end of the output places and shows everything)', () => {
    const { run, events } = newRun();
    run.onOutput('stdout', Buffer.from(`a\n${marker(run, 1)}b\n`));
    run.onOutput('stderr', Buffer.from(`e\n`));
    run.onDisplay(2, png('p2'), both, false);
    assert.deepEqual(trace(events), ['out:a\n', 'err:e\n']);
    run.endOutput();
    assert.deepEqual(trace(events), ['out:a\n', 'err:e\n', 'out:b\n', 'display:p2']);
  });

  it('gives up the order, not the text, when a stream would hold more than its cap waiting for a frame', () => {
    const { run, events } = newRun();
    run.onOutput('stdout', Buffer.from(`${marker(run, 1)}`));
    const big = Buffer.alloc(5 * 1024 * 1024, 0x41);
    run.onOutput('stdout', big);
    const shown = events.filter((e) => e.type === 'codeact.output.delta').reduce((n, e) => n + (e as { delta: string }).delta.length, 0);
    assert.ok(shown >= 1024 * 1024, `the held text was let go (${shown} characters shown)`);
    run.onDisplay(1, png('late'), both, false);
    assert.deepEqual(trace(events).slice(-1), ['display:late'], 'a frame whose place was given up on is shown where the output stands');
  });

  it('update_display_data replaces the display with the same id where it stands', () => {
    const { run, events } = newRun();
    run.onOutput('stdout', Buffer.from(`x\n${marker(run, 1)}y\n${marker(run, 2)}`));
    run.onDisplay(1, { ...png('v1'), display_id: 'd1' }, { stdout: true, stderr: false }, false);
    run.onDisplay(2, { ...png('v2'), display_id: 'd1' }, { stdout: true, stderr: false }, true);
    assert.deepEqual(trace(events), ['out:x\n', 'display:v1', 'out:y\n', 'display:v2(update)']);
    run.endOutput();
    const outputs = run.out.outputs().map((o) => (o.type === 'logs' ? o.logs : o.type === 'display' ? String(o.data['image/png']) : o.type));
    assert.deepEqual(outputs, ['x\n', 'v2', 'y\n']);
  });

  it('checks a display field by field: no data, unknown shapes and oversized metadata are dropped, Jupyter metadata moved out', () => {
    assert.ok('error' in normaliseDisplay({ data: 'nope' }));
    assert.ok('error' in normaliseDisplay({ data: { 'not a mime': 'x', 'text/plain': 42 } }));
    const n = normaliseDisplay({
      data: { 'text/plain': ['a', 'b'], 'application/json': { k: [1] }, 'image/png': { bad: true }, '../etc': 'x' },
      metadata: { codeact: { summary: 'S', result: true }, 'image/png': { width: 3 } },
      display_id: 'x'.repeat(500),
    });
    assert.ok(!('error' in n));
    const d = (n as { display: DisplayOutput }).display;
    assert.deepEqual(d.data, { 'text/plain': 'ab', 'application/json': { k: [1] } });
    assert.equal(d.summary, 'S');
    assert.equal(d.result, true);
    assert.deepEqual(d.metadata, { 'image/png': { width: 3 } });
    assert.equal(d.display_id, undefined, 'an overlong display id is dropped');
  });

  it('caps displays by size, by count and by total, each with one note', () => {
    const b = new DisplayBudget({ maxDisplayBytes: 100, maxDisplayTotalBytes: 250, maxDisplays: 3, hidpi: false, maxImagePixels: 1e6 });
    const big = b.take({ data: { 'text/plain': 'x'.repeat(101) } });
    assert.ok(
      !big.ok && /a display of 101 bytes was not shown; the limit is 100 bytes per display \(codeact\.outputs\.maxDisplayMB\)/.test(big.note ?? ''),
      JSON.stringify(big),
    );
    assert.ok(b.take({ data: { 'text/plain': 'x'.repeat(90) } }).ok);
    assert.ok(b.take({ data: { 'text/plain': 'x'.repeat(90) } }).ok);
    const total = b.take({ data: { 'text/plain': 'x'.repeat(90) } });
    assert.ok(!total.ok && /reached 250 bytes \(codeact\.outputs\.maxExecutionMB\)/.test(total.note ?? ''), JSON.stringify(total));
    assert.ok(b.take({ data: { 'text/plain': 'y' } }).ok, 'a small one still fits the total');
    const count = b.take({ data: { 'text/plain': 'z' } });
    assert.ok(!count.ok && /the limit is 3 per execution/.test(count.note ?? ''));
    const again = b.take({ data: { 'text/plain': 'z' } });
    assert.ok(!again.ok && again.note === undefined, 'the count note is given once');
    assert.match(b.summary() ?? '', /3 displays in all were not shown/);
  });

  it('keeps the copies of files in a private folder, with safe relative paths and never an overwrite', async () => {
    for (const bad of ['../x', '/etc/passwd', 'a/../../b', '', 'a\u0000b', 'x/'.repeat(20) + 'y', 42])
      assert.equal(safeRelativePath(bad), undefined, JSON.stringify(bad));
    assert.equal(safeRelativePath('out/./data.csv'), 'out/data.csv');
    const store = new ArtifactStore(64);
    try {
      const p1 = await store.write('exec_1', 'out/data.csv', Buffer.from('a,b\n1,2\n'));
      assert.equal(readFileSync(p1, 'utf8'), 'a,b\n1,2\n');
      assert.equal(statSync(path.dirname(path.dirname(p1))).mode & 0o777, 0o700, 'the folder is private');
      await assert.rejects(store.write('exec_1', 'out/data.csv', Buffer.from('again')), /EEXIST/);
      const p2 = await store.write('exec_2', 'big.bin', Buffer.alloc(60));
      assert.throws(() => statSync(p1), /ENOENT/, "past the store cap the oldest execution's copies go");
      assert.equal(statSync(p2).size, 60);
    } finally {
      store.dispose();
    }
    const probe = mkdtempSync(path.join(tmpdir(), 'codeact-t-'));
    rmSync(probe, { recursive: true });
  });
});
