/**
 * `--outputs DIR` and what the human output says about rich outputs, on executions built by hand with the
 * shapes the runtimes produce (displays, hosted images, files with a host path or a note): the images and
 * files are written under safe, unique names and never over an existing file; the terminal names images
 * ("[image 640×480, PNG]") and files in order with the text, and never prints an image's bytes.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem, CodeOutput, DisplayOutput, FileOutput } from '../../src/common/events';
import { OutputSaver, safeFileName, saveReportLines } from '../../src/cli/outputs';
import { displayTerminalText, humanPrinter } from '../../src/cli/print';
import { captureOutput as capture } from '../support/captureOutput';
import { pngBase64, pngBytes } from '../support/png';

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';

function exec(outputs: CodeOutput[], extra: Partial<CodeInterpreterCallItem> = {}): CodeInterpreterCallItem {
  return { type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: 'plot()', runtime: 'local', outputs, value: null, ...extra };
}

const png = (w: number, h: number): DisplayOutput => ({
  type: 'display',
  data: { 'image/png': pngBase64(w, h), 'text/plain': '<Figure size 640x480 with 1 Axes>' },
});

describe('codeact --outputs: saving images and files', () => {
  let dir: string;
  let src: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-outputs-'));
    src = mkdtempSync(path.join(tmpdir(), 'codeact-outputs-src-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(src, { recursive: true, force: true });
  });

  it('safeFileName joins the path parts, keeps letters, digits, . _ -, no leading dot, a bounded length with the extension', () => {
    assert.equal(safeFileName('../../etc/passwd'), 'etc_passwd');
    assert.equal(safeFileName('sub/out.csv'), 'sub_out.csv');
    assert.equal(safeFileName('/abs/./dir/out.csv'), 'abs_dir_out.csv');
    assert.equal(safeFileName('C:\\Users\\x\\report.xlsx'), 'C_Users_x_report.xlsx');
    assert.equal(safeFileName('a\u0000b\nc.csv'), 'a_b_c.csv');
    assert.equal(safeFileName('..'), 'file');
    assert.equal(safeFileName('.bashrc'), 'bashrc');
    assert.equal(safeFileName('-rf'), 'rf');
    assert.equal(safeFileName(''), 'file');
    assert.equal(safeFileName('x..y'), 'x.y');
    assert.equal(safeFileName('données 2024.csv'), 'données_2024.csv');
    assert.equal(safeFileName('$(rm -rf ~).txt'), 'rm_-rf_.txt');
    const long = safeFileName(`${'a'.repeat(500)}.parquet`);
    assert.equal(long.length, 80);
    assert.ok(long.endsWith('.parquet'));
  });

  it('saves raster, SVG and data-URL images and copies the files the code wrote, in order, with stable names', () => {
    writeFileSync(path.join(src, 'out.csv'), 'a,b\n1,2\n');
    writeFileSync(path.join(src, 'evil'), 'x');
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xd9]);
    const item = exec([
      { type: 'logs', logs: 'before\n' },
      png(640, 480),
      { type: 'logs', logs: 'between\n' },
      { type: 'display', data: { 'image/svg+xml': SVG, 'text/plain': '<svg>' } },
      { type: 'display', data: { 'text/html': '<table></table>', 'text/plain': 'a table' } },
      { type: 'image', url: `data:image/jpeg;base64,${jpeg.toString('base64')}` },
      { type: 'image', url: 'https://example.com/chart.png' },
      { type: 'file', filename: 'out.csv', path: path.join(src, 'out.csv'), mime_type: 'text/csv', bytes: 8 },
      { type: 'file', filename: '../../../etc/cron.d/evil', path: path.join(src, 'evil'), bytes: 1 },
      { type: 'file', filename: 'sub/out.csv', path: path.join(src, 'out.csv'), bytes: 8 },
      { type: 'file', filename: 'big.bin', bytes: 50_000_000, note: 'over the 10 MB cap for one file' } as FileOutput,
      { type: 'file', filename: 'gone.txt' },
    ]);
    const saver = new OutputSaver(dir, 2);
    const report = saver.save(item);
    assert.deepEqual(
      report.saved.map((s) => s.name),
      ['exec-2-image-1.png', 'exec-2-image-2.svg', 'exec-2-image-3.jpg', 'exec-2-out.csv', 'exec-2-etc_cron.d_evil', 'exec-2-sub_out.csv'],
    );
    assert.deepEqual(readFileSync(path.join(dir, 'exec-2-image-1.png')), pngBytes(640, 480));
    assert.equal(readFileSync(path.join(dir, 'exec-2-image-2.svg'), 'utf8'), SVG);
    assert.deepEqual(readFileSync(path.join(dir, 'exec-2-image-3.jpg')), jpeg);
    assert.equal(readFileSync(path.join(dir, 'exec-2-out.csv'), 'utf8'), 'a,b\n1,2\n');
    assert.deepEqual(readdirSync(dir).sort(), [
      'exec-2-etc_cron.d_evil',
      'exec-2-image-1.png',
      'exec-2-image-2.svg',
      'exec-2-image-3.jpg',
      'exec-2-out.csv',
      'exec-2-sub_out.csv',
    ]);
    assert.deepEqual(report.unsaved, [
      { kind: 'image', name: 'image 4', reason: 'a remote URL, not downloaded' },
      { kind: 'file', name: 'big.bin', reason: 'over the 10 MB cap for one file' },
      { kind: 'file', name: 'gone.txt', reason: 'no copy on this machine' },
    ]);
    assert.deepEqual(saveReportLines(report, 'out'), [
      'saved 3 images and 3 files to out: exec-2-image-1.png, exec-2-image-2.svg, exec-2-image-3.jpg, exec-2-out.csv, exec-2-etc_cron.d_evil, exec-2-sub_out.csv',
      'not saved: image 4 (a remote URL, not downloaded)',
      'not saved: big.bin (over the 10 MB cap for one file)',
      'not saved: gone.txt (no copy on this machine)',
    ]);
    // The next execution has the next number.
    assert.deepEqual(
      saver.save(exec([png(2, 2)])).saved.map((s) => s.name),
      ['exec-3-image-1.png'],
    );
  });

  it('never overwrites a file that is there: a -2, -3 suffix is added', () => {
    writeFileSync(path.join(dir, 'exec-1-image-1.png'), 'mine');
    writeFileSync(path.join(dir, 'exec-1-out.csv'), 'mine too');
    writeFileSync(path.join(src, 'out.csv'), 'new');
    const item = exec([png(4, 3), { type: 'file', filename: 'out.csv', path: path.join(src, 'out.csv') }]);
    const first = new OutputSaver(dir).save(item);
    const second = new OutputSaver(dir).save(item);
    assert.deepEqual(
      first.saved.map((s) => s.name),
      ['exec-1-image-1-2.png', 'exec-1-out-2.csv'],
    );
    assert.deepEqual(
      second.saved.map((s) => s.name),
      ['exec-1-image-1-3.png', 'exec-1-out-3.csv'],
    );
    assert.equal(readFileSync(path.join(dir, 'exec-1-image-1.png'), 'utf8'), 'mine');
    assert.equal(readFileSync(path.join(dir, 'exec-1-out.csv'), 'utf8'), 'mine too');
    assert.equal(readFileSync(path.join(dir, 'exec-1-out-3.csv'), 'utf8'), 'new');
  });

  it('does not follow a link, and does not write through one in the folder', () => {
    writeFileSync(path.join(src, 'secret'), 'do not copy');
    symlinkSync(path.join(src, 'secret'), path.join(src, 'link.txt'));
    const target = path.join(src, 'target.png');
    symlinkSync(target, path.join(dir, 'exec-1-image-1.png'));
    const report = new OutputSaver(dir).save(exec([png(2, 2), { type: 'file', filename: 'link.txt', path: path.join(src, 'link.txt') }]));
    assert.deepEqual(report.unsaved, [{ kind: 'file', name: 'link.txt', reason: 'a symbolic link (not followed)' }]);
    assert.deepEqual(
      report.saved.map((s) => s.name),
      ['exec-1-image-1-2.png'],
    );
    assert.equal(existsSync(target), false, 'nothing was written through the link');
  });

  it("a hosted sandbox's file is not read from this machine, even with a path; an inline one (Gemini) is saved", () => {
    writeFileSync(path.join(src, 'data.csv'), 'host file');
    const report = new OutputSaver(dir).save(
      exec(
        [
          { type: 'file', file_id: 'cfile_1', container_id: 'cntr_1', filename: 'data.csv', path: path.join(src, 'data.csv') },
          { type: 'file', mime_type: 'text/csv', url: `data:text/csv;base64,${Buffer.from('x,y\n').toString('base64')}` },
        ],
        { runtime: 'openai' },
      ),
    );
    assert.deepEqual(report.unsaved, [{ kind: 'file', name: 'data.csv', reason: "it is in the provider's container (not downloaded)" }]);
    assert.deepEqual(
      report.saved.map((s) => s.name),
      ['exec-1-file-2.csv'],
    );
    assert.equal(readFileSync(path.join(dir, 'exec-1-file-2.csv'), 'utf8'), 'x,y\n');
  });

  it('names inline files and hosted images by the MIME catalogue’s extension; an image type it does not know is not saved', () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const inline = (mime: string) => ({ type: 'file' as const, mime_type: mime, url: `data:${mime};base64,${b64('x')}` });
    const report = new OutputSaver(dir).save(
      exec(
        [
          { type: 'image', url: `data:image/bmp;base64,${b64('BM')}` },
          { type: 'image', url: `data:image/tiff;base64,${b64('II*')}` },
          inline('application/json'),
          inline('text/markdown'),
          inline('image/jpeg'),
          inline('application/x-thing'),
        ],
        { runtime: 'gemini' },
      ),
    );
    assert.deepEqual(report.unsaved, [{ kind: 'image', name: 'image 2', reason: 'an unsupported type (image/tiff)' }]);
    assert.deepEqual(
      report.saved.map((s) => s.name),
      ['exec-1-image-1.bmp', 'exec-1-file-1.json', 'exec-1-file-2.md', 'exec-1-file-3.jpg', 'exec-1-file-4.bin'],
    );
  });

  it('an execution with nothing to save writes nothing and says nothing', () => {
    const report = new OutputSaver(dir).save(
      exec([
        { type: 'logs', logs: 'hi\n' },
        { type: 'display', data: { 'text/plain': '42' } },
      ]),
    );
    assert.deepEqual(report, { saved: [], unsaved: [] });
    assert.deepEqual(saveReportLines(report, dir), []);
    assert.deepEqual(readdirSync(dir), []);
  });

  it('a folder that cannot be made is a usage error', () => {
    writeFileSync(path.join(dir, 'file'), '');
    assert.throws(() => new OutputSaver(path.join(dir, 'file')), /--outputs .*file is not a folder|cannot create the folder/);
  });
});

describe('codeact human output: displays and files in order with the text', () => {
  it('names an image by its size and type, shows a table by its summary, HTML alone as [HTML output], never base64', () => {
    assert.equal(displayTerminalText(png(640, 480)), '[image 640×480, PNG]');
    assert.equal(displayTerminalText({ type: 'display', data: { 'image/svg+xml': SVG } }), '[SVG image]');
    const table: DisplayOutput = {
      type: 'display',
      data: { 'text/html': '<table>…</table>', 'text/plain': '   a  b\n0  1  2' },
      summary: 'DataFrame 2 rows × 2 columns\n\n| a | b |\n|---|---|\n| 1 | 2 |',
    };
    assert.equal(displayTerminalText(table), table.summary);
    assert.equal(displayTerminalText({ type: 'display', data: { 'text/html': '<b>hi</b>' } }), '[HTML output]');
    assert.equal(displayTerminalText({ type: 'display', data: { 'text/markdown': '**bold**', 'text/plain': 'bold' } }), '**bold**');
    const huge = displayTerminalText({ type: 'display', data: { 'text/plain': 'row\n'.repeat(100_000) } });
    assert.ok(huge.length < 2500, `capped: ${huge.length} characters`);
    assert.match(huge, /more (lines|characters) not shown/);
    const big = png(4000, 3000);
    assert.equal(displayTerminalText(big), '[image 4000×3000, PNG]');
    assert.equal(displayTerminalText({ type: 'display', data: null as unknown as Record<string, unknown> }), '[a display of no data]');
  });

  it('prints text, images and files in the order they happened, each image on its own line', () => {
    const print = humanPrinter();
    const item = exec([
      { type: 'logs', logs: 'loading' },
      png(640, 480),
      { type: 'logs', logs: 'done\n' },
      { type: 'file', filename: 'out.csv', path: '/tmp/x/out.csv', bytes: 1234 },
      { type: 'file', filename: 'big.bin', bytes: 50_000_000, note: 'over the cap' } as FileOutput,
    ]);
    const events: CodeActEvent[] = [
      { type: 'codeact.output.delta', item_id: 'exec_1', stream: 'stdout', delta: 'loading' },
      { type: 'codeact.output.display', item_id: 'exec_1', output: png(640, 480) },
      { type: 'codeact.output.delta', item_id: 'exec_1', stream: 'stdout', delta: 'done\n' },
      { type: 'codeact.output.display', item_id: 'exec_1', output: { ...png(320, 240), display_id: 'd1' }, update: true },
      { type: 'response.output_item.done', item },
    ];
    const got = capture(() => events.forEach(print));
    assert.equal(
      got.stdout,
      'loading\n[image 640×480, PNG]\ndone\n[image 320×240, PNG] (updated)\n[file out.csv, 1.2 KB]\n[file big.bin, 47.7 MB: over the cap]\n',
    );
    assert.doesNotMatch(got.stdout, /iVBOR/);
  });

  it("a hosted sandbox's output comes with the finished item: its logs, images and files in order", () => {
    const print = humanPrinter();
    const item = exec(
      [
        { type: 'logs', logs: 'hello' },
        { type: 'image', url: `data:image/png;base64,${pngBase64(300, 200)}` },
        { type: 'file', file_id: 'cfile_1', filename: 'report.pdf', container_id: 'cntr' },
      ],
      { runtime: 'openai' },
    );
    const got = capture(() => print({ type: 'response.output_item.done', item }));
    assert.equal(got.stdout, 'hello\n[image 300×200, PNG]\n[file report.pdf]\n');
  });

  it('prints at most 200 displays of an execution and counts the rest', () => {
    const print = humanPrinter();
    const got = capture(() => {
      for (let i = 0; i < 10_000; i++)
        print({ type: 'codeact.output.display', item_id: 'exec_1', output: { type: 'display', data: { 'text/plain': `d${i}` } } });
      print({ type: 'response.output_item.done', item: exec([]) });
    });
    const lines = got.stdout.trim().split('\n');
    assert.equal(lines.length, 201);
    assert.equal(lines[199], 'd199');
    assert.equal(lines[200], '…[9800 more displays not shown]');
  });

  it("strips control sequences from display text; a file name's control characters are shown as markers", () => {
    const print = humanPrinter();
    const got = capture(() => {
      print({ type: 'codeact.output.display', item_id: 'exec_1', output: { type: 'display', data: { 'text/plain': 'a\x1b]0;owned\x07b\x1b[2J' } } });
      print({ type: 'response.output_item.done', item: exec([{ type: 'file', filename: 'x\x1b[1Ay.txt', path: '/tmp/x' }]) });
    });
    assert.equal(got.stdout, 'ab\n[file x<U+001B>[1Ay.txt]\n');
  });
});
