/**
 * The MIME catalogue (src/common/mimeTypes.ts): every row complete and coherent; the guest's formats file
 * (codeact_formats.py, read by running python3 on it) says the same about binary, JSON and the types its
 * reprs give; each raster row's format is what ../../src/common/imageHeader reads from a real file of it; and
 * each place's choice is what it was before the catalogue (the panel's, the model's and the notebook digest's
 * orders, the extensions and labels each place used), pinned here as the old tables.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { displayModelText } from '../../src/common/displays';
import { imageHeader } from '../../src/common/imageHeader';
import {
  bestFor,
  CLIPBOARD_IMAGE,
  extensionOf,
  imageTypeName,
  isBinary,
  isImage,
  isJson,
  isNbformatJson,
  isPanelImage,
  isRaster,
  isText,
  isVision,
  MIME_TYPES,
  mimeLabel,
  mimeOfExtension,
  PANEL_IMAGE_MIMES,
  panelTextOf,
  rankedFor,
  rasterFormatList,
  VISION_MIMES,
  type Mime,
  type MimePlace,
} from '../../src/common/mimeTypes';
import { makeImages } from '../support/images';

const ALL = Object.keys(MIME_TYPES) as Mime[];
const GUEST = path.join(__dirname, '../../src/core/runtime/guest');

/** The guest's facts, as codeact_formats.py has them. */
function guestFormats(mimes: readonly string[]): { binary: string[]; raster: string[]; repr: string[]; json: string[] } {
  const script = [
    'import json, sys',
    `sys.path.insert(0, ${JSON.stringify(GUEST)})`,
    'import codeact_formats as f',
    'mimes = json.load(sys.stdin)',
    'print(json.dumps({"binary": sorted(f.BINARY), "raster": list(f.RASTER), "repr": [m for _, m in f.REPR_METHODS], "json": [m for m in mimes if f.is_json_mime(m)]}))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script], { input: JSON.stringify(mimes), encoding: 'utf8' }));
}

describe('MIME catalogue', () => {
  it('is complete: every row has a well-formed type, extensions no other row has, and a value kind that fits its type', () => {
    const seen = new Map<string, string>();
    for (const mime of ALL) {
      const row = MIME_TYPES[mime];
      assert.match(mime, /^[a-z]+\/[a-z0-9.+-]+$/, mime);
      for (const ext of row.extensions) {
        assert.match(ext, /^[a-z0-9]+$/, `${mime}: ${ext}`);
        assert.equal(seen.get(ext), undefined, `.${ext} belongs to ${seen.get(ext)} and ${mime}`);
        seen.set(ext, mime);
        assert.equal(mimeOfExtension(ext.toUpperCase()), mime);
      }
      assert.equal(isJson(mime), row.value === 'json', `${mime}: a JSON type is exactly one the display protocol reads as JSON`);
      if (mime.startsWith('text/')) assert.equal(row.value, 'text', mime);
      if ('image' in row) assert.ok(mime.startsWith('image/'), mime);
      if (mime.startsWith('image/')) assert.ok('image' in row, `${mime} has no image column`);
      if (isRaster(mime)) assert.equal(row.value, 'binary', mime);
    }
  });

  it('ranks each place with distinct numbers from 1, and every type a place ranks is one it can read', () => {
    for (const place of ['panel', 'model', 'notebook'] as MimePlace[]) {
      const ranked = rankedFor(place);
      const ranks = ranked.map((m) => {
        const row: { value: string; panel?: number; model?: { rank: number }; notebook?: { rank: number } } = MIME_TYPES[m];
        return place === 'panel' ? row.panel : row[place]?.rank;
      });
      assert.deepEqual(
        ranks,
        ranked.map((_, i) => i + 1),
        place,
      );
    }
    for (const m of rankedFor('model')) assert.ok(MIME_TYPES[m].value !== 'binary' || isVision(m), `the model reads ${m} only as a vision image`);
  });

  it('keeps each place’s order: the panel’s, the model’s, the notebook digest’s, the vision models’ and the panel’s images', () => {
    assert.deepEqual(rankedFor('panel'), [
      'text/html',
      'text/markdown',
      'image/svg+xml',
      'image/png',
      'image/jpeg',
      'image/gif',
      'image/webp',
      'text/latex',
      'application/json',
      'text/plain',
    ]);
    assert.deepEqual(rankedFor('model'), [
      'image/png',
      'image/jpeg',
      'image/gif',
      'image/webp',
      'image/svg+xml',
      'text/markdown',
      'text/plain',
      'text/latex',
      'application/json',
      'text/html',
    ]);
    assert.deepEqual(rankedFor('notebook'), [
      'image/png',
      'image/jpeg',
      'image/svg+xml',
      'image/gif',
      'text/html',
      'text/markdown',
      'text/plain',
      'application/json',
    ]);
    assert.deepEqual(VISION_MIMES, ['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
    assert.deepEqual(PANEL_IMAGE_MIMES, ['image/svg+xml', 'image/png', 'image/jpeg', 'image/gif', 'image/webp']);
    assert.ok(!isPanelImage('image/bmp') && !isVision('image/bmp') && isRaster('image/bmp'));
    assert.equal(rasterFormatList(), 'PNG, JPEG, GIF, WebP or BMP');
  });

  it('draws HTML, Markdown and LaTeX as the panel did, every other text type it ranks as plain text, and copies PNG as it is', () => {
    const drawn = Object.fromEntries(
      rankedFor('panel')
        .filter((m) => panelTextOf(m) !== 'plain')
        .map((m) => [m, panelTextOf(m)]),
    );
    assert.deepEqual(drawn, { 'text/html': 'html', 'text/markdown': 'markdown', 'text/latex': 'latex' });
    for (const m of ALL) {
      if ('panelText' in MIME_TYPES[m]) assert.ok(isText(m) && rankedFor('panel').includes(m), `${m}: the panel draws only a text type it ranks`);
    }
    assert.equal(CLIPBOARD_IMAGE, 'image/png');
    assert.ok(isPanelImage(CLIPBOARD_IMAGE) && isRaster(CLIPBOARD_IMAGE), 'the clipboard’s type is a raster image the panel draws');
  });

  it('picks the best type per place, as the panel and the model did', () => {
    const data = { 'text/html': '<b>x</b>', 'image/png': 'iVBORw0KGgo=', 'text/plain': 'x', 'application/json': { a: 1 } };
    assert.equal(bestFor('panel', data), 'text/html');
    assert.equal(bestFor('model', data), 'image/png');
    // The panel takes an empty value; the model takes an image only when it has data.
    assert.equal(bestFor('panel', { 'image/png': '', 'text/plain': 'x' }), 'image/png');
    assert.equal(bestFor('model', { 'image/png': '', 'image/svg+xml': '' }), 'image/svg+xml');
    // JSON: any defined value; text: a string or a list of lines.
    assert.equal(bestFor('panel', { 'application/json': null, 'text/plain': ['a', 'b'] }), 'application/json');
    assert.equal(bestFor('panel', { 'text/html': 3, 'text/plain': ['a', 'b'] }), 'text/plain');
    assert.equal(bestFor('panel', { 'application/pdf': 'JVBERi0=' }), undefined);
    assert.equal(displayModelText({ type: 'display', data: { 'text/html': '<p>x</p>' } }), '[HTML output shown to the user]');
    assert.equal(displayModelText({ type: 'display', data: { 'image/svg+xml': '<svg/>', 'text/plain': 'x' } }), '[SVG image]');
    assert.equal(displayModelText({ type: 'display', data: { 'application/json': { a: 1 }, 'text/html': '<p/>' } }), '{"a":1}');
    assert.equal(displayModelText({ type: 'display', data: { 'application/pdf': 'JVBERi0=' } }), '[a display of application/pdf]');
  });

  it('keeps the extensions, types and labels each place had', () => {
    // The runtimes' copies of the files the code wrote (src/core/runtime/artifacts.ts), by extension.
    const artifacts: Record<string, string> = {
      png: 'image/png',
      jpg: 'image/jpeg',
      jpeg: 'image/jpeg',
      gif: 'image/gif',
      webp: 'image/webp',
      svg: 'image/svg+xml',
      bmp: 'image/bmp',
      csv: 'text/csv',
      tsv: 'text/tab-separated-values',
      txt: 'text/plain',
      log: 'text/plain',
      md: 'text/markdown',
      json: 'application/json',
      jsonl: 'application/x-ndjson',
      html: 'text/html',
      htm: 'text/html',
      xml: 'application/xml',
      yaml: 'application/yaml',
      yml: 'application/yaml',
      py: 'text/x-python',
      ipynb: 'application/x-ipynb+json',
      pdf: 'application/pdf',
      zip: 'application/zip',
      gz: 'application/gzip',
      parquet: 'application/vnd.apache.parquet',
      xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      xls: 'application/vnd.ms-excel',
      pkl: 'application/octet-stream',
      npy: 'application/octet-stream',
      sqlite: 'application/vnd.sqlite3',
      db: 'application/vnd.sqlite3',
    };
    for (const [ext, mime] of Object.entries(artifacts)) assert.equal(mimeOfExtension(ext), mime, ext);
    assert.equal(mimeOfExtension('exe'), undefined);
    // The names --outputs and the panel give an image or an inline file.
    const written: Record<string, string> = {
      'image/png': 'png',
      'image/jpeg': 'jpg',
      'image/gif': 'gif',
      'image/webp': 'webp',
      'image/bmp': 'bmp',
      'image/svg+xml': 'svg',
      'text/csv': 'csv',
      'text/plain': 'txt',
      'text/html': 'html',
      'application/json': 'json',
      'application/pdf': 'pdf',
    };
    for (const [mime, ext] of Object.entries(written)) assert.equal(extensionOf(mime), ext, mime);
    assert.equal(extensionOf('image/tiff'), undefined);
    // The file chips' labels and the save dialog's.
    const labels: Record<string, string> = {
      'text/csv': 'CSV',
      'application/json': 'JSON',
      'text/plain': 'Text',
      'text/html': 'HTML',
      'text/markdown': 'Markdown',
      'application/pdf': 'PDF',
      'application/zip': 'ZIP',
      'image/png': 'PNG image',
      'image/jpeg': 'JPEG image',
      'image/gif': 'GIF image',
      'image/webp': 'WebP image',
      'image/svg+xml': 'SVG image',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel workbook',
      'application/vnd.apache.parquet': 'Parquet',
    };
    for (const [mime, label] of Object.entries(labels)) assert.equal(mimeLabel(mime), label, mime);
    assert.equal(mimeLabel('application/octet-stream'), undefined);
    assert.deepEqual(
      PANEL_IMAGE_MIMES.map((m) => imageTypeName(m)),
      ['SVG', 'PNG', 'JPEG', 'GIF', 'WEBP'],
    );
  });

  it('says what is text, JSON and binary as the notebook export and the notebook cells did', () => {
    for (const m of ['text/plain', 'text/html', 'text/x-unknown', 'image/svg+xml']) assert.ok(isText(m), m);
    for (const m of ['image/png', 'application/json', 'application/x-unknown', 'image/tiff']) assert.ok(!isText(m), m);
    for (const m of ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp']) assert.ok(isBinary(m), m);
    for (const m of ['image/svg+xml', 'text/plain', 'application/json', 'image/tiff']) assert.ok(!isBinary(m), m);
    // An image is any image/ type, catalogued or not; every row with an image column is one.
    for (const m of ['image/tiff', 'image/x-icon', ...ALL.filter((t) => 'image' in MIME_TYPES[t])]) assert.ok(isImage(m), m);
    for (const m of ['text/plain', 'application/pdf', 'application/image']) assert.ok(!isImage(m), m);
    // nbformat's JSON rule is stricter than the display protocol's.
    assert.ok(isNbformatJson('application/vnd.plotly.v1+json') && isJson('application/vnd.plotly.v1+json'));
    assert.ok(!isNbformatJson('text/x+json') && isJson('text/x+json'));
  });

  it('agrees with the guest’s formats file: its binary types, its JSON rule, and every type its reprs give', () => {
    const guest = guestFormats(ALL);
    assert.deepEqual(guest.binary, ALL.filter(isBinary).sort(), 'codeact_formats.BINARY is the catalogue’s binary rows');
    assert.deepEqual(guest.json, ALL.filter(isJson), 'codeact_formats.is_json_mime says what the catalogue says');
    for (const m of guest.repr) assert.ok(m in MIME_TYPES, `the guest's repr type ${m} has a row`);
    for (const m of guest.raster) {
      assert.ok(isVision(m), `the guest downscales ${m}: a raster type the model takes`);
      assert.equal(imageTypeName(m), m.slice(6).toUpperCase(), 'the guest names an image by its subtype in capitals');
    }
  });

  it('names each raster type’s format as the image header reader reads it from a real file', () => {
    const formats = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WEBP', 'image/bmp': 'BMP' } as const;
    const rasters = ALL.filter(isRaster);
    assert.deepEqual(rasters.sort(), Object.keys(formats).sort(), 'a new raster row needs an image here (and a header reader)');
    const images = makeImages(rasters.map((m) => ({ width: 3, height: 2, format: formats[m as keyof typeof formats] })));
    rasters.forEach((mime, i) => {
      const row = MIME_TYPES[mime] as { image: { format: string } };
      assert.equal(imageHeader(Buffer.from(images[i], 'base64'))?.format, row.image.format, mime);
    });
  });
});
