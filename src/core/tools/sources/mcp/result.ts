/** What a `tools/call` result becomes for the guest. See {@link mcpResultValue}. */
export interface McpCallResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * What the guest receives for a `tools/call` result: `structuredContent` when the server sent it;
 * otherwise the content, one block as a value and several as an array, where a text block is its
 * parsed JSON when the text is JSON and the text otherwise, an image is `{type:"image", mimeType, data}`
 * (base64), audio likewise, an embedded resource `{type:"resource", uri, mimeType, text|blob}` and a
 * resource link `{type:"resource_link", uri, name, ...}`. No content gives null. `isError` throws
 * an Error with the text.
 */
export function mcpResultValue(result: McpCallResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError) {
    const text = content
      .filter((c) => c.type === 'text' && typeof c.text === 'string')
      .map((c) => c.text as string)
      .join('\n')
      .trim();
    throw new Error(`failed: ${text || 'the MCP server reported an error without a message'}`);
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  const values = content.map(contentValue);
  if (values.length === 0) return null;
  return values.length === 1 ? values[0] : values;
}

function contentValue(c: Record<string, unknown>): unknown {
  switch (c.type) {
    case 'text':
      return textValue(String(c.text ?? ''));
    case 'image':
    case 'audio':
      return { type: c.type, mimeType: c.mimeType, data: c.data };
    case 'resource': {
      const r = (c.resource ?? {}) as Record<string, unknown>;
      return { type: 'resource', uri: r.uri, ...(r.mimeType ? { mimeType: r.mimeType } : {}), ...('text' in r ? { text: r.text } : { blob: r.blob }) };
    }
    default: {
      const rest: Record<string, unknown> = { ...c };
      delete rest._meta;
      delete rest.annotations;
      return rest;
    }
  }
}

function textValue(text: string): unknown {
  const t = text.trim();
  if (!t) return text;
  const c = t[0];
  if (c === '{' || c === '[' || c === '"' || c === '-' || (c >= '0' && c <= '9') || t === 'true' || t === 'false' || t === 'null') {
    try {
      return JSON.parse(t);
    } catch {}
  }
  return text;
}
