/**
 * Chat Completions streaming (`POST /v1/chat/completions`): `data: <json>\n\n` chunks ending with
 * `data: [DONE]\n\n`, in four personalities that differ the way the real servers do
 * (see the provider-wire-formats note, section 2.7):
 *   - `openai`: role chunk, tool call id/name in the first fragment then argument fragments;
 *   - `ollama`: `role` on every delta, each tool call complete in one chunk, `reasoning` deltas;
 *   - `vllm`: first tool fragment without `arguments`, final delta `{content:""}` + `stop_reason`;
 *   - `llamacpp`: `choices` first in the chunk, `arguments` always present, `reasoning_content`,
 *     usage + `timings` on the final chunk.
 */
import type { Dialect, RecordedRequest, Rendered, WireServer } from './server';
import { faultHeaders, sseEvent, startWireServer } from './server';
import { fakeId, piecesOf, type ScriptTurn, type StatusFault } from './turn';

type Json = Record<string, any>;
export type ChatPersonality = 'openai' | 'ollama' | 'vllm' | 'llamacpp';

export function openaiChatDialect(personality: ChatPersonality = 'openai'): Dialect {
  return {
    name: `openai-chat/${personality}`,
    basePath: '/v1',
    contentType: personality === 'ollama' ? 'text/event-stream' : 'text/event-stream; charset=utf-8',
    matches: (r) => r.method === 'POST' && r.path === '/v1/chat/completions',
    render: (t, req) => render(t, req, personality),
    error: (f) => error(f, personality),
    malform: (frame) => frame.replace(/^data: (.*)$/m, (_m, json: string) => `data: ${json.slice(0, Math.max(10, Math.floor(json.length / 2)))}`),
    streamError: (type, message) => sseEvent(null, JSON.stringify({ error: { message, type, param: null, code: null } })),
    endless(req) {
      const c = new Chunker(personality, 'chatcmpl-endless', req.body?.model ?? 'm');
      return { preamble: [c.chunk(c.first())], tick: () => c.chunk(c.text('tick ')) };
    },
  };
}

export async function startOpenAIChatServer(personality: ChatPersonality = 'openai'): Promise<WireServer> {
  return startWireServer(openaiChatDialect(personality));
}

class Chunker {
  constructor(
    readonly p: ChatPersonality,
    readonly id: string,
    readonly model: string,
  ) {}

  chunk(delta: Json, finish: string | null = null, extra: Json = {}): string {
    const created = 1760000000;
    let obj: Json;
    switch (this.p) {
      case 'openai':
        obj = {
          id: this.id,
          object: 'chat.completion.chunk',
          created,
          model: this.model,
          service_tier: 'default',
          system_fingerprint: 'fp_wire',
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          usage: null,
          obfuscation: 'Ab',
          ...extra,
        };
        break;
      case 'ollama':
        obj = {
          id: this.id,
          object: 'chat.completion.chunk',
          created,
          model: this.model,
          system_fingerprint: 'fp_ollama',
          choices: [{ index: 0, delta, finish_reason: finish }],
          ...extra,
        };
        break;
      case 'vllm':
        obj = {
          id: this.id,
          object: 'chat.completion.chunk',
          created,
          model: this.model,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...(finish ? { stop_reason: null } : {}) }],
          ...extra,
        };
        break;
      case 'llamacpp':
        obj = {
          choices: [{ finish_reason: finish, index: 0, delta }],
          created,
          id: this.id,
          model: this.model,
          system_fingerprint: 'b6097-9515c613',
          object: 'chat.completion.chunk',
          ...extra,
        };
        break;
    }
    return sseEvent(null, JSON.stringify(obj));
  }

  first(): Json {
    switch (this.p) {
      case 'openai':
        return { role: 'assistant', content: '', refusal: null };
      case 'ollama':
        return { role: 'assistant', content: '' };
      case 'vllm':
        return { role: 'assistant', content: '' };
      case 'llamacpp':
        return { role: 'assistant', content: null };
    }
  }

  text(piece: string): Json {
    return this.p === 'ollama' ? { role: 'assistant', content: piece } : { content: piece };
  }

  reasoning(piece: string): Json {
    if (this.p === 'ollama') return { role: 'assistant', content: '', reasoning: piece };
    return { reasoning_content: piece };
  }
}

