#!/usr/bin/env node
// Webview rendering benchmark: the real panel bundle in headless Chromium (Debian's, via playwright-core),
// measuring what a user feels.
//
//   node bench/webview.mjs   -> one JSON line on stdout:
//     webview_render_100k_lines_ms, webview_render_500_messages_ms, webview_reopen_500_turns_ms
//       main-thread busy time of the page (CDP Performance.getMetrics TaskDuration: script, style, layout,
//       paint) from the first batch until everything is on screen;
//     the same names with _cpu_ms instead of _ms
//       the thread CPU time of those tasks (from a trace): what the page did, whatever else the cores ran;
//     webview_longest_task_<scenario>_ms and webview_longest_task_ms (the max of the three)
//       the longest task the page ran meanwhile, from PerformanceObserver `longtask` entries (these exist
//       only for tasks over 50 ms, so 0 means "no task over 50 ms"). Wall time: on a busy machine a task
//       that ran for 10 ms of CPU can take 100 ms; stderr gives each run's longest task in wall and CPU time.
//
// The host's batches (made by the real event batcher) reach the page as `message` events, one per animation
// frame, as the extension host posts them; the page renders with its own frame loop. Each figure is the median
// of WEBVIEW_BENCH_RUNS runs (3 by default); every run is logged on stderr.
//
//     panel_render_20_images_ms, panel_reopen_20_images_ms (and their _cpu_ms and webview_longest_task_… figures)
//       a conversation of 5 turns with 20 matplotlib plots (640×480 PNGs of about 37 KB, made at run time with
//       /usr/bin/python3) and 5 pandas tables, streamed as live displays, then reopened with one `reset`. Their
//       longest tasks are reported on their own (webview_longest_task_ms keeps its meaning: the text scenarios).
//
// Knobs for a closer look: WEBVIEW_BENCH_ONLY=lines|messages|reopen|images|imagesReopen runs one scenario; WEBVIEW_BENCH_TURNS=N
// shortens the 500-turn scenarios; WEBVIEW_BENCH_NOMINIFY=1 keeps function names; WEBVIEW_BENCH_PROFILE=prefix
// writes a CPU profile and WEBVIEW_BENCH_TRACE=prefix a timeline trace of each run.
import * as esbuild from 'esbuild';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { richConversation } from './webviewRich.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CODEACT_CHROMIUM ?? '/usr/bin/chromium';
const RUNS = Number(process.env.WEBVIEW_BENCH_RUNS ?? 3);
const ONLY = process.env.WEBVIEW_BENCH_ONLY;

const SCENARIOS = [
  { key: 'lines', total: 'webview_render_100k_lines_ms', longest: 'webview_longest_task_100k_lines_ms' },
  { key: 'messages', total: 'webview_render_500_messages_ms', longest: 'webview_longest_task_500_messages_ms' },
  { key: 'reopen', total: 'webview_reopen_500_turns_ms', longest: 'webview_longest_task_reopen_500_turns_ms' },
  { key: 'images', total: 'panel_render_20_images_ms', longest: 'webview_longest_task_20_images_ms', own: true },
  { key: 'imagesReopen', total: 'panel_reopen_20_images_ms', longest: 'webview_longest_task_reopen_20_images_ms', own: true },
];

const log = (...a) => console.error('[bench:webview]', ...a);

