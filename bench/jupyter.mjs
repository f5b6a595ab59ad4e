// Jupyter runtime figures, against a real jupyter-server this script starts and stops itself:
//   jupyter_exec_ms_p50          `1+1` on a warm kernel, host-side end to end (execute() call to item)
//   jupyter_raw_exec_ms_p50      `1+1` through a plain `@jupyterlab/services` KernelConnection (stock `ws`,
//                                no CodeAct code in the path) on the same server and kernel, in the same run:
//                                what any client gets from this server, Nagle stalls included
//   jupyter_call_tool_rtt_us_p50 one `await call_tool("noop")` measured inside the kernel, sequential
// Run directly (`node bench/jupyter.mjs`) it prints the JSON; the bench runner imports benchJupyter().
// The runtime is the built engine (dist/bench-engine.js, made by `npm run bench`'s build step), as the
// other figures; the test support that starts the server is loaded through tsx.
import { createRequire } from 'node:module';
import { tsImport } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

const EXEC_RUNS = 40;
const CALLS = 300;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export async function benchJupyter() {
  const support = await tsImport('../test/support/jupyterServer.ts', import.meta.url);
  if (!support.findJupyterServer()) {
    process.stderr.write('bench/jupyter: jupyter-server is not installed (apt-get install jupyter-server python3-ipykernel); no Jupyter figures\n');
    return { jupyter_exec_ms_p50: null, jupyter_raw_exec_ms_p50: null, jupyter_call_tool_rtt_us_p50: null };
  }
  const { JupyterRuntime } = require('../dist/bench-engine.js');
  const server = await support.startJupyterServer();
  const rt = new JupyterRuntime({ url: server.url, token: server.token });
  try {
    const check = (item) => {
      if (item.status !== 'completed') throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
      return item;
    };
    const first = check(await rt.execute({ code: '1 + 1', sessionId: 'bench' })); // starts the kernel
    for (let i = 0; i < 5; i++) check(await rt.execute({ code: '1 + 1', sessionId: 'bench' }));
    const exec = [];
    for (let i = 0; i < EXEC_RUNS; i++) {
      const t0 = performance.now();
      check(await rt.execute({ code: '1 + 1', sessionId: 'bench' }));
      exec.push(performance.now() - t0);
    }
    const raw = await rawExec(server, first.container_id, EXEC_RUNS);
    const code = [
      'import time',
      'for _ in range(20):',
      '    await call_tool("noop")',
      'rtt = []',
      `for _ in range(${CALLS}):`,
      '    t = time.perf_counter_ns()',
      '    await call_tool("noop")',
      '    rtt.append((time.perf_counter_ns() - t) / 1000)',
      'return rtt',
    ].join('\n');
    const item = check(await rt.execute({ code, sessionId: 'bench' }, { onToolCall: async () => null }));
    return {
      jupyter_exec_ms_p50: Math.round(median(exec) * 100) / 100,
      jupyter_raw_exec_ms_p50: Math.round(median(raw) * 100) / 100,
      jupyter_call_tool_rtt_us_p50: Math.round(median(item.value)),
    };
  } finally {
    await rt.dispose();
    await server.stop();
  }
}

/**
 * `1+1` through a second, plain KernelConnection to the same kernel: `ws` with only the token header
 * added, as any Node client of `@jupyterlab/services` would do it. Times requestExecute to its `done`.
 */
async function rawExec(server, kernelId, runs) {
  const { KernelConnection, ServerConnection } = await import('@jupyterlab/services');
  const { default: WebSocket } = await import('ws');
  const headers = { Authorization: `token ${server.token}` };
  class StockWebSocket extends WebSocket {
    constructor(address, protocols) {
      super(address, protocols, { headers });
    }
  }
  const serverSettings = ServerConnection.makeSettings({
    baseUrl: server.url,
    wsUrl: server.url.replace(/^http/, 'ws'),
    token: server.token,
    appendToken: false,
    WebSocket: StockWebSocket,
  });
  // The library logs its socket life on the console; keep stdout for the JSON.
  const saved = { debug: console.debug, log: console.log, info: console.info };
  console.debug = console.log = console.info = () => {};
  const conn = new KernelConnection({ model: { id: kernelId, name: 'python3' }, serverSettings, handleComms: false });
  try {
    await conn.info;
    const once = async () => {
      const future = conn.requestExecute({ code: '1+1', silent: false, store_history: false });
      const reply = await future.done;
      if (reply.content.status !== 'ok') throw new Error(`raw bench run failed: ${JSON.stringify(reply.content)}`);
    };
    for (let i = 0; i < 5; i++) await once();
    const times = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await once();
      times.push(performance.now() - t0);
    }
    return times;
  } finally {
    conn.dispose(); // closes this socket only; the kernel stays with the runtime
    Object.assign(console, saved);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  benchJupyter().then(
    (r) => console.log(JSON.stringify(r)),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
