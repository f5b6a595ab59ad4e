/**
 * The model sees what the user sees: the agent loop keeps the images an execution showed with its result
 * (numbered "execution N" across the conversation), the result text lists the displays as compact text
 * (tables as their summary, never HTML) and the files, the tool description says where displays go, the
 * text protocol carries the images in its Observation, and the images survive the transcript. Real SDK
 * clients against the loopback wire servers; the runtime hands back execution items built by hand with
 * real PNGs (as the local and Jupyter runtimes report them).
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem, CodeOutput, FunctionCallOutputItem } from '../../src/common/events';
import { AgentLoop, type AgentOptions } from '../../src/core/agent/agent';
import { executionImages, executionSummary, SUMMARY_MAX_CHARS } from '../../src/core/agent/executionResult';
import { OBSERVATION, toTextHistory } from '../../src/core/agent/textHistory';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ConversationItem, ProviderConfig, ProviderId } from '../../src/core/providers/shared/types';
import { noSessions, type ExecuteOptions, type ExecuteRequest, type Runtime } from '../../src/core/runtime/types';
import { attached, execItem, executionTurn, makeImages, pngDisplay, svgDisplay, tableDisplay } from '../support/images';
import { pngDeclaring } from '../support/png';
import { chatTurnsWith, DEFAULT_MODELS, providerFor, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

type Json = Record<string, any>;

/** A runtime whose "Python" is a table of outputs by code, reported as the real runtimes report an execution. */
class DisplayRuntime implements Runtime {
  readonly kind = 'local' as const;
  readonly sessions = { ...noSessions, persist: true };
  constructor(readonly outputs: Record<string, CodeOutput[]>) {}
  async execute(request: ExecuteRequest, options?: ExecuteOptions): Promise<CodeInterpreterCallItem> {
    const id = request.itemId ?? 'exec_x';
    options?.onEvent?.({ type: 'response.code_interpreter_call_code.done', item_id: id, code: request.code });
    const outputs = this.outputs[request.code];
    if (!outputs) throw new Error(`no fixture for ${request.code}`);
    const item = execItem(outputs, { id, code: request.code });
    options?.onEvent?.({ type: 'response.code_interpreter_call.completed', item_id: id });
    options?.onEvent?.({ type: 'response.output_item.done', item });
    return item;
  }
  async dispose(): Promise<void> {}
}

