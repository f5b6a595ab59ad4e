/**
 * The pixel cap in notebook outputs (src/vscode/notebook/cellOutputs.ts): VS Code's renderer decodes what
 * a cell holds, so an image whose header declares more pixels than codeact.outputs.maxImageMegapixels, or
 * one whose header says no size we read, never reaches the cell: the cell gets the note (declared size,
 * cap, setting) as text/plain instead. Live displays, updates of a display and a finished item's outputs
 * alike; a normal image is written as its bytes.
 */
import assert from 'node:assert/strict';
import type { CodeInterpreterCallItem, DisplayOutput } from '../../src/common/events';
import { CellOutputWriter, type CellOutputData, type CellSink, type OutputItemData } from '../../src/vscode/notebook/cellOutputs';
import { pngBytes, pngDeclaring } from '../support/png';

/** A cell's outputs, as VS Code would keep them. */
class Cell implements CellSink {
  outputs: CellOutputData[] = [];
  async clearOutput(): Promise<void> {
    this.outputs = [];
  }
  async appendOutput(o: CellOutputData): Promise<number> {
    this.outputs.push({ items: [...o.items], metadata: o.metadata });
    return this.outputs.length - 1;
  }
  async appendOutputItems(h: number, items: OutputItemData[]): Promise<void> {
    this.outputs[h].items.push(...items);
  }
  async replaceOutputItems(h: number, items: OutputItemData[]): Promise<void> {
    this.outputs[h].items = [...items];
  }
  /** Each output as {mime: text, or the byte count of a raster image}. */
  view(): Array<Record<string, string | number>> {
    return this.outputs.map((o) =>
      Object.fromEntries(
        o.items.map((i) => [i.mime, i.mime.startsWith('image/') && i.mime !== 'image/svg+xml' ? i.data.length : new TextDecoder().decode(i.data)]),
      ),
    );
  }
}

const BOMB = pngDeclaring(40000, 40000).toString('base64');
const NOTE =
  /^\[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/;
const display = (data: Record<string, unknown>, extra: Partial<DisplayOutput> = {}): DisplayOutput => ({ type: 'display', data, ...extra });
const item = (outputs: CodeInterpreterCallItem['outputs']): CodeInterpreterCallItem => ({
  type: 'code_interpreter_call',
  id: 'exec_1',
  status: 'completed',
  code: 'show()',
  runtime: 'local',
  outputs,
});

describe('notebook outputs: the pixel cap', () => {
  it('writes the note, not the bomb, for a live display; a normal image next to it is written as its bytes', async () => {
    const cell = new Cell();
    const w = new CellOutputWriter(cell, () => 1);
    const normal = pngBytes(64, 48);
    w.onEvent({ type: 'codeact.output.display', item_id: 'exec_1', output: display({ 'image/png': BOMB, 'text/plain': '<Figure>' }) });
    w.onEvent({ type: 'codeact.output.display', item_id: 'exec_1', output: display({ 'image/png': normal.toString('base64'), 'text/plain': '<Figure>' }) });
    await w.finish(item([]));
    const [bomb, fine] = cell.view();
    assert.deepEqual(Object.keys(bomb), ['text/plain'], 'no image item for the bomb');
    assert.match(String(bomb['text/plain']), NOTE);
    assert.deepEqual(fine, { 'image/png': normal.length, 'text/plain': '<Figure>' });
  });

  it('fails closed: an image type whose header says no size we read (TIFF, a broken BMP) is a note; SVG is text and stays', async () => {
    const cell = new Cell();
    const w = new CellOutputWriter(cell, () => 1);
    const tiff = Buffer.from('II*\u0000\u0008\u0000\u0000\u0000', 'latin1').toString('base64');
    w.onEvent({ type: 'codeact.output.display', item_id: 'exec_1', output: display({ 'image/tiff': tiff, 'image/bmp': 'Qk0=' }) });
    w.onEvent({ type: 'codeact.output.display', item_id: 'exec_1', output: display({ 'image/svg+xml': '<svg width="99999" height="99999"/>' }) });
    await w.finish(item([]));
    const [unknown, svg] = cell.view();
    assert.deepEqual(Object.keys(unknown), ['text/plain']);
    assert.match(String(unknown['text/plain']), /an image \(TIFF\) was not shown: its header does not say its size in a form CodeAct reads/);
    assert.deepEqual(svg, { 'image/svg+xml': '<svg width="99999" height="99999"/>' });
  });

  it("holds an update of a display, and a finished item's outputs, to the cap given (the setting, in pixels)", async () => {
    const cell = new Cell();
    const w = new CellOutputWriter(cell, () => 1, 3000);
    const small = pngBytes(40, 40).toString('base64');
    w.onEvent({ type: 'codeact.output.display', item_id: 'exec_1', output: display({ 'image/png': small }, { display_id: 'd' }) });
    w.onEvent({
      type: 'codeact.output.display',
      item_id: 'exec_1',
      update: true,
      output: display({ 'image/png': pngBytes(64, 48).toString('base64') }, { display_id: 'd' }),
    });
    await w.finish(item([]));
    assert.equal(cell.outputs.length, 1, 'the update replaced the display where it stood');
    assert.match(String(cell.view()[0]['text/plain']), /a PNG image of 64×48 pixels \(0\.00307 megapixels\) was not shown: the limit is 0\.003 megapixels/);

    const later = new Cell();
    const w2 = new CellOutputWriter(later, () => 2);
    await w2.finish(item([display({ 'image/png': BOMB, 'text/plain': '<Figure>' })]));
    assert.deepEqual(Object.keys(later.view()[0]), ['text/plain']);
    assert.match(String(later.view()[0]['text/plain']), NOTE);
  });

  it('writes each value as the MIME catalogue says: binary types as their bytes, text as UTF-8, JSON types as their JSON', async () => {
    const cell = new Cell();
    const w = new CellOutputWriter(cell, () => 1);
    const pdf = Buffer.from('%PDF-1.4 x');
    w.onEvent({
      type: 'codeact.output.display',
      item_id: 'exec_1',
      output: display({ 'application/pdf': pdf.toString('base64'), 'application/vnd.x+json': { a: 1 }, 'image/svg+xml': ['<svg', '/>'], 'text/plain': 'doc' }),
    });
    await w.finish(item([]));
    const items = new Map(cell.outputs[0].items.map((i) => [i.mime, Buffer.from(i.data).toString('utf8')]));
    assert.equal(items.get('application/pdf'), '%PDF-1.4 x');
    assert.equal(items.get('application/vnd.x+json'), '{"a":1}');
    assert.equal(items.get('image/svg+xml'), '<svg/>');
    assert.equal(items.get('text/plain'), 'doc');
  });
});
