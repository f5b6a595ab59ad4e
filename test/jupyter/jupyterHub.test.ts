/**
 * The Jupyter runtime behind a real JupyterHub (Debian's jupyterhub 3.0, npm's configurable-http-proxy
 * v4; test/support/jupyterHub), run as root and as an unprivileged user:
 *   - the URL of the hub's page for a user's server (`…/hub/user/alice/lab`) is rewritten to the
 *     server's (`…/user/alice/`), and code runs through the hub's proxy with alice's token;
 *   - a stopped server (the hub answers a kernel POST with 405 HTML, a GET with a redirect) is told as
 *     such, with the page that starts it, and no markup;
 *   - once the server is started again, the same runtime runs code again.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { logsOf } from '../../src/common/events';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { KernelRestClient, makeServerSettings, normaliseBaseUrl } from '../../src/core/runtime/jupyter/connection';
import { hubUserOf, spawnUrl } from '../../src/core/runtime/jupyter/hub';
import { hubUnavailable, startJupyterHub, type JupyterHub } from '../support/jupyterHub';
import { TESTER } from '../security/support/asUser';

const unavailable = hubUnavailable();
if (unavailable) console.log(`  ${unavailable}`);

describe('JupyterHub URLs', () => {
  it("a /hub/user/NAME/ URL (any page under it) becomes the server URL /user/NAME/, keeping the hub's prefix", () => {
    assert.equal(normaliseBaseUrl('https://hub.example.org/hub/user/alice/lab/tree/x.ipynb'), 'https://hub.example.org/user/alice/');
    assert.equal(normaliseBaseUrl('https://example.org/jupyter/hub/user/alice/'), 'https://example.org/jupyter/user/alice/');
    assert.equal(normaliseBaseUrl('https://example.org/hub/user/alice'), 'https://example.org/user/alice/');
    assert.equal(normaliseBaseUrl('https://example.org/user/alice/tree'), 'https://example.org/user/alice/');
    assert.equal(normaliseBaseUrl('http://127.0.0.1:8888/'), 'http://127.0.0.1:8888/');
  });

  it("the page that starts a user's server, named servers included", () => {
    assert.equal(spawnUrl(hubUserOf('https://example.org/jupyter/user/alice/')!), 'https://example.org/jupyter/hub/spawn/alice');
    assert.equal(spawnUrl(hubUserOf('https://example.org/user/bob/gpu/')!), 'https://example.org/hub/spawn/bob/gpu');
    assert.equal(hubUserOf('http://127.0.0.1:8888/'), undefined);
  });
});

/** Whether root can start the hub as the unprivileged tester here. */
function testerAvailable(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    return execFileSync('id', ['-u', TESTER.name], { encoding: 'utf8' }).trim() === String(TESTER.uid);
  } catch {
    return false;
  }
}

const asWhom: [string, { uid: number; gid: number } | undefined][] = [[process.getuid?.() === 0 ? 'as root' : 'as this user', undefined]];
if (testerAvailable()) asWhom.push(['as an unprivileged user', { uid: TESTER.uid, gid: TESTER.gid }]);

