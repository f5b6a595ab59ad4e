/**
 * The panel's image messages (src/common/outputMessages.ts) as the host checks them: only the image types the
 * panel draws (the MIME catalogue's), raster data as base64, SVG as text, and a default file name by the
 * catalogue's extension when the page gives none.
 */
import assert from 'node:assert/strict';
import { parseOutputMessage, type ImageMessage } from '../../src/common/outputMessages';

const open = (mime: string, data: string, name?: string) =>
  parseOutputMessage({ type: 'image.open', mime, data, ...(name === undefined ? {} : { name }) }) as ImageMessage | undefined;

describe('panel image messages', () => {
  it('take the image types the panel draws, raster as base64 and SVG as text', () => {
    assert.deepEqual(open('image/png', 'iVBORw0KGgo=', 'plot-1.png'), { type: 'image.open', mime: 'image/png', data: 'iVBORw0KGgo=', name: 'plot-1.png' });
    assert.equal(open('image/png', '<svg/>'), undefined, 'raster data must be base64');
    assert.equal(open('image/svg+xml', '<svg/>')?.mime, 'image/svg+xml');
    for (const mime of ['image/bmp', 'image/tiff', 'text/html', 'application/pdf']) assert.equal(open(mime, 'AAAA'), undefined, mime);
  });

  it('name an image by its type when the page gives no usable name', () => {
    assert.equal(open('image/png', 'AAAA')?.name, 'image.png');
    assert.equal(open('image/gif', 'AAAA', '../x.gif')?.name, 'image.gif');
    assert.equal(open('image/webp', 'AAAA')?.name, 'image.webp');
    assert.equal(open('image/svg+xml', '<svg/>')?.name, 'image.svg');
    assert.equal(open('image/jpeg', 'AAAA')?.name, 'image.jpg');
  });
});
