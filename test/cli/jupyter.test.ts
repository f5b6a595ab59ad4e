/**
 * The CLI on the remote runtime: `codeact run --runtime jupyter` and `codeact chat --runtime jupyter`
 * against a real jupyter-server, with the token from CODEACT_JUPYTER_TOKEN.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { findJupyterServer, SKIP_MESSAGE, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { runCli } from '../support/cli';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';

const codeact = runCli;

describe('CLI on the Jupyter runtime', function () {
  this.timeout(180_000);
  let jupyter: JupyterServer | undefined;
  before(async function () {
    if (!findJupyterServer()) {
      console.log(`      ${SKIP_MESSAGE}`);
      this.skip();
    }
    jupyter = await startJupyterServer();
  });
  after(async () => jupyter?.stop());

  it('codeact run --runtime jupyter runs the file in a kernel with the managed tools, and leaves no kernel behind', async () => {
    const r = await codeact(['run', 'examples/orders/order_desk.py', '--workspace', 'examples/orders', '--runtime', 'jupyter', '--jupyter-url', jupyter!.url], {
      CODEACT_JUPYTER_TOKEN: jupyter!.token,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /→ create_quote\(/);
    assert.match(r.stdout, /Quote Q-\d{6} for Acme Robotics: 1771\.00 EUR/);
    assert.deepEqual(await jupyter!.kernelIds(), []);
  });

  it('codeact run --runtime jupyter --outputs DIR saves a real plot; the terminal shows it in order with the text, --json as a display event', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'codeact-out-j-'));
    const code =
      'import matplotlib.pyplot as plt\nprint("before")\nplt.plot([1, 3, 2])\nplt.show()\nprint("after")\nimport pandas as pd\ndf = pd.DataFrame({"month": ["Jan"], "revenue": [10]})\ndf.to_csv("jan.csv", index=False)\ndf\n';
    const env = { CODEACT_JUPYTER_TOKEN: jupyter!.token };
    try {
      const r = await codeact(['run', '-', '--runtime', 'jupyter', '--jupyter-url', jupyter!.url, '--outputs', out], env, code);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /^before\n\[image \d+×\d+, PNG\]\nafter\n[^[]*1 rows? × 2 columns[\s\S]*\| 0 \| Jan \| 10 \|\n\[file jan\.csv, 21 bytes\]\n/,
        `text, plot, text, the table by its summary, the file:\n${r.stdout}`,
      );
      assert.ok(r.stdout.includes(`saved 1 image and 1 file to ${out}: exec-1-image-1.png, exec-1-jan.csv\n`), r.stdout);
      assert.equal(readFileSync(path.join(out, 'exec-1-jan.csv'), 'utf8'), 'month,revenue\nJan,10\n', 'copied out through the contents API');
      assert.doesNotMatch(r.stdout, /iVBOR|<table/, 'no base64 and no HTML on the terminal');
      const png = readFileSync(path.join(out, 'exec-1-image-1.png'));
      assert.equal(png.subarray(1, 4).toString(), 'PNG');
      const size = /\[image (\d+)×(\d+), PNG\]/.exec(r.stdout)!;
      assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [Number(size[1]), Number(size[2])], 'the terminal said the size of the saved image');

      const json = await codeact(['run', '-', '--runtime', 'jupyter', '--jupyter-url', jupyter!.url, '--json', '--outputs', out], env, code);
      assert.equal(json.code, 0, json.stderr);
      const events = json.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const shown = events.filter((e) => e.type === 'codeact.output.display');
      assert.equal(shown.length, 2);
      assert.match(shown[0].output.data['image/png'], /^iVBOR/);
      assert.match(shown[1].output.data['text/html'], /<table/);
      assert.equal(shown[1].output.result, true, 'the last expression');
      const item = events.at(-1).item;
      assert.deepEqual(
        item.outputs.map((o: { type: string }) => o.type),
        ['logs', 'display', 'logs', 'display', 'file'],
      );
      assert.ok(json.stderr.includes(`saved 1 image and 1 file to ${out}: exec-1-image-1-2.png, exec-1-jan-2.csv`), json.stderr);
      assert.deepEqual(
        readdirSync(out).sort(),
        ['exec-1-image-1-2.png', 'exec-1-image-1.png', 'exec-1-jan-2.csv', 'exec-1-jan.csv'],
        'the second run did not overwrite the first',
      );
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('says what to do about a wrong token, with exit 2', async () => {
    const r = await codeact(['run', '-', '--runtime', 'jupyter', '--jupyter-url', jupyter!.url], { CODEACT_JUPYTER_TOKEN: 'wrong-token' }, 'return 1');
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /CODEACT_JUPYTER_TOKEN/);
    assert.doesNotMatch(r.stderr + r.stdout, /wrong-token/);
  });

  it('exits 2 when --runtime jupyter has no URL', async () => {
    const r = await codeact(['run', '-', '--runtime', 'jupyter'], {}, 'return 1');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /codeact\.jupyter\.serverURL|--jupyter-url/);
  });

  it('codeact chat --runtime jupyter keeps one kernel per conversation, so later code builds on earlier state, and --continue in a new process takes it back; the next chat shuts down one not continued within the idle time', async () => {
    const wire = await startServerFor('openai');
    const storage = mkdtempSync(path.join(tmpdir(), 'codeact-chat-j-'));
    const chat = (prompt: string, ...extra: string[]) =>
      codeact(
        [
          'chat',
          prompt,
          ...extra,
          '--provider',
          'openai',
          '--model',
          'gpt-5',
          '--base-url',
          wire.url,
          '-w',
          'examples/orders',
          '--runtime',
          'jupyter',
          '--jupyter-url',
          jupyter!.url,
          '--storage',
          storage,
          '--json',
        ],
        { OPENAI_API_KEY: 'sk-test', CODEACT_JUPYTER_TOKEN: jupyter!.token },
      );
    const itemsOf = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call')
        .map((e) => e.item);
    try {
      wire.push(turn().call('execute_tool_code', { code: 'stock = await call_tool("check_inventory", sku="LMP-LED-010")\nreturn stock["on_hand"]' }));
      wire.push(turn().call('execute_tool_code', { code: 'return stock["on_hand"] * 2' }));
      wire.push(turn().text('Twice the stock is 170.'));
      const r = await chat('Double the lamp stock');
      assert.equal(r.code, 0, r.stderr);
      const events = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const items = events.filter((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call').map((e) => e.item);
      for (const it of items) {
        // The code streamed while the model wrote it; the kernel run must not announce it a second time.
        assert.equal(events.filter((e) => e.type === 'response.code_interpreter_call.in_progress' && e.item_id === it.id).length, 1);
        const code = events
          .filter((e) => e.type === 'response.code_interpreter_call_code.delta' && e.item_id === it.id)
          .map((e) => e.delta)
          .join('');
        assert.equal(code, it.code);
      }
      assert.deepEqual(
        items.map((i) => [i.runtime, i.status, i.value]),
        [
          ['jupyter', 'completed', 85],
          ['jupyter', 'completed', 170],
        ],
      );
      assert.equal(items[0].container_id, items[1].container_id, 'both runs used the same kernel');
      assert.deepEqual(await jupyter!.kernelIds(), [items[0].container_id], 'the kernel stays on the server for --continue');

      const id = JSON.parse(r.stdout.trim().split('\n').at(-1)!).conversation_id as string;
      wire.push(turn().call('execute_tool_code', { code: 'return [stock["on_hand"], output_of(2)]' }), turn().text('Still 85.'));
      const again = await chat('And the stock now?', '--continue', id);
      assert.equal(again.code, 0, again.stderr);
      const [back] = itemsOf(again.stdout);
      assert.equal(back.status, 'completed', JSON.stringify(back.error));
      assert.deepEqual(back.value, [85, ''], 'the variable of the first process is there');
      assert.equal(back.container_id, items[0].container_id, 'the same kernel');
      assert.doesNotMatch(again.stderr, /new Python session/);
      assert.ok(!JSON.stringify(wire.turns.at(-2)!.body).includes('continued in a new Python session'), 'the model is not told its variables are gone');

      // Not continued within the idle time (its file dated back, no waiting): the next chat shuts the kernel down and the conversation forgets it.
      const past = new Date(Date.now() - 2 * 3600_000);
      utimesSync(path.join(storage, `${id}.jsonl`), past, past);
      wire.push(turn().text('Hello.'));
      const next = await chat('Hello');
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(await jupyter!.kernelIds(), [], 'the kernel of the conversation not continued is shut down');
      assert.match(next.stderr, new RegExp(`Shut down the session ${items[0].container_id} left running for conversation ${id}`));
      assert.equal(new TranscriptStore(storage).open(id).meta.kernelId, null, 'and the conversation forgets it');
    } finally {
      await wire.close();
      rmSync(storage, { recursive: true, force: true });
    }
  });
});
