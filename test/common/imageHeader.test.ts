/**
 * The one image header reader (src/common/imageHeader.ts): the size each format declares, read from real
 * files Pillow wrote (PNG, JPEG, GIF, WebP lossy and lossless, BMP) and from headers that declare far more
 * than they hold; the format read from the bytes, not the label; a malformed or unknown header refused
 * (fail closed); and the work counted: the reader looks at the header, never at the pixels.
 */
import assert from 'node:assert/strict';
import { capDisplayImages } from '../../src/common/displays';
import { checkImagePixels, DEFAULT_MAX_IMAGE_PIXELS, imageHeader } from '../../src/common/imageHeader';
import { SETTINGS } from '../../src/core/config/keys';
import { makeImages } from '../support/images';
import { pngBytes, pngDeclaring } from '../support/png';

const bytes = (b64: string) => Buffer.from(b64, 'base64');

/** The bytes of `buf`, counting how many of them the reader looks at. */
function counted(buf: Buffer): { data: Uint8Array; reads: () => number } {
  let n = 0;
  const data = new Proxy(new Uint8Array(buf), {
    get(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key)) n++;
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { data, reads: () => n };
}

/** A JPEG with its first SOF0's height and width set to these (a real file from Pillow, its header patched). */
function jpegDeclaring(jpeg: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(jpeg);
  const sof = out.indexOf(Buffer.from([0xff, 0xc0]));
  out.writeUInt16BE(height, sof + 5);
  out.writeUInt16BE(width, sof + 7);
  return out;
}

/** A GIF whose logical screen is 1×1 but whose one frame is `width`×`height` (decoders grow the canvas to it). */
function gifWithFrame(width: number, height: number): Buffer {
  const frame = Buffer.alloc(9);
  frame.writeUInt16LE(width, 4);
  frame.writeUInt16LE(height, 6);
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    Buffer.from([1, 0, 1, 0, 0x80, 0, 0]),
    Buffer.from([0, 0, 0, 255, 255, 255]),
    Buffer.from([0x21, 0xf9, 4, 0, 0, 0, 0, 0]),
    Buffer.from([0x2c]),
    frame,
    Buffer.from([2, 2, 0x44, 0x01, 0, 0x3b]),
  ]);
}

/** A WebP of the extended format (VP8X) whose canvas is `width`×`height`. */
function webpCanvas(width: number, height: number): Buffer {
  const body = Buffer.alloc(10);
  body.writeUIntLE(width - 1, 4, 3);
  body.writeUIntLE(height - 1, 7, 3);
  const head = Buffer.alloc(8);
  head.write('VP8X', 0, 'latin1');
  head.writeUInt32LE(10, 4);
  const riff = Buffer.alloc(12);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(4 + 8 + 10, 4);
  riff.write('WEBP', 8, 'latin1');
  return Buffer.concat([riff, head, body]);
}

