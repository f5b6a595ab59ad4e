/**
 * Compact views of the managed tools, for large tool sets:
 * - `buildToolCatalog`: the per-tool signature catalogue the guest turns into the `tools` module (name,
 *   Python name, one-line description, parameters with name/required/JSON type/default/description/enum,
 *   a summary of the result), bounded in size (format in CATALOG_FORMAT below);
 * - `signatureText`: the Python signature the guest generates, as text (`search_catalog(*, query: str,
 *   max_results: int = ...)`), for search results and descriptions;
 * - `oneLine`, `toolGroup`: the short listing `execute_tool_code` shows above the inline limit.
 */
import { clip } from '../../../common/format';
import { TOOL_SOURCE_INFO, type JsonSchema, type ToolSourceKind } from '../../../common/tools';
import type { ManagedTool } from '../toolSet';

interface CatalogParam {
  name: string;
  required: boolean;
  /** JSON Schema type(s); "any" when the schema does not say. */
  type: string | string[];
  description?: string;
  /** The schema's `default` (the tool applies it; the guest does not send it). */
  default?: unknown;
  enum?: unknown[];
}

interface CatalogTool {
  name: string;
  /** The function name in the guest's `tools` module (the name with `-` as `_`; absent when no valid name is free). */
  py?: string;
  group: string;
  description: string;
  /** Keyword parameters; null when the schema has none to list (the function then takes `**arguments`). */
  params: CatalogParam[] | null;
  /** True when the function also takes `**arguments` (parameter names that are not Python identifiers, or no listed parameters). */
  extra: boolean;
  returns?: string;
}

export interface ToolCatalog {
  version: 1;
  tools: CatalogTool[];
  /** Reserved call names the guest uses for discovery (see ./toolDiscovery). */
  reserved: { search: string; describe: string; catalog: string };
  /** True when the size bound removed detail (parameter descriptions, result summaries, or parameter lists). */
  truncated: boolean;
}

const CATALOG_FORMAT = 1;
/** Default bound of the serialised catalogue. */
const DEFAULT_CATALOG_MAX_BYTES = 256 * 1024;

/** Python's keywords (`keyword.kwlist`); soft keywords such as `type` and `match` are valid names. */
const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isPythonName(name: string): boolean {
  return IDENTIFIER.test(name) && !PY_KEYWORDS.has(name);
}

/** A tool's function name in the guest's `tools` module (`get-ticket` -> `get_ticket`), or undefined. */
export function pythonName(toolName: string): string | undefined {
  const py = toolName.replace(/-/g, '_');
  return isPythonName(py) ? py : undefined;
}

/** The first sentence or line of a description, at most `max` characters (cut at a word, with "…"). */
export function oneLine(description: string | undefined, max = 100): string {
  const text = (description ?? '')
    .slice(0, 4 * max + 200)
    .replace(/\s+/g, ' ')
    .trim();
  const end = text.search(/[.!?](?:\s|$)/);
  let line = end >= 0 ? text.slice(0, end + 1) : text;
  if (line.length > max) {
    const cut = line.slice(0, Math.max(0, max - 1));
    const space = line[cut.length] === ' ' ? cut.length : cut.lastIndexOf(' ');
    line = `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.]+$/, '')}…`;
  }
  return max <= 1 ? '' : line;
}

/** Where a tool comes from, as a group heading: its group (an MCP tool's server), or its kind of source. */
export function toolGroup(tool: ManagedTool): string {
  if (tool.group) return tool.group;
  return Object.hasOwn(TOOL_SOURCE_INFO, tool.source) ? TOOL_SOURCE_INFO[tool.source as ToolSourceKind].group : `${tool.source} tools`;
}

type Schema = Record<string, unknown>;

/** Follows one local `#/…` reference (bounded), for property schemas that point into `$defs`. */
function deref(root: Schema, schema: unknown): Schema | undefined {
  let s = schema;
  for (let i = 0; i < 4 && s && typeof s === 'object' && typeof (s as Schema).$ref === 'string'; i++) {
    const ref = (s as Schema).$ref as string;
    if (!ref.startsWith('#/')) return undefined;
    s = ref
      .slice(2)
      .split('/')
      .slice(0, 8)
      .reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Schema)[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), root);
  }
  return s && typeof s === 'object' ? (s as Schema) : undefined;
}

