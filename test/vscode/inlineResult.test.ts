/**
 * What "Run with Tools" shows of a run that drew plots (src/vscode/inlineResult.ts, the content of the
 * after-line mark and of its hover): "1 image" / "3 images" and "2 files" in the mark; the hover draws the
 * images as data-URL markdown images sized down to 320 px, at most three and within a byte budget, with a
 * note for the rest, and lets nothing from the code become a link, HTML or a command.
 */
import * as assert from 'node:assert/strict';
import type { CodeInterpreterCallItem, CodeOutput, DisplayOutput } from '../../src/common/events';
import { HOVER_IMAGE_CHARS, hoverParts, inlineSummary, type HoverPart } from '../../src/vscode/inlineResult';
import { pngBase64, pngBytes, pngDeclaring } from '../support/png';

function exec(outputs: CodeOutput[], extra: Partial<CodeInterpreterCallItem> = {}): CodeInterpreterCallItem {
  return {
    type: 'code_interpreter_call',
    id: 'exec_1',
    status: 'completed',
    code: 'plot()',
    runtime: 'local',
    outputs,
    value: null,
    duration_ms: 12,
    ...extra,
  };
}
const plot = (w: number, h: number, extra: Partial<DisplayOutput> = {}): DisplayOutput => ({
  type: 'display',
  data: { 'image/png': pngBase64(w, h), 'text/plain': '<Figure>' },
  ...extra,
});
const markdown = (parts: HoverPart[]) =>
  parts
    .filter((p) => p.kind === 'markdown')
    .map((p) => p.text)
    .join('\n');
/** The markdown images of a hover: [alt, url, width]. */
const images = (parts: HoverPart[]) => [...markdown(parts).matchAll(/!\[([^\]]*)\]\(([^)|]*)\|width=(\d+)\)/g)].map((m) => [m[1], m[2], Number(m[3])] as const);