for (const [who, as] of asWhom) {
  (unavailable ? describe.skip : describe)(`Jupyter runtime behind a real JupyterHub (${who})`, function () {
    this.timeout(180_000);
    let hub: JupyterHub;
    let token: string;
    const runtimes: JupyterRuntime[] = [];
    const runtime = (url: string): JupyterRuntime => {
      const rt = new JupyterRuntime({ url, token, reconnectGraceMs: 2_000, startTimeoutMs: 60_000 });
      runtimes.push(rt);
      return rt;
    };

    before(async function () {
      this.timeout(180_000);
      hub = await startJupyterHub({ as });
      token = await hub.tokenFor('alice');
      await hub.startServer('alice');
    });

    after(async function () {
      this.timeout(60_000);
      await Promise.allSettled(runtimes.map((r) => r.dispose()));
      await hub?.stop();
    });

    it("the URL of the hub's page for alice's server runs code, through the rewrite", async () => {
      const rt = runtime(`${hub.url}hub/user/alice/lab`);
      const item = await rt.execute({ code: 'import os\nprint(6 * 7)\nos.getcwd()', sessionId: 'hub-1', timeoutMs: 60_000 });
      assert.equal(item.status, 'completed', `${JSON.stringify(item.error)}\n${hub.log().slice(-2000)}`);
      assert.equal(logsOf(item), '42\n');
      assert.match(String(item.value), /home\/alice$/, "ran in alice's server");
    });

    it('a stopped server is told as such, with the page that starts it; started again, the same runtime runs code', async () => {
      const rt = runtime(hub.userUrl('alice'));
      const first = await rt.execute({ code: 'x = 1\nx', sessionId: 'hub-2', timeoutMs: 60_000 });
      assert.equal(first.status, 'completed', JSON.stringify(first.error));

      await hub.stopServer('alice');
      const expected = `alice's server on the hub is not running; start it at ${hub.url}hub/spawn/alice`;

      // A conversation whose kernel went with the server, and a new runtime (its first request is the kernel POST, answered 405 with HTML).
      for (const r of [rt, runtime(`${hub.url}hub/user/alice/`)]) {
        const item = await r.execute({ code: '1 + 1', sessionId: 'hub-2', timeoutMs: 60_000 });
        assert.equal(item.status, 'failed');
        assert.equal(item.error?.type, 'JupyterHubServerStopped', item.error?.message);
        assert.ok(item.error!.message.startsWith(expected), item.error!.message);
        assert.doesNotMatch(item.error!.message, /[<>]|DOCTYPE|require\.config/, 'no markup');
      }

      // A GET is redirected to the hub's page for the server: the same message.
      const rest = new KernelRestClient(makeServerSettings({ baseUrl: hub.userUrl('alice'), token, requestTimeoutMs: 30_000 }), {
        baseUrl: hub.userUrl('alice'),
        token,
        requestTimeoutMs: 30_000,
      });
      await assert.rejects(rest.listRunning(), (err: Error) => err.name === 'JupyterHubServerStopped' && err.message.startsWith(expected));

      await hub.startServer('alice');
      const again = await rt.execute({ code: '2 + 2', sessionId: 'hub-2', timeoutMs: 60_000 });
      assert.equal(again.status, 'completed', JSON.stringify(again.error));
      assert.equal(again.value, 4);
    });

    it('a server stopped while code runs: the run ends, keeping its output, and says to start the server again', async () => {
      const rt = runtime(hub.userUrl('alice'));
      let printed!: () => void;
      const started = new Promise<void>((r) => (printed = r));
      const running = rt.execute(
        { code: 'import time\nprint("sleep" + "ing", flush=True)\ntime.sleep(120)', sessionId: 'hub-3', timeoutMs: 150_000 },
        { onEvent: (e) => e.type === 'codeact.output.delta' && e.delta.includes('sleeping') && printed() },
      );
      await started; // the barrier: the code is running
      await hub.stopServer('alice');
      const item = await running;
      assert.equal(item.status, 'failed');
      assert.equal(logsOf(item), 'sleeping\n', 'the output that arrived is kept');
      // Mostly the WebSocket goes with the server and the run's probe finds the hub answering; a kernel's "dead" may come first.
      if (item.error?.type !== 'KernelDied') {
        assert.equal(item.error?.type, 'JupyterHubServerStopped', item.error?.message);
        assert.ok(item.error!.message.startsWith("alice's server on the hub stopped while the code was running."), item.error!.message);
        assert.ok(item.error!.message.includes(`Start the server at ${hub.url}hub/spawn/alice`), item.error!.message);
      }
      const next = await rt.execute({ code: '1', sessionId: 'hub-3', timeoutMs: 60_000 });
      assert.equal(next.error?.type, 'JupyterHubServerStopped', next.error?.message);
      await hub.startServer('alice');
    });
  });
}
