/** A collapsible JSON viewer built from <details> (keyboard accessible); children render on first open. */
import { h } from './dom';

export interface JsonTreeOptions {
  /** Levels open at first (0 = collapsed). */
  expandDepth?: number;
  /** Children shown per object/array before "… N more". */
  maxItems?: number;
}

export function renderJson(value: unknown, options: JsonTreeOptions = {}): HTMLElement {
  const root = h('div', { class: 'json-tree', role: 'tree' });
  root.append(node(undefined, value, 0, { expandDepth: options.expandDepth ?? 1, maxItems: options.maxItems ?? 200 }));
  return root;
}

function primitive(value: unknown): HTMLElement {
  if (value === null) return h('span', { class: 'json-null', text: 'null' });
  switch (typeof value) {
    case 'string':
      // A string without spaces is one word: it never breaks (a SKU, an id, a path); one with spaces wraps at them.
      return h('span', { class: /\s/.test(value) ? 'json-string' : 'json-string json-word', text: JSON.stringify(value) });
    case 'number':
    case 'bigint':
      return h('span', { class: 'json-number', text: String(value) });
    case 'boolean':
      return h('span', { class: 'json-boolean', text: String(value) });
    case 'undefined':
      return h('span', { class: 'json-null', text: 'undefined' });
    default:
      return h('span', { class: 'json-string', text: String(value) });
  }
}

function keyLabel(key: string | number | undefined): HTMLElement | null {
  if (key === undefined) return null;
  // The space after the colon is outside the key, so a narrow tree may break the line there (between tokens).
  const label = h('span', { class: typeof key === 'number' ? 'json-index' : 'json-key', text: typeof key === 'number' ? `${key}` : JSON.stringify(key) }, h('span', { class: 'json-colon', text: ':' }));
  return h('span', { class: 'json-label' }, label, ' ');
}

function summaryText(value: object): string {
  if (Array.isArray(value)) return `Array(${value.length})`;
  const n = Object.keys(value).length;
  return `{${n} ${n === 1 ? 'key' : 'keys'}}`;
}

function inlinePreview(value: object): string {
  try {
    const s = JSON.stringify(value);
    return s.length > 72 ? `${s.slice(0, 71)}…` : s;
  } catch {
    return '';
  }
}

function node(key: string | number | undefined, value: unknown, depth: number, o: Required<JsonTreeOptions>): HTMLElement {
  if (value === null || typeof value !== 'object') {
    return h('div', { class: 'json-leaf', role: 'treeitem' }, keyLabel(key), primitive(value));
  }
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) {
    return h('div', { class: 'json-leaf', role: 'treeitem' }, keyLabel(key), h('span', { class: 'json-punct', text: Array.isArray(value) ? '[]' : '{}' }));
  }
  const details = h('details', { class: 'json-node', role: 'treeitem' });
  const summary = h(
    'summary',
    null,
    keyLabel(key),
    h('span', { class: 'json-summary', text: summaryText(value as object) }),
    h('span', { class: 'json-preview', text: inlinePreview(value as object) }),
  );
  details.append(summary);
  let filled = false;
  const fill = () => {
    if (filled) return;
    filled = true;
    const group = h('div', { class: 'json-children', role: 'group' });
    const shown = entries.slice(0, o.maxItems);
    for (const [k, v] of shown) group.append(node(k, v, depth + 1, o));
    if (entries.length > shown.length) group.append(h('div', { class: 'json-more', text: `… ${entries.length - shown.length} more` }));
    details.append(group);
  };
  details.addEventListener('toggle', () => {
    if (details.open) fill();
  });
  if (depth < o.expandDepth) {
    fill();
    details.open = true;
  }
  return details;
}
