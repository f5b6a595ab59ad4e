/**
 * Anthropic Messages adapter (`client.messages.create` / `client.beta.messages.create`, streamed):
 * client tools with `input_json_delta`, thinking blocks (thinking text, signature kept for replay),
 * and hosted code execution in every tool version:
 *   - `code_execution_20250522` (beta `code-execution-2025-05-22`): `server_tool_use` `code_execution`
 *     with input `{code}`, result `code_execution_tool_result`;
 *   - `code_execution_20250825` (beta `code-execution-2025-08-25`), `code_execution_20260120` and
 *     `code_execution_20260521` (no beta header): `bash_code_execution` with `{command}` and
 *     `text_editor_code_execution` with `{command, path, …}`.
 * The request is built in ./anthropicRequest, the stream is read by ./anthropicStream.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { FileOutput } from '../../../common/events';
import { ProviderError, readHostedFile, toProviderError } from '../shared/errors';
import { FirstPartyProvider } from '../shared/firstPartyProvider';
import type { DownloadedFile, EmitFn, TurnRequest, TurnResult } from '../shared/types';
import { buildAnthropicRequest, FILES_BETA } from './anthropicRequest';
import { AnthropicState } from './anthropicStream';

/** What the Messages stream sends, in either API flavour. */
type AnthropicStreamEvent = Anthropic.RawMessageStreamEvent | Anthropic.Beta.BetaRawMessageStreamEvent;

export class AnthropicProvider extends FirstPartyProvider<Anthropic> {
  readonly id = 'anthropic' as const;

  async streamTurn(req: TurnRequest, emit: EmitFn): Promise<TurnResult> {
    const open = async (signal: AbortSignal) => {
      const { body, betas, beta } = buildAnthropicRequest(req);
      // The body is built untyped in ./anthropicRequest (replayed blocks pass through as the API sent them).
      const stream: AsyncIterable<AnthropicStreamEvent> = beta
        ? await this.client.beta.messages.create(
            { ...body, ...(betas.length > 0 ? { betas } : {}) } as unknown as Anthropic.Beta.MessageCreateParamsStreaming,
            { signal },
          )
        : await this.client.messages.create(body as unknown as Anthropic.MessageCreateParamsStreaming, { signal });
      return stream;
    };
    return this.stream('msg', req, emit, open, (turn) => new AnthropicState(emit, turn));
  }

  /** Downloads an output file through the Files API (`GET /v1/files/{id}/content`). */
  async downloadFile(file: FileOutput, options: { signal?: AbortSignal; maxBytes?: number } = {}): Promise<DownloadedFile> {
    if (!file.file_id)
      throw new ProviderError({ code: 'bad_request', provider: 'anthropic', message: 'This file has no file id, so it cannot be downloaded from Anthropic.' });
    try {
      let filename = file.filename;
      let mimeType = file.mime_type;
      try {
        const meta = await this.client.beta.files.retrieveMetadata(file.file_id, { betas: [FILES_BETA] }, { signal: options.signal });
        filename ??= meta.filename;
        mimeType ??= meta.mime_type;
      } catch (err) {
        if (options.signal?.aborted) throw err;
      }
      const res = await this.client.beta.files.download(file.file_id, { betas: [FILES_BETA] }, { signal: options.signal });
      return { bytes: await readHostedFile(res, 'anthropic', filename ?? file.file_id, options.maxBytes), filename, mimeType };
    } catch (err) {
      throw toProviderError(err, { provider: this.id, errors: this.errors, baseURL: this.baseURL, signal: options.signal });
    }
  }
}
