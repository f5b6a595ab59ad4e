/**
 * Model streams cannot hang, and a cut is a cut, for every adapter, through the real
 * SDKs at the loopback wire: a server that answers nothing, one that sends its headers and falls silent,
 * one that falls silent mid-stream, one that ends without its final event, a proxy's HTML 502, and the
 * recorded streams of each provider stopped halfway. The bounds are set small here (the settings
 * codeact.modelStream.firstByteTimeoutSeconds / idleTimeoutSeconds); the assertions are about what
 * happens and what the message says, never how long it took. Without the bounds these turns hang (Node's
 * fetch gives up on a silent body after 300 s; the Gemini SDK never does): the suite's timeout fails them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { AgentLoop } from '../../src/core/agent/agent';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ProviderConfig, ProviderId } from '../../src/core/providers/shared/types';
import { DEFAULT_STREAM_BOUNDS } from '../../src/core/providers/shared/watchdog';
import { PROVIDER_MESSAGES, type ProviderError } from '../../src/core/providers/shared/errors';
import { providerInfo } from '../../src/common/providers';
import { runStream } from '../../src/core/providers/shared/runStream';
import { SETTINGS } from '../../src/core/config/keys';
import { providerConfigFrom } from '../../src/core/config/engine';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { cassetteResponse, fixturesDir, loadCassette } from '../support/wire/cassette';
import { DEFAULT_MODELS, providerFor, runFailingTurn, runTurn, startServerFor, userMessage } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, replay, turn } from '../support/wire/turn';
import { retryNote } from '../../src/core/agent/retries';

const PROVIDERS: ProviderId[] = ['openai', 'openai-compatible', 'anthropic', 'gemini'];
const TEXT = 'The quick brown fox jumps over the lazy dog, twice.';
const answer = (): ReturnType<typeof turn> => turn().text(TEXT, { chunkSize: 4 });
/** Frames of `answer()` after which some text has arrived and the final event has not, in every dialect. */
const MID = 8;
/** Frames of `answer()` before its final event(s): Responses `response.completed`; Chat the finish chunk and [DONE]; Anthropic message_delta and message_stop; Gemini the finishReason chunk. */
const BEFORE_FINAL: Record<ProviderId, number> = { openai: 20, 'openai-compatible': 14, anthropic: 17, gemini: 13 };
/** A keep-alive the provider's SDK reads and does not hand on: Anthropic's ping event, an SSE comment for the others. */
const KEEP_ALIVE: Record<ProviderId, string> = {
  openai: ': keep-alive\n\n',
  'openai-compatible': ': keep-alive\n\n',
  anthropic: 'event: ping\ndata: {"type": "ping"}\n\n',
  gemini: ': keep-alive\r\n\r\n',
};
/** nginx's 502 page, as a reverse proxy in front of a model server sends it. */
const NGINX_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n';

/** Small bounds; the one not under test is large, so that only the bound under test can end the turn. */
const IDLE: Partial<ProviderConfig> = { firstByteTimeoutMs: 30_000, idleTimeoutMs: 400 };
const FIRST_BYTE: Partial<ProviderConfig> = { firstByteTimeoutMs: 400, idleTimeoutMs: 30_000 };

/** The count of events a stall message says arrived before the silence. */
function eventsIn(message: string): number {
  return Number(/after its last event \((\d+) events? in\)/.exec(message)?.[1]);
}

function assertNotACut(message: string): void {
  assert.ok(!message.includes(PROVIDER_MESSAGES.connectionCut), 'a stall is not reported as a cut connection');
}

