/**
 * The sweep of kernels left running for conversations not continued (core/turn/sessionSweep) against a real
 * `jupyter-server`: an old conversation's idle kernel is shut down and forgotten, a recent one's and a busy one's
 * are kept. "Old" is the conversation file's date written in the past, never a wait.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { sweepLeftSessions } from '../../src/core/turn/sessionSweep';
import { SKIP_MESSAGE, findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { waitFor } from '../support/wait';

const available = !!findJupyterServer();
if (!available) console.log(`  ${SKIP_MESSAGE}`);

(available ? describe : describe.skip)('sweep of kernels left running (real jupyter-server)', function () {
  this.timeout(120_000);
  let server: JupyterServer;
  let dir: string;
  const runtimes: JupyterRuntime[] = [];

  function runtime(): JupyterRuntime {
    const rt = new JupyterRuntime({ url: server.url, token: server.token });
    runtimes.push(rt);
    return rt;
  }

  before(async () => {
    server = await startJupyterServer();
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-sweep-'));
  });

  after(async () => {
    await Promise.allSettled(runtimes.map((r) => r.dispose()));
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an old conversation's idle kernel is shut down and forgotten; a recent one's and a busy one's are kept", async () => {
    // An earlier `codeact chat` left two kernels running (one continued lately, one not).
    const earlier = runtime();
    for (const sid of ['old', 'recent']) {
      const item = await earlier.execute({ code: 'x = 1', sessionId: sid });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
    }
    const oldKernel = earlier.sessions.handover!.idOf('old')!;
    const recentKernel = earlier.sessions.handover!.idOf('recent')!;
    await earlier.sessions.handover!.release();
    // Another process runs code in a third kernel right now (waiting on a file: a barrier, not a clock).
    const started = path.join(dir, 'started');
    const go = path.join(dir, 'go');
    const other = runtime();
    const busyRun = other.execute({
      code: `import os, time\nopen(${JSON.stringify(started)}, "w").close()\nfor _ in range(2400):\n    if os.path.exists(${JSON.stringify(go)}): break\n    time.sleep(0.05)`,
      sessionId: 'busy',
    });
    await waitFor(() => existsSync(started), { timeoutMs: 60_000, what: 'the busy run to start' });
    const busyKernel = other.sessions.handover!.idOf('busy')!;
    assert.ok(oldKernel && recentKernel && busyKernel);

    const store = new TranscriptStore(path.join(dir, 'store'));
    const conversation = (title: string, kernelId: string, lastWritten?: Date) => {
      const c = store.create({ title });
      c.update({ kernelId });
      if (lastWritten) utimesSync(c.file, lastWritten, lastWritten);
      return c.id;
    };
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    const oldId = conversation('old', oldKernel, twoHoursAgo);
    const recentId = conversation('recent', recentKernel);
    const busyId = conversation('busy', busyKernel, twoHoursAgo);

    const lines: string[] = [];
    const swept = await sweepLeftSessions(store, runtime(), { log: (l) => lines.push(l) });
    assert.deepEqual(swept, { ended: [oldId], kept: [busyId] }, lines.join('\n'));
    const left = await server.kernelIds();
    assert.ok(!left.includes(oldKernel), "the old conversation's kernel is gone from /api/kernels");
    assert.ok(left.includes(recentKernel), "the recent conversation's kernel is kept");
    assert.ok(left.includes(busyKernel), 'a busy kernel is never shut down');
    assert.equal(store.open(oldId).meta.kernelId, null, 'the old conversation forgets its kernel');
    assert.equal(store.open(recentId).meta.kernelId, recentKernel);
    assert.equal(store.open(busyId).meta.kernelId, busyKernel);
    assert.equal(Math.round(statSync(store.file(oldId)).mtimeMs / 1000), Math.round(twoHoursAgo.getTime() / 1000), 'its place in the history stays');
    assert.match(lines.join('\n'), new RegExp(`Shut down the session ${oldKernel} left running for conversation ${oldId}`));

    writeFileSync(go, '');
    assert.equal((await busyRun).status, 'completed');
  });
});
