/**
 * Real PNG files of a given size, made in the test (no fixtures): a grey image, valid for any reader
 * (its header says its size, its CRCs check, its pixels inflate).
 */
import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([len, body, crc]);
}

/** A PNG of `width`×`height` grey pixels, as bytes. */
export function pngBytes(width: number, height: number, grey = 0x80): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const row = Buffer.alloc(width + 1, grey);
  row[0] = 0; // filter: none
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The same, as base64 (a display's `image/png`). */
export function pngBase64(width: number, height: number, grey = 0x80): string {
  return pngBytes(width, height, grey).toString('base64');
}

/**
 * A PNG that declares `width`×`height` in its IHDR but holds the start of its rows only (a few hundred
 * bytes): what a decoder would allocate is what the header says, so it stands for a decompression bomb
 * without the test having to make one.
 */
export function pngDeclaring(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(Math.min(width + 1, 65536) * 4))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