describe('Run with Tools: the inline mark and hover of a run with images', () => {
  it('the mark says how many images and files, with the value and the duration', () => {
    assert.equal(inlineSummary(exec([])), '✓ · 12 ms');
    assert.equal(inlineSummary(exec([plot(640, 480)])), '✓ 1 image · 12 ms');
    assert.equal(
      inlineSummary(
        exec(
          [
            plot(1, 1),
            plot(1, 1),
            { type: 'image', url: 'data:image/png;base64,AAAA' },
            { type: 'file', filename: 'a.csv' },
            { type: 'file', filename: 'b.csv' },
          ],
          { value: 42, duration_ms: 1500 },
        ),
      ),
      '✓ 42 · 3 images, 2 files · 1.50 s',
    );
    assert.equal(inlineSummary(exec([{ type: 'file', filename: 'a.csv' }], { duration_ms: undefined })), '✓ 1 file');
    assert.equal(
      inlineSummary(exec([plot(1, 1)], { status: 'failed', error: { type: 'ValueError', message: 'bad\nmore' } })),
      '✗ ValueError: bad · 1 image · 12 ms',
    );
    assert.equal(inlineSummary(exec([{ type: 'display', data: { 'text/plain': '3' } }])), '✓ · 12 ms', 'a text display is not an image');
  });

  it('the hover draws the images first, as data-URL markdown images sized down to 320×200 px (a small one at its own size)', () => {
    const parts = hoverParts(exec([{ type: 'logs', logs: 'drawing\n' }, plot(640, 480), plot(100, 50)]));
    assert.match(markdown(parts), /^\*\*CodeAct\*\* · completed · local · 12 ms · 2 images/);
    assert.deepEqual(images(parts), [
      ['image 1, 640×480', `data:image/png;base64,${pngBase64(640, 480)}`, 267],
      ['image 2, 100×50', `data:image/png;base64,${pngBase64(100, 50)}`, 100],
    ]);
    assert.deepEqual(images(hoverParts(exec([plot(1000, 100)])))[0][2], 320, 'a wide one at 320 px');
    // The order of the hover: the images (in view without scrolling), stdout, the value.
    const kinds = parts.map((p) => (p.kind === 'code' ? `code:${p.language}` : p.text.includes('![') ? 'images' : p.text.trim()));
    assert.deepEqual(kinds.slice(1), ['images', 'stdout:', 'code:text', 'value:', 'code:json']);
  });

  it("a HiDPI plot is drawn at the width its display says; SVG and a hosted sandbox's image are drawn too", () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"/>';
    const parts = hoverParts(
      exec([
        plot(400, 300, { metadata: { 'image/png': { width: 200, height: 150 } } }),
        { type: 'display', data: { 'image/svg+xml': svg } },
        { type: 'image', url: `data:image/png;base64,${pngBase64(30, 20)}` },
      ]),
    );
    assert.deepEqual(
      images(parts).map(([alt, url, width]) => [alt, url.slice(0, 26), width]),
      [
        ['image 1, 400×300', 'data:image/png;base64,iVBO', 200],
        ['image 2', 'data:image/svg+xml;base64,', 320],
        ['image 3, 30×20', 'data:image/png;base64,iVBO', 30],
      ],
    );
    assert.equal(Buffer.from(images(parts)[1][1].split(',')[1], 'base64').toString(), svg);
  });

  it('at most three images; a note says how many more are in the panel', () => {
    const parts = hoverParts(exec([plot(10, 10), plot(11, 10), plot(12, 10), plot(13, 10), plot(14, 10)]));
    assert.equal(images(parts).length, 3);
    assert.match(markdown(parts), /\*2 more images in the CodeAct panel\*/);
  });

  it('a big image is not put in the hover: a note says so (the bytes are bounded)', () => {
    const bytes = Buffer.concat([pngBytes(8, 8), Buffer.alloc(Math.ceil((HOVER_IMAGE_CHARS * 3) / 4))]);
    const huge: DisplayOutput = { type: 'display', data: { 'image/png': bytes.toString('base64') } };
    const parts = hoverParts(exec([huge, plot(10, 10)]));
    const text = markdown(parts);
    assert.ok(text.length < 200_000, `the hover stays small (${text.length} characters)`);
    assert.match(text, /\*image 1, 8×8 \(\d+(\.\d)? [KM]B\) is too large for the hover: it is in the CodeAct panel\*/);
    assert.deepEqual(
      images(parts).map((i) => i[0]),
      ['image 2, 10×10'],
      'the next image that fits is drawn',
    );
  });

  it("draws no image whose header declares more than the pixel cap (a display or a hosted sandbox's image): a note says why", () => {
    const bomb = pngDeclaring(40000, 40000).toString('base64');
    const parts = hoverParts(exec([{ type: 'display', data: { 'image/png': bomb } }, { type: 'image', url: `data:image/png;base64,${bomb}` }, plot(10, 10)]));
    const text = markdown(parts);
    assert.ok(!text.includes(bomb), 'the bomb is not in the hover');
    assert.match(text, /\*image 1, 40000×40000: \[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels/);
    assert.match(text, /\*image 2, 40000×40000: \[codeact: a PNG image of 40,000×40,000 pixels/);
    assert.deepEqual(
      images(parts).map((i) => i[0]),
      ['image 3, 10×10'],
    );
    assert.deepEqual(images(hoverParts(exec([plot(64, 48)]), 1000)), [], 'the cap given (the setting, in pixels) holds too');
  });

  it('nothing from the code becomes a link, HTML or a command: bad base64 is refused, names and text stay in code blocks', () => {
    const evil: DisplayOutput = { type: 'display', data: { 'image/png': 'AAAA)[x](command:workbench.action.terminal.new' } };
    const parts = hoverParts(
      exec([
        { type: 'logs', logs: '[click](command:codeact.openChat) <img src=x onerror=alert(1)>\n' },
        evil,
        { type: 'image', url: 'https://tracker.example/pixel.png' },
        { type: 'file', filename: '[x](command:evil).csv', bytes: 10 },
      ]),
    );
    const text = markdown(parts);
    assert.doesNotMatch(text, /command:|<img|tracker\.example/);
    assert.match(text, /\*image 1: not a valid image\*/);
    assert.match(text, /\*image 2: at a remote address \(not loaded here\)\*/);
    const files = parts[parts.findIndex((p) => p.kind === 'markdown' && p.text === 'files:') + 1];
    assert.deepEqual(files, { kind: 'code', text: '[x](command:evil).csv, 10 bytes', language: 'text' });
  });

  it('the mark and every code block of the hover show invisible and bidi characters as markers (stdout, stderr, files, value, error)', () => {
    const ok = exec(
      [
        { type: 'logs', logs: 'out \u202eput\n' },
        { type: 'logs', stream: 'stderr', logs: 'warn\u200bing\n' },
        { type: 'file', filename: 'a\u2067b.csv', bytes: 1 },
      ],
      {
        value: 'v\u202e1',
      },
    );
    assert.equal(inlineSummary(ok), '✓ "v<U+202E>1" · 1 file · 12 ms');
    const codes = (parts: HoverPart[]) => parts.filter((p) => p.kind === 'code').map((p) => p.text);
    assert.deepEqual(codes(hoverParts(ok)), ['out <U+202E>put\n', 'warn<U+200B>ing\n', 'a<U+2067>b.csv, 1 byte', '"v<U+202E>1"']);
    const failed = exec([], {
      status: 'failed',
      value: undefined,
      error: { type: 'Value\u202eError', message: 'bad \u200bvalue', traceback: 'Traceback\nValueError: bad \u200bvalue\n' },
    });
    assert.equal(inlineSummary(failed), '✗ Value<U+202E>Error: bad <U+200B>value · 12 ms');
    assert.deepEqual(codes(hoverParts(failed)), ['Traceback\nValueError: bad <U+200B>value\n']);
  });

  it('files are listed with their size and, when not copied out, why', () => {
    const parts = hoverParts(
      exec([{ type: 'file', filename: 'out.csv', bytes: 1234 }, { type: 'file', filename: 'big.bin', bytes: 5e7, note: 'over the cap' } as CodeOutput]),
    );
    const files = parts[parts.findIndex((p) => p.kind === 'markdown' && p.text === 'files:') + 1];
    assert.deepEqual(files, { kind: 'code', text: 'out.csv, 1.2 KB\nbig.bin, 47.7 MB (over the cap)', language: 'text' });
  });
});
