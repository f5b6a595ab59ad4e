/**
 * Gemini streaming (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`): one
 * `data: <json>\r\n\r\n` line per chunk, no `event:` lines and no `[DONE]`; each chunk is a whole
 * `GenerateContentResponse` holding only the new parts; JSON written like the real API
 * (`": "` after keys, `,` without space). The last chunk has `finishReason` and the full usage; a
 * `finishReason: STOP` can also appear mid-stream (`midStreamStop`).
 */
import type { Dialect, RecordedRequest, Rendered, WireServer } from './server';
import { faultHeaders, startWireServer } from './server';
import { piecesOf, type ScriptTurn, type StatusFault } from './turn';

type Json = Record<string, any>;

/** JSON the way the Gemini API writes it. */
export function geminiJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(geminiJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.entries(v as Json)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${JSON.stringify(k)}: ${geminiJson(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

const PATH = /^\/v1beta\/models\/([^/:]+):streamGenerateContent$/;

export function geminiDialect(): Dialect {
  return {
    name: 'gemini',
    basePath: '',
    contentType: 'text/event-stream',
    extraHeaders: { 'content-disposition': 'attachment', vary: 'Origin, X-Origin, Referer' },
    matches: (r) => r.method === 'POST' && PATH.test(r.path),
    render,
    error,
    malform: (f) => `${f.slice(0, Math.max(12, Math.floor(f.length / 2))).replace(/\r?\n/g, '')}\r\n\r\n`,
    streamError: (type, message) => `data: ${geminiJson({ error: { code: 503, message, status: type } })}\r\n\r\n`,
    endless(req) {
      const mk = new ChunkMaker(modelOf(req), 'endless-response');
      return { preamble: [mk.chunk([{ text: 'start ' }])], tick: () => mk.chunk([{ text: 'tick ' }]) };
    },
  };
}

export async function startGeminiServer(): Promise<WireServer> {
  return startWireServer(geminiDialect());
}

function modelOf(req: RecordedRequest): string {
  return PATH.exec(req.path)?.[1] ?? 'gemini-3-flash-preview';
}

class ChunkMaker {
  constructor(
    readonly model: string,
    readonly responseId: string,
  ) {}
  chunk(parts: Json[], extra: { finishReason?: string; usage?: Json } = {}): string {
    const cand: Json = { content: { parts, role: 'model' } };
    if (extra.finishReason) cand.finishReason = extra.finishReason;
    cand.index = 0;
    const obj = {
      candidates: [cand],
      usageMetadata: extra.usage ?? { promptTokenCount: 40, totalTokenCount: 40, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 40 }] },
      modelVersion: this.model,
      responseId: this.responseId,
    };
    return `data: ${geminiJson(obj)}\r\n\r\n`;
  }
}

function render(t: ScriptTurn, req: RecordedRequest): Rendered {
  const mk = new ChunkMaker(t.opts.model ?? modelOf(req), t.opts.id ?? 'n1P6abvRFaKdz7IPkcuQ2Aw');
  const frames: string[] = [];
  const u = t.opts.usage ?? { input: 40, output: 25 };
  let first = true;
  const push = (parts: Json[]): void => {
    frames.push(mk.chunk(parts, first && t.opts.midStreamStop ? { finishReason: 'STOP' } : {}));
    first = false;
  };
  for (const step of t.steps) {
    switch (step.kind) {
      case 'text':
        piecesOf(step.text, step).forEach((text, i) => {
          const part: Json = { text };
          if (step.thinking) part.thought = true;
          if (i === 0 && step.signature) part.thoughtSignature = step.signature;
          push([part]);
        });
        break;
      case 'call': {
        const fc: Json = { name: step.name, args: JSON.parse(step.args) };
        if (step.id) fc.id = step.id;
        push([{ functionCall: fc, thoughtSignature: step.signature ?? 'CiQBcsjafFunctionSig+/==' }]);
        break;
      }
      case 'code': {
        const ec: Json = { language: 'PYTHON', code: step.code };
        if (step.id) ec.id = step.id;
        const part: Json = { executableCode: ec };
        if (step.thought) part.thought = true;
        if (step.signature) part.thoughtSignature = step.signature;
        push([part, ...(step.thought ? [] : [{ text: '' }])]);
        const res: Json = { outcome: step.outcome ?? ((step.exitCode ?? 0) === 0 ? 'OUTCOME_OK' : 'OUTCOME_FAILED') };
        const output = (step.stdout ?? '') + (step.stderr ?? '');
        if (output) res.output = output;
        if (step.id) res.id = step.id;
        const rpart: Json = { codeExecutionResult: res };
        if (step.thought) rpart.thought = true;
        push([rpart]);
        for (const img of step.images ?? []) push([{ inlineData: { mimeType: 'image/png', data: img } }]);
        break;
      }
      case 'raw':
        push([step.data]);
        break;
      case 'editor':
        throw new Error('Gemini has no text editor tool');
    }
  }
  frames.push(
    mk.chunk([{ text: '', thoughtSignature: 'EoECCv4BAQw51segFinal==' }], {
      finishReason: t.opts.stop ?? 'STOP',
      usage: {
        promptTokenCount: u.input,
        candidatesTokenCount: u.output,
        totalTokenCount: u.input + u.output,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: u.input }],
        ...(u.cached ? { cachedContentTokenCount: u.cached } : {}),
      },
    }),
  );
  return { frames };
}

function error(f: StatusFault): { status: number; headers: Record<string, string>; body: string } {
  const defaults: Record<number, [string, string]> = {
    400: ['INVALID_ARGUMENT', 'Request contains an invalid argument.'],
    401: ['UNAUTHENTICATED', 'API key not valid. Please pass a valid API key.'],
    403: ['PERMISSION_DENIED', "Method doesn't allow unregistered callers."],
    404: ['NOT_FOUND', 'models/gemini-nope is not found for API version v1beta, or is not supported for generateContent.'],
    429: ['RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.'],
    500: ['INTERNAL', 'An internal error has occurred.'],
    503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
  };
  const [status, message] = defaults[f.status] ?? ['UNKNOWN', `HTTP ${f.status}`];
  const err: Json = { code: f.status, message: f.message ?? message, status: f.code ?? status };
  if (f.status === 429 && f.retryAfter !== undefined) {
    err.details = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${f.retryAfter}s` }];
  }
  return { status: f.status, headers: faultHeaders(f), body: JSON.stringify({ error: err }) };
}
