/**
 * `codeact chat --outputs DIR` through the built CLI, with the real SDKs pointed at loopback wire servers:
 * a hosted sandbox's images (OpenAI's code interpreter, Gemini's inline data) are saved in DIR and the human
 * output says where; its container files are listed as not saved; without --outputs the output names them;
 * --json prints the item's outputs as they are and says on stderr what was saved.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { runCli } from '../support/cli';
import { pngBase64, pngBytes } from '../support/png';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

describe('codeact chat --outputs', function () {
  this.timeout(60_000);
  let storage: string;
  let out: string;
  let server: WireServer | undefined;
  beforeEach(() => {
    storage = mkdtempSync(path.join(tmpdir(), 'codeact-chat-'));
    out = path.join(mkdtempSync(path.join(tmpdir(), 'codeact-out-')), 'plots');
  });
  afterEach(async () => {
    rmSync(storage, { recursive: true, force: true });
    rmSync(path.dirname(out), { recursive: true, force: true });
    await server?.close();
    server = undefined;
  });

  const hostedTurn = () =>
    turn()
      .code({
        code: 'plt.plot([1, 2]); plt.show()',
        stdout: 'plotted\n',
        images: [pngBase64(640, 480)],
        files: [{ id: 'cfile_9', filename: 'data.csv', mime_type: 'text/csv' }],
      })
      .text('Here is the chart.');
  const args = (extra: string[]) => [
    'chat',
    'Plot it',
    '--provider',
    'openai',
    '--model',
    'gpt-5',
    '--mode',
    'hosted',
    '--base-url',
    server!.url,
    '--storage',
    storage,
    ...extra,
  ];

  it("saves a hosted sandbox's image in DIR (created) and says where; its container file is listed as not saved", async () => {
    server = await startServerFor('openai');
    server.push(hostedTurn());
    const r = await runCli(args(['--outputs', out]), { OPENAI_API_KEY: 'sk-test' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[image 640×480, PNG\]\n/);
    assert.match(r.stdout, /plotted\n/);
    assert.ok(r.stdout.includes(`saved 1 image to ${out}: exec-1-image-1.png\n`), r.stdout);
    assert.match(r.stdout, /not saved: cfile_9 \(it is in the provider's container \(not downloaded\)\)/);
    assert.deepEqual(readdirSync(out), ['exec-1-image-1.png']);
    assert.deepEqual(readFileSync(path.join(out, 'exec-1-image-1.png')), pngBytes(640, 480));
    assert.doesNotMatch(r.stdout, /iVBOR/, 'no base64 on the terminal');

    // A continued conversation numbers its executions on from the earlier ones.
    const id = /\[(c_[A-Za-z0-9_]+)\]/.exec(r.stderr)?.[1];
    server.push(hostedTurn());
    const again = await runCli(['chat', 'Again', '--continue', id!, '--base-url', server.url, '--storage', storage, '--outputs', out], {
      OPENAI_API_KEY: 'sk-test',
    });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(readdirSync(out).sort(), ['exec-1-image-1.png', 'exec-2-image-1.png']);
  });

  it('without --outputs names the image and the file in order with the text', async () => {
    server = await startServerFor('openai');
    server.push(hostedTurn());
    const r = await runCli(args([]), { OPENAI_API_KEY: 'sk-test' });
    assert.equal(r.code, 0, r.stderr);
    const at = (s: string) => r.stdout.indexOf(s);
    assert.ok(at('[image 640×480, PNG]') >= 0 && at('plotted') > at('[image 640×480, PNG]') && at('[file ') > at('plotted'), r.stdout);
    assert.doesNotMatch(r.stdout, /saved/);
  });

  it('--json prints the outputs as they are; what was saved goes to stderr', async () => {
    server = await startServerFor('openai');
    server.push(hostedTurn());
    const r = await runCli(args(['--outputs', out, '--json']), { OPENAI_API_KEY: 'sk-test' });
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeActEvent);
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call');
    assert.ok(done && done.type === 'response.output_item.done' && done.item.type === 'code_interpreter_call');
    assert.deepEqual(
      done.item.outputs.map((o) => o.type),
      ['image', 'logs', 'file'],
    );
    assert.equal((done.item.outputs[0] as { url: string }).url, `data:image/png;base64,${pngBase64(640, 480)}`);
    assert.ok(r.stderr.includes(`saved 1 image to ${out}: exec-1-image-1.png`), r.stderr);
  });

  it("saves Gemini's inline images and files", async () => {
    server = await startServerFor('gemini');
    server.push(
      turn()
        .code({ code: 'df.to_csv("t.csv")', stdout: 'ok\n', images: [pngBase64(32, 16)] })
        .raw({ inlineData: { mimeType: 'text/csv', data: Buffer.from('a,b\n1,2\n').toString('base64') } })
        .text('Done.'),
    );
    const r = await runCli(
      [
        'chat',
        'Save it',
        '--provider',
        'gemini',
        '--model',
        'gemini-3-flash-preview',
        '--mode',
        'hosted',
        '--base-url',
        server.url,
        '--storage',
        storage,
        '--outputs',
        out,
      ],
      { GEMINI_API_KEY: 'g-test' },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(`saved 1 image and 1 file to ${out}: exec-1-image-1.png, exec-1-file-1.csv`), r.stdout);
    assert.deepEqual(readFileSync(path.join(out, 'exec-1-image-1.png')), pngBytes(32, 16));
    assert.equal(readFileSync(path.join(out, 'exec-1-file-1.csv'), 'utf8'), 'a,b\n1,2\n');
  });

  it('--outputs on a file (not a folder) is a usage error, before any request', async () => {
    server = await startServerFor('openai');
    const r = await runCli(args(['--outputs', path.join(ROOT_FILE)]), { OPENAI_API_KEY: 'sk-test' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--outputs .* is not a folder/);
    assert.equal(server.turns.length, 0);
  });
});

const ROOT_FILE = path.resolve(__dirname, '../../package.json');