let PNG: string[] = [];
/** A PNG of a few hundred bytes whose header declares 40000×40000: a pixel bomb. */
const BOMB = pngDeclaring(40000, 40000).toString('base64');
const BOMB_NOTE =
  /\[codeact: a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/;

describe('agent: what the model reads and sees of an execution', function () {
  this.timeout(60_000);
  before(() => {
    PNG = makeImages([
      { width: 64, height: 48 },
      { width: 32, height: 24 },
      { width: 20, height: 10 },
      { width: 8, height: 8, format: 'JPEG' },
    ]);
  });

  describe('executionSummary', () => {
    it('lists the displays in order as text (a table as its summary, never HTML), the files with their size and note, and the execution', () => {
      const item = execItem([
        { type: 'logs', logs: 'rows: 2\n' },
        pngDisplay(PNG[0]),
        tableDisplay(),
        svgDisplay(),
        { type: 'display', data: { 'text/markdown': '**done**' } },
        { type: 'file', filename: 'out.csv', path: '/tmp/s/out.csv', mime_type: 'text/csv', bytes: 1234 },
        { type: 'file', filename: 'big.bin', bytes: 99_000_000, note: 'over the 16 MB cap: not copied out' },
      ]);
      const s = JSON.parse(executionSummary(item, { execution: 3 }));
      assert.deepEqual(s, {
        status: 'completed',
        execution: 3,
        value: null,
        stdout: 'rows: 2\n',
        displays: ['[image 64×48, PNG]', tableDisplay().summary, '[SVG image]', '**done**'],
        files: [
          { name: 'out.csv', bytes: 1234 },
          { name: 'big.bin', bytes: 99_000_000, note: 'over the 16 MB cap: not copied out' },
        ],
      });
      assert.ok(!executionSummary(item).includes('<table') && !executionSummary(item).includes('<script'));
    });

    it('stays bounded: 10,000 tiny displays, a huge markdown display, 500 files', () => {
      const outputs: CodeOutput[] = [{ type: 'display', data: { 'text/markdown': 'x'.repeat(2_000_000) } }];
      for (let i = 0; i < 10_000; i++) outputs.push({ type: 'display', data: { 'text/plain': `d${i}` } });
      for (let i = 0; i < 500; i++) outputs.push({ type: 'file', filename: `f${i}.txt`, bytes: i });
      const text = executionSummary(execItem(outputs), { execution: 1 });
      assert.ok(text.length < SUMMARY_MAX_CHARS, `${text.length} characters`);
      const s = JSON.parse(text);
      assert.ok(s.displays[0].length < 5000);
      assert.match(s.displays.at(-1), /^\[\d,?\d* more displays shown to the user, not listed here\]$/);
      assert.equal(s.files.length, 51);
      assert.equal(s.files.at(-1), '[450 more files]');
    });

    it('executionImages: raster displays only, with their size, the last ones within the budget', () => {
      const item = execItem([
        pngDisplay(PNG[0]),
        svgDisplay(),
        tableDisplay(),
        { type: 'display', data: { 'image/jpeg': PNG[3] } },
        pngDisplay(PNG[1]),
        { type: 'image', url: 'data:image/png;base64,AAAA' },
      ]);
      assert.deepEqual(executionImages(item, 'execution 2'), [
        { mime_type: 'image/png', data: PNG[0], width: 64, height: 48, source: 'execution 2' },
        { mime_type: 'image/jpeg', data: PNG[3], width: 8, height: 8, source: 'execution 2' },
        { mime_type: 'image/png', data: PNG[1], width: 32, height: 24, source: 'execution 2' },
      ]);
      assert.deepEqual(
        executionImages(item, 'execution 2', { maxImages: 2, maxBytes: 1e7 }).map((i) => i.data),
        [PNG[3], PNG[1]],
      );
      assert.deepEqual(executionImages(item, 'execution 2', { maxImages: 0, maxBytes: 1e7 }), []);
    });
  });

  describe('the agent loop', () => {
    let server: WireServer;
    afterEach(() => server?.close());

    const fixtures = (): Record<string, CodeOutput[]> => ({
      'plot_a()': [{ type: 'logs', logs: 'a\n' }, pngDisplay(PNG[0]), tableDisplay(), svgDisplay()],
      'plot_b()': [pngDisplay(PNG[1]), pngDisplay(PNG[2])],
      'plot_c()': [pngDisplay(PNG[2])],
      'bomb()': [pngDisplay(BOMB), pngDisplay(PNG[0])],
    });

    async function agentFor(provider: ProviderId, extra: Partial<AgentOptions> = {}, config: Partial<ProviderConfig> = {}, model = DEFAULT_MODELS[provider]) {
      server = await startServerFor(provider);
      const events: CodeActEvent[] = [];
      const agent = new AgentLoop({
        provider: await providerFor(provider, server, config),
        model,
        runtime: new DisplayRuntime(fixtures()),
        gateway: new ToolGateway([]),
        onEvent: (e) => events.push(e),
        retry: { baseDelayMs: 10, maxDelayMs: 50 },
        ...extra,
      });
      return { agent, events };
    }

    it('anthropic: parallel calls keep their images as "execution 1" and "execution 2", sent as image blocks in the tool results; the next run counts on', async () => {
      const { agent, events } = await agentFor('anthropic');
      server.push(
        turn().call('execute_tool_code', { code: 'plot_a()' }, { id: 'toolu_A' }).call('execute_tool_code', { code: 'plot_b()' }, { id: 'toolu_B' }),
        turn().text('Two plots.'),
      );
      const result = await agent.run([], 'Plot a and b.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      // The tool description says where displays go, and that this model sees them.
      const description = server.turns[0].body.tools[0].description as string;
      assert.match(description, /`display\(obj\)`/);
      assert.match(description, /the images themselves are attached to the result/);
      assert.match(description, /Files the code writes in the working directory are given to the user/);

      const outputs = result.items.filter((i): i is FunctionCallOutputItem => i.type === 'function_call_output');
      assert.deepEqual(
        outputs.map((o) => o.images),
        [
          [{ mime_type: 'image/png', data: PNG[0], width: 64, height: 48, source: 'execution 1' }],
          [
            { mime_type: 'image/png', data: PNG[1], width: 32, height: 24, source: 'execution 2' },
            { mime_type: 'image/png', data: PNG[2], width: 20, height: 10, source: 'execution 2' },
          ],
        ],
      );
      // The events do not carry them again (the execution item has the displays).
      const emitted = events
        .filter((e) => e.type === 'response.output_item.done' && e.item.type === 'function_call_output')
        .map((e) => (e as { item: FunctionCallOutputItem }).item);
      assert.equal(emitted.length, 2);
      assert.ok(emitted.every((o) => o.images === undefined));

      const results = server.turns[1].body.messages.at(-1).content as Json[];
      assert.deepEqual(
        results.map((r) => [r.tool_use_id, r.content.map((c: Json) => c.type)]),
        [
          ['toolu_A', ['text', 'image']],
          ['toolu_B', ['text', 'image', 'image']],
        ],
      );
      const textA = JSON.parse(results[0].content[0].text);
      assert.deepEqual(textA.displays, ['[image 64×48, PNG]', tableDisplay().summary, '[SVG image]']);
      assert.equal(textA.execution, 1);
      assert.ok(!results[0].content[0].text.includes('<table'));
      assert.deepEqual(
        results[1].content.slice(1).map((c: Json) => c.source),
        [
          { type: 'base64', media_type: 'image/png', data: PNG[1] },
          { type: 'base64', media_type: 'image/png', data: PNG[2] },
        ],
      );

      // The conversation goes on: the next execution is number 3.
      server.push(turn().call('execute_tool_code', { code: 'plot_c()' }, { id: 'toolu_C' }), turn().text('Three.'));
      const again = await agent.run(result.items, 'Once more.');
      const third = again.items.find((i): i is FunctionCallOutputItem => i.type === 'function_call_output')!;
      assert.equal(third.images?.[0].source, 'execution 3');
      assert.equal(JSON.parse(third.output).execution, 3);
    });

    it('the budget of the settings bounds each request: the newest images go, older ones are stand-ins', async () => {
      const { agent } = await agentFor('openai', { images: { maxImages: 2, maxBytes: 1e7 } });
      server.push(turn().call('execute_tool_code', { code: 'plot_a()' }), turn().call('execute_tool_code', { code: 'plot_b()' }), turn().text('done'));
      const result = await agent.run([], 'plots');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const outs = server.turns[2].body.input.filter((i: Json) => i.type === 'function_call_output');
      assert.equal(outs[0].output.endsWith('\n[image 64×48 from execution 1, no longer attached]'), true, outs[0].output);
      assert.deepEqual(
        outs[1].output.map((p: Json) => p.type),
        ['input_text', 'input_image', 'input_image'],
      );
    });

    it('a pixel bomb reaches the request as the note, never as the image: the tool result says why, the normal image is attached', async () => {
      const { agent } = await agentFor('anthropic');
      server.push(turn().call('execute_tool_code', { code: 'bomb()' }, { id: 'toolu_X' }), turn().text('ok'));
      const result = await agent.run([], 'plot');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const body = server.turns[1].body;
      const tool = (body.messages.at(-1).content as Json[])[0];
      assert.deepEqual(
        tool.content.map((c: Json) => c.type),
        ['text', 'image'],
      );
      const text = JSON.parse(tool.content[0].text);
      assert.match(text.displays[0], BOMB_NOTE);
      assert.equal(text.displays[1], '[image 64×48, PNG]');
      assert.equal(tool.content[1].source.data, PNG[0]);
      assert.ok(!JSON.stringify(body).includes(BOMB), 'the bomb is nowhere in the request');
    });

    it('a bomb kept in a saved conversation is checked again at each request: a stand-in with the note goes instead', async () => {
      const { agent } = await agentFor('openai');
      const history = executionTurn(1, [attached(BOMB, 640, 480, 1), attached(PNG[1], 32, 24, 1)]);
      server.push(turn().text('ok'));
      const result = await agent.run(history, 'again');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const body = server.turns[0].body;
      const out = (body.input as Json[]).find((i) => i.type === 'function_call_output')!;
      assert.deepEqual(
        out.output.map((p: Json) => p.type),
        ['input_text', 'input_image'],
      );
      assert.match(out.output[0].text, /\n\[image from execution 1, not attached\] \[codeact: a PNG image of 40,000×40,000 pixels/);
      assert.equal(out.output[1].image_url, `data:image/png;base64,${PNG[1]}`);
      assert.ok(!JSON.stringify(body).includes(BOMB), 'the bomb is nowhere in the request');
    });

    it('openai-compatible without the setting: the description and the result say the model cannot see the images', async () => {
      const { agent } = await agentFor('openai-compatible');
      server.push(turn().call('execute_tool_code', { code: 'plot_b()' }), turn().text('ok'));
      await agent.run([], 'plot');
      assert.match(server.turns[0].body.tools[0].function.description, /You cannot see the images yourself/);
      const messages = server.turns[1].body.messages as Json[];
      const last = messages[messages.length - 1];
      assert.equal(last.role, 'tool');
      assert.match(last.content, /\n\[2 images were shown to the user: 32×24 PNG, 20×10 PNG; this model cannot see images\]$/);
    });

    it('text protocol, a vision model: the images ride in the Observation message', async () => {
      const { agent } = await agentFor('anthropic', { protocol: 'text' });
      server.push(turn().text('Plotting.\n\n```python\nplot_a()\n```\n'), turn().text('It shows a line.'));
      const result = await agent.run([], 'plot');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      const last = server.turns[1].body.messages.at(-1);
      assert.equal(last.role, 'user');
      assert.deepEqual(
        last.content.map((c: Json) => c.type),
        ['text', 'image'],
      );
      assert.ok(last.content[0].text.startsWith([OBSERVATION.ran('completed'), OBSERVATION.printed, '│ a', ''].join('\n')), last.content[0].text);
      assert.ok(
        last.content[0].text.includes([OBSERVATION.shown(1), 'Display 1:', '│ [image 64×48, PNG]', 'Display 2:', '│ DataFrame: 2 rows × 2 columns'].join('\n')),
        last.content[0].text,
      );
      assert.deepEqual(last.content[1].source, { type: 'base64', media_type: 'image/png', data: PNG[0] });
    });

    it('text protocol, openai-compatible: image_url parts in the Observation for a vision model, a note otherwise', async () => {
      const { agent } = await agentFor('openai-compatible', { protocol: 'text' }, { visionModels: ['llava:13b'] }, 'llava:13b');
      server.push(turn().text('```python\nplot_b()\n```'), turn().text('ok'));
      await agent.run([], 'plot');
      const obs = server.turns[1].body.messages.at(-1);
      assert.deepEqual(
        obs.content.map((c: Json) => c.type),
        ['text', 'image_url', 'image_url'],
      );
      assert.equal(obs.content[2].image_url.url, `data:image/png;base64,${PNG[2]}`);
      await server.close();
      const plain = await agentFor('openai-compatible', { protocol: 'text' });
      server.push(turn().text('```python\nplot_b()\n```'), turn().text('ok'));
      await plain.agent.run([], 'plot');
      const text = server.turns[1].body.messages.at(-1).content;
      assert.equal(typeof text, 'string');
      assert.ok(text.includes([OBSERVATION.shown(1), 'Display 1:', '│ [image 32×24, PNG]', 'Display 2:', '│ [image 20×10, PNG]'].join('\n')), text);
      assert.ok(!text.includes(OBSERVATION.nothing), 'a run that only showed plots did show something');
      assert.match(text, /\[2 images were shown to the user: 32×24 PNG, 20×10 PNG; this model cannot see images\]$/);
    });
  });

  describe('transcript and settings', () => {
    let server: WireServer;
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-vision-'))));
    afterEach(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("both hosts' chat turn honours the settings (visionModels, maxImages), and images survive the store and --continue", async () => {
      server = await startServerFor('openai-compatible');
      const layers: Record<string, SettingLayers> = {
        provider: { user: 'openai-compatible' },
        model: { user: 'llava:13b' },
        baseURL: { user: server.url },
        'openaiCompatible.visionModels': { user: ['llava:13b'] },
        'vision.maxImages': { user: 1 },
      };
      const config = resolveEngineConfig((k) => layers[k], { trusted: true }).config;
      assert.equal(config.visionMaxImages, 1);
      const store = new TranscriptStore(dir);
      const convo = store.create({ title: 'plots' });
      const runtime = new DisplayRuntime({ 'plot_b()': [pngDisplay(PNG[1]), pngDisplay(PNG[2])], 'plot_a()': [pngDisplay(PNG[0])] });
      const turnIn = chatTurnsWith(config, runtime);
      const chat = (prompt: string, conversation = convo) => turnIn(conversation, prompt);
      server.push(turn().call('execute_tool_code', { code: 'plot_b()' }), turn().text('one'));
      const first = await chat('plot b');
      assert.equal(first.result?.status, 'completed', JSON.stringify(first.error));
      // maxImages 1 also bounds what is kept: the last image of the execution.
      const kept = convo.history.find((i): i is FunctionCallOutputItem & ConversationItem => i.type === 'function_call_output')!;
      assert.deepEqual(
        kept.images?.map((i) => i.data),
        [PNG[2]],
      );
      const body1 = server.turns[1].body;
      assert.equal(body1.messages.at(-1).content.filter((p: Json) => p.type === 'image_url').length, 1);

      // Reopened from disk, as `codeact chat --continue` does: the images are still there, and the next
      // request (maxImages 1) sends the newest image and a stand-in for the older one.
      const reopened = store.open(convo.id);
      assert.deepEqual(reopened.history, convo.history);
      server.push(turn().call('execute_tool_code', { code: 'plot_a()' }), turn().text('two'));
      const second = await chat('plot a', reopened);
      assert.equal(second.result?.status, 'completed', JSON.stringify(second.error));
      const messages = server.turns[3].body.messages as Json[];
      const tools = messages.filter((m) => m.role === 'tool');
      assert.match(tools[0].content, /\n\[image 20×10 from execution 1, no longer attached\]$/);
      assert.equal(JSON.parse(tools[1].content).execution, 2);
      assert.deepEqual(
        messages[messages.length - 1].content.filter((p: Json) => p.type === 'image_url').map((p: Json) => p.image_url.url),
        [`data:image/png;base64,${PNG[0]}`],
      );
    });

    it('toTextHistory keeps the images on the Observation that stands for the result', () => {
      const items: ConversationItem[] = [
        { type: 'message', id: 'u', role: 'user', text: 'plot' },
        { type: 'function_call', id: 'fc', call_id: 'c', name: 'execute_tool_code', arguments: JSON.stringify({ code: 'plot_a()' }) },
        {
          type: 'function_call_output',
          id: 'o',
          item_id: 'fc',
          call_id: 'c',
          name: 'execute_tool_code',
          output: executionSummary(execItem([pngDisplay(PNG[0])]), { execution: 1 }),
          images: [{ mime_type: 'image/png', data: PNG[0], source: 'execution 1' }],
        },
      ];
      const text = toTextHistory(items);
      assert.deepEqual(
        text.map((m) => [m.type, (m as { role?: string }).role, m.images?.length ?? 0]),
        [
          ['message', 'user', 0],
          ['message', 'assistant', 0],
          ['message', 'user', 1],
        ],
      );
    });
  });
});