describe('image headers: the size an image declares, read before anything decodes it', function () {
  this.timeout(60_000);
  let real: Record<string, string> = {};
  before(() => {
    const [png, jpeg, gif, webp, webpLossless, bmp] = makeImages([
      { width: 64, height: 48 },
      { width: 33, height: 17, format: 'JPEG' },
      { width: 20, height: 10, format: 'GIF' },
      { width: 30, height: 14, format: 'WEBP' },
      { width: 31, height: 15, format: 'WEBP', options: { lossless: true } },
      { width: 12, height: 7, format: 'BMP' },
    ]);
    real = { png, jpeg, gif, webp, webpLossless, bmp };
  });

  it('reads the size of real PNG, JPEG, GIF, WebP (lossy and lossless) and BMP files, from base64 and from bytes', () => {
    const want: Record<string, [string, number, number]> = {
      png: ['PNG', 64, 48],
      jpeg: ['JPEG', 33, 17],
      gif: ['GIF', 20, 10],
      webp: ['WebP', 30, 14],
      webpLossless: ['WebP', 31, 15],
      bmp: ['BMP', 12, 7],
    };
    for (const [name, [format, width, height]] of Object.entries(want)) {
      assert.deepEqual(imageHeader(real[name]), { format, width, height }, name);
      assert.deepEqual(imageHeader(bytes(real[name])), { format, width, height }, `${name} (bytes)`);
    }
  });

  it('reads what a bomb declares: a PNG IHDR, a JPEG SOF past a 60 KB APP1, a GIF frame larger than its screen, a WebP canvas', () => {
    assert.deepEqual(imageHeader(pngDeclaring(40000, 40000).toString('base64')), { format: 'PNG', width: 40000, height: 40000 });
    const jpeg = bytes(real.jpeg);
    const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0xea, 0x62]), Buffer.alloc(60000, 0x20)]);
    const padded = Buffer.concat([jpeg.subarray(0, 2), app1, jpegDeclaring(jpeg, 60000, 50000).subarray(2)]);
    assert.deepEqual(imageHeader(padded.toString('base64')), { format: 'JPEG', width: 60000, height: 50000 });
    assert.deepEqual(imageHeader(gifWithFrame(30000, 30000)), { format: 'GIF', width: 30000, height: 30000 });
    assert.deepEqual(imageHeader(webpCanvas(16384, 16384)), { format: 'WebP', width: 16384, height: 16384 });
  });

  it('reads the format from the bytes, not the label: a PNG bomb labelled image/jpeg is still over the cap', () => {
    const r = checkImagePixels('image/jpeg', pngDeclaring(40000, 40000).toString('base64'), DEFAULT_MAX_IMAGE_PIXELS);
    assert.equal(r.ok, false);
    assert.match(
      !r.ok ? r.note : '',
      /a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/,
    );
  });

  it('refuses what it cannot read (fail closed): IHDR not first, a scan before the frame header, cut short, unknown, empty', () => {
    const png = pngBytes(4, 4);
    // A tEXt chunk before IHDR: a decoder that tolerates it would read a size this reader never saw.
    const text = Buffer.from([0, 0, 0, 1, 0x74, 0x45, 0x58, 0x74, 0x41, 0, 0, 0, 0]);
    const ihdrNotFirst = Buffer.concat([png.subarray(0, 8), text, png.subarray(8)]);
    const jpeg = bytes(real.jpeg);
    const sosFirst = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0xff, 0xda, 0, 2]), jpeg.subarray(2)]);
    const zeroHeight = jpegDeclaring(jpeg, 33, 0);
    const cases: Record<string, Buffer> = {
      ihdrNotFirst,
      sosFirst,
      zeroHeight,
      cutShort: png.subarray(0, 20),
      gifCutShort: Buffer.from('GIF89a\x01', 'latin1'),
      tiff: Buffer.from('II*\u0000\u0008\u0000\u0000\u0000', 'latin1'),
      text: Buffer.from('not an image at all', 'latin1'),
      empty: Buffer.alloc(0),
    };
    for (const [name, buf] of Object.entries(cases)) {
      assert.equal(imageHeader(buf.toString('base64')), undefined, name);
      const r = checkImagePixels('image/png', buf.toString('base64'), DEFAULT_MAX_IMAGE_PIXELS);
      assert.ok(!r.ok && /its header does not say its size in a form CodeAct reads/.test(r.note), `${name}: ${JSON.stringify(r)}`);
    }
    assert.equal(imageHeader('@@not base64@@'), undefined);
  });

  it('looks at the header only: the bytes read do not grow with the file', () => {
    const small = counted(pngDeclaring(40000, 40000));
    assert.equal(imageHeader(small.data)?.width, 40000);
    const big = counted(Buffer.concat([pngDeclaring(40000, 40000), Buffer.alloc(4 * 1024 * 1024)]));
    assert.equal(imageHeader(big.data)?.width, 40000);
    assert.ok(small.reads() <= 32, `${small.reads()} bytes read of a PNG`);
    assert.equal(big.reads(), small.reads(), 'a PNG 4 MB larger costs no more');
    const jpeg = bytes(real.jpeg);
    const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0xea, 0x62]), Buffer.alloc(60000, 0x20)]);
    const j = counted(Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)]));
    assert.equal(imageHeader(j.data)?.width, 33);
    assert.ok(j.reads() < 200, `${j.reads()} bytes read to walk a JPEG's segments past a 60 KB one`);
  });

  it('checks width × height against the cap; SVG is drawn at the size it is shown and is not counted', () => {
    const png = pngBytes(100, 100).toString('base64');
    assert.deepEqual(checkImagePixels('image/png', png, 10_000), { ok: true, size: { width: 100, height: 100 } });
    const over = checkImagePixels('image/png', png, 9_999);
    assert.ok(!over.ok && /100×100 pixels \(0\.01 megapixels\).*the limit is 0\.01 megapixels/.test(over.note), JSON.stringify(over));
    assert.deepEqual(checkImagePixels('image/svg+xml', '<svg width="99999" height="99999"/>', 1), { ok: true });
    assert.equal(DEFAULT_MAX_IMAGE_PIXELS, SETTINGS['outputs.maxImageMegapixels'].default * 1e6, "the default is the setting's");
  });

  it('a display over the cap keeps its other types and says why in text/plain; one within it is left as it was', () => {
    const fine = { type: 'display' as const, data: { 'image/png': pngBytes(8, 8).toString('base64'), 'text/plain': '<Figure>' } };
    assert.equal(capDisplayImages(fine, DEFAULT_MAX_IMAGE_PIXELS), fine);
    const bomb = {
      type: 'display' as const,
      data: { 'image/png': pngDeclaring(40000, 40000).toString('base64'), 'text/plain': '<Figure>', 'application/json': { a: 1 } },
      metadata: { 'image/png': { width: 40000 } },
    };
    const capped = capDisplayImages(bomb, DEFAULT_MAX_IMAGE_PIXELS);
    assert.deepEqual(Object.keys(capped.data).sort(), ['application/json', 'text/plain']);
    assert.match(String(capped.data['text/plain']), /^\[codeact: a PNG image of 40,000×40,000 pixels/);
    assert.equal(capped.metadata, undefined, "the removed image's metadata goes with it");
    assert.ok('image/png' in bomb.data, 'the input is not changed');
  });
});