for (const p of PROVIDERS) {
  describe(`providers: streams cannot hang (${p})`, function () {
    // Generous for a busy machine; far below the 300 s (or forever) these took before.
    this.timeout(20_000);
    let server: WireServer;
    beforeEach(async () => {
      server = await startServerFor(p);
    });
    afterEach(async () => {
      await server.close();
    });

    it('headers, then silence: stream_stalled, "the model stopped sending", and the request is closed', async () => {
      server.push(fault.silence());
      const provider = await providerFor(p, server, IDLE);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'stream_stalled', error.message);
      assert.ok(error.message.startsWith(PROVIDER_MESSAGES.headersOnly('0.4 s', providerInfo(p).who)), error.message);
      assert.ok(error.message.endsWith(PROVIDER_MESSAGES.idleFix('0.4 s')), error.message);
      assertNotACut(error.message);
      assert.equal(error.retryable, true);
      assert.equal(error.retryLimit, 1, 'a stall is retried at most once');
      assert.equal(rec.events.length, 0);
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true, 'the server saw the client close the request');
    });

    it('no response at all: stream_stalled after the first-byte bound, naming the server and the setting', async () => {
      server.push(fault.noResponse());
      const provider = await providerFor(p, server, FIRST_BYTE);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'stream_stalled', error.message);
      assert.ok(error.message.startsWith(PROVIDER_MESSAGES.noResponse(`${providerInfo(p).who} at ${server.url}`, '0.4 s')), error.message);
      assert.ok(error.message.includes(server.url), error.message);
      assert.ok(error.message.includes(PROVIDER_MESSAGES.firstByteFix('0.4 s')), error.message);
      assertNotACut(error.message);
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true);
    });

    it('silence mid-stream: stream_stalled after the last event; the text received is kept', async () => {
      server.push(fault.silence(answer(), MID));
      const provider = await providerFor(p, server, IDLE);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'stream_stalled', error.message);
      assert.ok(error.message.startsWith(PROVIDER_MESSAGES.silentAfter('0.4 s', eventsIn(error.message), providerInfo(p).who)), error.message);
      assertNotACut(error.message);
      const got = rec.text();
      assert.ok(got.length > 0 && TEXT.startsWith(got), `kept ${JSON.stringify(got)}`);
      assert.deepEqual(
        error.partial?.items.map((i) => i.type === 'message' && i.text),
        [got],
      );
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true);
    });

    it('a pause within the idle bound, and keep-alives through a longer one, end normally', async () => {
      // The first-byte bound is over long before the pause ends: it must not apply once the response came.
      const provider = await providerFor(p, server, { firstByteTimeoutMs: 300, idleTimeoutMs: 1500 });
      server.push(fault.pause(answer(), MID, 200));
      const short = await runTurn(provider, { history: [userMessage('hi')] });
      assert.equal(short.rec.text(), TEXT);
      // Silent as far as the SDK's events go for 4 s (the idle bound is 1.5 s), but a keep-alive every 100 ms.
      server.push(fault.pause(answer(), MID, 4000, { frame: KEEP_ALIVE[p], everyMs: 100 }));
      const long = await runTurn(provider, { history: [userMessage('hi')] });
      assert.equal(long.rec.text(), TEXT);
      assert.equal(long.result.stopReason, 'end_turn');
    });

    it('a stream that ends cleanly without its final event is a cut, not a final answer', async () => {
      server.push(fault.endEarly(answer(), BEFORE_FINAL[p]));
      const provider = await providerFor(p, server, IDLE);
      const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'stream_cut', error.message);
      assert.ok(error.message.endsWith(PROVIDER_MESSAGES.cut('', providerInfo(p).who)), error.message);
      if (p === 'gemini') assert.match(error.message, /without its final chunk \(no finishReason\)/);
      assert.equal(rec.text(), TEXT);
      assert.equal(rec.ofType('response.completed').length, 0, 'no response.completed for a cut stream');
    });

    it("a proxy's HTML 502 is shown as its text, not as markup", async () => {
      server.push(replay(NGINX_502, { status: 502, headers: { 'content-type': 'text/html' } }));
      const provider = await providerFor(p, server, IDLE);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')] });
      assert.equal(error.code, 'server');
      assert.equal(error.status, 502);
      assert.ok(
        error.message.includes(`${PROVIDER_MESSAGES.serverError(' (HTTP 502)')}: 502 Bad Gateway nginx/1.25.3. ${PROVIDER_MESSAGES.usuallyTemporary}`),
        error.message,
      );
      assert.doesNotMatch(error.message, /<\/?[a-z]/i, error.message);
      assert.doesNotMatch(error.detail ?? '', /<\/?[a-z]/i, 'the detail is text too');
    });
  });
}

