/**
 * The request of an Anthropic Messages turn: client tools, the hosted code execution tool of the version
 * asked for (with the `anthropic-beta` it needs), and the history as Anthropic messages.
 */
import { ANTHROPIC_CODE_TOOL_VERSIONS, ANTHROPIC_CODE_TOOLS, DEFAULT_ANTHROPIC_CODE_TOOL, type AnthropicCodeTool } from '../shared/catalog';
import { ProviderError } from '../shared/errors';
import { asObject, objectsOf, type JsonObject } from '../shared/emit';
import { requestImages, writeHistory } from '../shared/history';
import type { AttachedImage } from '../../../common/events';
import type { TurnRequest } from '../shared/types';

const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;

/** One message of the request: its blocks as they are sent (replayed ones as the API sent them). */
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: JsonObject[];
}
export const FILES_BETA = 'files-api-2025-04-14';

/** The request body and the betas it needs (`beta` true: sent to `/v1/messages?beta=true`). */
export function buildAnthropicRequest(req: TurnRequest): { body: JsonObject; betas: string[]; beta: boolean } {
  const tools: JsonObject[] = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const betas: string[] = [];
  let beta = false;
  if (req.hosted?.enabled) {
    const version = req.hosted.toolVersion ?? DEFAULT_ANTHROPIC_CODE_TOOL;
    if (!/^code_execution_\d{8}$/.test(version)) {
      throw new ProviderError({
        code: 'bad_request',
        provider: 'anthropic',
        message: `Unknown Anthropic code execution tool version "${version}". Use one of: ${ANTHROPIC_CODE_TOOL_VERSIONS.join(', ')}.`,
      });
    }
    tools.push({ type: version, name: 'code_execution' });
    const b: string | undefined = ANTHROPIC_CODE_TOOLS[version as AnthropicCodeTool];
    if (b) betas.push(b);
    if (req.hosted.fileIds && req.hosted.fileIds.length > 0) betas.push(FILES_BETA);
    beta = true;
  }
  const messages = toAnthropicMessages(req);
  if (!beta && messages.some((m) => m.content.some((b) => b.type === 'server_tool_use' || b.type === 'container_upload'))) {
    beta = true;
  }
  const body: JsonObject = { model: req.model, max_tokens: req.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS, messages, stream: true };
  if (req.system) body.system = req.system;
  if (tools.length > 0) {
    body.tools = tools;
    const choice = req.toolChoice ?? 'auto';
    body.tool_choice = { type: choice === 'required' ? 'any' : choice };
  }
  if (req.hosted?.enabled && req.hosted.containerId) body.container = req.hosted.containerId;
  return { body, betas, beta };
}

/** The object a JSON text holds (`{value}` for another JSON value, `{}` for broken JSON). */
export function parseObject(json: string): JsonObject {
  try {
    const v: unknown = JSON.parse(json);
    return asObject(v) ?? { value: v };
  } catch {
    return {};
  }
}

/** Anthropic image blocks (base64 sources). */
function imageBlocks(images: AttachedImage[] | undefined): JsonObject[] {
  return (images ?? []).map((img) => ({ type: 'image', source: { type: 'base64', media_type: img.mime_type, data: img.data } }));
}

/** The history as Anthropic messages (same-role neighbours merged, tool results in user turns). */
function toAnthropicMessages(req: TurnRequest): AnthropicMessage[] {
  const messages: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', all: JsonObject[]): void => {
    // The API rejects empty text blocks.
    const blocks = all.filter((b) => !(b.type === 'text' && !b.text));
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: [...blocks] });
  };
  writeHistory(
    req.history,
    {
      replay: { provider: 'anthropic', write: (parts) => push('assistant', objectsOf(parts)) },
      user: (text, images) => push('user', [{ type: 'text', text }, ...imageBlocks(images)]),
      assistant: (text) => push('assistant', [{ type: 'text', text }]),
      call: (item) => push('assistant', [{ type: 'tool_use', id: item.call_id, name: item.name, input: parseObject(item.arguments ?? '{}') }]),
      output: (item) => {
        // With images, the content is a list: the text, then the image blocks.
        const content = item.images?.length
          ? [{ type: 'text', text: item.output }, ...imageBlocks(item.images)].filter((b) => b.type !== 'text' || b.text)
          : item.output;
        const block: JsonObject = { type: 'tool_result', tool_use_id: item.call_id, content };
        if (item.is_error) block.is_error = true;
        push('user', [block]);
      },
    },
    requestImages(req, 'anthropic'),
  );
  // Tool results first in a user turn, as the API requires.
  for (const m of messages) {
    if (m.role === 'user') m.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  const fileIds = req.hosted?.enabled ? (req.hosted.fileIds ?? []) : [];
  if (fileIds.length > 0) {
    const firstUser = messages.find((m) => m.role === 'user');
    if (firstUser) {
      const present = new Set(firstUser.content.filter((b) => b.type === 'container_upload').map((b) => b.file_id));
      for (const id of fileIds) if (!present.has(id)) firstUser.content.push({ type: 'container_upload', file_id: id });
    }
  }
  return messages;
}
