/**
 * Long conversations that keep working: a context budget for every request,
 * compaction before the wall, and recovery from a context overflow. The model is a scripted loopback
 * server speaking the Chat Completions wire to the official openai SDK; like llama.cpp it refuses any
 * request over its window (HTTP 400 "exceeds the available context size") and says its window at
 * `GET /props`. Code runs in the real local guest (bubblewrap); turns go through runChatTurn and the
 * transcript store, reopened before every turn as `codeact chat --continue` does.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ContextCompacted, ContextUsage } from '../../src/common/events';
import type { TranscriptEvent } from '../../src/common/transcript';
import { ContextBudget, SUMMARY_HEADER, cutPoints } from '../../src/core/agent/contextBudget';
import { TranscriptStore } from '../../src/core/agent/transcriptStore';
import { buildTranscript } from '../../src/common/transcript/reducer';
import { usageSummary } from '../../src/common/usage';
import { providerConfigFrom } from '../../src/core/config/engine';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { createProvider } from '../../src/core/providers/factory';
import { servedWindow } from '../../src/core/providers/openai/openaiChat';
import { contextWindowOf } from '../../src/core/providers/shared/catalog';
import type { ConversationItem } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { chatTurnsWith } from '../support/wire/harness';
import { messagesOf } from '../support/textWire';
import { openaiChatDialect } from '../support/wire/openaiChat';
import { sendProps, sendTurn, startWireServer, type WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

type Json = Record<string, any>;

/** The server's window, and how it counts: 1 token per 4 characters of the messages and tools it was sent. */
const WINDOW = 8192;
const serverTokens = (body: Json) => Math.ceil(JSON.stringify({ m: body.messages, t: body.tools ?? null }).length / 4);

const FIRST_TASK = 'Load the sales rows step by step. Keep every table sorted by region, never drop the header row, and report totals in euros.';

/** About 3 KB of output, and a variable per step. */
function stepCode(k: number): string {
  return `rows_${k} = [(i, i * ${k}) for i in range(100)]\nprint("\\n".join(f"region {i:03d} value {v:08d} step ${k}" for i, v in rows_${k}))`;
}

interface Model {
  server: WireServer;
  /** Tokens of every chat request, as the server counted them, and whether it refused it. */
  seen: { tokens: number; refused: boolean; summary: boolean }[];
}

/** The scripted model: a code call per user step (several when the prompt says so), then an answer; a summary when asked without tools. */
async function startModel(o: { says?: boolean; summaryFails?: boolean; window?: number } = {}): Promise<Model> {
  const base = openaiChatDialect('openai');
  const seen: Model['seen'] = [];
  const server = await startWireServer({
    ...base,
    route(rec, res) {
      if (rec.path === '/props' && o.says !== false) {
        sendProps(res, WINDOW);
        return true;
      }
      if (!base.matches(rec)) return false;
      const body = rec.body as Json;
      const tokens = serverTokens(body);
      const summary = !body.tools;
      const refused = tokens + (body.max_tokens ?? 0) > (o.window ?? WINDOW);
      seen.push({ tokens, refused, summary });
      if (refused || (summary && o.summaryFails)) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: {
              code: 400,
              message: `the request exceeds the available context size (${tokens} tokens), try increasing it`,
              type: 'exceed_context_size_error',
              n_prompt_tokens: tokens,
              n_ctx: WINDOW,
            },
          }),
        );
        return true;
      }
      const usage = { input: tokens, output: 40 };
      if (summary) {
        sendTurn(base, res, rec, turn().text('## Decisions\n- Rows are kept per step in rows_<k>.\n## Open\n- Continue with the next step.').with({ usage }));
        return true;
      }
      const msgs = body.messages as Json[];
      const last = msgs[msgs.length - 1];
      const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
      const step = Number(/Step (\d+)/.exec(String(lastUser?.content ?? ''))?.[1] ?? 0);
      const runs = Number(/(\d+) runs/.exec(String(lastUser?.content ?? ''))?.[1] ?? 1);
      // Executions so far: the number the last result states (a compacted request may no longer carry the earlier ones).
      const lastTool = [...msgs].reverse().find((m) => m.role === 'tool');
      const done = last.role === 'user' ? 0 : Number(/"execution":\s*(\d+)/.exec(String(lastTool?.content ?? ''))?.[1] ?? 0);
      if (last.role === 'user' || done < runs)
        sendTurn(
          base,
          res,
          rec,
          turn()
            .call('execute_tool_code', { code: stepCode(runs > 1 ? done + 1 : step) })
            .with({ usage }),
        );
      else sendTurn(base, res, rec, turn().text(`Step ${step} is done.`).with({ usage }));
      return true;
    },
  });
  return { server, seen };
}

