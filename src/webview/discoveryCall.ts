/**
 * How the panel words the code's tool-discovery calls (`search_tools`, `describe_tool`, the `tools`
 * module's catalogue, under the reserved names `codeact.*`). They read the tool list and run no tool, so
 * the execution card shows them quietly ("searched tools: …", "looked up …") and never counts them as
 * tool calls.
 */
import type { ToolCallView } from '../common/transcript';
import { DESCRIBE_TOOL, isDiscoveryCall, SEARCH_TOOLS, TOOL_CATALOG } from '../common/tools';
import { valuePreview } from './dom';

interface DiscoveryText {
  /** What was done: "searched tools", "looked up", "read the tool list". */
  action: string;
  /** What it was done with: the query, the tool's name. */
  subject: string;
  /** What came back, once it did: "→ best_match +2", or '' while it runs or when it failed. */
  outcome: string;
  /** The outcome in full, for the row's tooltip (a search's matches). */
  title?: string;
}

/** Names listed in a search row's tooltip. */
const SHOWN_NAMES = 10;

function arg(args: unknown, key: string): unknown {
  return args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>)[key] : undefined;
}

function names(hits: unknown): string[] {
  return Array.isArray(hits) ? hits.map((h) => arg(h, 'name')).filter((n): n is string => typeof n === 'string') : [];
}

/** The words of a discovery row. */
export function discoveryText(call: ToolCallView): DiscoveryText {
  const ok = call.status === 'ok';
  switch (call.name) {
    case SEARCH_TOOLS: {
      const query = arg(call.arguments, 'query');
      const found = names(call.output);
      // The best match first, so a narrow row still shows what the search found.
      return {
        action: 'searched tools',
        subject: typeof query === 'string' ? valuePreview(query, 64) : '',
        outcome: !ok ? '' : found.length ? `→ ${found[0]}${found.length > 1 ? ` +${found.length - 1}` : ''}` : '→ nothing found',
        ...(ok && found.length > 1 ? { title: `Found: ${found.slice(0, SHOWN_NAMES).join(', ')}${found.length > SHOWN_NAMES ? ', …' : ''}` } : {}),
      };
    }
    case DESCRIBE_TOOL: {
      const name = arg(call.arguments, 'name');
      const signature = arg(call.output, 'signature');
      const subject = typeof name === 'string' ? name : valuePreview(name, 40);
      // The signature without the name just shown: "→ (*, deployment: str, revision: int = ...)".
      const params = typeof signature === 'string' ? signature.slice(Math.max(0, signature.indexOf('('))) : '';
      return { action: 'looked up', subject, outcome: ok && params ? `→ ${params}` : '' };
    }
    case TOOL_CATALOG: {
      const tools = arg(call.output, 'tools');
      return {
        action: 'read the tool list',
        subject: '',
        outcome: ok && Array.isArray(tools) ? `→ ${tools.length} ${tools.length === 1 ? 'tool' : 'tools'}` : '',
      };
    }
    default:
      return { action: 'looked up tools', subject: call.name, outcome: '' };
  }
}

/** "Tool calls · 2 · 1 failed · 3 lookups": real calls and their failures; discovery calls apart. */
export function toolsSectionLabel(calls: readonly ToolCallView[]): string {
  let real = 0;
  let failed = 0;
  let lookups = 0;
  for (const c of calls) {
    if (isDiscoveryCall(c.name)) lookups++;
    else {
      real++;
      if (c.status === 'error') failed++;
    }
  }
  const lookupText = `${lookups} ${lookups === 1 ? 'lookup' : 'lookups'}`;
  if (!real) return `Tool lookups · ${lookups}`;
  return `Tool calls · ${real}${failed ? ` · ${failed} failed` : ''}${lookups ? ` · ${lookupText}` : ''}`;
}

/** The status line's words for a call in flight. */
export function callingText(call: ToolCallView): string {
  if (!isDiscoveryCall(call.name)) return `calling ${call.name}`;
  return call.name === SEARCH_TOOLS ? 'searching tools' : 'looking up tools';
}
