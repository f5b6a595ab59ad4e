/**
 * The guest wire's spec: the real guest (codeact_guest.py), driven over fd 3 with each frame the host sends
 * (init, run, tool_result, vars, keep, checkpoint, restore), sends each kind of frame the GuestFrame union names (ready,
 * tool_call, display, file, complete ok and failed, vars, job, job_output, checkpointed, restored), with the fields the union gives it and no others,
 * and the host's edge (checkFrame) takes every one.
 */
import * as assert from 'node:assert/strict';
import { checkFrame, GUEST_FRAME_FIELDS, type GuestFrame, type HostFrame } from '../../src/core/runtime/local/guestFrames';
import { startGuest, type GuestFrame as WireFrame, type GuestHarness } from '../support/guestHarness';

const isInt = (v: unknown) => Number.isSafeInteger(v);
const isObject = (v: unknown) => !!v && typeof v === 'object' && !Array.isArray(v);
const twoBools = (v: unknown) => Array.isArray(v) && v.length === 2 && v.every((b) => typeof b === 'boolean');

/** The types the union gives each kind's fields (the optional ones only when present). */
const SHAPES: { [K in GuestFrame['t']]: (f: WireFrame) => void } = {
  ready: (f) => assert.ok(isInt(f.pid)),
  tool_call: (f) => assert.ok(isInt(f.run) && isInt(f.id) && typeof f.name === 'string' && isObject(f.args), JSON.stringify(f)),
  display: (f) => {
    assert.ok(isInt(f.run) && isInt(f.seq) && twoBools(f.marks) && isObject(f.data) && isObject(f.metadata), JSON.stringify(f).slice(0, 300));
    if ('result' in f) assert.equal(f.result, true);
    if ('update' in f) assert.equal(f.update, true);
    if ('display_id' in f) assert.equal(typeof f.display_id, 'string');
    if ('summary' in f) assert.equal(typeof f.summary, 'string');
  },
  file: (f) => {
    assert.ok(isInt(f.run) && typeof f.path === 'string' && isInt(f.size) && (f.data === null || typeof f.data === 'string'), JSON.stringify(f));
    if ('note' in f) assert.equal(typeof f.note, 'string');
  },
  complete: (f) => {
    assert.ok(isInt(f.run) && typeof f.ok === 'boolean' && twoBools(f.end) && isInt(f.files), JSON.stringify(f).slice(0, 300));
    if (f.ok) assert.ok('value' in f, 'a completed run carries its value (JSON, null for none)');
    else
      assert.ok(
        isObject(f.error) && typeof f.error.type === 'string' && typeof f.error.message === 'string' && typeof f.error.traceback === 'string',
        JSON.stringify(f.error),
      );
  },
  vars: (f) => {
    assert.ok(Array.isArray(f.variables) && isInt(f.total));
    for (const v of f.variables) assert.ok(typeof v.name === 'string' && typeof v.type === 'string', JSON.stringify(v));
  },
  job: (f) => {
    assert.ok(isInt(f.job) && typeof f.state === 'string', JSON.stringify(f));
    if (f.state === 'running') assert.ok(isInt(f.run) && isInt(f.pid), JSON.stringify(f));
    else
      assert.ok(
        typeof f.seconds === 'number' &&
          typeof f.tail === 'string' &&
          isInt(f.bytes) &&
          typeof f.cut === 'boolean' &&
          (f.value === null || typeof f.value === 'string'),
        JSON.stringify(f),
      );
  },
  job_output: (f) => assert.ok(isInt(f.job) && typeof f.data === 'string' && isInt(f.skipped), JSON.stringify(f)),
  checkpointed: (f) => {
    assert.ok(typeof f.id === 'string' && typeof f.ok === 'boolean' && typeof f.ms === 'number' && Array.isArray(f.held), JSON.stringify(f));
    for (const h of f.held) assert.ok(typeof h[0] === 'string' && isInt(h[1]) && h[1] >= -1, JSON.stringify(f));
    if (!f.ok) assert.equal(typeof f.error, 'string');
  },
  restored: (f) => {
    assert.ok(typeof f.id === 'string' && typeof f.ok === 'boolean', JSON.stringify(f));
    if (f.ok) assert.ok(isInt(f.pid) && Array.isArray(f.held), JSON.stringify(f));
    else assert.equal(typeof f.error, 'string');
    if ('kept' in f) assert.equal(typeof f.kept, 'string');
  },
};

