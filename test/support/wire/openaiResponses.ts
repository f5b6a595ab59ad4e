/**
 * OpenAI Responses API streaming (`POST /v1/responses`): `event: <type>\ndata: <json>\n\n`, with a
 * `sequence_number` from 0, `response.created` first, every output item announced with
 * `output_item.added`, `response.completed` last and no `[DONE]`. Also serves container file
 * downloads (`GET /v1/containers/{id}/files/{file_id}/content`).
 */
import type { ServerResponse } from 'node:http';
import type { Dialect, RecordedRequest, Rendered, WireServer } from './server';
import { faultHeaders, sseEvent, startWireServer } from './server';
import { fakeId, piecesOf, type ScriptTurn, type StatusFault } from './turn';

type Json = Record<string, any>;

export function openaiResponsesDialect(): Dialect {
  return {
    name: 'openai-responses',
    basePath: '/v1',
    contentType: 'text/event-stream; charset=utf-8',
    extraHeaders: { 'openai-version': '2020-10-01', 'x-request-id': 'req_wire' },
    matches: (r) => r.method === 'POST' && r.path === '/v1/responses',
    render,
    error,
    malform: (frame) => frame.replace(/^data: (.*)$/m, (_m, json: string) => `data: ${json.slice(0, Math.max(10, Math.floor(json.length / 2)))}`),
    streamError: (type, message) => sseEvent('error', JSON.stringify({ type: 'error', code: type, message, param: null, sequence_number: 9999 })),
    endless(req) {
      const e = new Emitter();
      const resp = baseResponse(req, 'resp_endless');
      const pre = [
        e.ev('response.created', { response: resp }),
        e.ev('response.in_progress', { response: resp }),
        e.ev('response.output_item.added', {
          output_index: 0,
          item: { id: 'msg_endless', type: 'message', status: 'in_progress', content: [], role: 'assistant' },
        }),
        e.ev('response.content_part.added', {
          item_id: 'msg_endless',
          output_index: 0,
          content_index: 0,
          part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
        }),
      ];
      return {
        preamble: pre,
        tick: () => e.ev('response.output_text.delta', { item_id: 'msg_endless', output_index: 0, content_index: 0, delta: 'tick ', logprobs: [] }),
      };
    },
    route(req, res, server) {
      const m = /^\/v1\/containers\/([^/]+)\/files\/([^/]+)\/content$/.exec(req.path);
      if (req.method !== 'GET' || !m) return false;
      return serveFile(server, m[2], res);
    },
  };
}

export function serveFile(server: WireServer, fileId: string, res: ServerResponse): boolean {
  const f = server.files.get(decodeURIComponent(fileId));
  if (!f) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `No file ${fileId}`, type: 'invalid_request_error', code: 'not_found' } }));
    return true;
  }
  res.writeHead(200, { 'content-type': f.contentType ?? 'application/octet-stream', 'content-length': String(f.bytes.length) });
  res.end(f.bytes);
  return true;
}

export async function startOpenAIResponsesServer(): Promise<WireServer> {
  return startWireServer(openaiResponsesDialect());
}

class Emitter {
  seq = 0;
  ev(type: string, fields: Json): string {
    return sseEvent(type, JSON.stringify({ type, sequence_number: this.seq++, ...fields }));
  }
}

function baseResponse(req: RecordedRequest, id: string): Json {
  const b = req.body ?? {};
  return {
    id,
    object: 'response',
    created_at: 1760000000,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: b.model ?? 'gpt-5',
    output: [],
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: null,
    store: true,
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    usage: null,
  };
}

