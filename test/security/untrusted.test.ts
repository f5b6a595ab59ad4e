/**
 * The one sanitiser per medium (src/common/untrusted.ts), pure: what a terminal and a plain-text display
 * get from a hostile string, one line and many, whole and as a stream cut anywhere.
 */
import * as assert from 'node:assert/strict';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { forDisplay, forTerminal, forTerminalOutput, SgrState, TerminalStream } from '../../src/common/untrusted';
import { CellOutputWriter, ERROR_MIME, STDERR_MIME, STDOUT_MIME, type CellOutputData, type OutputItemData } from '../../src/vscode/notebook/cellOutputs';

const HOSTILE = 'A\x1b]0;pwned\x07B\rC\bD\u202eE\u200bF\x1b[2J\x9b1;1H\x1bP1$r\x1b\\G';

/** Every way to cut `text` in two. */
function cuts(text: string): Array<[string, string]> {
  return Array.from({ length: text.length + 1 }, (_, i) => [text.slice(0, i), text.slice(i)]);
}

describe('security: src/common/untrusted.ts', () => {
  it('forTerminal: every escape (OSC, CSI, 8-bit CSI, DCS), BEL, backspace and bare CR is a marker; bidi and zero width too', () => {
    const shown = forTerminal(HOSTILE);
    assert.equal(shown, 'A<U+001B>]0;pwned<U+0007>B<U+000D>C<U+0008>D<U+202E>E<U+200B>F<U+001B>[2J<U+009B>1;1H<U+001B>P1$r<U+001B>\\G');
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\u200b]/.test(shown));
  });

  it('forTerminal and forDisplay: one line shows every line break as ⏎; many lines keep LF, turn CR LF into LF', () => {
    assert.equal(forTerminal('a\nb\r\nc\rd', { line: true }), 'a⏎b⏎c⏎d');
    assert.equal(forTerminal('a\nb\r\nc\rd'), 'a\nb\nc<U+000D>d');
    assert.equal(forDisplay('x\u2028y', { line: true }), 'x<U+2028>y', 'a Unicode line separator is a marker');
    assert.equal(forDisplay(42), '42');
    assert.equal(forDisplay(undefined), '');
  });

  it('is idempotent: what it shows, shown again, is the same', () => {
    for (const line of [false, true]) {
      const once = forTerminal(HOSTILE, { line });
      assert.equal(forTerminal(once, { line }), once);
      assert.equal(forDisplay(once, { line }), once);
    }
  });

  it("TerminalStream of the code's output: safe colours pass, the rest is removed or a marker, however the chunks are cut", () => {
    const text = '\x1b[31mred\x1b[0m \u202e\u{1F600}\u{E0041} \x1b]0;pwned\x07\r\b.';
    const whole = forTerminalOutput(text);
    assert.equal(whole, '\x1b[31mred\x1b[0m <U+202E>\u{1F600}<U+E0041> .');
    for (const [a, b] of cuts(text)) {
      const s = new TerminalStream({ colours: new SgrState() });
      assert.equal(s.write(a) + s.write(b) + s.end(), whole, `cut at ${a.length}`);
    }
  });

  it("TerminalStream of other text (the model's): forTerminal chunk by chunk, a CR LF or a surrogate pair cut in two is one", () => {
    const text = 'a\r\nb\u{E0041}c\x1b[31md';
    const whole = forTerminal(text);
    assert.equal(whole, 'a\nb<U+E0041>c<U+001B>[31md');
    for (const [a, b] of cuts(text)) {
      const s = new TerminalStream({ plain: true });
      assert.equal(s.write(a) + s.write(b) + s.end(), whole, `cut at ${a.length}`);
    }
  });

  it("a notebook cell's stream and error outputs: markers for invisible and bidi characters, colours and carriage returns pass, however the chunks are cut", async () => {
    const out = '\x1b[31mred\x1b[0m 10%\r\u202e\u{E0041}x\u200bz\u200b\x1b]0;pwned\x07\b.\n';
    const shown = '\x1b[31mred\x1b[0m 10%\r<U+202E><U+E0041>x<U+200B>z<U+200B>.\n';
    const decode = (items: OutputItemData[]) => items.map((i) => new TextDecoder().decode(i.data)).join('');
    for (const [a, b] of cuts(out)) {
      const outputs: CellOutputData[] = [];
      const sink = {
        clearOutput: async () => void outputs.splice(0),
        appendOutput: async (o: CellOutputData) => outputs.push({ items: [...o.items], metadata: o.metadata }) - 1,
        appendOutputItems: async (h: number, items: OutputItemData[]) => void outputs[h].items.push(...items),
        replaceOutputItems: async (h: number, items: OutputItemData[]) => void (outputs[h] = { items: [...items] }),
      };
      const writer = new CellOutputWriter(sink, () => 1);
      for (const part of [a, b]) writer.onEvent({ type: 'codeact.output.delta', item_id: 'ci_1', stream: 'stdout', delta: part });
      writer.onEvent({ type: 'codeact.output.delta', item_id: 'ci_1', stream: 'stderr', delta: 'warn\u2067ing\n' });
      const error = { type: 'Value\u202eError', message: 'bad \u202evalue', traceback: '\x1b[31mValueError\x1b[0m: bad \u202evalue\n' };
      await writer.finish({
        type: 'code_interpreter_call',
        id: 'ci_1',
        status: 'failed',
        code: '',
        runtime: 'local',
        outputs: [],
        error,
      } as unknown as CodeInterpreterCallItem);
      const of = (mime: string) => decode(outputs.flatMap((o) => o.items.filter((i) => i.mime === mime)));
      assert.equal(of(STDOUT_MIME), shown, `cut at ${a.length}`);
      assert.equal(of(STDERR_MIME), 'warn<U+2067>ing\n');
      const err = JSON.parse(of(ERROR_MIME)) as { name: string; message: string; stack: string };
      assert.deepEqual(err, { name: 'Value<U+202E>Error', message: 'bad <U+202E>value', stack: '\x1b[31mValueError\x1b[0m: bad <U+202E>value\n' });
      const saved = outputs.at(-1)?.metadata?.originalError as { ename: string; evalue: string; traceback: string[] };
      assert.deepEqual(
        [saved.ename, saved.evalue, saved.traceback],
        ['Value<U+202E>Error', 'bad <U+202E>value', ['\x1b[31mValueError\x1b[0m: bad <U+202E>value']],
      );
    }
  });

  it("a notebook cell's outputs: the managed tools' list and a file's line show a hostile tool name, error and file name with markers", async () => {
    const outputs: CellOutputData[] = [];
    const sink = {
      clearOutput: async () => void outputs.splice(0),
      appendOutput: async (o: CellOutputData) => outputs.push({ items: [...o.items] }) - 1,
      appendOutputItems: async (h: number, items: OutputItemData[]) => void outputs[h].items.push(...items),
      replaceOutputItems: async (h: number, items: OutputItemData[]) => void (outputs[h] = { items: [...items] }),
    };
    const writer = new CellOutputWriter(sink, () => 1);
    const name = 'get\r\u202eorder\u200b';
    writer.onEvent({ type: 'codeact.tool_call.started', item_id: 'ci_1', call_id: 'c1', name, arguments: { a: 'x\u202ey' } });
    writer.onEvent({ type: 'codeact.tool_call.completed', item_id: 'ci_1', call_id: 'c1', name, duration_ms: 5, error: 'bad\r\u200bnews' });
    const item = {
      type: 'code_interpreter_call',
      id: 'ci_1',
      status: 'completed',
      code: '',
      runtime: 'local',
      outputs: [{ type: 'file', filename: 'report\u202etxt.exe\u200b', path: '/tmp/x', bytes: 3 }],
    } as unknown as CodeInterpreterCallItem;
    await writer.finish(item);
    const plain = outputs.flatMap((o) => o.items.filter((i) => i.mime === 'text/plain').map((i) => new TextDecoder().decode(i.data))).join('\n');
    assert.ok(plain.includes('✗ get⏎<U+202E>order<U+200B>({"a":"x<U+202E>y"})'), plain);
    assert.ok(plain.includes('failed: bad<U+000D><U+200B>news'), plain);
    assert.ok(plain.includes('[file report<U+202E>txt.exe<U+200B>, 3 bytes]'), plain);
    assert.ok(!/[\r\u202e\u200b]/.test(plain), plain);
  });
});
