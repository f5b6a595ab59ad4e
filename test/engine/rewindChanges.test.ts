/**
 * What each execution changed in a workspace mounted `readwrite` (issue 35, first slice), on real parts:
 * bubblewrap, a real session, real files, a subprocess of the code. The item's `changes` (and the event that
 * carries the finished item) lists exactly what the code created, changed and deleted; files it never
 * touched (a 50 MB one) keep their inode and mtime; read-only names (.git) are not tracked; the model is
 * told. As root and as the unprivileged user.
 */
import * as assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { executionSummary } from '../../src/core/agent/executionResult';
import { observationText } from '../../src/core/agent/textHistory';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { attachSessionHost } from '../../src/core/sessionHost/launch';
import { cannotSwitchUser, runScriptInChild, TESTER } from '../security/support/asUser';
import { DEBIAN_PYTHON } from '../support/guestHarness';
import { TURN_1, TURN_2 } from '../support/rewindScenario';

/** Runs the scenario in `ws` and returns what each run's item says (shared by the root test and the child as tester). */
const SCENARIO = String.raw`
import { LocalRuntime } from '${path.resolve(__dirname, '../../src/core/runtime/local/localRuntime')}';
import { existsSync, readFileSync } from 'node:fs';
(async () => {
  const { ws, turns } = JSON.parse(process.argv[2]);
  const rt = new LocalRuntime({ python: '/usr/bin/python3', sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws } });
  const out: unknown[] = [];
  let last = '';
  for (const code of turns) {
    const item = await rt.execute({ code: 'WS = ' + JSON.stringify(ws) + '\n' + code, sessionId: 's', timeoutMs: 60_000 });
    out.push({ status: item.status, error: item.error, value: item.value, changes: item.changes });
    last = item.id;
  }
  const reverted = await rt.revertChanges(last);
  const files = Object.fromEntries(['data.csv', 'out.csv', 'side.txt'].map((f) => [f, existsSync(ws + '/' + f) ? readFileSync(ws + '/' + f, 'utf8') : null]));
  await rt.dispose();
  console.log(JSON.stringify({ runs: out, reverted, files }));
})();
`;

function makeWorkspace(root = tmpdir()): string {
  const ws = mkdtempSync(path.join(root, 'codeact-changes-'));
  writeFileSync(path.join(ws, 'data.csv'), 'a,b,c\n1,2,3\n4,5,6\n');
  mkdirSync(path.join(ws, '.git'));
  writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
  return ws;
}

const HOST_ENTRY = path.resolve(__dirname, '../../dist/sessionHost.js');

const kinds = (changes: { kind: string; path: string }[] | undefined) => (changes ?? []).map((c) => `${c.kind} ${c.path}`);

