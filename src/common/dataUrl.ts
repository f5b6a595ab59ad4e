/**
 * Data URLs (`data:image/png;base64,…`), as hosted sandboxes' image outputs carry them: their type and
 * payload, as base64 or as text. Pure: no Node, no DOM (atob and TextDecoder are globals of both).
 */

interface DataUrl {
  /** The media type, lower case: `image/png`. */
  mime: string;
  /** Base64 of the bytes (whitespace removed). */
  base64: string;
}

/** The longest head (type and parameters) read before the comma. */
const MAX_HEAD = 256;

/** The type and bytes (as base64) of a data URL; undefined when it is not one (a remote URL, garbage). */
export function parseDataUrl(url: string): DataUrl | undefined {
  if (typeof url !== 'string' || !/^data:/i.test(url)) return undefined;
  const comma = url.indexOf(',', 5);
  if (comma < 0 || comma > MAX_HEAD) return undefined;
  const params = url.slice(5, comma).split(';');
  const mime = (params[0] || 'text/plain').trim().toLowerCase();
  if (!/^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(mime)) return undefined;
  const payload = url.slice(comma + 1);
  if (params.slice(1).some((p) => p.trim().toLowerCase() === 'base64')) {
    const base64 = payload.replace(/\s+/g, '');
    return /^[A-Za-z0-9+/]*={0,2}$/.test(base64) ? { mime, base64 } : undefined;
  }
  let text: string;
  try {
    text = decodeURIComponent(payload);
  } catch {
    return undefined;
  }
  return { mime, base64: textToBase64(text) };
}

/** Base64 of the UTF-8 bytes of `text`. */
export function textToBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** The UTF-8 text of base64 bytes (for an SVG); undefined when it is not base64. */
export function base64ToText(base64: string): string | undefined {
  let bin: string;
  try {
    bin = atob(base64);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}