function render(t: ScriptTurn, req: RecordedRequest, p: ChatPersonality): Rendered {
  const id = t.opts.id ?? (p === 'ollama' ? `chatcmpl-${Math.floor(Math.random() * 900) + 100}` : fakeId('chatcmpl-', 29));
  const model = t.opts.model ?? req.body?.model ?? 'local-model';
  const c = new Chunker(p, id, model);
  const frames: string[] = [c.chunk(c.first())];
  let callIndex = 0;
  for (const step of t.steps) {
    switch (step.kind) {
      case 'text':
        for (const piece of piecesOf(step.text, step)) {
          if (step.thinking) {
            if (p === 'openai') throw new Error('the openai personality streams no reasoning');
            frames.push(c.chunk(c.reasoning(piece)));
          } else {
            frames.push(c.chunk(c.text(piece)));
          }
        }
        break;
      case 'call': {
        const index = callIndex++;
        const callId = step.id ?? (p === 'vllm' ? fakeId('chatcmpl-tool-', 32) : p === 'ollama' ? fakeId('call_', 8) : fakeId('call_', 24));
        if (p === 'ollama') {
          frames.push(
            c.chunk({
              role: 'assistant',
              content: '',
              tool_calls: [{ id: callId, index, type: 'function', function: { name: step.name, arguments: step.args } }],
            }),
          );
          break;
        }
        if (p === 'vllm') {
          frames.push(c.chunk({ tool_calls: [{ id: callId, type: 'function', index, function: { name: step.name } }] }));
        } else if (p === 'llamacpp') {
          frames.push(c.chunk({ tool_calls: [{ index, id: callId, type: 'function', function: { name: step.name, arguments: '' } }] }));
        } else {
          frames.push(
            c.chunk({
              role: 'assistant',
              content: null,
              tool_calls: [{ index, id: callId, type: 'function', function: { name: step.name, arguments: '' } }],
              refusal: null,
            }),
          );
        }
        for (const piece of piecesOf(step.args, step)) {
          frames.push(c.chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
        }
        break;
      }
      case 'raw':
        frames.push(c.chunk(step.data));
        break;
      default:
        throw new Error(`Chat Completions servers have no ${step.kind} step`);
    }
  }
  const finish = t.opts.stop ?? (callIndex > 0 ? 'tool_calls' : 'stop');
  const u = t.opts.usage ?? { input: 50, output: 10 };
  const usage = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output };
  const includeUsage = req.body?.stream_options?.include_usage === true;
  switch (p) {
    case 'openai':
      frames.push(c.chunk({}, finish));
      if (includeUsage)
        frames.push(
          sseEvent(
            null,
            JSON.stringify({
              id,
              object: 'chat.completion.chunk',
              created: 1760000000,
              model,
              service_tier: 'default',
              system_fingerprint: 'fp_wire',
              choices: [],
              usage: { ...usage, prompt_tokens_details: { cached_tokens: u.cached ?? 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
              obfuscation: 'x',
            }),
          ),
        );
      break;
    case 'ollama':
      frames.push(c.chunk({ role: 'assistant', content: '' }, finish));
      if (includeUsage)
        frames.push(
          sseEvent(
            null,
            JSON.stringify({ id, object: 'chat.completion.chunk', created: 1760000000, model, system_fingerprint: 'fp_ollama', choices: [], usage }),
          ),
        );
      break;
    case 'vllm':
      frames.push(c.chunk({ content: '' }, finish));
      if (includeUsage) frames.push(sseEvent(null, JSON.stringify({ id, object: 'chat.completion.chunk', created: 1760000000, model, choices: [], usage })));
      break;
    case 'llamacpp':
      frames.push(
        c.chunk({}, finish, {
          usage,
          timings: {
            prompt_n: u.input,
            prompt_ms: 12.5,
            prompt_per_token_ms: 0.25,
            prompt_per_second: 4000,
            predicted_n: u.output,
            predicted_ms: 80,
            predicted_per_token_ms: 8,
            predicted_per_second: 125,
          },
        }),
      );
      break;
  }
  frames.push('data: [DONE]\n\n');
  return { frames };
}

function error(f: StatusFault, p: ChatPersonality): { status: number; headers: Record<string, string>; body: string } {
  const message =
    f.message ??
    (
      {
        401: 'Incorrect API key provided.',
        404: `model "nope" not found, try pulling it first`,
        429: 'Rate limit reached.',
        500: 'Internal server error',
      } as Record<number, string>
    )[f.status] ??
    `HTTP ${f.status}`;
  let body: Json;
  switch (p) {
    case 'ollama':
      body = { error: { message, type: f.status >= 500 ? 'api_error' : 'invalid_request_error', param: null, code: f.code ?? null } };
      break;
    case 'vllm':
      body = { error: { message, type: f.status >= 500 ? 'InternalServerError' : 'BadRequestError', param: null, code: f.status } };
      break;
    case 'llamacpp':
      body = { error: { code: f.status, message, type: f.status >= 500 ? 'server_error' : 'invalid_request_error' } };
      break;
    default:
      body = { error: { message, type: f.status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: f.code ?? null } };
  }
  return { status: f.status, headers: faultHeaders(f), body: JSON.stringify(body) };
}