const JSON_TYPES = ['string', 'integer', 'number', 'boolean', 'array', 'object', 'null'];

/** The JSON type(s) a schema allows, as far as a quick look tells; ["any"] when it does not say. */
function schemaTypes(root: Schema, schema: unknown, depth = 0): string[] {
  const s = deref(root, schema);
  if (!s || depth > 3) return ['any'];
  if (typeof s.type === 'string' && JSON_TYPES.includes(s.type)) return [s.type];
  if (Array.isArray(s.type)) {
    const t = s.type.filter((x): x is string => typeof x === 'string' && JSON_TYPES.includes(x));
    if (t.length) return [...new Set(t)];
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[key])) {
      const all = (s[key] as unknown[]).slice(0, 8).flatMap((x) => schemaTypes(root, x, depth + 1));
      return all.includes('any') ? ['any'] : [...new Set(all)];
    }
  }
  const values = Array.isArray(s.enum) ? s.enum : 'const' in s ? [s.const] : undefined;
  if (values) {
    const t = [...new Set(values.slice(0, 50).map((v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v)))];
    return t.filter((x) => JSON_TYPES.includes(x)).length === t.length ? t : ['any'];
  }
  if (s.properties && typeof s.properties === 'object') return ['object'];
  if (s.items !== undefined) return ['array'];
  return ['any'];
}

function shortText(text: unknown, max: number): string | undefined {
  if (typeof text !== 'string' || !text.trim()) return undefined;
  return clip(text.replace(/\s+/g, ' ').trim(), max);
}

/** The top-level keyword parameters of a tool's input schema; null when it lists none. */
export function toolParams(tool: ManagedTool, maxParams = 64): CatalogParam[] | null {
  const root = typeof tool.inputSchema === 'object' ? (tool.inputSchema as Schema) : {};
  const top = deref(root, root) ?? {};
  const props = top.properties && typeof top.properties === 'object' ? (top.properties as Record<string, unknown>) : undefined;
  if (!props || Object.keys(props).length === 0) return null;
  const required = new Set(Array.isArray(top.required) ? top.required.filter((x): x is string => typeof x === 'string') : []);
  const params: CatalogParam[] = [];
  for (const [name, raw] of Object.entries(props).slice(0, maxParams)) {
    const s = deref(root, raw) ?? {};
    const types = schemaTypes(root, raw);
    const p: CatalogParam = { name, required: required.has(name), type: types.length === 1 ? types[0] : types };
    const description = shortText(s.description ?? s.title, 160);
    if (description) p.description = description;
    if ('default' in s && JSON.stringify(s.default ?? null).length <= 200) p.default = s.default;
    if (Array.isArray(s.enum) && s.enum.length <= 20 && JSON.stringify(s.enum).length <= 400) p.enum = s.enum;
    params.push(p);
  }
  // Required parameters first, in schema order: the order the signature shows them.
  return [...params.filter((p) => p.required), ...params.filter((p) => !p.required)];
}

/** A short summary of a result schema: `array of {sku: string, name: string, price: number}`. */
export function returnsSummary(schema: JsonSchema | undefined, max = 200): string | undefined {
  if (schema === undefined || typeof schema !== 'object') return undefined;
  const root = schema as Schema;
  const describe = (s: unknown, depth: number): string => {
    const d = deref(root, s);
    const types = schemaTypes(root, s);
    if (!d || depth > 2) return types.join(' | ');
    if (types.length === 1 && types[0] === 'object' && d.properties && typeof d.properties === 'object') {
      const keys = Object.entries(d.properties as Record<string, unknown>).slice(0, 12);
      return `{${keys.map(([k, v]) => `${k}: ${describe(v, depth + 1)}`).join(', ')}${Object.keys(d.properties).length > 12 ? ', …' : ''}}`;
    }
    if (types.length === 1 && types[0] === 'array' && d.items !== undefined) return `array of ${describe(d.items, depth + 1)}`;
    return types.join(' | ');
  };
  const text = describe(root, 0);
  return text === 'any' ? undefined : clip(text, max);
}

const PY_TYPES: Record<string, string> = { string: 'str', integer: 'int', number: 'float', boolean: 'bool', array: 'list', object: 'dict', null: 'None' };