describe('what the code changed in a readwrite workspace (rewind, first slice)', function () {
  this.timeout(180_000);
  const dirs: string[] = [];
  let rt: LocalRuntime | undefined;

  before(async function () {
    const reason = await probeBubblewrap();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      this.skip();
    }
  });
  after(async () => {
    await rt?.dispose();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('lists each run’s created, changed and deleted files on its item and its finished event; untouched files stay as they were', async () => {
    const ws = makeWorkspace();
    dirs.push(ws);
    const big = path.join(ws, 'big.bin');
    writeFileSync(big, Buffer.alloc(50 * 1024 * 1024, 7));
    const bigBefore = statSync(big, { bigint: true });
    rt = new LocalRuntime({ python: DEBIAN_PYTHON, sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws } });
    const events: CodeActEvent[] = [];
    const run = (code: string) =>
      rt!.execute({ code: `WS = ${JSON.stringify(ws)}\n${code}`, sessionId: 's', timeoutMs: 60_000 }, { onEvent: (e) => events.push(e) });

    const one = await run(TURN_1);
    assert.equal(one.status, 'completed', JSON.stringify(one.error));
    assert.deepEqual(one.value, [2, 3]);
    assert.deepEqual(kinds(one.changes?.changes), ['created out.csv']);
    assert.equal(one.changes?.root, ws);

    // The person edits a file between the turns: not the code's change, so turn 2 does not list it.
    writeFileSync(path.join(ws, 'mine.txt'), 'my notes\n');
    events.length = 0;
    const two = await run(TURN_2);
    assert.equal(two.status, 'completed', JSON.stringify(two.error));
    assert.deepEqual(two.value, [2, 2]);
    assert.deepEqual(kinds(two.changes?.changes), ['deleted data.csv', 'changed out.csv', 'created side.txt']);
    assert.equal(two.changes?.incomplete, undefined);
    // The finished item the panel gets (the last event of the run) carries the changeset.
    const last = events[events.length - 1];
    assert.equal(last.type, 'response.output_item.done');
    assert.deepEqual(
      last.type === 'response.output_item.done' && last.item.type === 'code_interpreter_call' ? kinds(last.item.changes?.changes) : [],
      kinds(two.changes?.changes),
    );

    const three = await run('return 1');
    assert.deepEqual(three.changes?.changes, [], 'a run that writes nothing changes nothing');

    const bigAfter = statSync(big, { bigint: true });
    assert.equal(bigAfter.ino, bigBefore.ino);
    assert.equal(bigAfter.mtimeNs, bigBefore.mtimeNs);

    // The model reads the same list, in both protocols.
    const summary = executionSummary(two);
    assert.deepEqual(JSON.parse(summary).workspace_changes, ['deleted data.csv', 'changed out.csv', 'created side.txt']);
    assert.match(observationText(summary), /Workspace files the code changed:\n.*deleted data\.csv/);

    // Revert one file of turn 2, then the rest: each back byte for byte, the file it made gone.
    assert.equal(readFileSync(path.join(ws, 'out.csv'), 'utf8'), 'a,c\n1,3\n4,6\n', 'turn 2 wrote out.csv');
    const dataBefore = 'a,b,c\n1,2,3\n4,5,6\n';
    const one_ = await rt.revertChanges(two.id, ['out.csv']);
    assert.deepEqual(one_, { written: ['out.csv'], removed: [], failed: [] });
    assert.equal(readFileSync(path.join(ws, 'out.csv'), 'utf8'), 'a,b,c\n1,2,3\n4,5,6\n');
    assert.ok(!existsSync(path.join(ws, 'data.csv')) && existsSync(path.join(ws, 'side.txt')), 'only out.csv was reverted');
    const rest = await rt.revertChanges(two.id);
    // (out.csv is written again, with the bytes it already had: the store compares stat keys, and the first revert moved them.)
    assert.deepEqual(rest.written, ['data.csv', 'out.csv']);
    assert.deepEqual(rest.removed, ['side.txt']);
    assert.equal(readFileSync(path.join(ws, 'data.csv'), 'utf8'), dataBefore);
    assert.ok(!existsSync(path.join(ws, 'side.txt')));
    assert.equal(readFileSync(path.join(ws, 'out.csv'), 'utf8'), dataBefore, 'out.csv is as turn 1 wrote it');
    assert.equal(readFileSync(path.join(ws, 'mine.txt'), 'utf8'), 'my notes\n', "the person's file is not touched");
    // The revert is not the next run's change; the untouched big file is still untouched.
    const four = await run('return 1');
    assert.deepEqual(four.changes?.changes, []);
    assert.equal(statSync(big, { bigint: true }).ino, bigBefore.ino);
    await assert.rejects(rt.revertChanges('exec_unknown'), /no longer kept/);
  });

  it('reverts through the session host too', async () => {
    if (!existsSync(HOST_ENTRY)) throw new Error(`${HOST_ENTRY} is missing: run node esbuild.mjs first`);
    const ws = makeWorkspace();
    dirs.push(ws);
    const runDir = mkdtempSync(path.join(tmpdir(), 'codeact-changes-run-'));
    dirs.push(runDir);
    chmodSync(runDir, 0o700);
    const hosted = await attachSessionHost({
      workspace: ws,
      local: { python: DEBIAN_PYTHON, sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws } },
      idleMs: 60_000,
      entry: HOST_ENTRY,
      env: { ...process.env, XDG_RUNTIME_DIR: runDir },
    });
    try {
      const item = await hosted.execute({ code: `open(${JSON.stringify(ws)} + "/made.txt", "w").write("x")\nreturn 1`, sessionId: 'h', timeoutMs: 60_000 });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(kinds(item.changes?.changes), ['created made.txt']);
      assert.deepEqual(await hosted.revertChanges(item.id), { written: [], removed: ['made.txt'], failed: [] });
      assert.ok(!existsSync(path.join(ws, 'made.txt')));
    } finally {
      hosted.connection.end();
      await hosted.dispose();
    }
  });

  it('tracks nothing when the workspace is not mounted writable', async () => {
    const ws = makeWorkspace();
    dirs.push(ws);
    const ro = new LocalRuntime({ sandbox: { kind: 'bubblewrap', mountWorkspace: 'readonly', workspace: ws } });
    try {
      const item = await ro.execute({ code: 'return 1', sessionId: 's' });
      assert.equal(item.status, 'completed');
      assert.equal(item.changes, undefined);
    } finally {
      await ro.dispose();
    }
  });

  it('lists the same changes, and reverts them, as the unprivileged user', async function () {
    const why = cannotSwitchUser();
    if (why) {
      console.log(`      skipped: ${why}`);
      return this.skip();
    }
    // A workspace the tester owns.
    const parent = mkdtempSync(path.join(tmpdir(), 'codeact-changes-tester-'));
    dirs.push(parent);
    const ws = makeWorkspace(parent);
    for (const p of [parent, ws, path.join(ws, 'data.csv'), path.join(ws, '.git'), path.join(ws, '.git', 'config')]) chownSync(p, TESTER.uid, TESTER.gid);
    const {
      runs: out,
      reverted,
      files,
    } = await runScriptInChild<{
      runs: { status: string; error: unknown; changes?: { changes: { kind: string; path: string }[] } }[];
      reverted: { written: string[]; removed: string[]; failed: unknown[] };
      files: Record<string, string | null>;
    }>(SCENARIO, { ws, turns: [TURN_1, TURN_2] }, TESTER);
    assert.equal(out[0].status, 'completed', JSON.stringify(out[0].error));
    assert.equal(out[1].status, 'completed', JSON.stringify(out[1].error));
    assert.deepEqual(kinds(out[0].changes?.changes), ['created out.csv']);
    assert.deepEqual(kinds(out[1].changes?.changes), ['deleted data.csv', 'changed out.csv', 'created side.txt']);
    assert.deepEqual(reverted, { written: ['data.csv', 'out.csv'], removed: ['side.txt'], failed: [] });
    assert.deepEqual(files, { 'data.csv': 'a,b,c\n1,2,3\n4,5,6\n', 'out.csv': 'a,b,c\n1,2,3\n4,5,6\n', 'side.txt': null });
  });
});
