/**
 * Loads the built panel bundle into headless Chromium (Debian's, driven by playwright-core): a loopback
 * HTTP server serves the page made by `buildWebviewHtml` (the real CSP) plus the Dark Modern theme
 * variables; a stub `acquireVsCodeApi` records what the page posts and keeps its state across reloads.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as esbuild from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { createEventBatcher } from '../../../src/common/eventBatcher';
import type { EventsMessage, HostToWebview, WebviewToHost } from '../../../src/common/protocol';
import type { TranscriptEvent } from '../../../src/common/transcript';
import { buildWebviewHtml, createNonce } from '../../../src/vscode/webviewHtml';

export const CHROMIUM = process.env.CODEACT_CHROMIUM ?? '/usr/bin/chromium';
const ROOT = join(__dirname, '..', '..', '..');

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

export interface BundleOptions {
  /**
   * Counts DOMPurify.sanitize calls: the bundle's `dompurify` is a wrapper that pushes the length of each
   * input to `window.__sanitized` (an instrumented build; the shipped bundle has no such hook).
   */
  countSanitize?: boolean;
}

/** Builds src/webview/main.ts like esbuild.mjs does, into a temporary folder. */
export async function buildBundle(options: BundleOptions = {}): Promise<string> {
  const outdir = mkdtempSync(join(tmpdir(), 'codeact-webview-'));
  if (options.countSanitize) {
    const real = join(ROOT, 'node_modules/dompurify/dist/purify.es.mjs');
    writeFileSync(
      join(outdir, 'countingPurify.mjs'),
      `import DOMPurify from ${JSON.stringify(real)};
const sanitize = DOMPurify.sanitize.bind(DOMPurify);
DOMPurify.sanitize = (dirty, cfg) => {
  (window.__sanitized ??= []).push(String(dirty).length);
  return cfg === undefined ? sanitize(dirty) : sanitize(dirty, cfg);
};
export default DOMPurify;
`,
    );
  }
  await esbuild.build({
    ...(options.countSanitize ? { alias: { dompurify: join(outdir, 'countingPurify.mjs') } } : {}),
    entryPoints: { webview: join(ROOT, 'src/webview/main.ts') },
    outdir,
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    loader: { '.css': 'css' },
    sourcemap: 'linked',
    logLevel: 'warning',
    legalComments: 'none',
  });
  return outdir;
}

export interface PanelServer {
  url: string;
  close(): Promise<void>;
}

export const THEMES = {
  dark: { css: join(ROOT, 'test/webview/fixtures/dark-modern.css'), kind: 'vscode-dark' },
  light: { css: join(ROOT, 'test/webview/fixtures/light-modern.css'), kind: 'vscode-light' },
} as const;

export async function startServer(bundleDir: string, theme: string = THEMES.dark.css, themeKind = 'vscode-dark'): Promise<PanelServer> {
  const files: Record<string, [string, string]> = {
    '/dist/webview.js': [join(bundleDir, 'webview.js'), 'text/javascript'],
    '/dist/webview.js.map': [join(bundleDir, 'webview.js.map'), 'application/json'],
    '/dist/webview.css': [join(bundleDir, 'webview.css'), 'text/css'],
    '/theme.css': [theme, 'text/css'],
  };
  let origin = '';
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/' || path === '/index.html') {
      const nonce = createNonce();
      let html = buildWebviewHtml({
        cspSource: origin,
        nonce,
        scriptUri: `${origin}/dist/webview.js`,
        styleUri: `${origin}/dist/webview.css`,
        title: 'CodeAct',
      });
      // What VS Code adds around the page: the theme variables and the theme-kind class on <body>.
      html = html
        .replace('</head>', `  <link rel="stylesheet" href="${origin}/theme.css" nonce="${nonce}" />\n  </head>`)
        .replace('<body>', `<body class="${themeKind}" data-vscode-theme-kind="${themeKind}">`);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(html);
      return;
    }
    const f = files[path];
    if (f && existsSync(f[0])) {
      res.writeHead(200, { 'content-type': f[1], 'cache-control': 'no-store' });
      res.end(readFileSync(f[0]));
      return;
    }
    res.writeHead(path === '/favicon.ico' ? 204 : 404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--font-render-hinting=none',
    ],
  });
}

/** What a page sees of VS Code: a recording `acquireVsCodeApi` whose state survives reloads of the tab. */
const INIT_SCRIPT = `
(() => {
  window.__posted = [];
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
  let acquired = false;
  window.acquireVsCodeApi = () => {
    if (acquired) throw new Error('acquireVsCodeApi may only be called once');
    acquired = true;
    return {
      postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))),
      getState: () => { const s = sessionStorage.getItem('__state'); return s ? JSON.parse(s) : undefined; },
      setState: (s) => { sessionStorage.setItem('__state', JSON.stringify(s)); return s; },
    };
  };
})();
`;

export class PanelPage {
  private seq = 0;
  readonly errors: string[] = [];