if (!existsSync(CHROMIUM)) {
  log(`skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
  const out = { webview_longest_task_ms: null };
  for (const s of SCENARIOS) Object.assign(out, { [s.total]: null, [s.total.replace(/_ms$/, '_cpu_ms')]: null, [s.longest]: null });
  console.log(JSON.stringify(out));
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
    minify: !process.env.WEBVIEW_BENCH_NOMINIFY,
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

  /** The renderer main thread's tasks in a trace: wall and thread CPU time, in total and the longest. */
  function mainThreadTasks(buffer) {
    const events = JSON.parse(buffer.toString()).traceEvents ?? [];
    const main = new Set(events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
    const out = { tasks: 0, wallMs: 0, cpuMs: 0, longestWallMs: 0, longestCpuMs: 0 };
    // Top-level tasks only (a RunTask can sit inside another on the same thread).
    const tasks = events
      .filter((e) => e.ph === 'X' && (e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask') && main.has(`${e.pid}:${e.tid}`))
      .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    let end = -Infinity;
    for (const e of tasks) {
      if (e.ts < end) continue;
      end = e.ts + e.dur;
      out.tasks++;
      out.wallMs += e.dur / 1000;
      out.cpuMs += (e.tdur ?? e.dur) / 1000;
      out.longestWallMs = Math.max(out.longestWallMs, e.dur / 1000);
      out.longestCpuMs = Math.max(out.longestCpuMs, (e.tdur ?? e.dur) / 1000);
    }
    return out;
  }

  /** Batches as the host would post them: the real batcher, flushed every `perFrame` raw events. */
  function batches(events, perFrame) {
    const out = [];
    let flush;
    const b = host.createEventBatcher(
      (m) => out.push(m),
      (f) => void (flush = f),
      { conversationId: 'bench' },
    );
    events.forEach((e, i) => {
      b.push(e);
      if ((i + 1) % perFrame === 0) flush?.();
    });
    b.flush();
    return out;
  }

  // Runs inside the page: one message per animation frame, then waits until the panel has everything on
  // screen (its own frame loop, and any rendering it left for idle time), watching for long tasks meanwhile.
  const DELIVER = `(async () => {
    const app = window.codeact.app;
    const msgs = window.__benchMessages;
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    const longTasks = [];
    const po = new PerformanceObserver((list) => { for (const e of list.getEntries()) longTasks.push(e.duration); });
    po.observe({ type: 'longtask' });
    const t0 = performance.now();
    for (const m of msgs) {
      await frame();
      window.postMessage(m, '*');
    }
    await new Promise((r) => setTimeout(r, 0));
    if (typeof app.whenIdle === 'function') await app.whenIdle();
    await frame();
    await frame();
    const t1 = performance.now();
    await new Promise((r) => setTimeout(r, 50));
    for (const e of po.takeRecords()) longTasks.push(e.duration);
    po.disconnect();
    delete window.__benchMessages;
    return { wallMs: t1 - t0, longTasks };
  })()`;

  const CHECK = `({
    turns: document.querySelectorAll('.turn').length,
    answers: document.querySelectorAll('.msg.assistant').length,
    totalLines: document.querySelector('.output-pane') ? document.querySelector('.output-pane').dataset.totalLines : null,
    outputNodes: document.querySelector('pre.output') ? document.querySelector('pre.output').getElementsByTagName('*').length : 0,
    domNodes: document.getElementsByTagName('*').length,
    images: document.querySelectorAll('.display-image img').length,
    tables: document.querySelectorAll('.html-output table').length,
    lastTurnVisible: (() => {
      const t = document.querySelectorAll('.turn');
      const s = document.querySelector('.scroller');
      if (!t.length || !s) return null;
      const a = t[t.length - 1].getBoundingClientRect(), b = s.getBoundingClientRect();
      return a.bottom > b.top && a.top < b.bottom;
    })(),
  })`;

  /** A fresh page with the panel started (a page that does not start is logged and opened again, once). */
  async function openPanel(retry = true) {
    const page = await browser.newPage({ viewport: { width: 560, height: 900 } });
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('requestfailed', (r) => problems.push(`${r.url()}: ${r.failure()?.errorText}`));
    await page.addInitScript('window.acquireVsCodeApi = () => ({ postMessage() {}, getState() { return undefined; }, setState() {} });');
    await page.goto(`${origin}/`);
    try {
      // A function, not a string: a string predicate is evaluated with eval, which the page's CSP refuses.
      await page.waitForFunction(() => Boolean(window.codeact && window.codeact.app), null, { timeout: 10_000 });
      return page;
    } catch (e) {
      const state = await page
        .evaluate(() => ({ ready: document.readyState, scripts: document.scripts.length, app: Boolean(window.codeact) }))
        .catch((x) => String(x));
      log(`the panel did not start: ${e.message.split('\n')[0]}; page ${JSON.stringify(state)}; ${problems.join(' | ') || 'no errors'}`);
      await page.close();
      if (!retry) throw e;
      return openPanel(false);
    }
  }

  async function measure(name, messages) {
    const runs = [];
    for (let run = 0; run < RUNS; run++) {
      const page = await openPanel();
      await page.evaluate((msgs) => void (window.__benchMessages = msgs), messages);
      await page.evaluate('new Promise((r) => setTimeout(r, 200))');
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Performance.enable');
      const metrics = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
      const m0 = await metrics();
      if (process.env.WEBVIEW_BENCH_PROFILE) await cdp.send('Profiler.enable').then(() => cdp.send('Profiler.start'));
      // A light trace of the page's tasks gives their thread CPU time too (robust when other processes
      // share the cores); WEBVIEW_BENCH_TRACE=prefix keeps a full timeline trace for a closer look.
      const full = process.env.WEBVIEW_BENCH_TRACE;
      await browser.startTracing(page, {
        categories: full ? ['toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink', 'cc'] : ['toplevel'],
      });
      const r = await page.evaluate(DELIVER);
      const m1 = await metrics();
      const trace = await browser.stopTracing();
      if (full) writeFileSync(`${full}-${name}-${run + 1}.json`, trace);
      if (process.env.WEBVIEW_BENCH_PROFILE) {
        const { profile } = await cdp.send('Profiler.stop');
        writeFileSync(`${process.env.WEBVIEW_BENCH_PROFILE}-${name}-${run + 1}.cpuprofile`, JSON.stringify(profile));
      }
      const cpu = mainThreadTasks(trace);
      const d = (k) => ((m1[k] ?? 0) - (m0[k] ?? 0)) * 1000;
      const busyMs = d('TaskDuration');
      log(
        `${name} run ${run + 1}: main thread CPU ${cpu.cpuMs.toFixed(1)} ms (wall ${cpu.wallMs.toFixed(1)} ms) in ${cpu.tasks} tasks, longest ${cpu.longestWallMs.toFixed(1)} ms wall / ${cpu.longestCpuMs.toFixed(1)} ms CPU`,
      );
      log(
        `${name} run ${run + 1}: script ${d('ScriptDuration').toFixed(0)} ms, style ${d('RecalcStyleDuration').toFixed(0)} ms, layout ${d('LayoutDuration').toFixed(0)} ms`,
      );
      const check = await page.evaluate(CHECK);
      await page.close();
      const longest = r.longTasks.length ? Math.max(...r.longTasks) : 0;
      runs.push({ busyMs, longest, cpuMs: cpu.cpuMs });
      log(
        `${name} run ${run + 1}: busy ${busyMs.toFixed(1)} ms, longest task ${longest.toFixed(0)} ms (${r.longTasks.length} over 50 ms), wall ${r.wallMs.toFixed(0)} ms`,
        JSON.stringify(check),
      );
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const r1 = (x) => Math.round(x * 10) / 10;
    return { total: r1(median(runs.map((x) => x.busyMs))), longest: r1(median(runs.map((x) => x.longest))), cpu: r1(median(runs.map((x) => x.cpuMs))) };
  }

  // 1) 100k log lines from one execution, 1,000 lines per frame, some with ANSI colours and on stderr.
  function linesScenario() {
    const events = [
      { type: 'codeact.turn.started', turn_id: 't', prompt: 'print a lot' },
      { type: 'response.code_interpreter_call.in_progress', item_id: 'c', runtime: 'local' },
      { type: 'response.code_interpreter_call_code.done', item_id: 'c', code: 'for i in range(100_000):\n    log(i)\n' },
      { type: 'response.code_interpreter_call.interpreting', item_id: 'c' },
    ];
    for (let i = 0; i < 100_000; i++) {
      const stream = i % 50 === 49 ? 'stderr' : 'stdout';
      const delta = i % 10 === 0 ? `\x1b[32m[${i}]\x1b[0m processed order A-${i} in ${i % 97} ms\n` : `[${i}] processed order A-${i} in ${i % 97} ms\n`;
      events.push({ type: 'codeact.output.delta', item_id: 'c', stream, delta });
    }
    events.push({ type: 'response.code_interpreter_call.completed', item_id: 'c' }, { type: 'codeact.turn.ended', turn_id: 't', status: 'completed' });
    const out = batches(events, 1000);
    log(`100k lines: ${events.length} events -> ${out.length} batches, one per frame`);
    return out;
  }

  // 2) 500 turns, each a prompt and a markdown answer streamed in ~12 deltas (4 raw events per frame).
  const answer = (i) =>
    `Here is what I found for **order ${i}**:\n\n- status: \`shipped\`\n- items: ${i % 7}\n- total: $${(i * 3.7).toFixed(2)}\n\n` +
    (i % 5 === 0 ? '```python\nresult = await call_tool("get_order", order_id="A-' + i + '")\nprint(result["total"])\n```\n\n' : '') +
    `| field | value |\n|---|---:|\n| days late | ${i % 4} |\n| refunds | ${i % 3} |\n\nLet me know if you want me to [open the runbook](https://example.com/r/${i}).\n`;
  const msgEvents = [];
  const TURNS = Number(process.env.WEBVIEW_BENCH_TURNS ?? 500);
  for (let i = 0; i < TURNS; i++) {
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
  function messagesScenario() {
    const out = batches(msgEvents, 4);
    log(`500 messages: ${msgEvents.length} events -> ${out.length} batches, one per frame`);
    return out;
  }

  // 3) Reopening a 500-turn conversation: the host sends one `reset` with the whole event list.
  function reopenScenario() {
    log(`reopen 500 turns: one reset message of ${msgEvents.length} events`);
    return [{ type: 'reset', conversationId: 'bench', seq: 1, events: msgEvents }];
  }

  // 4) and 5) A conversation with 20 plots and 5 tables (rich outputs), streamed, then reopened.
  let richEvents;
  const rich = () => (richEvents ??= richConversation(tmp, log));
  function imagesScenario() {
    const events = rich();
    if (!events) return undefined;
    const out = batches(events, 4);
    log(`20 images: ${events.length} events -> ${out.length} batches, one per frame`);
    return out;
  }
  function imagesReopenScenario() {
    const events = rich();
    return events ? [{ type: 'reset', conversationId: 'bench', seq: 1, events }] : undefined;
  }

  const build = { lines: linesScenario, messages: messagesScenario, reopen: reopenScenario, images: imagesScenario, imagesReopen: imagesReopenScenario };
  const out = {};
  let longestAll = 0;
  for (const s of SCENARIOS) {
    if (ONLY && ONLY !== s.key) continue;
    const messages = build[s.key]();
    if (!messages) {
      Object.assign(out, { [s.total]: null, [s.longest]: null, [s.total.replace(/_ms$/, '_cpu_ms')]: null });
      continue;
    }
    const r = await measure(s.key, messages);
    out[s.total] = r.total;
    out[s.longest] = r.longest;
    out[s.total.replace(/_ms$/, '_cpu_ms')] = r.cpu;
    if (!s.own) longestAll = Math.max(longestAll, r.longest);
    log(`${s.key}: ${s.total} = ${r.total}, ${s.longest} = ${r.longest}`);
  }
  out.webview_longest_task_ms = longestAll;
  console.log(JSON.stringify(out));
} finally {
  await browser?.close();
  await new Promise((r) => (server ? server.close(() => r()) : r()));
  rmSync(tmp, { recursive: true, force: true });
}
