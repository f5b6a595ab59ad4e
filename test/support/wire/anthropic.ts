/**
 * Anthropic Messages streaming (`POST /v1/messages` and `/v1/messages?beta=true`):
 * `event: <type>\ndata: <json>\n\n` (the `event:` line is mandatory for the TS SDK),
 * `message_start` -> content blocks -> `message_delta` (stop reason, usage, container) -> `message_stop`,
 * `ping`s in between, server tool results as whole blocks, the first `input_json_delta` empty.
 * Hosted code follows the tool version found in the request (`code_execution_20250522`: `code_execution`
 * with `{code}`; later versions: `bash_code_execution` with `{command}` and `text_editor_code_execution`).
 * Also serves Files API downloads (`GET /v1/files/{id}` and `/v1/files/{id}/content`).
 */
import type { Dialect, RecordedRequest, Rendered, WireServer } from './server';
import { faultHeaders, startWireServer } from './server';
import { serveFile } from './openaiResponses';
import { fakeId, piecesOf, splitText, type ScriptTurn, type StatusFault } from './turn';

type Json = Record<string, any>;

const PING = 'event: ping\ndata: {"type": "ping"}\n\n';

function frame(type: string, obj: Json, pad = 0): string {
  let json = JSON.stringify({ type, ...obj });
  if (pad > 0) json = `${json.slice(0, -1)}${' '.repeat(pad)}}`;
  return `event: ${type}\ndata: ${json}\n\n`;
}

export function anthropicDialect(): Dialect {
  return {
    name: 'anthropic',
    basePath: '',
    contentType: 'text/event-stream; charset=utf-8',
    extraHeaders: { 'request-id': 'req_wire' },
    matches: (r) => r.method === 'POST' && r.path === '/v1/messages',
    render,
    error,
    malform: (f) => f.replace(/^data: (.*)$/m, (_m, json: string) => `data: ${json.slice(0, Math.max(10, Math.floor(json.length / 2)))}`),
    streamError: (type, message) => frame('error', { error: { type, message } }),
    endless(req) {
      return {
        preamble: [
          frame('message_start', {
            message: {
              model: req.body?.model ?? 'claude',
              id: 'msg_endless',
              type: 'message',
              role: 'assistant',
              content: [],
              stop_reason: null,
              stop_sequence: null,
              usage: { input_tokens: 10, output_tokens: 1 },
            },
          }),
          frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ],
        tick: () => frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'tick ' } }),
      };
    },
    route(req, res, server: WireServer) {
      if (req.method !== 'GET') return false;
      const content = /^\/v1\/files\/([^/]+)\/content$/.exec(req.path);
      if (content) return serveFile(server, content[1], res);
      const meta = /^\/v1\/files\/([^/]+)$/.exec(req.path);
      if (meta) {
        const f = server.files.get(decodeURIComponent(meta[1]));
        res.writeHead(f ? 200 : 404, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            f
              ? {
                  id: meta[1],
                  type: 'file',
                  filename: f.filename ?? 'file',
                  mime_type: f.contentType ?? 'application/octet-stream',
                  size_bytes: f.bytes.length,
                  created_at: '2026-01-01T00:00:00Z',
                  downloadable: true,
                }
              : { type: 'error', error: { type: 'not_found_error', message: `File not found: ${meta[1]}` } },
          ),
        );
        return true;
      }
      return false;
    },
  };
}

export async function startAnthropicServer(): Promise<WireServer> {
  return startWireServer(anthropicDialect());
}

function codeToolVersion(req: RecordedRequest): string | undefined {
  const t = (req.body?.tools ?? []).find((x: Json) => typeof x.type === 'string' && x.type.startsWith('code_execution_'));
  return t?.type;
}

