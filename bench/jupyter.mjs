// Jupyter runtime figures, against a real jupyter-server this script starts and stops itself:
//   jupyter_exec_ms_p50          `1+1` on a warm kernel, host-side end to end (execute() call to item)
//   jupyter_call_tool_rtt_us_p50 one `await call_tool("noop")` measured inside the kernel, sequential
// Run directly (`node bench/jupyter.mjs`) it prints the JSON; the bench runner imports benchJupyter().
// The TypeScript sources are loaded through tsx, so no build is needed.
import { tsImport } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';

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
    return { jupyter_exec_ms_p50: null, jupyter_call_tool_rtt_us_p50: null };
  }
  const { JupyterRuntime } = await tsImport('../src/core/runtime/jupyter/jupyterRuntime.ts', import.meta.url);
  const server = await support.startJupyterServer();
  const rt = new JupyterRuntime({ url: server.url, token: server.token });
  try {
    const check = (item) => {
      if (item.status !== 'completed') throw new Error(`bench run failed: ${JSON.stringify(item.error)}`);
      return item;
    };
    check(await rt.execute({ code: '1 + 1', sessionId: 'bench' })); // starts the kernel
    for (let i = 0; i < 5; i++) check(await rt.execute({ code: '1 + 1', sessionId: 'bench' }));
    const exec = [];
    for (let i = 0; i < EXEC_RUNS; i++) {
      const t0 = performance.now();
      check(await rt.execute({ code: '1 + 1', sessionId: 'bench' }));
      exec.push(performance.now() - t0);
    }
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
      jupyter_call_tool_rtt_us_p50: Math.round(median(item.value)),
    };
  } finally {
    await rt.dispose();
    await server.stop();
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