function render(t: ScriptTurn, req: RecordedRequest): Rendered {
  const e = new Emitter();
  const frames: string[] = [];
  const id = t.opts.id ?? fakeId('resp_', 40);
  const resp = baseResponse(req, id);
  frames.push(e.ev('response.created', { response: resp }), e.ev('response.in_progress', { response: resp }));
  const output: Json[] = [];
  const includeOutputs = Array.isArray(req.body?.include) && req.body.include.includes('code_interpreter_call.outputs');
  const ciTool = (req.body?.tools ?? []).find((x: Json) => x.type === 'code_interpreter');
  const container = t.opts.container ?? (typeof ciTool?.container === 'string' ? ciTool.container : fakeId('cntr_', 32));

  for (const step of t.steps) {
    const output_index = output.length;
    switch (step.kind) {
      case 'text': {
        if (step.thinking) {
          const item_id = fakeId('rs_', 40);
          frames.push(e.ev('response.output_item.added', { output_index, item: { id: item_id, type: 'reasoning', summary: [] } }));
          frames.push(e.ev('response.reasoning_summary_part.added', { item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } }));
          for (const delta of piecesOf(step.text, step)) {
            frames.push(e.ev('response.reasoning_summary_text.delta', { item_id, output_index, summary_index: 0, delta, obfuscation: 'abc' }));
          }
          frames.push(e.ev('response.reasoning_summary_text.done', { item_id, output_index, summary_index: 0, text: step.text }));
          frames.push(
            e.ev('response.reasoning_summary_part.done', { item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: step.text } }),
          );
          const item = { id: item_id, type: 'reasoning', summary: [{ type: 'summary_text', text: step.text }] };
          frames.push(e.ev('response.output_item.done', { output_index, item }));
          output.push(item);
          break;
        }
        const item_id = fakeId('msg_', 40);
        frames.push(
          e.ev('response.output_item.added', { output_index, item: { id: item_id, type: 'message', status: 'in_progress', content: [], role: 'assistant' } }),
        );
        frames.push(
          e.ev('response.content_part.added', {
            item_id,
            output_index,
            content_index: 0,
            part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
          }),
        );
        for (const delta of piecesOf(step.text, step)) {
          frames.push(e.ev('response.output_text.delta', { item_id, output_index, content_index: 0, delta, logprobs: [], obfuscation: 'xyz' }));
        }
        const annotations = (step.citations ?? []).map((c) => ({
          type: 'container_file_citation',
          container_id: c.container_id ?? container,
          end_index: c.end_index ?? 0,
          file_id: c.file_id,
          filename: c.filename,
          start_index: c.start_index ?? 0,
        }));
        annotations.forEach((annotation, annotation_index) => {
          frames.push(e.ev('response.output_text.annotation.added', { item_id, output_index, content_index: 0, annotation_index, annotation }));
        });
        frames.push(e.ev('response.output_text.done', { item_id, output_index, content_index: 0, text: step.text, logprobs: [] }));
        const part = { type: 'output_text', annotations, logprobs: [], text: step.text };
        frames.push(e.ev('response.content_part.done', { item_id, output_index, content_index: 0, part }));
        const item = { id: item_id, type: 'message', status: 'completed', content: [part], role: 'assistant' };
        frames.push(e.ev('response.output_item.done', { output_index, item }));
        output.push(item);
        break;
      }
      case 'call': {
        const item_id = fakeId('fc_', 40);
        const call_id = step.id ?? fakeId('call_', 24);
        frames.push(
          e.ev('response.output_item.added', {
            output_index,
            item: { id: item_id, type: 'function_call', status: 'in_progress', arguments: '', call_id, name: step.name },
          }),
        );
        for (const delta of piecesOf(step.args, step)) {
          frames.push(e.ev('response.function_call_arguments.delta', { item_id, output_index, delta, obfuscation: 'q' }));
        }
        frames.push(e.ev('response.function_call_arguments.done', { item_id, output_index, arguments: step.args }));
        const item = { id: item_id, type: 'function_call', status: 'completed', arguments: step.args, call_id, name: step.name };
        frames.push(e.ev('response.output_item.done', { output_index, item }));
        output.push(item);
        break;
      }
      case 'code': {
        const item_id = step.id ?? fakeId('ci_', 40);
        frames.push(
          e.ev('response.output_item.added', {
            output_index,
            item: { id: item_id, type: 'code_interpreter_call', status: 'in_progress', code: '', container_id: container, outputs: [] },
          }),
        );
        frames.push(e.ev('response.code_interpreter_call.in_progress', { output_index, item_id }));
        for (const delta of piecesOf(step.code, step)) {
          frames.push(e.ev('response.code_interpreter_call_code.delta', { output_index, item_id, delta, obfuscation: 'o' }));
        }
        frames.push(e.ev('response.code_interpreter_call_code.done', { output_index, item_id, code: step.code }));
        frames.push(e.ev('response.code_interpreter_call.interpreting', { output_index, item_id }));
        frames.push(e.ev('response.code_interpreter_call.completed', { output_index, item_id }));
        const outs: Json[] = [];
        for (const img of step.images ?? []) outs.push({ type: 'image', url: `data:image/png;base64,${img}` });
        const logs = (step.stdout ?? '') + (step.stderr ?? '');
        if (logs) outs.push({ type: 'logs', logs });
        if (step.files?.length)
          outs.push({ type: 'files', files: step.files.map((f) => ({ file_id: f.id, mime_type: f.mime_type ?? 'application/octet-stream' })) });
        const item = {
          id: item_id,
          type: 'code_interpreter_call',
          status: 'completed',
          code: step.code,
          container_id: container,
          outputs: includeOutputs ? outs : null,
        };
        frames.push(e.ev('response.output_item.done', { output_index, item }));
        output.push(item);
        break;
      }
      case 'raw': {
        frames.push(e.ev('response.output_item.added', { output_index, item: step.data }));
        frames.push(e.ev('response.output_item.done', { output_index, item: step.data }));
        output.push(step.data);
        break;
      }
      case 'editor':
        throw new Error('OpenAI Responses has no text editor tool in this fake server');
    }
  }
  const usage = t.opts.usage ?? { input: 100, output: 20 };
  const done = {
    ...resp,
    status: t.opts.stop === 'max_output_tokens' ? 'incomplete' : 'completed',
    incomplete_details: t.opts.stop === 'max_output_tokens' ? { reason: 'max_output_tokens' } : null,
    output,
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cached ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
  };
  frames.push(e.ev(done.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: done }));
  return { frames };
}

function error(f: StatusFault): { status: number; headers: Record<string, string>; body: string } {
  const defaults: Record<number, [string, string, string]> = {
    400: ['invalid_request_error', 'bad_request', 'Invalid request.'],
    401: [
      'invalid_request_error',
      'invalid_api_key',
      'Incorrect API key provided: sk-wire***. You can find your API key at https://platform.openai.com/account/api-keys.',
    ],
    404: ['invalid_request_error', 'model_not_found', 'The model `gpt-nope` does not exist or you do not have access to it.'],
    429: ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests. Please try again in 1s.'],
    500: ['server_error', 'server_error', 'The server had an error while processing your request. Sorry about that!'],
  };
  const [type, code, message] = defaults[f.status] ?? ['server_error', 'server_error', `HTTP ${f.status}`];
  return {
    status: f.status,
    headers: faultHeaders(f),
    body: JSON.stringify({ error: { message: f.message ?? message, type, param: null, code: f.code ?? code } }),
  };
}
