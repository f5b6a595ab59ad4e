/**
 * A returned value of any depth is bounded (MAX_VALUE_DEPTH, the cap tool results have)
 * and reported as a clear error; the result item is always emitted and `codeact run` exits 1. The guest
 * libraries check it without recursing (json.dumps and repr crash on deep enough data), and the host checks
 * what a forged frame carries. Real python3 on the local runtime, a real Jupyter kernel, the built CLI.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { MAX_VALUE_DEPTH } from '../../src/common/jsonShape';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { runCli } from '../support/cli';

const DEEP_MESSAGE = /^The return value is nested deeper than 128 levels \(lists and dicts inside one another\); the limit is 128\. Return a flatter value/;

/** Code that builds a list `levels` containers deep (the recursion limit raised, as hostile code would). */
const nested = (levels: number, how: 'return' | 'last' = 'return') => `
import sys
sys.setrecursionlimit(1_000_000)
v = []
for _ in range(${levels} - 1):
    v = [v]
${how === 'return' ? 'return v' : 'v'}
`;

describe('security: a returned value of any depth is bounded', function () {
  this.timeout(120_000);
  const rt = new LocalRuntime({ sandbox: { kind: 'none' }, zygote: false });
  after(() => rt.dispose());

  async function run(code: string): Promise<{ item: CodeInterpreterCallItem; events: CodeActEvent[] }> {
    const events: CodeActEvent[] = [];
    const item = await rt.execute({ code }, { onEvent: (e) => events.push(e), onToolCall: async () => ({ ok: true }) });
    return { item, events };
  }

  for (const [levels, how] of [
    [5_000, 'return'],
    [5_000, 'last'],
    [200_000, 'return'],
  ] as const) {
    it(`reports a ${levels.toLocaleString('en-US')}-deep value (${how === 'return' ? 'returned' : 'the last expression'}) as a ReturnValueError`, async () => {
      const { item, events } = await run(nested(levels, how));
      assert.equal(item.status, 'failed');
      assert.equal(item.exit_code, 1);
      assert.equal(item.error?.type, 'ReturnValueError', JSON.stringify(item.error));
      assert.match(item.error!.message, DEEP_MESSAGE);
      assert.equal(item.value, null);
      assert.equal(events.filter((e) => e.type === 'response.output_item.done').length, 1, 'the result item is emitted');
      JSON.stringify(events); // every event can be written as JSON
    });
  }

  it(`accepts ${MAX_VALUE_DEPTH} levels and refuses ${MAX_VALUE_DEPTH + 1}, in the guest and on the host alike`, async () => {
    const ok = await run(nested(MAX_VALUE_DEPTH));
    assert.equal(ok.item.status, 'completed', JSON.stringify(ok.item.error));
    let depth = 0;
    for (let v = ok.item.value; Array.isArray(v); v = v[0]) depth++;
    assert.equal(depth, MAX_VALUE_DEPTH);
    const over = await run(nested(MAX_VALUE_DEPTH + 1));
    assert.equal(over.item.error?.type, 'ReturnValueError');
  });

  it('checks the value of a result frame the code forged on the protocol descriptor', async () => {
    const code = `
import os, time
run = call_tool.__closure__[0].cell_contents.run_id
value = b"[" * 5000 + b"]" * 5000
os.write(3, b'{"t":"complete","run":%d,"ok":true,"value":%s,"end":[false,false],"files":0}\\n' % (run, value))
time.sleep(60)
`;
    const { item } = await run(code);
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.type, 'ReturnValueError', JSON.stringify(item.error));
    assert.match(item.error!.message, DEEP_MESSAGE);
  });

  it('refuses tool-call arguments nested past the cap before they are announced', async () => {
    const code = `
import os, json, select
run = call_tool.__closure__[0].cell_contents.run_id
args = b'{"a":' * 5000 + b'1' + b'}' * 5000
os.write(3, b'{"t":"tool_call","run":%d,"id":1,"name":"echo","args":%s}\\n' % (run, args))
select.select([3], [], [], 60)
return json.loads(os.read(3, 65536).split(b"\\n")[0])
`;
    const { item, events } = await run(code);
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    const reply = item.value as { ok: boolean; error: string };
    assert.equal(reply.ok, false);
    assert.match(reply.error, /^call_tool\("echo"\): the arguments are nested deeper than 128 levels/);
    assert.equal(events.filter((e) => e.type === 'codeact.tool_call.started').length, 0);
  });

  describe('codeact run', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'codeact-deep-'));
      writeFileSync(path.join(dir, 'deep.py'), nested(5_000));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('--json: prints the failed result item and exits 1', async () => {
      const r = await runCli(['run', path.join(dir, 'deep.py'), '--json', '--sandbox', 'none']);
      assert.equal(r.code, 1, r.stderr);
      const items = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as CodeActEvent)
        .filter((e) => e.type === 'response.output_item.done');
      assert.equal(items.length, 1, r.stdout.slice(-500));
      const item = (items[0] as { item: CodeInterpreterCallItem }).item;
      assert.equal(item.status, 'failed');
      assert.equal(item.error?.type, 'ReturnValueError');
    });

    it('human output: says what happened and exits 1', async () => {
      const r = await runCli(['run', path.join(dir, 'deep.py'), '--sandbox', 'none']);
      assert.equal(r.code, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /unexpected error|Maximum call stack/);
      assert.match(r.stdout + r.stderr, /ReturnValueError: The return value is nested deeper than 128 levels/);
    });
  });
});

(findJupyterServer() ? describe : describe.skip)('security: a returned value of any depth is bounded, Jupyter kernel', function () {
  this.timeout(120_000);
  let server: JupyterServer;
  let rt: JupyterRuntime;
  before(async function () {
    this.timeout(60_000);
    server = await startJupyterServer();
    rt = new JupyterRuntime({ url: server.url, token: server.token });
  });
  after(async () => {
    await rt?.dispose();
    await server?.stop();
  });

  it('reports a 5,000-deep returned value as a ReturnValueError', async () => {
    const item = await rt.execute({ code: nested(5_000) });
    assert.equal(item.status, 'failed');
    assert.equal(item.error?.type, 'ReturnValueError', JSON.stringify(item.error));
    assert.match(item.error!.message, DEEP_MESSAGE);
  });
});
