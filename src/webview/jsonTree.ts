/**
 * A collapsible JSON viewer built from <details> (keyboard accessible); children render on first open.
 * Nothing is out of reach: an object or array longer than a page ends in a "… N more" row whose buttons
 * show the next page or all the rest, every collapsed node opens, and {@link expandAll} opens everything
 * (an approval card shows its arguments that way). Keys and strings show invisible and bidirectional
 * characters as markers (./reveal).
 */
import { clip } from '../common/format';
import { h } from './dom';
import { revealed } from './reveal';

interface JsonTreeOptions {
  /** Levels open at first (0 = collapsed). */
  expandDepth?: number;
  /** Children shown per object/array at first, and per "Show more". */
  maxItems?: number;
}

/** "Show all" appends at most this many children in one go; beyond it, pages of {@link BIG_PAGE}. */
const SHOW_ALL_MAX = 20_000;
const BIG_PAGE = 5_000;

interface Tree {
  o: Required<JsonTreeOptions>;
  /** Values drawn so far (leaves and nodes). */
  drawn: number;
  /** What is not on screen yet, oldest first: closed nodes (their opener) and "… N more" rows (their shower). */
  closed: Map<Element, () => void>;
  more: Map<Element, (limit: number) => void>;
}

const trees = new WeakMap<Element, Tree>();

export function renderJson(value: unknown, options: JsonTreeOptions = {}): HTMLElement {
  const root = h('div', { class: 'json-tree', role: 'tree' });
  const tree: Tree = {
    o: { expandDepth: options.expandDepth ?? 1, maxItems: Math.max(1, options.maxItems ?? 200) },
    drawn: 0,
    closed: new Map(),
    more: new Map(),
  };
  trees.set(root, tree);
  root.append(node(undefined, value, 0, tree));
  return root;
}

/**
 * Opens every node of a tree from {@link renderJson} and shows every child, until about `budget` values
 * are drawn. Says whether everything is on screen now (false: the rest still opens by hand).
 */
export function expandAll(root: HTMLElement, budget = 50_000): boolean {
  const tree = trees.get(root);
  if (!tree) return true;
  const stop = tree.drawn + budget;
  // Long lists are shown whole before the insides of their items are opened.
  while (tree.drawn < stop) {
    const [row, show] = first(tree.more);
    if (row) {
      tree.more.delete(row);
      show!(stop - tree.drawn);
      continue;
    }
    const [details, open] = first(tree.closed);
    if (!details) break;
    tree.closed.delete(details);
    open!();
  }
  return !pendingIn(root);
}

function first<K, V>(map: Map<K, V>): [K | undefined, V | undefined] {
  for (const entry of map) return entry;
  return [undefined, undefined];
}

/** Is anything of the tree not on screen (a closed node, a "… N more")? */
function pendingIn(root: HTMLElement): boolean {
  const tree = trees.get(root);
  return !!tree && (tree.closed.size > 0 || tree.more.size > 0);
}

function primitive(value: unknown): HTMLElement {
  if (value === null) return h('span', { class: 'json-null', text: 'null' });
  switch (typeof value) {
    case 'string':
      // A string without spaces is one word: it never breaks (a SKU, an id, a path); one with spaces wraps at them.
      return h('span', { class: /\s/.test(value) ? 'json-string' : 'json-string json-word' }, revealed(JSON.stringify(value)));
    case 'number':
    case 'bigint':
      return h('span', { class: 'json-number', text: String(value) });
    case 'boolean':
      return h('span', { class: 'json-boolean', text: String(value) });
    case 'undefined':
      return h('span', { class: 'json-null', text: 'undefined' });
    default:
      return h('span', { class: 'json-string' }, revealed(String(value)));
  }
}

function keyLabel(key: string | number | undefined): HTMLElement | null {
  if (key === undefined) return null;
  // The space after the colon is outside the key, so a narrow tree may break the line there (between tokens).
  const label = h(
    'span',
    { class: typeof key === 'number' ? 'json-index' : 'json-key' },
    typeof key === 'number' ? `${key}` : revealed(JSON.stringify(key)),
    h('span', { class: 'json-colon', text: ':' }),
  );
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
    return clip(s, 72);
  } catch {
    return '';
  }
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function node(key: string | number | undefined, value: unknown, depth: number, tree: Tree): HTMLElement {
  tree.drawn++;
  if (value === null || typeof value !== 'object') {
    return h('div', { class: 'json-leaf', role: 'treeitem' }, keyLabel(key), primitive(value));
  }
  const isArray = Array.isArray(value);
  const keys = isArray ? null : Object.keys(value as Record<string, unknown>);
  const length = isArray ? (value as unknown[]).length : keys!.length;
  const entryAt = (i: number): [string | number, unknown] =>
    isArray ? [i, (value as unknown[])[i]] : [keys![i], (value as Record<string, unknown>)[keys![i]]];
  if (length === 0) {
    return h('div', { class: 'json-leaf', role: 'treeitem' }, keyLabel(key), h('span', { class: 'json-punct', text: isArray ? '[]' : '{}' }));
  }
  const details = h('details', { class: 'json-node', role: 'treeitem' });
  const summary = h(
    'summary',
    null,
    keyLabel(key),
    h('span', { class: 'json-summary', text: summaryText(value as object) }),
    h('span', { class: 'json-preview' }, revealed(inlinePreview(value as object))),
  );
  details.append(summary);
  let group: HTMLElement | undefined;
  let shown = 0;
  let moreRow: HTMLElement | undefined;

  const showMore = (limit: number) => {
    if (!group) return;
    const end = Math.min(length, shown + Math.max(1, limit));
    const frag = document.createDocumentFragment();
    for (let i = shown; i < end; i++) {
      const [k, v] = entryAt(i);
      frag.append(node(k, v, depth + 1, tree));
    }
    shown = end;
    if (moreRow) {
      tree.more.delete(moreRow);
      moreRow.remove();
      moreRow = undefined;
    }
    group.append(frag);
    if (shown < length) {
      moreRow = more(length - shown, tree.o.maxItems, showMore);
      tree.more.set(moreRow, showMore);
      group.append(moreRow);
    }
  };
  const fill = () => {
    if (group) return;
    tree.closed.delete(details);
    group = h('div', { class: 'json-children', role: 'group' });
    details.append(group);
    showMore(tree.o.maxItems);
  };
  tree.closed.set(details, () => {
    fill();
    details.open = true;
  });
  details.addEventListener('toggle', () => {
    if (details.open) fill();
  });
  if (depth < tree.o.expandDepth) {
    fill();
    details.open = true;
  }
  return details;
}

/** The "… N more" row: show the next page, or all the rest (a big rest in big pages). */
function more(remaining: number, page: number, show: (limit: number) => void): HTMLElement {
  const row = h('div', { class: 'json-more', role: 'treeitem' }, h('span', { class: 'json-more-count', text: `… ${count(remaining)} more` }));
  const button = (text: string, limit: number) =>
    h('button', { class: 'link-button json-more-button', type: 'button', onclick: () => show(limit) }, h('span', { text }));
  if (remaining <= page) row.append(button(`Show ${count(remaining)} more`, remaining));
  else {
    row.append(button(`Show ${count(page)} more`, page));
    row.append(remaining <= SHOW_ALL_MAX ? button(`Show all ${count(remaining)}`, remaining) : button(`Show ${count(BIG_PAGE)} more`, BIG_PAGE));
  }
  return row;
}