describe('guest frames: the GuestFrame union against the real guest over fd 3', function () {
  this.timeout(60_000);
  let g: GuestHarness;
  before(async () => {
    g = await startGuest();
  });
  after(async () => {
    await g?.close();
  });

  it('sends every kind of frame the union names, each with the fields it gives, and the host edge takes them all', async () => {
    const files = { max_bytes: 1 << 20, max_total: 1 << 20, max_count: 10 };
    // A display (and the last expression as a result), a file, a completed run.
    const shown = await g.run('print("out")\ndisplay("shown")\nopen("made.txt", "w").write("hi")\n40 + 2', { files });
    assert.ok(shown.displays.length >= 1 && shown.files.length === 1 && shown.complete.ok === true);
    assert.deepEqual((await g.run('{"n": [1, 2]}')).complete.value, { n: [1, 2] }, 'the value is JSON itself, not JSON text');
    // A tool call, answered with each kind of tool_result.
    const started = await g.start(
      'a = await call_tool("lookup", q=1)\ntry:\n    await call_tool("lookup", q=2)\nexcept RuntimeError as e:\n    b = str(e)\nprint(a, b)',
      { tools: true },
    );
    const answer = async (q: number, reply: (id: number) => HostFrame) => {
      const call = await g.frame((f) => f.t === 'tool_call' && f.args?.q === q);
      g.send(reply(call.id));
    };
    await answer(1, (id) => ({ t: 'tool_result', id, ok: true, value: { found: 'yes' } }));
    await answer(2, (id) => ({ t: 'tool_result', id, ok: false, error: 'no such thing', limit: true }));
    const called = await started.done;
    assert.match(called.stdout, /\{'found': 'yes'\} .*no such thing/);
    // A failed run.
    const failed = await g.run('raise ValueError("no")');
    assert.equal(failed.complete.ok, false);
    assert.equal(failed.complete.error.type, 'ValueError');
    // A kept output (keep), read back by the next run; then the variables (vars).
    const keep: HostFrame = { t: 'keep', n: 7, stdout: 'kept text', stderr: '', max_total: 10_000 };
    g.send(keep);
    assert.match((await g.run('print(output_of(7))')).stdout, /kept text/);
    const vars = await g.vars();
    assert.ok(vars.variables.some((v: { name: string }) => v.name === 'a'));
    // A background job: started (its handle at once), then ended.
    assert.deepEqual((await g.run('print("in the job")\n6 * 7', { background: true })).complete.value, { job: 1, status: 'running' });
    await g.frame((f) => f.t === 'job' && f.state === 'done');
    // A checkpoint (checkpoint), a change, then back to it (restore) with a redo point kept; one refused.
    g.send({ t: 'checkpoint', id: 'c1' });
    assert.equal((await g.frame((f) => f.t === 'checkpointed' && f.id === 'c1')).ok, true);
    await g.run('later = 1');
    g.send({ t: 'restore', id: 'c1', keep: 'c2' });
    const back = await g.frame((f) => f.t === 'restored' && f.id === 'c1');
    assert.equal(back.ok, true, JSON.stringify(back));
    assert.equal(back.kept, 'c2');
    assert.match((await g.run('print("later" in globals(), a)')).stdout, /^False \{'found': 'yes'\}/);
    g.send({ t: 'restore', id: 'c1', keep: null });
    assert.equal((await g.frame((f) => f.t === 'restored' && f.id === 'c1' && f.ok === false)).ok, false, 'c1 was used up by the first restore');

    const kinds = new Set<string>();
    for (const f of g.received) {
      const checked = checkFrame<GuestFrame>(JSON.stringify(f), GUEST_FRAME_FIELDS);
      assert.ok('frame' in checked, `the edge refused ${JSON.stringify(f).slice(0, 200)}`);
      const t = f.t as GuestFrame['t'];
      kinds.add(t);
      const named = new Set<string>(['t', ...GUEST_FRAME_FIELDS[t]]);
      for (const key of Object.keys(f)) assert.ok(named.has(key), `a "${t}" frame carries "${key}", which the union does not name`);
      SHAPES[t](f);
    }
    assert.deepEqual([...kinds].sort(), Object.keys(GUEST_FRAME_FIELDS).sort(), 'every kind of frame was sent');
    assert.ok(g.received.some((f) => f.t === 'complete' && f.ok === false) && g.received.some((f) => f.t === 'complete' && f.ok === true));
  });

  it("code that replaces json.dumps, len, print, isinstance or str (in its namespace, on the json module, or on builtins) leaves the guest's replies whole", async () => {
    const h = await startGuest();
    try {
      const files = { max_bytes: 1 << 20, max_total: 1 << 20, max_count: 10 };
      // The code's own names: its namespace is not the guest's module globals.
      const shadowed = await h.run(
        'import json\nprint("once")\nlen = lambda *a: 0\nprint = None\nisinstance = str = None\ndumps = json = None\n{"a": [1, 2]}',
        { files },
      );
      assert.equal(shadowed.complete.ok, true, JSON.stringify(shadowed.complete));
      assert.deepEqual(shadowed.complete.value, { a: [1, 2] });
      assert.equal(shadowed.stdout, 'once\n');
      // The json module itself, monkeypatched: the guest holds its own references, bound at import.
      const patched = await h.run(
        'import json as j\nj.dumps = j.loads = j.JSONEncoder = j.JSONDecoder = None\ndel print, len, isinstance, str\nprint("twice")\ndisplay({"shown": 1})\n{"b": 3}',
        { files },
      );
      assert.equal(patched.complete.ok, true, JSON.stringify(patched.complete));
      assert.deepEqual(patched.complete.value, { b: 3 });
      assert.equal(patched.displays.length, 1);
      assert.equal(patched.stdout.replace(/\u0000codeact-display:[^\u0000]*\u0000/g, ''), 'twice\n');
      // The builtins module itself (len, print): the guest's modules bound theirs at import.
      const builtins = await h.run('import builtins\nkept = (builtins.len, builtins.print)\nbuiltins.len = lambda *a: 0\nbuiltins.print = None\n[1, 2, 3]', {
        files,
      });
      assert.deepEqual(builtins.complete.value, [1, 2, 3], JSON.stringify(builtins.complete));
      await h.run('builtins.len, builtins.print = kept', { files });
      // The session goes on: a tool call and its result (frames both ways), the variables.
      const started = await h.start('r = await call_tool("lookup", q=1)\nr', { tools: true });
      const call = await h.frame((f) => f.t === 'tool_call' && f.args?.q === 1);
      h.send({ t: 'tool_result', id: call.id, ok: true, value: { found: 'yes' } });
      assert.deepEqual((await started.done).complete.value, { found: 'yes' });
      assert.ok((await h.vars()).variables.some((v: { name: string }) => v.name === 'r'));
    } finally {
      await h.close();
    }
  });

  it('the edge refuses a frame that is not JSON, not an object, or of a kind the union does not name', () => {
    assert.deepEqual(checkFrame<GuestFrame>('{"t":', GUEST_FRAME_FIELDS), { wrong: 'a malformed frame', json: false });
    assert.deepEqual(checkFrame<GuestFrame>('null', GUEST_FRAME_FIELDS), { wrong: 'a malformed frame', json: true });
    assert.deepEqual(checkFrame<GuestFrame>('{"t":"fork"}', GUEST_FRAME_FIELDS), { wrong: 'an unknown frame type "fork"', json: true });
    assert.deepEqual(checkFrame<GuestFrame>('{"t":"toString"}', GUEST_FRAME_FIELDS), { wrong: 'an unknown frame type "toString"', json: true });
    assert.ok('frame' in checkFrame<GuestFrame>('{"t":"ready","pid":1}', GUEST_FRAME_FIELDS));
  });
});
