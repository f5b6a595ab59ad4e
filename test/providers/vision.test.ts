/**
 * The images an execution showed go back to a model that sees them, inside the tool result, in each
 * provider's own shape, through the official SDKs (asserted on the request body at the loopback wire);
 * the budget of a request keeps the newest ones and turns the older ones into a short text; a model that
 * cannot see images is told in text what the user was shown. A first-party model sees images unless the
 * catalogue lists it as text-only (a new name does from its first day); a local server's, by its setting.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { base64Bytes } from '../../src/common/displays';
import type { AttachedImage } from '../../src/common/events';
import { modelSeesImages } from '../../src/core/providers/shared/catalog';
import { estimateTokens } from '../../src/core/providers/openai/openaiChat';
import { DEFAULT_IMAGE_BUDGET, type ConversationItem, type ImageBudget, type ProviderId } from '../../src/core/providers/shared/types';
import { SETTINGS } from '../../src/core/config/keys';
import { EXECUTE_TOOL_CODE, providerFor, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { replay, turn, type RawResponse } from '../support/wire/turn';
import { cassetteResponse, fixturesDir, loadCassette, parseSse } from '../support/wire/cassette';
import { attached, executionTurn, makeImages } from '../support/images';

type Json = Record<string, any>;

/** 8 PNGs, 11×7 … 18×7, two per execution over 4 executions. */
const SIZES = [11, 12, 13, 14, 15, 16, 17, 18].map((width) => ({ width, height: 7 }));
let DATA: string[] = [];

function conversation(): ConversationItem[] {
  const images = (n: number): AttachedImage[] => [0, 1].map((k) => attached(DATA[2 * (n - 1) + k], SIZES[2 * (n - 1) + k].width, 7, n));
  return [userMessage('Plot it four times.'), ...[1, 2, 3, 4].flatMap((n) => executionTurn(n, images(n)))];
}

const OUTPUT = (n: number) => `{"status":"completed","execution":${n},"value":null}`;
const STAND_IN = (i: number) => `[image ${SIZES[i].width}×7 from execution ${Math.floor(i / 2) + 1}, no longer attached]`;

/** Each tool result of a request, provider-neutral: its text and the base64 data of its images, in order. */
function toolResults(provider: ProviderId, body: Json): { text: string; images: string[] }[] {
  switch (provider) {
    case 'anthropic':
      return body.messages
        .flatMap((m: Json) => m.content)
        .filter((b: Json) => b.type === 'tool_result')
        .map((b: Json) =>
          typeof b.content === 'string'
            ? { text: b.content, images: [] }
            : {
                text: b.content
                  .filter((c: Json) => c.type === 'text')
                  .map((c: Json) => c.text)
                  .join(''),
                images: b.content.filter((c: Json) => c.type === 'image').map((c: Json) => c.source.data),
              },
        );
    case 'openai':
      return body.input
        .filter((i: Json) => i.type === 'function_call_output')
        .map((i: Json) =>
          typeof i.output === 'string'
            ? { text: i.output, images: [] }
            : {
                text: i.output
                  .filter((p: Json) => p.type === 'input_text')
                  .map((p: Json) => p.text)
                  .join(''),
                images: i.output.filter((p: Json) => p.type === 'input_image').map((p: Json) => p.image_url.replace('data:image/png;base64,', '')),
              },
        );
    case 'gemini':
      return body.contents
        .flatMap((c: Json) => c.parts)
        .filter((p: Json) => p.functionResponse)
        .map((p: Json) => ({ text: p.functionResponse.response.output, images: (p.functionResponse.parts ?? []).map((q: Json) => q.inlineData.data) }));
    case 'openai-compatible': {
      const out: { text: string; images: string[]; call: string }[] = [];
      for (const m of body.messages as Json[]) {
        if (m.role === 'tool') out.push({ text: m.content, images: [], call: m.tool_call_id });
        if (m.role === 'user' && Array.isArray(m.content)) {
          let target: { images: string[] } | undefined;
          for (const p of m.content) {
            if (p.type === 'text') target = out.find((r) => p.text.includes(`tool call ${r.call})`));
            else target!.images.push(p.image_url.url.replace('data:image/png;base64,', ''));
          }
        }
      }
      return out.map(({ text, images }) => ({ text, images }));
    }
  }
}