  constructor(readonly page: Page) {
    page.on('pageerror', (e) => this.errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') this.errors.push(m.text());
    });
  }

  static async open(browser: Browser, url: string, viewport = { width: 520, height: 900 }, colorScheme: 'dark' | 'light' = 'dark'): Promise<PanelPage> {
    const page = await browser.newPage({ viewport, deviceScaleFactor: 1, colorScheme });
    await page.addInitScript(INIT_SCRIPT);
    const panel = new PanelPage(page);
    await page.goto(url);
    await page.waitForSelector('.panel-header');
    return panel;
  }

  async posted(): Promise<WebviewToHost[]> {
    return this.page.evaluate(() => (window as unknown as { __posted: WebviewToHost[] }).__posted);
  }

  async clearPosted(): Promise<void> {
    await this.page.evaluate(() => {
      (window as unknown as { __posted: unknown[] }).__posted = [];
    });
  }

  async cspViolations(): Promise<string[]> {
    return this.page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
  }

  /** Posts host messages in order, then waits until the page has handled them and drawn a frame. */
  async send(...messages: HostToWebview[]): Promise<void> {
    await this.page.evaluate((msgs) => {
      for (const m of msgs) window.postMessage(m, '*');
    }, messages);
    await this.settle();
  }

  /** Sends events as the host would: through the batcher, one batch per simulated frame of `perFrame` events. */
  async sendEvents(events: TranscriptEvent[], perFrame = 8, conversationId = 'conv-1'): Promise<EventsMessage[]> {
    const batches: EventsMessage[] = [];
    let flush: (() => void) | undefined;
    const batcher = createEventBatcher(
      (m) => batches.push(m),
      (f) => void (flush = f),
      { conversationId, startSeq: this.seq },
    );
    events.forEach((e, i) => {
      batcher.push(e);
      if ((i + 1) % perFrame === 0) flush?.();
    });
    batcher.flush();
    this.seq = batcher.seq;
    await this.send(...batches);
    return batches;
  }

  /** The batches the host would post for these events (the real batcher, one batch per `perFrame` events). */
  batches(events: TranscriptEvent[], perFrame = 8, conversationId = 'conv-1'): EventsMessage[] {
    const batches: EventsMessage[] = [];
    let flush: (() => void) | undefined;
    const batcher = createEventBatcher(
      (m) => batches.push(m),
      (f) => void (flush = f),
      { conversationId, startSeq: this.seq },
    );
    events.forEach((e, i) => {
      batcher.push(e);
      if ((i + 1) % perFrame === 0) flush?.();
    });
    batcher.flush();
    this.seq = batcher.seq;
    return batches;
  }

  /**
   * Delivers host messages as the extension host does: one per animation frame, as `message` events, letting
   * the page render with its own frame loop in between. `probe` (a function body run in the page once each
   * message is rendered and laid out) collects one value per message.
   */
  async deliverPerFrame<T = unknown>(messages: HostToWebview[], probe?: string): Promise<T[]> {
    return this.page.evaluate(
      `(async (msgs) => {
        const probe = ${probe ? `() => { ${probe} }` : 'null'};
        const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
        const idle = () => (window.codeact && window.codeact.app && window.codeact.app.whenIdle ? window.codeact.app.whenIdle() : undefined);
        const out = [];
        for (const m of msgs) {
          await frame();
          window.postMessage(m, '*');
          // Measured once the panel has drawn the batch: on a busy machine a render can spill into a later
          // frame (or its fallback timer), and a probe in between would read layout the browser has not yet
          // anchored, not a frame anyone saw.
          if (probe) { await new Promise((r) => setTimeout(r, 0)); await idle(); await frame(); await frame(); out.push(probe()); }
        }
        await new Promise((r) => setTimeout(r, 0));
        await frame();
        await frame();
        return out;
      })(${JSON.stringify(messages)})`,
    ) as Promise<T[]>;
  }

  /** Waits until the page has put everything on screen, including work it left for idle time. */
  async whenIdle(): Promise<void> {
    await this.page.evaluate('window.codeact.app.whenIdle ? window.codeact.app.whenIdle() : undefined');
    await this.page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))');
  }

  setSeq(seq: number): void {
    this.seq = seq;
  }

  /** Waits for the page to handle everything posted so far, then renders pending changes. */
  async settle(): Promise<void> {
    // A string, not a function: tsx's name-keeping helper does not exist inside the page.
    await this.page.evaluate(`new Promise((resolve) => {
      const token = 'settle-' + Math.random();
      const onMessage = (e) => {
        if (e.data && e.data.__settle === token) {
          window.removeEventListener('message', onMessage);
          if (window.codeact) window.codeact.app.flushNow();
          requestAnimationFrame(() => resolve());
        }
      };
      window.addEventListener('message', onMessage);
      window.postMessage({ __settle: token }, '*');
    })`);
  }
}

export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
