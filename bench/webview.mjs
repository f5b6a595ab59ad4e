#!/usr/bin/env node
// Webview rendering benchmark: the real panel bundle in headless Chromium (Debian's, via playwright-core).
//
//   node bench/webview.mjs        -> {"webview_render_100k_lines_ms": …, "webview_render_500_messages_ms": …}
//
// Each figure is the median of 3 runs of the page's own work (performance.now() inside the page): applying
// the host's batches (made by the real event batcher, one per simulated frame) and rendering each frame, then
// one layout. Details go to stderr; stdout carries only the JSON line.
import * as esbuild from 'esbuild';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CODEACT_CHROMIUM ?? '/usr/bin/chromium';
const RUNS = Number(process.env.WEBVIEW_BENCH_RUNS ?? 3);

const log = (...a) => console.error('[bench:webview]', ...a);

if (!existsSync(CHROMIUM)) {
  log(`skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
  console.log(JSON.stringify({ webview_render_100k_lines_ms: null, webview_render_500_messages_ms: null }));
  process.exit(0);
}

const tmp = mkdtempSync(join(tmpdir(), 'codeact-bench-webview-'));
let server;
let browser;
try {
  // The panel bundle, built like esbuild.mjs builds it (minified, as shipped).
  await esbuild.build({
    entryPoints: { webview: join(ROOT, 'src/webview/main.ts') },
    outdir: tmp,
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    loader: { '.css': 'css' },
    minify: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  // The host-side helpers (batcher, page HTML), straight from the TypeScript sources.
  await esbuild.build({
    stdin: {
      contents: "export * from './src/common/eventBatcher.ts'; export * from './src/vscode/webviewHtml.ts';",
      resolveDir: ROOT,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: join(tmp, 'host.mjs'),
    logLevel: 'warning',
  });
  const host = await import(pathToFileURL(join(tmp, 'host.mjs')).href);

  const theme = readFileSync(join(ROOT, 'test/webview/fixtures/dark-modern.css'));
  let origin = '';
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/') {
      const nonce = host.createNonce();
      const html = host
        .buildWebviewHtml({ cspSource: origin, nonce, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/webview.css` })
        .replace('</head>', `<link rel="stylesheet" href="${origin}/theme.css" nonce="${nonce}" /></head>`)
        .replace('<body>', '<body class="vscode-dark">');
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(html);
    }
    if (path === '/theme.css') {
      res.writeHead(200, { 'content-type': 'text/css' });
      return res.end(theme);
    }
    const file = join(tmp, path.slice(1));
    if (/^\/webview\.(js|css)$/.test(path) && existsSync(file)) {
      res.writeHead(200, { 'content-type': path.endsWith('.js') ? 'text/javascript' : 'text/css' });
      return res.end(readFileSync(file));
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${server.address().port}`;

  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });

  /** Batches as the host would post them: the real batcher, flushed every `perFrame` events. */
  function batches(events, perFrame) {
    const out = [];
    let flush;
    const b = host.createEventBatcher((m) => out.push(m), (f) => void (flush = f), { conversationId: 'bench' });
    events.forEach((e, i) => {
      b.push(e);
      if ((i + 1) % perFrame === 0) flush?.();
    });
    b.flush();
    return out;
  }

  async function measure(name, messages) {
    const times = [];
    for (let run = 0; run < RUNS; run++) {
      const page = await browser.newPage({ viewport: { width: 560, height: 900 } });
      await page.addInitScript(
        'window.acquireVsCodeApi = () => ({ postMessage() {}, getState() { return undefined; }, setState() {} });',
      );
      await page.goto(`${origin}/`);
      await page.waitForFunction('window.codeact && window.codeact.app');
      // Runs inside the page: apply each batch as a message, render it as its frame, then lay out once.
      const ms = await page.evaluate(`(async (msgs) => {
        const app = window.codeact.app;
        await new Promise((r) => requestAnimationFrame(() => r()));
        const t0 = performance.now();
        for (const m of msgs) { app.onMessage(m); app.flushNow(); }
        document.body.getBoundingClientRect();
        void document.querySelector('.scroller').scrollHeight;
        const t1 = performance.now();
        return t1 - t0;
      })(${JSON.stringify(messages)})`);
      const check = await page.evaluate(`({
        turns: document.querySelectorAll('.turn').length,
        answers: document.querySelectorAll('.msg.assistant').length,
        outputNodes: document.querySelector('pre.output') ? document.querySelector('pre.output').childNodes.length : 0,
        totalLines: document.querySelector('.output-pane') ? document.querySelector('.output-pane').dataset.totalLines : null,
      })`);
      await page.close();
      times.push(ms);
      log(`${name} run ${run + 1}: ${ms.toFixed(1)} ms`, JSON.stringify(check));
    }
    times.sort((a, b) => a - b);
    return Math.round(times[Math.floor(times.length / 2)] * 10) / 10;
  }

  // 1) 100k log lines from one execution, 1,000 lines per frame, some with ANSI colours and on stderr.
  const logEvents = [
    { type: 'codeact.turn.started', turn_id: 't', prompt: 'print a lot' },
    { type: 'response.code_interpreter_call.in_progress', item_id: 'c', runtime: 'local' },
    { type: 'response.code_interpreter_call_code.done', item_id: 'c', code: 'for i in range(100_000):\n    log(i)\n' },
    { type: 'response.code_interpreter_call.interpreting', item_id: 'c' },
  ];
  for (let i = 0; i < 100_000; i++) {
    const stream = i % 50 === 49 ? 'stderr' : 'stdout';
    const delta = i % 10 === 0 ? `\x1b[32m[${i}]\x1b[0m processed order A-${i} in ${i % 97} ms\n` : `[${i}] processed order A-${i} in ${i % 97} ms\n`;
    logEvents.push({ type: 'codeact.output.delta', item_id: 'c', stream, delta });
  }
  logEvents.push({ type: 'response.code_interpreter_call.completed', item_id: 'c' }, { type: 'codeact.turn.ended', turn_id: 't', status: 'completed' });
  const logBatches = batches(logEvents, 1000);
  log(`100k lines: ${logEvents.length} events -> ${logBatches.length} batches`);
  const lines = await measure('100k lines', logBatches);

  // 2) 500 turns, each a prompt and a markdown answer streamed in ~12 deltas (4 events per frame).
  const answer = (i) =>
    `Here is what I found for **order ${i}**:\n\n- status: \`shipped\`\n- items: ${i % 7}\n- total: $${(i * 3.7).toFixed(2)}\n\n` +
    (i % 5 === 0 ? '```python\nresult = await call_tool("get_order", order_id="A-' + i + '")\nprint(result["total"])\n```\n\n' : '') +
    `| field | value |\n|---|---:|\n| days late | ${i % 4} |\n| refunds | ${i % 3} |\n\nLet me know if you want me to [open the runbook](https://example.com/r/${i}).\n`;
  const msgEvents = [];
  for (let i = 0; i < 500; i++) {
    const text = answer(i);
    msgEvents.push({ type: 'codeact.turn.started', turn_id: `t${i}`, prompt: `What is the status of order A-${i}?` });
    const step = Math.ceil(text.length / 12);
    for (let k = 0; k < text.length; k += step) msgEvents.push({ type: 'response.output_text.delta', item_id: `m${i}`, delta: text.slice(k, k + step) });
    msgEvents.push(
      { type: 'response.output_text.done', item_id: `m${i}`, text },
      { type: 'response.completed', response: { id: `r${i}`, usage: { input_tokens: 900 + i, output_tokens: 120 } } },
      { type: 'codeact.turn.ended', turn_id: `t${i}`, status: 'completed' },
    );
  }
  const msgBatches = [];
  {
    let flush;
    const b = host.createEventBatcher((m) => msgBatches.push(m), (f) => void (flush = f), { conversationId: 'bench' });
    // Flush every 4 raw events, so each answer arrives over several frames (no coalescing across frames).
    msgEvents.forEach((e, i) => {
      b.push(e);
      if ((i + 1) % 4 === 0) flush?.();
    });
    b.flush();
  }
  log(`500 messages: ${msgEvents.length} events -> ${msgBatches.length} batches`);
  const messages = await measure('500 messages', msgBatches);
  // For the record (stderr only): a reopened 500-turn conversation rendered from one reset message.
  await measure('reset of 500 turns', [{ type: 'reset', conversationId: 'bench', seq: msgBatches.length, events: msgEvents }]);

  console.log(JSON.stringify({ webview_render_100k_lines_ms: lines, webview_render_500_messages_ms: messages }));
} finally {
  await browser?.close();
  await new Promise((r) => (server ? server.close(() => r()) : r()));
  rmSync(tmp, { recursive: true, force: true });
}