describe('providers: recorded streams stopped halfway', function () {
  this.timeout(20_000);
  const DIR = fixturesDir();
  const RECORDED: Record<ProviderId, string> = {
    openai: '03-openai-responses--function_call_roundtrip_stream.pydantic-ai.yaml',
    'openai-compatible': '04-openai-chat-completions--tool_calls_roundtrip_stream.pydantic-ai.yaml',
    anthropic: '05-anthropic--code_execution_20260120_bash_stream.pydantic-ai.yaml',
    gemini: '10-gemini--code_execution_stream_gemini3.pydantic-ai.yaml',
  };
  let server: WireServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function recorded(p: ProviderId, ctx: Mocha.Context) {
    const file = path.join(DIR, RECORDED[p]);
    if (!fs.existsSync(file)) {
      if (process.env.CI) throw new Error(`${file} is missing: CI must run the tests on the recorded streams.`);
      ctx.skip();
    }
    return cassetteResponse(loadCassette(file)[0]);
  }

  /** The length of the body's first events, up to the event boundary nearest past its middle. */
  function halfway(body: string): number {
    const sep = body.includes('\r\n\r\n') ? '\r\n\r\n' : '\n\n';
    const at = body.indexOf(sep, Math.floor(body.length / 2));
    assert.ok(at > 0);
    return at + sep.length;
  }

  for (const p of PROVIDERS) {
    it(`${p}: the recording's first half, then silence, is stream_stalled "after its last event"`, async function () {
      const r = recorded(p, this);
      server = await startServerFor(p);
      server.push(fault.silenceAfterRaw(r, halfway(String(r.body))));
      const provider = await providerFor(p, server, IDLE);
      const { error } = await runFailingTurn(provider, { history: [userMessage('hi')], hosted: p === 'openai-compatible' ? undefined : { enabled: true } });
      assert.equal(error.code, 'stream_stalled', error.message);
      assert.ok(error.message.startsWith(PROVIDER_MESSAGES.silentAfter('0.4 s', eventsIn(error.message), providerInfo(p).who)), error.message);
      assert.ok(eventsIn(error.message) > 1, error.message);
      await server.turns[0].closed;
      assert.equal(server.turns[0].closedEarly, true);
    });
  }

  it('gemini: the recording without its last chunk (the one with finishReason), ended cleanly, is a cut', async function () {
    const r = recorded('gemini', this);
    const body = String(r.body);
    const events = body.split('\r\n\r\n').filter(Boolean);
    assert.match(events[events.length - 1], /"finishReason"/);
    assert.ok(!events.slice(0, -1).some((e) => /"finishReason"/.test(e)));
    server = await startServerFor('gemini');
    server.push(
      replay(
        events
          .slice(0, -1)
          .map((e) => `${e}\r\n\r\n`)
          .join(''),
        { status: 200, headers: r.headers },
      ),
    );
    const provider = await providerFor('gemini', server, IDLE);
    const { error, rec } = await runFailingTurn(provider, { history: [userMessage('hi')], hosted: { enabled: true } });
    assert.equal(error.code, 'stream_cut', error.message);
    assert.match(error.message, /without its final chunk \(no finishReason\) before Gemini finished its response/);
    assert.ok(rec.codeItems().length > 0, 'what arrived (the executed code) was shown');
    // The whole recording is a finished answer.
    server.push(r);
    const whole = await runTurn(provider, { history: [userMessage('hi')], hosted: { enabled: true } });
    assert.equal(whole.result.rawStopReason, 'STOP');
  });
});