/** The Python annotation of a JSON type ("" for any). */
function pythonAnnotation(type: string | string[]): string {
  const types = Array.isArray(type) ? type : [type];
  if (types.includes('any')) return '';
  return types.map((t) => PY_TYPES[t] ?? 'object').join(' | ');
}

/** A JSON value as a Python literal (short values only). */
function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${pythonLiteral(k)}: ${pythonLiteral(v)}`)
    .join(', ')}}`;
}

/** Whether a catalogue entry's function needs `**arguments`. */
function needsExtra(params: CatalogParam[] | null): boolean {
  return params === null || params.some((p) => !isPythonName(p.name));
}

/**
 * The signature the guest generates for a tool, as Python prints it:
 * `search_catalog(*, query: str, max_results: int = ..., max_price: float = ...)`. Parameters without a
 * default show `...` (they are not sent unless given).
 */
export function signatureText(name: string, params: CatalogParam[] | null): string {
  const parts: string[] = [];
  for (const p of params ?? []) {
    if (!isPythonName(p.name)) continue;
    const ann = pythonAnnotation(p.type);
    const head = ann ? `${p.name}: ${ann}` : p.name;
    parts.push(p.required ? head : `${head}${ann ? ' = ' : '='}${'default' in p ? pythonLiteral(p.default) : '...'}`);
  }
  const extra = needsExtra(params) ? '**arguments' : '';
  const inner = parts.length ? `*, ${parts.join(', ')}${extra ? `, ${extra}` : ''}` : extra;
  return `${pythonName(name) ?? name}(${inner})`;
}

interface CatalogOptions {
  maxBytes?: number;
  reserved: ToolCatalog['reserved'];
}

/**
 * The signature catalogue for the guest, at most `maxBytes` serialised. Over the bound it drops detail in
 * steps: parameter descriptions, then result summaries, then shortens descriptions, then enums, then
 * replaces the parameter lists of the largest entries by null (those functions take `**arguments`), then
 * empties descriptions, and only then leaves tools out (they stay callable with `call_tool`).
 */
export function buildToolCatalog(tools: readonly ManagedTool[], options: CatalogOptions): ToolCatalog {
  const max = options.maxBytes ?? DEFAULT_CATALOG_MAX_BYTES;
  const taken = new Set<string>();
  const entries: CatalogTool[] = [...tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => {
      const params = toolParams(t);
      let py = pythonName(t.name);
      if (py && taken.has(py)) py = undefined;
      if (py) taken.add(py);
      const entry: CatalogTool = {
        name: t.name,
        ...(py ? { py } : {}),
        group: toolGroup(t),
        description: oneLine(t.description, 300),
        params,
        extra: needsExtra(params),
      };
      const returns = returnsSummary(t.outputSchema);
      if (returns) entry.returns = returns;
      return entry;
    });
  const catalog: ToolCatalog = { version: CATALOG_FORMAT, tools: entries, reserved: options.reserved, truncated: false };
  const size = (): number => Buffer.byteLength(JSON.stringify(catalog));
  const steps: Array<() => void> = [
    () => entries.forEach((e) => e.params?.forEach((p) => delete p.description)),
    () => entries.forEach((e) => delete e.returns),
    () => entries.forEach((e) => (e.description = oneLine(e.description, 80))),
    () => entries.forEach((e) => e.params?.forEach((p) => delete p.enum)),
  ];
  for (const step of steps) {
    if (size() <= max) return catalog;
    step();
    catalog.truncated = true;
  }
  // Still too large: drop parameter lists, largest first, until it fits (bounded by the number of tools).
  const bySize = entries.map((e, i) => ({ i, n: JSON.stringify(e.params).length })).sort((a, b) => b.n - a.n);
  let total = size();
  for (const { i } of bySize) {
    if (total <= max) break;
    const before = JSON.stringify(entries[i]).length;
    entries[i].params = null;
    entries[i].extra = true;
    total -= before - JSON.stringify(entries[i]).length;
  }
  for (const e of entries) {
    if (total <= max) break;
    const before = JSON.stringify(e).length;
    e.description = '';
    total -= before - JSON.stringify(e).length;
  }
  // Last resort: leave the last entries out (their tools stay callable with call_tool).
  total = size();
  while (total > max && entries.length) total -= Buffer.byteLength(JSON.stringify(entries.pop())) + 1;
  return catalog;
}