function render(t: ScriptTurn, req: RecordedRequest): Rendered {
  const padN = t.opts.pad ? 7 : 0;
  let padCount = 0;
  const pad = (): number => (padN ? ((padCount++ * 5) % 13) + 1 : 0);
  const frames: string[] = [];
  const id = t.opts.id ?? fakeId('msg_01', 22);
  const model = t.opts.model ?? req.body?.model ?? 'claude-sonnet-4-6';
  const u = t.opts.usage ?? { input: 120, output: 30 };
  frames.push(
    frame(
      'message_start',
      {
        message: {
          model,
          id,
          type: 'message',
          role: 'assistant',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: u.input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' },
        },
      },
      pad(),
    ),
  );
  const version = codeToolVersion(req) ?? 'code_execution_20250825';
  let index = 0;
  let calls = 0;
  let hosted = false;
  const block = (content_block: Json, deltas: Json[] = []): void => {
    frames.push(frame('content_block_start', { index, content_block }, pad()));
    if (index === 0) frames.push(PING);
    for (const delta of deltas) frames.push(frame('content_block_delta', { index, delta }, pad()));
    frames.push(frame('content_block_stop', { index }, pad()));
    index++;
  };
  for (const step of t.steps) {
    switch (step.kind) {
      case 'text':
        if (step.thinking) {
          block({ type: 'thinking', thinking: '', signature: '' }, [
            ...piecesOf(step.text, step).map((thinking) => ({ type: 'thinking_delta', thinking })),
            { type: 'signature_delta', signature: step.signature ?? 'EqQBCkYIBxgCKkDsig==' },
          ]);
        } else {
          block(
            { type: 'text', text: '' },
            piecesOf(step.text, step).map((text) => ({ type: 'text_delta', text })),
          );
        }
        break;
      case 'call':
        calls++;
        block({ type: 'tool_use', id: step.id ?? fakeId('toolu_01', 22), name: step.name, input: {} }, [
          { type: 'input_json_delta', partial_json: '' },
          ...piecesOf(step.args, step).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
        ]);
        break;
      case 'code': {
        hosted = true;
        const legacy = version === 'code_execution_20250522';
        const name = legacy ? 'code_execution' : 'bash_code_execution';
        const input = legacy ? { code: step.code } : { command: step.code };
        const json = JSON.stringify(input);
        const toolId = step.id ?? fakeId('srvtoolu_01', 22);
        block({ type: 'server_tool_use', id: toolId, name, input: {} }, [
          { type: 'input_json_delta', partial_json: '' },
          ...jsonPieces(input, json, step).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
        ]);
        const prefix = legacy ? 'code_execution' : 'bash_code_execution';
        const content = step.toolError
          ? { type: `${prefix}_tool_result_error`, error_code: step.toolError }
          : {
              type: `${prefix}_result`,
              stdout: step.stdout ?? '',
              stderr: step.stderr ?? '',
              return_code: step.exitCode ?? 0,
              content: (step.files ?? []).map((f) => ({ type: `${prefix}_output`, file_id: f.id })),
            };
        block({ type: `${prefix}_tool_result`, tool_use_id: toolId, content });
        break;
      }
      case 'editor': {
        hosted = true;
        const toolId = step.id ?? fakeId('srvtoolu_01', 22);
        const input = { command: step.command, path: step.path, ...(step.input ?? {}) };
        block({ type: 'server_tool_use', id: toolId, name: 'text_editor_code_execution', input: {} }, [
          { type: 'input_json_delta', partial_json: '' },
          ...splitText(JSON.stringify(input), 7).map((partial_json) => ({ type: 'input_json_delta', partial_json })),
        ]);
        const content = step.error
          ? { type: 'text_editor_code_execution_tool_result_error', error_code: step.error.code, error_message: step.error.message ?? null }
          : { type: `text_editor_code_execution_${step.command}_result`, ...(step.result ?? {}) };
        block({ type: 'text_editor_code_execution_tool_result', tool_use_id: toolId, content });
        break;
      }
      case 'raw':
        block(step.data);
        break;
    }
  }
  const stop = t.opts.stop ?? (calls > 0 ? 'tool_use' : 'end_turn');
  const delta: Json = { stop_reason: stop, stop_sequence: null };
  const containerId =
    t.opts.container ?? (typeof req.body?.container === 'string' ? req.body.container : undefined) ?? (hosted ? fakeId('container_011C', 20) : undefined);
  if (containerId) delta.container = { id: containerId, expires_at: '2026-04-24T11:13:36.730129Z' };
  frames.push(
    frame(
      'message_delta',
      { delta, usage: { input_tokens: u.input, cache_creation_input_tokens: 0, cache_read_input_tokens: u.cached ?? 0, output_tokens: u.output } },
      pad(),
    ),
  );
  frames.push(frame('message_stop', {}, pad()));
  return { frames };
}

/** The partial_json pieces: the scripted ones (any JSON spelling of the input, escapes included) or even splits. */
function jsonPieces(input: Json, json: string, step: { chunks?: string[]; chunkSize?: number }): string[] {
  if (!step.chunks) return splitText(json, step.chunkSize ?? 5);
  const joined = step.chunks.join('');
  if (JSON.stringify(JSON.parse(joined)) !== JSON.stringify(input)) throw new Error(`scripted partial_json does not spell the input: ${joined}`);
  return step.chunks;
}

function error(f: StatusFault): { status: number; headers: Record<string, string>; body: string } {
  const defaults: Record<number, [string, string]> = {
    400: ['invalid_request_error', 'Invalid request.'],
    401: ['authentication_error', 'invalid x-api-key'],
    403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
    404: ['not_found_error', 'model: claude-nope'],
    413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
    429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'],
    500: ['api_error', 'Internal server error'],
    529: ['overloaded_error', 'Overloaded'],
  };
  const [type, message] = defaults[f.status] ?? ['api_error', `HTTP ${f.status}`];
  return {
    status: f.status,
    headers: { 'request-id': 'req_wire_err', ...faultHeaders(f) },
    body: JSON.stringify({ type: 'error', error: { type: f.code ?? type, message: f.message ?? message }, request_id: 'req_wire_err' }),
  };
}