describe('agent loop: a stalled stream is retried at most once', function () {
  this.timeout(30_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'none' } });
  let server: WireServer;
  after(() => runtime.dispose());
  afterEach(async () => {
    await server.close();
  });

  async function agent(p: ProviderId, bounds: Partial<ProviderConfig>) {
    const events: CodeActEvent[] = [];
    const loop = new AgentLoop({
      provider: await providerFor(p, server, bounds),
      model: DEFAULT_MODELS[p],
      runtime,
      gateway: new ToolGateway([]),
      onEvent: (e) => events.push(e),
      retry: { baseDelayMs: 10, maxDelayMs: 50 },
    });
    return { loop, events };
  }

  it('two stalls in a row: two requests, one retry notice, then the stall is the error (not four attempts)', async () => {
    server = await startServerFor('anthropic');
    server.push(fault.silence(), fault.silence(), answer(), answer());
    const { loop, events } = await agent('anthropic', IDLE);
    const result = await loop.run([], 'hi');
    assert.equal(result.status, 'failed');
    assert.equal(result.error?.code, 'stream_stalled');
    assert.ok(result.error?.message.startsWith(PROVIDER_MESSAGES.headersOnly('0.4 s', providerInfo('anthropic').who)), result.error?.message);
    assert.equal(server.turns.length, 2, 'the stall was retried once');
    const retries = events.filter((e) => e.type === 'codeact.retry') as Array<{ message: string; delay_ms: number }>;
    assert.equal(retries.length, 1);
    assert.ok(retries[0].message.startsWith(PROVIDER_MESSAGES.headersOnly('0.4 s', providerInfo('anthropic').who)), retries[0].message);
    assert.ok(retries[0].message.endsWith(` ${retryNote(retries[0].delay_ms, 2, 2)}`), retries[0].message);
  });

  it('one stall, then an answer: the retry answers', async () => {
    server = await startServerFor('gemini');
    server.push(fault.noResponse(), answer());
    const { loop } = await agent('gemini', FIRST_BYTE);
    const result = await loop.run([], 'hi');
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    assert.equal(result.text, TEXT);
    assert.equal(server.turns.length, 2);
  });
});

describe('runStream: the bounds hold even where a stream ignores the abort signal', () => {
  const source = { provider: 'openai' as const, idPrefix: 'resp', bounds: { firstByteMs: 300, idleMs: 300 } };
  const machine = () => ({ onEvent() {}, complete: false, responseId: undefined, outcome: () => ({ stopReason: 'end_turn' as const }) });
  const req = { model: 'm', history: [], tools: [] };

  it('a request that never answers and ignores the signal: stream_stalled, and the signal it was given is aborted', async () => {
    let given: AbortSignal | undefined;
    const err = await runStream(
      source,
      req,
      () => {},
      (signal) => ((given = signal), new Promise<never>(() => {})),
      machine,
    ).then(
      () => assert.fail('should stall'),
      (e: unknown) => e as ProviderError,
    );
    assert.equal(err.code, 'stream_stalled');
    assert.ok(err.message.startsWith(PROVIDER_MESSAGES.noResponse(providerInfo('openai').who, '0.3 s')), err.message);
    assert.equal(given?.aborted, true);
  });

  it('a stream that never yields and ignores the signal: stream_stalled after the idle bound', async () => {
    const silent: AsyncIterable<unknown> = { [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => {}) }) };
    const err = await runStream(
      source,
      req,
      () => {},
      async () => silent,
      machine,
    ).then(
      () => assert.fail('should stall'),
      (e: unknown) => e as ProviderError,
    );
    assert.equal(err.code, 'stream_stalled');
    assert.ok(err.message.startsWith(PROVIDER_MESSAGES.headersOnly('0.3 s', providerInfo('openai').who)), err.message);
  });
});

describe('providers: stream bounds settings', () => {
  it('both hosts give the provider the settings, in milliseconds', () => {
    const user: Record<string, unknown> = { 'modelStream.firstByteTimeoutSeconds': 5, 'modelStream.idleTimeoutSeconds': 2.5 };
    const { config } = resolveEngineConfig((key) => (key in user ? { user: user[key] } : undefined), { trusted: false });
    const pc = providerConfigFrom(config, undefined);
    assert.equal(pc.firstByteTimeoutMs, 5000);
    assert.equal(pc.idleTimeoutMs, 2500);
    const defaults = providerConfigFrom(resolveEngineConfig(() => undefined, { trusted: false }).config, undefined);
    assert.deepEqual([defaults.firstByteTimeoutMs, defaults.idleTimeoutMs], [DEFAULT_STREAM_BOUNDS.firstByteMs, DEFAULT_STREAM_BOUNDS.idleMs]);
  });

  it("the defaults of codeact.modelStream.* are the adapters' defaults", () => {
    assert.deepEqual(DEFAULT_STREAM_BOUNDS, {
      firstByteMs: SETTINGS['modelStream.firstByteTimeoutSeconds'].default * 1000,
      idleMs: SETTINGS['modelStream.idleTimeoutSeconds'].default * 1000,
    });
  });
});
