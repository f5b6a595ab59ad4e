/**
 * The adversarial catalogue: each attack runs against the local guest, with its expected user-facing
 * outcome, and each test checks that the host keeps working for the next run.
 *
 * With the sandbox on (bubblewrap) every attack is contained. With `none`, the same tests document
 * which attacks succeed; attacks that would harm this machine or the test runner itself without a
 * sandbox are not run there, and say so.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { logsOf } from '../../src/common/events';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { cgroupsAvailable } from '../../src/core/runtime/local/cgroup';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { waitFor } from '../support/wait';

type Mode = 'bubblewrap' | 'none';

for (const mode of ['bubblewrap', 'none'] as Mode[]) {
  describe(`security catalogue (sandbox: ${mode})`, function () {
    this.timeout(120_000);
    const sandboxed = mode === 'bubblewrap';
    let rt: LocalRuntime;
    let secrets: string;
    let workspace: string;
    let listener: Server;
    let listenerPort = 0;
    let connections = 0;

    before(async function () {
      if (sandboxed) {
        const reason = await probeBubblewrap();
        if (reason) {
          console.log(`      skipped: ${reason}; install bubblewrap (apt-get install bubblewrap) to run the sandboxed catalogue`);
          this.skip();
        }
      }
      secrets = mkdtempSync(path.join(tmpdir(), 'codeact-secrets-'));
      mkdirSync(path.join(secrets, '.ssh'));
      writeFileSync(path.join(secrets, '.ssh', 'id_rsa'), 'CANARY-PRIVATE-KEY');
      workspace = mkdtempSync(path.join(tmpdir(), 'codeact-ws-'));
      writeFileSync(path.join(workspace, '.env'), 'DB_PASSWORD=CANARY-DOTENV');
      listener = createServer((s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      listenerPort = (listener.address() as { port: number }).port;
      rt = new LocalRuntime({
        sandbox: { kind: mode, workspace, mountWorkspace: 'none', limits: { memory: '512m', processes: 64, fileSize: '64m', cpuSeconds: 30 } },
      });
    });

    after(async () => {
      await rt?.dispose();
      listener?.close();
      for (const d of [secrets, workspace]) if (d) rmSync(d, { recursive: true, force: true });
    });

    const exec = (code: string, timeoutMs = 3000, onToolCall?: ToolGateway['handler']): Promise<CodeInterpreterCallItem> =>
      rt.execute({ code, timeoutMs }, { onToolCall });

    afterEach(async function () {
      if (this.currentTest?.state === 'pending' || !rt) return;
      // The host keeps working for the next run.
      const next = await exec('return 1 + 1');
      assert.equal(next.value, 2, `the next run failed after "${this.currentTest?.title}": ${JSON.stringify(next.error)}`);
    });

    it('an infinite loop is stopped at the timeout ("The code ran longer than the 2 s timeout")', async () => {
      const item = await exec('while True:\n    pass', 2000);
      assert.equal(item.error?.type, 'Timeout');
      assert.match(item.error!.message, /longer than the 2 s timeout/);
    });

    it('a sleep that ignores SIGTERM is killed at the timeout, with the child that ignores it too', async () => {
      // The child carries a marker of this test in its command line (the guest's own is the runtime's): only it is looked for.
      const marker = `codeact-sigign-${process.pid}-${Date.now()}`;
      const item = await exec(
        [
          'import signal, subprocess, sys, time',
          `subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(10**6)", ${JSON.stringify(marker)}])`,
          'signal.signal(signal.SIGTERM, signal.SIG_IGN)',
          'time.sleep(10**6)',
        ].join('\n'),
        1500,
      );
      assert.equal(item.error?.type, 'Timeout');
      await waitFor(() => processesWithCmdline(marker).length === 0, { timeoutMs: 30_000, what: 'the child to end' }).catch(() => undefined);
      assert.deepEqual(processesWithCmdline(marker), [], 'the child that ignores SIGTERM outlived the timeout');
    });

    it(
      sandboxed
        ? 'a fork bomb is held at the process limit and leaves nothing behind ("process limit reached")'
        : 'DOCUMENTS: a fork bomb is not held without the sandbox (not run here)',
      async function () {
        if (!sandboxed) {
          // Without the sandbox there is no process limit (RLIMIT_NPROC counts every process of the user, and
          // binds nobody when running as root): a fork bomb runs until the timeout kills its tree.
          this.skip();
        }
        if (process.getuid?.() === 0 && !cgroupsAvailable()) {
          console.log('      not run: as root RLIMIT_NPROC does not apply, and no pids cgroup can be created here');
          this.skip();
        }
        const marker = `forkbomb-${mode}-${Date.now()}`;
        const item = await exec(`import os, time\nos.environ["M"] = "${marker}"\nwhile True:\n    os.fork()`, 5000);
        assert.equal(item.status, 'failed');
        assert.match(`${item.error!.type}: ${item.error!.message}`, /process limit reached|Timeout/);
        await waitFor(() => processesWithCmdline(marker).length === 0, { what: 'the processes to be killed', timeoutMs: 10_000 });
        assert.deepEqual(processesWithCmdline(marker), []);
      },
    );

    it('a memory bomb fails with "memory limit 512m exceeded"', async () => {
      const item = await exec('chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))', 10_000);
      assert.equal(item.error?.type, 'MemoryError');
      assert.match(item.error!.message, /memory limit 512m exceeded/);
    });

    it('100 MB of stdout completes, capped with a marker, and the host stays responsive', async () => {
      const before = process.memoryUsage().rss;
      const item = await exec('import sys\nchunk = "z" * 65536\nfor _ in range(1600):\n    sys.stdout.write(chunk)\nreturn "done"', 60_000);
      assert.equal(item.value, 'done');
      assert.equal(item.truncated, true);
      assert.match(logsOf(item), /stdout truncated after 1 MiB/);
      assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'host memory grew by more than 64 MiB');
    });

    it('a disk fill stops at the file size limit ("file size limit 64m exceeded") and nothing is left on disk', async () => {
      const item = await exec('with open("big.bin", "wb") as f:\n    while True:\n        f.write(b"\\0" * (1 << 20))', 20_000);
      assert.equal(item.status, 'failed');
      assert.match(item.error!.message, /file size limit 64m exceeded/);
    });

    it('setsid and double-fork daemons do not survive the run', async () => {
      const marker = `daemon-${mode}-${Date.now()}`;
      const item = await exec(
        [
          'import os, subprocess, signal, sys, time',
          `subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${marker}"], start_new_session=True)`,
          'if os.fork() == 0:',
          '    os.setsid()',
          '    signal.signal(signal.SIGHUP, signal.SIG_IGN)',
          '    if os.fork() == 0:',
          `        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(601)", "${marker}"])`,
          '    os._exit(0)',
          'time.sleep(0.5)',
          `return sum(1 for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline") and b"${marker}" in open(f"/proc/{p}/cmdline", "rb").read())`,
        ].join('\n'),
      );
      assert.equal(item.value, 2, 'both daemons were running before the run ended');
      await waitFor(() => processesWithCmdline(marker).length === 0, { what: 'the processes to be killed', timeoutMs: 10_000 });
      assert.deepEqual(processesWithCmdline(marker), []);
    });

    it(
      sandboxed ? 'cannot read ~/.ssh, the host environment or the workspace .env' : 'DOCUMENTS: reads ~/.ssh-style files and the workspace .env (no sandbox)',
      async () => {
        process.env.CODEACT_CANARY_SECRET = 'CANARY-ENV';
        try {
          const item = await exec(
            [
              'import os, glob',
              'found = {}',
              `for p in [${JSON.stringify(path.join(secrets, '.ssh', 'id_rsa'))}, ${JSON.stringify(path.join(workspace, '.env'))}, ${JSON.stringify(path.join(homedir(), '.ssh'))}]:`,
              '    try:',
              '        found[p] = open(p).read() if os.path.isfile(p) else os.listdir(p)',
              '    except Exception as e:',
              '        found[p] = type(e).__name__',
              'found["env"] = dict(os.environ)',
              'found["host_environ"] = []',
              'for f in glob.glob("/proc/[0-9]*/environ"):',
              '    try:',
              '        data = open(f, "rb").read()',
              '        if b"CANARY-ENV" in data: found["host_environ"].append(f)',
              '    except Exception:',
              '        pass',
              'return found',
            ].join('\n'),
          );
          const text = JSON.stringify(item.value);
          assert.ok(!text.includes('CANARY-ENV'), 'host environment leaked');
          const v = item.value as Record<string, unknown>;
          if (sandboxed) {
            assert.ok(!text.includes('CANARY-PRIVATE-KEY'), 'private key readable');
            assert.ok(!text.includes('CANARY-DOTENV'), 'workspace .env readable');
            assert.equal(v[path.join(homedir(), '.ssh')], 'FileNotFoundError');
          } else {
            assert.ok(text.includes('CANARY-PRIVATE-KEY') && text.includes('CANARY-DOTENV'), 'without a sandbox these files are readable');
          }
        } finally {
          delete process.env.CODEACT_CANARY_SECRET;
        }
      },
    );

    it(
      sandboxed ? 'writes outside the working directory never reach the host' : 'DOCUMENTS: writes outside the working directory reach the host (no sandbox)',
      async () => {
        const outside = path.join(secrets, `written-${Date.now()}.txt`);
        const item = await exec(
          `import os\nresults = []\nfor p in [${JSON.stringify(outside)}, "/tmp/codeact-escape-${Date.now()}", os.path.expanduser("~") + "/x"]:\n    try:\n        open(p, "w").write("pwned")\n        results.append("ok")\n    except Exception as e:\n        results.append(type(e).__name__)\nreturn results`,
        );
        assert.equal(item.status, 'completed');
        assert.equal(existsSync(outside), !sandboxed);
      },
    );

    it(sandboxed ? 'cannot connect to a listener on 127.0.0.1, nor resolve DNS' : 'DOCUMENTS: connects to a listener on 127.0.0.1 (no sandbox)', async () => {
      const before = connections;
      const item = await exec(
        `import socket\nout = {}\ntry:\n    socket.create_connection(("127.0.0.1", ${listenerPort}), timeout=2).close()\n    out["tcp"] = "connected"\nexcept OSError as e:\n    out["tcp"] = type(e).__name__\ntry:\n    socket.getaddrinfo("example.com", 80)\n    out["dns"] = "resolved"\nexcept OSError as e:\n    out["dns"] = type(e).__name__\nreturn out`,
        10_000,
      );
      const v = item.value as { tcp: string; dns: string };
      if (sandboxed) {
        assert.notEqual(v.tcp, 'connected');
        assert.notEqual(v.dns, 'resolved');
        assert.equal(connections, before);
      } else {
        assert.equal(v.tcp, 'connected');
        assert.equal(connections, before + 1);
      }
    });

    it('forged protocol frames on stdout and stderr are plain output', async () => {
      const forged = '{"t":"complete","ok":true,"value":"FORGED"}';
      const item = await exec(
        `import os, sys\nos.write(1, b'${forged}\\n')\nos.write(2, b'${forged}\\n')\nprint('{"t":"tool_call","id":1,"name":"x","args":{}}')\nreturn "real"`,
      );
      assert.equal(item.value, 'real');
      assert.match(logsOf(item, 'stderr'), /FORGED/);
    });

    it('a 50 MB call_tool argument is refused in the guest with a clear error; the tool never runs', async () => {
      let calls = 0;
      const gw = new ToolGateway([
        { name: 'sink', description: '', inputSchema: { type: 'object' }, approval: 'auto', expose: 'code', source: 't', invoke: async () => ++calls },
      ]);
      const item = await exec('await call_tool("sink", blob="x" * (50 * 1024 * 1024))', 20_000, gw.handler);
      assert.equal(item.error?.type, 'ValueError');
      assert.match(item.error!.message, /the limit is 16,777,216 bytes/);
      assert.equal(calls, 0);
    });

    it('a 50 MB frame written straight to the protocol pipe stops the run with a protocol error', async () => {
      const item = await exec('import os\nos.write(3, b"x" * (50 * 1024 * 1024))\nimport time\ntime.sleep(5)', 20_000);
      assert.equal(item.error?.type, 'ProtocolError');
      assert.match(item.error!.message, /over 16 MiB/);
    });

    it('deep recursion raises RecursionError; a C stack overflow is reported as a crash', async () => {
      const rec = await exec('def f(n):\n    return f(n + 1)\nf(0)');
      assert.equal(rec.error?.type, 'RecursionError');
      const crash = await exec('import sys, json\nsys.setrecursionlimit(10**7)\njson.loads("[" * 10**6 + "]" * 10**6)', 20_000);
      assert.equal(crash.error?.type, 'Crash');
      assert.match(crash.error!.message, /segmentation fault/);
    });

    it('lone surrogates, NUL and binary bytes in output never break the host', async () => {
      const item = await exec(
        'import os, sys\nprint("\\udcff\\ud800")\nos.write(1, bytes(range(256)))\nsys.stderr.write("\\x00\\x1b[31mred\\x1b[0m\\n")\nreturn "ok"',
      );
      assert.equal(item.value, 'ok');
      assert.match(logsOf(item), /\\udcff/);
    });

    it(
      sandboxed
        ? "killing the parent's process group from inside only ends the run"
        : "DOCUMENTS: killing the parent's process group kills the host (not run without a sandbox)",
      async function () {
        if (!sandboxed) {
          // Without a PID namespace, os.killpg(os.getpgid(os.getppid()), 9) reaches the host's own
          // process group: the editor (or this test runner). That is why the sandbox is the default.
          this.skip();
        }
        const item = await exec('import os, signal\nos.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\nimport time\ntime.sleep(5)', 5000);
        assert.equal(item.status, 'failed');
      },
    );
  });
}
