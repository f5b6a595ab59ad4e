/**
 * The HTML of the chat panel webview: a strict Content Security Policy with a per-load nonce, no remote
 * resources, the bundled script and stylesheet passed in as webview URIs. Pure: no `vscode` import, so it
 * is unit-tested and reused by the browser tests.
 *
 * The host should create the panel with `enableScripts: true`, `localResourceRoots: [extensionUri/dist,
 * extensionUri/media]`, and pass `webview.cspSource`, `webview.asWebviewUri(dist/webview.js)` and
 * `webview.asWebviewUri(dist/webview.css)`.
 */
import type { HostState } from '../common/protocol';

export interface WebviewHtmlOptions {
  /** `webview.cspSource`. */
  cspSource: string;
  /** A fresh random nonce per load (see `createNonce`). */
  nonce: string;
  /** `webview.asWebviewUri(…/dist/webview.js)`, as a string. */
  scriptUri: string;
  /** `webview.asWebviewUri(…/dist/webview.css)`, as a string. */
  styleUri: string;
  title?: string;
  /** Host state embedded for the first paint (the page still sends `ready` and gets `init`). */
  initialState?: HostState;
  /** `<html lang>`; defaults to `en`. */
  lang?: string;
}

/** A random nonce of 32 URL-safe characters, from the platform's CSPRNG. */
export function createNonce(): string {
  const bytes = new Uint8Array(24);
  globalThis.crypto.getRandomValues(bytes);
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** JSON safe to embed inside a <script> element (no `</script>`, no HTML comments, no line separators). */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value ?? null)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data: blob:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "frame-src 'none'",
    "worker-src 'none'",
    "object-src 'none'",
    "media-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function buildWebviewHtml(o: WebviewHtmlOptions): string {
  if (!/^[A-Za-z0-9+/_=-]{16,}$/.test(o.nonce)) throw new Error('buildWebviewHtml: the nonce must be at least 16 base64 characters');
  const nonce = escapeAttr(o.nonce);
  const title = escapeAttr(o.title ?? 'CodeAct');
  const state = o.initialState
    ? `\n    <script type="application/json" id="codeact-initial-state" nonce="${nonce}">${jsonForScript(o.initialState)}</script>`
    : '';
  return `<!DOCTYPE html>
<html lang="${escapeAttr(o.lang ?? 'en')}">
  <head>
    <meta charset="UTF-8" />
    <meta http-equiv="Content-Security-Policy" content="${escapeAttr(contentSecurityPolicy(o.cspSource, o.nonce))}" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>${title}</title>
    <link rel="stylesheet" href="${escapeAttr(o.styleUri)}" nonce="${nonce}" />
  </head>
  <body>
    <div id="app" class="app" aria-busy="true"><noscript>The CodeAct panel needs JavaScript, which VS Code enables for it.</noscript></div>${state}
    <script nonce="${nonce}" src="${escapeAttr(o.scriptUri)}"></script>
  </body>
</html>
`;
}