const VISION_MODEL: Record<ProviderId, string> = {
  openai: 'gpt-5',
  anthropic: 'claude-sonnet-4-6',
  gemini: 'gemini-3-flash-preview',
  'openai-compatible': 'qwen2.5vl:7b',
};

describe('providers: images in tool results (vision)', () => {
  let server: WireServer;
  before(() => {
    DATA = makeImages(SIZES);
  });
  afterEach(async () => {
    await server?.close();
  });

  async function send(provider: ProviderId, history: ConversationItem[], images: ImageBudget, model = VISION_MODEL[provider], extra: Json = {}): Promise<Json> {
    server = await startServerFor(provider);
    server.push(turn().text('The plot looks right.'));
    const p = await providerFor(provider, server, provider === 'openai-compatible' ? { visionModels: ['qwen2.5vl:7b'], ...extra } : extra);
    const { rec } = await runTurn(p, { history, tools: [EXECUTE_TOOL_CODE], images }, model);
    assert.equal(rec.text(), 'The plot looks right.');
    return server.turns[0].body;
  }

  for (const provider of ['anthropic', 'openai', 'gemini', 'openai-compatible'] as ProviderId[]) {
    it(`${provider}: 8 images over 4 executions, maxImages 6: the 6 newest go in the tool results, the 2 oldest become stand-ins`, async () => {
      const body = await send(provider, conversation(), { maxImages: 6, maxBytes: 8 * 1024 * 1024 });
      assert.deepEqual(toolResults(provider, body), [
        { text: `${OUTPUT(1)}\n${STAND_IN(0)}\n${STAND_IN(1)}`, images: [] },
        { text: OUTPUT(2), images: [DATA[2], DATA[3]] },
        { text: OUTPUT(3), images: [DATA[4], DATA[5]] },
        { text: OUTPUT(4), images: [DATA[6], DATA[7]] },
      ]);
    });

    it(`${provider}: the byte cap keeps the newest images that fit, also inside one execution`, async () => {
      // Room for the 3 newest images and not one more.
      const maxBytes = base64Bytes(DATA[7]) + base64Bytes(DATA[6]) + base64Bytes(DATA[5]) + base64Bytes(DATA[4]) - 1;
      const body = await send(provider, conversation(), { maxImages: 6, maxBytes });
      assert.deepEqual(toolResults(provider, body), [
        { text: `${OUTPUT(1)}\n${STAND_IN(0)}\n${STAND_IN(1)}`, images: [] },
        { text: `${OUTPUT(2)}\n${STAND_IN(2)}\n${STAND_IN(3)}`, images: [] },
        { text: `${OUTPUT(3)}\n${STAND_IN(4)}`, images: [DATA[5]] },
        { text: OUTPUT(4), images: [DATA[6], DATA[7]] },
      ]);
    });
  }

  it('a first-party model newer than the catalogue gets the images; the same name on an OpenAI-compatible server without the setting does not', async () => {
    const [call, out] = executionTurn(1, [attached(DATA[0], 11, 7, 1)]);
    const budget = { maxImages: 6, maxBytes: 1e7 };
    for (const [provider, model] of [
      ['openai', 'gpt-7'],
      ['anthropic', 'claude-opus-9'],
      ['gemini', 'gemini-4-pro'],
    ] as const) {
      const body = await send(provider, [userMessage('plot'), call, out], budget, model);
      assert.deepEqual(toolResults(provider, body), [{ text: OUTPUT(1), images: [DATA[0]] }], `${provider} ${model}`);
      await server.close();
    }
    const local = await send('openai-compatible', [userMessage('plot'), call, out], budget, 'gpt-7');
    assert.deepEqual(
      toolResults('openai-compatible', local).map((r) => r.images),
      [[]],
    );
  });

  it('anthropic: tool_result content is the text block, then base64 image blocks', async () => {
    const [call, out] = executionTurn(1, [attached(DATA[0], 11, 7, 1)]);
    const body = await send('anthropic', [userMessage('plot'), call, out], { maxImages: 6, maxBytes: 1e7 });
    assert.deepEqual(body.messages[2], {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_1',
          content: [
            { type: 'text', text: OUTPUT(1) },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: DATA[0] } },
          ],
        },
      ],
    });
  });

  it('openai: function_call_output output is a list of input_text and input_image (data URL) parts', async () => {
    const [call, out] = executionTurn(1, [attached(DATA[0], 11, 7, 1)]);
    const body = await send('openai', [userMessage('plot'), call, out], { maxImages: 6, maxBytes: 1e7 });
    assert.deepEqual(body.input.at(-1), {
      type: 'function_call_output',
      call_id: 'call_1',
      output: [
        { type: 'input_text', text: OUTPUT(1) },
        { type: 'input_image', image_url: `data:image/png;base64,${DATA[0]}`, detail: 'auto' },
      ],
    });
  });

  it('gemini 3: the images are inline data parts of the functionResponse; gemini 2.5: inline parts after the responses of the user turn', async () => {
    const history = [userMessage('plot'), ...executionTurn(1, [attached(DATA[0], 11, 7, 1)]), ...executionTurn(2, [attached(DATA[1], 12, 7, 2)])];
    const three = await send('gemini', history, { maxImages: 6, maxBytes: 1e7 });
    const responses = three.contents.filter((c: Json) => c.parts.some((p: Json) => p.functionResponse));
    assert.deepEqual(
      responses.flatMap((c: Json) => c.parts),
      [
        { functionResponse: { name: 'execute_tool_code', response: { output: OUTPUT(1) }, parts: [{ inlineData: { mimeType: 'image/png', data: DATA[0] } }] } },
        { functionResponse: { name: 'execute_tool_code', response: { output: OUTPUT(2) }, parts: [{ inlineData: { mimeType: 'image/png', data: DATA[1] } }] } },
      ],
    );
    await server.close();
    // Parallel calls of one turn: both responses first, then the images, in one user turn.
    const parallel: ConversationItem[] = [userMessage('plot'), history[1], history[3], history[2], history[4]];
    const older = await send('gemini', parallel, { maxImages: 6, maxBytes: 1e7 }, 'gemini-2.5-flash');
    assert.deepEqual(older.contents.at(-1), {
      role: 'user',
      parts: [
        { functionResponse: { name: 'execute_tool_code', response: { output: OUTPUT(1) } } },
        { functionResponse: { name: 'execute_tool_code', response: { output: OUTPUT(2) } } },
        { inlineData: { mimeType: 'image/png', data: DATA[0] } },
        { inlineData: { mimeType: 'image/png', data: DATA[1] } },
      ],
    });
  });

  it('openai-compatible: images only for a model the setting marks as seeing them, in one user message after the run of tool messages', async () => {
    const parallel: ConversationItem[] = [
      userMessage('plot'),
      ...[1, 2].map((n) => executionTurn(n, [attached(DATA[n - 1], SIZES[n - 1].width, 7, n)])).flatMap(([c]) => [c]),
      ...[1, 2].map((n) => executionTurn(n, [attached(DATA[n - 1], SIZES[n - 1].width, 7, n)])[1]),
    ];
    const marked = await send('openai-compatible', parallel, { maxImages: 6, maxBytes: 1e7 });
    assert.deepEqual(marked.messages.slice(2), [
      { role: 'tool', tool_call_id: 'call_1', content: OUTPUT(1) },
      { role: 'tool', tool_call_id: 'call_2', content: OUTPUT(2) },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The image execution 1 showed (the result of tool call call_1):' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${DATA[0]}` } },
          { type: 'text', text: 'The image execution 2 showed (the result of tool call call_2):' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${DATA[1]}` } },
        ],
      },
    ]);
    await server.close();
    // "*" marks every model.
    const star = await send('openai-compatible', parallel, { maxImages: 6, maxBytes: 1e7 }, 'llava:13b', { visionModels: ['*'] });
    assert.equal(star.messages.at(-1).role, 'user');
    assert.equal(star.messages.at(-1).content.filter((p: Json) => p.type === 'image_url').length, 2);
    await server.close();
    // Off by default: the model is told in text, and no image is sent.
    const plain = await send('openai-compatible', parallel, { maxImages: 6, maxBytes: 1e7 }, 'qwen2.5-coder:7b', { visionModels: [] });
    assert.deepEqual(plain.messages.slice(2), [
      { role: 'tool', tool_call_id: 'call_1', content: `${OUTPUT(1)}\n[1 image was shown to the user: 11×7 PNG; this model cannot see images]` },
      { role: 'tool', tool_call_id: 'call_2', content: `${OUTPUT(2)}\n[1 image was shown to the user: 12×7 PNG; this model cannot see images]` },
    ]);
    assert.ok(!JSON.stringify(plain).includes('base64'));
  });

  for (const [provider, model] of [
    ['openai', 'gpt-3.5-turbo'],
    ['anthropic', 'claude-2.1'],
    ['gemini', 'gemini-1.0-pro'],
    ['openai', 'o3-mini'],
  ] as [ProviderId, string][]) {
    it(`${provider} ${model} (no vision): no image part, the tool result says what the user was shown`, async () => {
      const body = await send(provider, conversation(), { maxImages: 6, maxBytes: 1e7 }, model);
      assert.ok(!JSON.stringify(body).includes(DATA[7].slice(0, 40)), 'no image data in the request');
      assert.deepEqual(
        toolResults(provider, body).map((r) => r.text),
        [1, 2, 3, 4].map(
          (n) =>
            `${OUTPUT(n)}\n[2 images were shown to the user: ${SIZES[2 * n - 2].width}×7 PNG, ${SIZES[2 * n - 1].width}×7 PNG; this model cannot see images]`,
        ),
      );
    });
  }

  it('maxImages 0 sends none; an unknown or broken image in a saved transcript is left out', async () => {
    const none = await send('anthropic', conversation(), { maxImages: 0, maxBytes: 1e7 });
    assert.deepEqual(
      toolResults('anthropic', none).map((r) => r.images.length),
      [0, 0, 0, 0],
    );
    assert.match(toolResults('anthropic', none)[3].text, /\[image 18×7 from execution 4, no longer attached\]$/);
    await server.close();
    const [call, out] = executionTurn(1, [
      { mime_type: 'image/svg+xml', data: '<svg/>', source: 'execution 1' },
      { mime_type: 'image/png', data: '', source: 'x' },
      { mime_type: 'image/png', data: '"},{"evil":1', source: 'x' },
      null as unknown as AttachedImage,
      attached(DATA[0], 11, 7, 1),
    ]);
    const body = await send('anthropic', [userMessage('plot'), call, out], { maxImages: 6, maxBytes: 1e7 });
    assert.deepEqual(toolResults('anthropic', body), [{ text: OUTPUT(1), images: [DATA[0]] }]);
  });

  it("anthropic: an image over the API's 5 MB is never attached (the request would fail), and older images still go", async () => {
    const huge = attached('A'.repeat(5 * 1024 * 1024 + 4), 4000, 3000, 2);
    const history = [userMessage('plot'), ...executionTurn(1, [attached(DATA[0], 11, 7, 1)]), ...executionTurn(2, [huge])];
    const body = await send('anthropic', history, { maxImages: 6, maxBytes: 64 * 1024 * 1024 });
    assert.deepEqual(toolResults('anthropic', body), [
      { text: OUTPUT(1), images: [DATA[0]] },
      { text: `${OUTPUT(2)}\n[image 4000×3000 from execution 2, too large to attach for this provider]`, images: [] },
    ]);
  });
});

describe('providers: images after a recorded model turn (../shared/fixtures/providers)', () => {
  let server: WireServer | undefined;
  before(function () {
    if (!fs.existsSync(fixturesDir())) {
      if (process.env.CI) throw new Error(`${fixturesDir()} is missing: CI must run the recorded round trips.`);
      this.skip();
    }
    DATA = DATA.length ? DATA : makeImages(SIZES);
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** The recorded first turn, then our result with an image, then the recorded (or scripted) second turn. */
  async function roundTrip(
    provider: ProviderId,
    first: RawResponse,
    second: RawResponse | ReturnType<typeof turn>,
    model: string,
    tools: Json[],
    extra: Json = {},
  ): Promise<Json> {
    server = await startServerFor(provider);
    server.push(first, second);
    const p = await providerFor(provider, server, extra);
    const history: ConversationItem[] = [userMessage('Call the tool, then plot.')];
    const t1 = await runTurn(p, { history, tools: tools as any }, model);
    assert.equal(t1.result.functionCalls.length, 1);
    const call = t1.result.functionCalls[0];
    const output: ConversationItem = {
      type: 'function_call_output',
      item_id: call.item_id,
      call_id: call.call_id,
      name: call.name,
      output: OUTPUT(1),
      images: [attached(DATA[0], 11, 7, 1)],
    };
    await runTurn(p, { history: [...history, ...t1.result.items, output], tools: tools as any, images: { maxImages: 6, maxBytes: 1e7 } }, model);
    return server.turns[1].body;
  }
  const cassette = (name: string) => loadCassette(path.join(fixturesDir(), name));
  const tool = (name: string) => [{ name, description: 'A tool', parameters: { type: 'object', properties: {} } }];

  it('03 OpenAI Responses (gpt-5.5 recorded): the replayed items, then function_call_output with input_image', async () => {
    const [i0, i1] = cassette('03-openai-responses--function_call_roundtrip_stream.pydantic-ai.yaml');
    const body = await roundTrip('openai', cassetteResponse(i0), cassetteResponse(i1), 'gpt-5.5', tool('get_capital'));
    assert.ok(
      body.input.some((x: Json) => x.type === 'reasoning' && x.encrypted_content),
      'the recorded reasoning goes back',
    );
    assert.deepEqual(body.input.at(-1).output, [
      { type: 'input_text', text: OUTPUT(1) },
      { type: 'input_image', image_url: `data:image/png;base64,${DATA[0]}`, detail: 'auto' },
    ]);
  });

  it('04 Chat Completions (gpt-4o-mini recorded, marked as seeing images): the tool message, then a user message with image_url', async () => {
    const [i0, i1] = cassette('04-openai-chat-completions--tool_calls_roundtrip_stream.pydantic-ai.yaml');
    const name = parseSse(i0.response.body)
      .map((e) => (e.data === '[DONE]' ? {} : JSON.parse(e.data)))
      .find((c: Json) => c.choices?.[0]?.delta?.tool_calls)!.choices[0].delta.tool_calls[0].function.name;
    const body = await roundTrip('openai-compatible', cassetteResponse(i0), cassetteResponse(i1), 'gpt-4o-mini', tool(name), { visionModels: ['gpt-4o-mini'] });
    assert.deepEqual(
      body.messages.slice(-2).map((m: Json) => m.role),
      ['tool', 'user'],
    );
    assert.equal(body.messages.at(-1).content[1].image_url.url, `data:image/png;base64,${DATA[0]}`);
  });

  it('09 Anthropic client tool_use (recorded): tool_result with the image block, after the replayed tool_use', async () => {
    const raw = fs.readFileSync(path.join(fixturesDir(), '09-anthropic--client_tool_use_input_json_delta.anthropic-sdk-ts.sse.txt'), 'utf8');
    const name = parseSse(raw)
      .map((e) => JSON.parse(e.data))
      .find((e: Json) => e.type === 'content_block_start' && e.content_block.type === 'tool_use')!.content_block.name;
    const body = await roundTrip(
      'anthropic',
      replay(raw, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } }),
      turn().text('Sunny.'),
      'claude-sonnet-4-6',
      tool(name),
    );
    assert.equal(body.messages[1].content.at(-1).type, 'tool_use');
    assert.deepEqual(body.messages[2].content[0].content, [
      { type: 'text', text: OUTPUT(1) },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: DATA[0] } },
    ]);
  });

  it('12 Gemini 3 (recorded, thoughtSignature): the functionCall part echoed, the functionResponse with inline data parts', async () => {
    const [i0, i1] = cassette('12-gemini--functionCall_roundtrip_stream.pydantic-ai.yaml');
    const call = parseSse(i0.response.body)
      .map((e) => JSON.parse(e.data))
      .flatMap((c: Json) => c.candidates?.[0]?.content?.parts ?? [])
      .find((q: Json) => q.functionCall);
    const body = await roundTrip('gemini', cassetteResponse(i0), cassetteResponse(i1), 'gemini-3-pro-preview', tool(call.functionCall.name));
    assert.deepEqual(
      body.contents[1].parts.find((q: Json) => q.functionCall),
      call,
    );
    assert.deepEqual(body.contents[2].parts[0].functionResponse.parts, [{ inlineData: { mimeType: 'image/png', data: DATA[0] } }]);
  });
});

describe('providers: which models see images (the catalogue)', () => {
  const cases: [ProviderId, string, boolean][] = [
    ['openai', 'gpt-4o', true],
    ['openai', 'gpt-4o-mini-2024-07-18', true],
    ['openai', 'gpt-4.1-nano', true],
    ['openai', 'gpt-5', true],
    ['openai', 'gpt-5-mini', true],
    ['openai', 'o3', true],
    ['openai', 'o4-mini', true],
    ['openai', 'ft:gpt-4o-mini-2024-07-18:org::abc', true],
    ['openai', 'o3-mini', false],
    ['openai', 'o1-mini', false],
    ['openai', 'gpt-3.5-turbo', false],
    ['openai', 'gpt-4', false],
    ['openai', 'gpt-4o-audio-preview', false],
    ['openai', 'gpt-4o-realtime-preview', false],
    ['anthropic', 'claude-sonnet-4-6', true],
    ['anthropic', 'claude-3-haiku-20240307', true],
    ['anthropic', 'claude-opus-4-1', true],
    ['anthropic', 'claude-2.1', false],
    ['anthropic', 'claude-3-5-sonnet-20241022', true],
    ['anthropic', 'claude-instant-1.2', false],
    ['gemini', 'gemini-3-flash-preview', true],
    ['gemini', 'gemini-2.5-pro', true],
    ['gemini', 'models/gemini-2.0-flash', true],
    ['gemini', 'gemini-1.5-flash', true],
    ['gemini', 'gemini-pro-vision', true],
    ['gemini', 'gemini-1.0-pro', false],
    ['gemini', 'gemini-embedding-001', false],
    ['openai-compatible', 'llava:13b', false],
  ];
  for (const [provider, model, sees] of cases) {
    it(`${provider} ${model}: ${sees ? 'sees images' : 'text only'}`, () => assert.equal(modelSeesImages(provider, model), sees));
  }

  it('a first-party model the catalogue has not heard of sees images; one it lists as text-only does not; a local server needs the setting', () => {
    const unknown: [ProviderId, string][] = [
      ['openai', 'gpt-7'],
      ['openai', 'gpt-6.5-mini-2027-03-01'],
      ['openai', 'o9-pro'],
      ['anthropic', 'claude-opus-9'],
      ['anthropic', 'claude-sonnet-5-2'],
      ['gemini', 'gemini-4-pro'],
      ['gemini', 'models/gemini-5-flash-exp'],
    ];
    for (const [provider, model] of unknown) assert.equal(modelSeesImages(provider, model), true, `${provider} ${model}`);
    const listed: [ProviderId, string][] = [
      ['openai', 'o3-mini-2025-01-31'],
      ['openai', 'gpt-4-0613'],
      ['openai', 'gpt-7-realtime'],
      ['openai', 'text-embedding-3-large'],
      ['anthropic', 'claude-2'],
      ['gemini', 'text-embedding-004'],
    ];
    for (const [provider, model] of listed) assert.equal(modelSeesImages(provider, model), false, `${provider} ${model}`);
    // A model of an OpenAI-compatible server, whatever its name (a first-party one too): only by the setting.
    for (const model of ['gpt-7', 'claude-opus-9', 'gemini-4-pro', 'qwen2.5vl:7b']) {
      assert.equal(modelSeesImages('openai-compatible', model), false, model);
      assert.equal(modelSeesImages('openai-compatible', model, [model]), true, model);
    }
  });

  it('openai-compatible: only the models the setting lists, or all with "*"', () => {
    assert.equal(modelSeesImages('openai-compatible', 'llava:13b', ['qwen2.5vl:7b', 'llava:13b']), true);
    assert.equal(modelSeesImages('openai-compatible', 'LLaVA:13b', ['llava:13b']), true);
    assert.equal(modelSeesImages('openai-compatible', 'qwen2.5-coder:7b', ['llava:13b']), false);
    assert.equal(modelSeesImages('openai-compatible', 'anything', ['*']), true);
  });

  it("the default budget is the settings' default", () => {
    assert.deepEqual(DEFAULT_IMAGE_BUDGET, { maxImages: SETTINGS['vision.maxImages'].default, maxBytes: SETTINGS['vision.maxMB'].default * 1024 * 1024 });
  });

  it('openai-compatible: the context-window estimate counts an image as about 1000 tokens, not its base64 length', () => {
    const big = 'A'.repeat(400_000);
    const withImage = estimateTokens({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${big}` } },
          ],
        },
      ],
    });
    assert.ok(withImage > 1000 && withImage < 1100, `estimate ${withImage}`);
  });
});
