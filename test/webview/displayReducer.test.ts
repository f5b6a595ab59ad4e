/**
 * The transcript reducer keeps an execution's rich outputs in order with its text: live displays where they
 * came, a finished item's displays where its outputs list them (a reloaded transcript), updates in place,
 * at most MAX_DISPLAYS of them, and nothing twice.
 */
import assert from 'node:assert/strict';
import type { CodeOutput } from '../../src/common/events';
import {
  MAX_DISPLAYS,
  applyEvent,
  buildTranscript,
  execKey,
  outputText,
  type ExecView,
  type TranscriptEvent,
  type TranscriptModel,
} from '../../src/common/transcript';
import { ev } from './support/fixtures';

const exec = (m: TranscriptModel, id = 'c') => m.items[execKey(id)] as ExecView;
const png = (label: string) => ({ data: { 'image/png': `iVBOR${label}`, 'text/plain': `<Figure ${label}>` } });
/** The displays as [where, text/plain]. */
const where = (x: ExecView) => (x.displays ?? []).map((d) => [d.at, d.output.data['text/plain']]);

const start = (): TranscriptEvent[] => [
  ev.turn('t', 'plot it'),
  ev.codeStart('c', 'local'),
  ev.codeDone('c', 'print(1); plt.show(); print(2)'),
  ev.interpreting('c'),
];

describe('transcript reducer: displays', () => {
  it('keeps live displays where they came in the text: print, plot, print', () => {
    const m = buildTranscript([
      ...start(),
      ev.out('c', 'before\n'),
      ev.display('c', png('a')),
      ev.out('c', 'after\n'),
      ev.out('c', 'oops\n', 'stderr'),
      ev.display('c', png('b')),
    ]);
    const x = exec(m);
    assert.deepEqual(where(x), [
      [7, '<Figure a>'],
      [18, '<Figure b>'],
    ]);
    assert.equal(outputText(x.output), 'before\nafter\noops\n');
    assert.equal(x.status, 'running');
  });

  it('a finished item without live events (a reloaded transcript): its displays stand after the text listed before them', () => {
    const outputs: CodeOutput[] = [
      { type: 'logs', logs: 'before\n' },
      { type: 'logs', logs: 'warn\n', stream: 'stderr' },
      { type: 'display', ...png('a') },
      { type: 'logs', logs: 'after\n' },
      { type: 'display', ...png('b') },
      { type: 'file', filename: 'out.csv', path: '/tmp/s/out.csv', mime_type: 'text/csv', bytes: 12 },
    ];
    const m = buildTranscript([...start(), ev.itemDone({ id: 'c', outputs })]);
    const x = exec(m);
    assert.deepEqual(where(x), [
      [12, '<Figure a>'],
      [18, '<Figure b>'],
    ]);
    assert.equal(outputText(x.output), 'before\nwarn\nafter\n');
    assert.equal(x.files.length, 1);
    assert.equal(x.status, 'done');
  });

  it('live displays are not added again by the finished item; live text with displays only in the item places them by the item', () => {
    const live = buildTranscript([
      ...start(),
      ev.out('c', 'a\n'),
      ev.display('c', png('x')),
      ev.out('c', 'b\n'),
      ev.itemDone({
        id: 'c',
        outputs: [
          { type: 'logs', logs: 'a\n' },
          { type: 'display', ...png('x') },
          { type: 'logs', logs: 'b\n' },
        ],
      }),
    ]);
    assert.deepEqual(where(exec(live)), [[2, '<Figure x>']]);
    assert.equal(outputText(exec(live).output), 'a\nb\n');

    const textOnly = buildTranscript([
      ...start(),
      ev.out('c', 'a\n'),
      ev.out('c', 'b\n'),
      ev.itemDone({
        id: 'c',
        outputs: [
          { type: 'logs', logs: 'a\n' },
          { type: 'display', ...png('x') },
          { type: 'logs', logs: 'b\n' },
        ],
      }),
    ]);
    assert.deepEqual(where(exec(textOnly)), [[2, '<Figure x>']]);
    assert.equal(outputText(exec(textOnly).output), 'a\nb\n');
  });

  it('update_display_data replaces the display with the same display_id where it stands; an unknown id changes nothing', () => {
    const m = buildTranscript([
      ...start(),
      ev.display('c', { data: { 'text/plain': 'progress 0%' }, display_id: 'bar' }),
      ev.out('c', 'working\n'),
      ev.display('c', { data: { 'text/plain': 'other' } }),
      ev.display('c', { data: { 'text/plain': 'progress 100%' }, display_id: 'bar' }, true),
      ev.display('c', { data: { 'text/plain': 'ghost' }, display_id: 'nope' }, true),
    ]);
    const x = exec(m);
    assert.deepEqual(where(x), [
      [0, 'progress 100%'],
      [8, 'other'],
    ]);
    assert.equal(x.displays![0].rev, 1, 'the replaced display says it changed');
    assert.equal(x.displays![1].rev, 0);
  });

  it(`keeps at most ${MAX_DISPLAYS} displays per execution and counts the rest; garbage displays are dropped`, () => {
    const events = start();
    for (let i = 0; i < 10_000; i++) events.push(ev.display('c', { data: { 'text/plain': `d${i}` } }));
    events.push({ type: 'codeact.output.display', item_id: 'c', output: { type: 'display', data: null } } as unknown as TranscriptEvent);
    events.push({ type: 'codeact.output.display', item_id: 'c', output: 'garbage' } as unknown as TranscriptEvent);
    const m = buildTranscript(events);
    const x = exec(m);
    assert.equal(x.displays!.length, MAX_DISPLAYS);
    assert.equal(x.displaysDropped, 10_000 - MAX_DISPLAYS);
    assert.equal(x.displays![MAX_DISPLAYS - 1].output.data['text/plain'], `d${MAX_DISPLAYS - 1}`);
  });

  it('survives a JSON round trip and a state saved before displays existed', () => {
    const m = buildTranscript([...start(), ev.out('c', 'x\n')]);
    const old = JSON.parse(JSON.stringify(m)) as TranscriptModel;
    delete (old.items[execKey('c')] as Partial<ExecView>).displays;
    applyEvent(old, ev.display('c', png('late')));
    assert.deepEqual(where(exec(old)), [[2, '<Figure late>']]);
    const again = JSON.parse(JSON.stringify(old)) as TranscriptModel;
    applyEvent(again, ev.out('c', 'y\n'));
    assert.deepEqual(where(exec(again)), [[2, '<Figure late>']]);
  });
});
