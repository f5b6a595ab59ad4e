/**
 * Helpers for text-protocol tests: what a recorded request body says, in a provider-neutral form
 * (its tools, its system prompt, its messages as plain role/text pairs), and a small order desk of
 * managed tools that run in-process.
 */
import { GUTTER } from '../../src/common/quoteData';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import type { ProviderId } from '../../src/core/providers/shared/types';

type Json = Record<string, any>;

/** The `tools` a request declared (undefined when it sent none). */
export function toolsOf(provider: ProviderId, body: Json): unknown {
  return provider === 'gemini' ? (body.tools ?? body.config?.tools) : body.tools;
}

export function systemOf(provider: ProviderId, body: Json): string {
  switch (provider) {
    case 'openai-compatible':
      return body.messages[0]?.role === 'system' ? body.messages[0].content : '';
    case 'openai':
      return body.instructions ?? '';
    case 'anthropic':
      return typeof body.system === 'string' ? body.system : JSON.stringify(body.system ?? '');
    case 'gemini': {
      const s = body.systemInstruction;
      return typeof s === 'string' ? s : (s?.parts ?? []).map((p: Json) => p.text ?? '').join('');
    }
  }
}

/** The conversation a request carries, as role/text pairs (system prompt left out). */
export function messagesOf(provider: ProviderId, body: Json): { role: string; text: string }[] {
  const text = (c: unknown): string =>
    typeof c === 'string' ? c : Array.isArray(c) ? c.map((b: Json) => (typeof b === 'string' ? b : (b.text ?? JSON.stringify(b)))).join('') : JSON.stringify(c);
  switch (provider) {
    case 'openai-compatible':
      return body.messages.filter((m: Json) => m.role !== 'system').map((m: Json) => ({ role: m.role, text: text(m.content) }));
    case 'openai':
      return body.input.map((m: Json) => ({ role: m.role ?? m.type, text: text(m.content ?? m.output) }));
    case 'anthropic':
      return body.messages.map((m: Json) => ({ role: m.role, text: text(m.content) }));
    case 'gemini':
      return body.contents.map((c: Json) => ({ role: c.role === 'model' ? 'assistant' : c.role, text: text(c.parts) }));
  }
}

/** The text of a block that `quoteBlock` quoted (its lines behind the gutter), without the gutter. */
export function unquoteBlock(block: string): string {
  const lines = block.split('\n');
  if (!lines.every((l) => l.startsWith(GUTTER))) throw new Error(`not a quoted block: ${JSON.stringify(block.slice(0, 200))}`);
  return lines.map((l) => l.slice(GUTTER.length)).join('\n');
}

const CATALOG = [
  { sku: 'LMP-LED-010', name: 'LED Desk Lamp', price: 39 },
  { sku: 'LMP-ARC-020', name: 'Arc Floor Lamp', price: 129 },
];
const STOCK: Record<string, number> = { 'LMP-LED-010': 85, 'LMP-ARC-020': 4 };

/** search_catalog and check_inventory, with real schemas (a bad SKU fails the gateway's check). */
export function orderDeskTools(calls: string[] = []): ManagedTool[] {
  return [
    {
      name: 'search_catalog',
      description: 'Search the product catalog by keywords. Cheapest first.',
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string', minLength: 1 }, max_results: { type: 'integer', minimum: 1 } },
        required: ['query'],
        additionalProperties: false,
      },
      outputSchema: {
        type: 'array',
        items: {
          type: 'object',
          properties: { sku: { type: 'string' }, name: { type: 'string' }, price: { type: 'number' } },
          required: ['sku', 'name', 'price'],
        },
      },
      approval: 'auto',
      expose: 'code',
      source: 'test',
      invoke: async (args) => {
        calls.push(`search_catalog:${String(args.query)}`);
        const words = String(args.query).toLowerCase().split(/\s+/);
        return CATALOG.filter((p) => words.every((w) => p.name.toLowerCase().includes(w)));
      },
    },
    {
      name: 'check_inventory',
      description: 'Stock on hand for one SKU.',
      inputSchema: {
        type: 'object',
        properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-[A-Z]{3}-\\d{3}$' } },
        required: ['sku'],
        additionalProperties: false,
      },
      outputSchema: { type: 'object', properties: { sku: { type: 'string' }, on_hand: { type: 'integer' } }, required: ['sku', 'on_hand'] },
      approval: 'auto',
      expose: 'code',
      source: 'test',
      invoke: async (args) => {
        calls.push(`check_inventory:${String(args.sku)}`);
        return { sku: args.sku, on_hand: STOCK[String(args.sku)] ?? 0 };
      },
    },
  ];
}

/** The three model messages of the scripted loop: a failing run, a recovering run, the answer. */
export const LOOP = {
  fail: 'I will check the lamp.\n\n```python\nr = await call_tool("check_inventory", sku="lamp")\nreturn r["on_hand"]\n```\nObservation: 12 (a guess the agent must not show)\n',
  recover:
    'The SKU was wrong; I will search first.\n```python\nhits = await call_tool("search_catalog", query="LED lamp")\nstock = await call_tool("check_inventory", sku=hits[0]["sku"])\nprint(hits[0]["name"])\nreturn stock["on_hand"]\n```',
  answer: 'There are **85** LED Desk Lamps (LMP-LED-010) on hand.',
  failCode: 'r = await call_tool("check_inventory", sku="lamp")\nreturn r["on_hand"]',
  recoverCode:
    'hits = await call_tool("search_catalog", query="LED lamp")\nstock = await call_tool("check_inventory", sku=hits[0]["sku"])\nprint(hits[0]["name"])\nreturn stock["on_hand"]',
};