describe('context budget and compaction', function () {
  this.timeout(600_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  let dir: string;
  let model: Model | undefined;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-compact-'))));
  after(async () => {
    await runtime.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await model?.server.close();
    model = undefined;
  });

  function chatFor(m: Model, extra: Record<string, SettingLayers> = {}) {
    const layers: Record<string, SettingLayers> = {
      provider: { user: 'openai-compatible' },
      model: { user: 'qwen2.5-coder:7b' },
      baseURL: { user: m.server.url },
      maxTurns: { user: 40 },
      ...extra,
    };
    const config = resolveEngineConfig((k) => layers[k], { trusted: false }).config;
    const store = new TranscriptStore(dir);
    const events: TranscriptEvent[] = [];
    const chat = chatTurnsWith(config, runtime, { onEvent: (e) => events.push(e) });
    return { store, events, chat };
  }

  const compactions = (events: TranscriptEvent[]) => events.filter((e): e is ContextCompacted => e.type === 'codeact.context.compacted');
  const usages = (events: TranscriptEvent[]) => events.filter((e): e is ContextUsage => e.type === 'codeact.context.usage');

  it('60 user turns with --continue, 3 KB of output each, in an 8k window: no error, every request fits, the first task and the variables survive', async () => {
    const m = (model = await startModel());
    const { store, events, chat } = chatFor(m);
    const id = store.create({ title: 'long analysis' }).id;
    for (let k = 1; k <= 60; k++) {
      const prompt = k === 1 ? `Step 1: ${FIRST_TASK}` : `Step ${k}: go on with the next rows.`;
      const r = await chat(store.open(id), prompt);
      assert.equal(r.result?.status, 'completed', `turn ${k}: ${JSON.stringify(r.error)}`);
    }
    assert.equal(m.seen.filter((s) => s.refused).length, 0, 'the server refused no request');
    assert.ok(m.seen.every((s) => s.tokens <= WINDOW));
    // Each request said how full the window is; the window is the server's (/props), not the 32k setting.
    const u = usages(events);
    assert.ok(u.length >= m.seen.filter((s) => !s.summary).length);
    assert.ok(
      u.every((e) => e.window_tokens < WINDOW && e.compact_at_tokens < e.window_tokens && e.used_tokens <= e.window_tokens),
      JSON.stringify(u.find((e) => e.used_tokens > e.window_tokens)),
    );
    const c = compactions(events);
    assert.ok(
      c.some((e) => e.method === 'summary'),
      `a summary was made: ${c.map((e) => e.method).join(',')}`,
    );
    // The cheap step first: stand-ins that say where the whole output is.
    assert.equal(c[0].method, 'stand-ins');
    const standIn =
      /\[codeact: the result of execution (\d+) \([\d,]+ characters\) was left out to fit the context window; output_of\(\1\) in Python reads the whole output while the session has it\]/;
    assert.ok(m.server.turns.some((t) => (t.body.messages as Json[]).some((x) => x.role === 'tool' && standIn.test(String(x.content)))));
    assert.ok(c.every((e) => e.after_tokens < e.before_tokens && e.turn_id.startsWith('turn')));
    // The last request carries the first task word for word and the variables digest of the live session.
    const last = m.server.turns[m.server.turns.length - 1].body;
    const text = messagesOf('openai-compatible', last)
      .map((x) => x.text)
      .join('\n');
    assert.ok(text.includes(SUMMARY_HEADER));
    assert.ok(text.includes(FIRST_TASK), 'the first task, verbatim');
    assert.match(text, /## The live Python session[^]*- rows_1: list len 100 = "\[\(0, 0\), /);
    assert.ok(text.includes('Rows are kept per step'), "the model's summary");
    // The saved conversation has every turn, every prompt and every result.
    const saved = store.open(id);
    const prompts = saved.history.filter((i) => i.type === 'message' && i.role === 'user');
    assert.equal(prompts.length, 60);
    assert.equal(saved.history.filter((i) => i.type === 'function_call_output').length, 60);
    assert.ok(saved.events.some((e) => e.type === 'codeact.context.compacted'));
  });

  it('one user turn with 30 executions fits too: it compacts between executions', async () => {
    const m = (model = await startModel());
    const { store, events, chat } = chatFor(m);
    const convo = store.create({ title: 'one long turn' });
    const r = await chat(convo, `Step 1: ${FIRST_TASK} Do it in 30 runs.`);
    assert.equal(r.result?.status, 'completed', JSON.stringify(r.error));
    assert.equal(r.result!.items.filter((i) => i.type === 'function_call_output').length, 30);
    assert.equal(m.seen.filter((s) => s.refused).length, 0);
    const c = compactions(events);
    assert.ok(c.length >= 1 && c.every((e) => e.turn_id === r.turnId));
    // At most one compaction per request.
    assert.ok(c.length <= m.seen.filter((s) => !s.summary).length);
    const last = messagesOf('openai-compatible', m.server.turns[m.server.turns.length - 1].body)
      .map((x) => x.text)
      .join('\n');
    assert.ok(last.includes(FIRST_TASK));
  });

  it("the summary requests' tokens count: in the turn's and the conversation's totals of the panel, the CLI and --json", async () => {
    const m = (model = await startModel());
    const { store, events, chat } = chatFor(m);
    const convo = store.create({ title: 'counted' });
    const r = await chat(convo, `Step 1: ${FIRST_TASK} Do it in 16 runs.`);
    assert.equal(r.result?.status, 'completed', JSON.stringify(r.error));
    const summaries = m.seen.filter((s) => s.summary && !s.refused);
    assert.ok(summaries.length >= 1, 'the turn made a summary request');
    // What the server billed: every request it answered (usage: its token count in, 40 out).
    const answered = m.seen.filter((s) => !s.refused);
    const billed = { input: answered.reduce((n, s) => n + s.tokens, 0), output: 40 * answered.length };
    const compacted = compactions(events).filter((e) => e.method === 'summary');
    assert.equal(compacted.length, summaries.length);
    assert.ok(compacted.every((e) => e.usage?.output_tokens === 40));
    // The CLI's end line and --json (codeact.usage.summary), from the saved conversation.
    const saved = store.open(convo.id);
    const summary = usageSummary(convo.id, saved.events, 0);
    assert.deepEqual([summary.turn.input_tokens, summary.turn.output_tokens], [billed.input, billed.output]);
    assert.deepEqual([summary.conversation.input_tokens, summary.conversation.output_tokens], [billed.input, billed.output]);
    // The panel: the turn's footer and the conversation's sum.
    const view = buildTranscript(saved.events);
    const t = view.turns[view.turns.length - 1];
    assert.deepEqual([t.usage?.input_tokens, t.usage?.output_tokens], [billed.input, billed.output]);
    assert.deepEqual([view.usage?.input_tokens, view.usage?.output_tokens], [billed.input, billed.output]);
    // The agent's own result.
    assert.deepEqual([r.result?.usage.total.input_tokens, r.result?.usage.total.output_tokens], [billed.input, billed.output]);
  });

  it('a context overflow the server reports compacts and retries once; the conversation goes on, and the summary request failing falls back', async () => {
    // The server does not say its window: the setting (32k) is wrong, so the server refuses first.
    const m = (model = await startModel({ says: false, summaryFails: true }));
    const { store, events, chat } = chatFor(m);
    const id = store.create({ title: 'overflow' }).id;
    for (let k = 1; k <= 16; k++) {
      const r = await chat(store.open(id), k === 1 ? `Step 1: ${FIRST_TASK}` : `Step ${k}: go on.`);
      assert.equal(r.result?.status, 'completed', `turn ${k}: ${JSON.stringify(r.error)}`);
    }
    const chats = m.seen.filter((s) => !s.summary);
    assert.ok(
      chats.some((s) => s.refused),
      'the server refused at least once',
    );
    // A refused request is never followed by another refused one: one compaction made it fit.
    for (let i = 1; i < chats.length; i++) assert.ok(!(chats[i].refused && chats[i - 1].refused), `requests ${i - 1} and ${i} both refused`);
    const c = compactions(events);
    assert.ok(c.length >= 1 && c.every((e) => e.method === 'fallback'), c.map((e) => e.method).join(','));
    assert.ok(c[0].summary.includes(FIRST_TASK));
    assert.ok(!events.some((e) => e.type === 'error'));
  });

  it('a context overflow with nothing to compact (a one-message conversation) is not sent again: the error says why and what to do', async () => {
    // A server whose window is smaller than any request, and that does not say it: the first message overflows.
    const m = (model = await startModel({ says: false, window: 300 }));
    const { store, events, chat } = chatFor(m);
    const r = await chat(store.create({ title: 'one message' }), `Step 1: ${FIRST_TASK}`);
    assert.equal(r.result?.status, 'failed');
    assert.equal(r.result?.error?.code, 'context_overflow');
    assert.equal(m.seen.length, 1, `the refused request was sent once, not again byte for byte: ${JSON.stringify(m.seen)}`);
    assert.match(r.result!.error!.message, /too long[^]*Nothing earlier in this conversation can be compacted[^]*not sent again[^]*Shorten the message/);
    assert.ok(events.some((e) => e.type === 'error' && /not sent again/.test(e.message)));
  });

  it('a pasted prompt larger than the window does not poison the conversation: it is cut for the model, saved whole', async () => {
    const m = (model = await startModel());
    const { store, chat } = chatFor(m);
    const id = store.create({ title: 'huge paste' }).id;
    const paste = `Step 1: ${FIRST_TASK}\n` + Array.from({ length: 1500 }, (_, i) => `pasted line ${i} of the user's log`).join('\n');
    assert.ok(paste.length > 40_000);
    for (const prompt of [paste, 'Step 2: go on.', 'Step 3: go on.']) {
      const r = await chat(store.open(id), prompt);
      assert.equal(r.result?.status, 'completed', JSON.stringify(r.error));
    }
    assert.equal(m.seen.filter((s) => s.refused).length, 0);
    const first = m.server.turns[0].body.messages.find((x: Json) => x.role === 'user').content as string;
    assert.ok(first.startsWith(`Step 1: ${FIRST_TASK}`) && first.includes('pasted line 1499') && /characters left out to fit the context window/.test(first));
    const saved = store.open(id).history.find((i) => i.type === 'message' && i.role === 'user');
    assert.equal(saved?.type === 'message' && saved.text, paste);
  });

  it('the window the server says: llama.cpp /props, Ollama /api/show (num_ctx, else context_length); a silent or slow server says nothing', async () => {
    let answer: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void = () => {};
    const srv = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => answer(req, res, body));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`;
    const json = (res: http.ServerResponse, status: number, v: unknown) => (
      res.writeHead(status, { 'content-type': 'application/json' }),
      res.end(JSON.stringify(v))
    );
    try {
      answer = (req, res) => (req.url === '/props' ? json(res, 200, { default_generation_settings: { n_ctx: 4096 } }) : json(res, 404, {}));
      assert.equal(await servedWindow(base, 'm'), 4096);
      const shown: string[] = [];
      answer = (req, res, body) => {
        if (req.url !== '/api/show') return json(res, 404, {});
        shown.push(JSON.parse(body).model);
        json(res, 200, { parameters: 'stop "<|im_end|>"\nnum_ctx                        12288', model_info: { 'qwen2.context_length': 32768 } });
      };
      assert.equal(await servedWindow(base, 'qwen2.5-coder:7b'), 12288);
      assert.deepEqual(shown, ['qwen2.5-coder:7b']);
      answer = (req, res) =>
        req.url === '/api/show' ? json(res, 200, { model_info: { 'general.architecture': 'llama', 'llama.context_length': 131072 } }) : json(res, 404, {});
      assert.equal(await servedWindow(base, 'llama3.1:8b'), 131072);
      answer = (_req, res) => json(res, 404, { error: 'no' });
      assert.equal(await servedWindow(base, 'm'), undefined);
      // Never answers: the probe gives up by itself (its own short timeout) and says nothing.
      answer = () => {};
      assert.equal(await servedWindow(base, 'm'), undefined);
      // Garbage is not a window.
      answer = (req, res) =>
        req.url === '/props' ? json(res, 200, { default_generation_settings: { n_ctx: -5 } }) : json(res, 200, { model_info: { 'x.context_length': 'lots' } });
      assert.equal(await servedWindow(base, 'm'), undefined);
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });

  it('codeact.openaiCompatible.contextWindows sets the window per model; a bad value is ignored with a reason', async () => {
    const resolve = (v: unknown) =>
      resolveEngineConfig(
        (k) =>
          (
            ({ provider: { user: 'openai-compatible' }, baseURL: { user: 'http://127.0.0.1:9/v1' }, 'openaiCompatible.contextWindows': { user: v } }) as Record<
              string,
              SettingLayers
            >
          )[k],
        { trusted: false },
      );
    const { config } = resolve({ 'qwen2.5-coder:7b': 8192 });
    const provider = await createProvider(providerConfigFrom(config, undefined));
    assert.equal(provider.contextWindow?.('qwen2.5-coder:7b'), 8192);
    assert.equal(provider.contextWindow?.('llama3.1:8b'), 32768);
    const bad = resolve({ 'qwen2.5-coder:7b': 'big' });
    assert.deepEqual(bad.config.compatibleContextWindows, {});
    assert.ok(
      bad.ignored.some((i) => /whole numbers of tokens/.test(JSON.stringify(i))),
      JSON.stringify(bad.ignored),
    );
  });

  it('budget units: cut points never split a call from its result; windows from the catalogue', () => {
    const items: ConversationItem[] = [
      { type: 'message', id: 'u1', role: 'user', text: 'a' },
      { type: 'function_call', id: 'c1', call_id: 'x', name: 'execute_tool_code', arguments: '{}' },
      { type: 'function_call_output', id: 'o1', item_id: 'c1', call_id: 'x', name: 'execute_tool_code', output: '{"execution":1}' },
      { type: 'message', id: 'a1', role: 'assistant', text: 'done' },
      { type: 'message', id: 'u2', role: 'user', text: 'b' },
    ];
    assert.deepEqual(cutPoints(items), [3, 4]);
    assert.equal(contextWindowOf('anthropic', 'claude-sonnet-4-6'), 200_000);
    assert.equal(contextWindowOf('openai', 'gpt-5-mini'), 400_000);
    assert.equal(contextWindowOf('openai-compatible', 'x'), undefined);
    const b = new ContextBudget({
      window: 8192,
      reserve: 1024,
      fixedTokens: 100,
      toolNames: [],
      summarize: async () => ({ text: '' }),
      variables: async () => null,
      emit: () => {},
    });
    assert.equal(b.compactAtTokens, Math.floor((8192 - 1024) * 0.75));
  });
});
