/** Tiny DOM helpers for the panel (no framework: each transcript item owns its nodes). */
import { clip } from '../common/format';

type Attrs = Record<string, string | number | boolean | undefined | null | ((ev: Event) => void)>;
type Child = Node | string | null | undefined | false;

/** Creates an element. `on*` function attributes become listeners; `class`/`text` are shortcuts. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (typeof v === 'function') {
        el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
      } else if (k === 'class') {
        el.className = String(v);
      } else if (k === 'text') {
        el.textContent = String(v);
      } else if (v === true) {
        el.setAttribute(k, '');
      } else {
        el.setAttribute(k, String(v));
      }
    }
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

/** Sets text only when it changed (avoids needless layout work). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

export function toggle(el: Element, cls: string, on: boolean): void {
  if (el.classList.contains(cls) !== on) el.classList.toggle(cls, on);
}

/** 12345 -> "12,345" (toLocaleString is slow enough to show up in profiles). */
export { formatCount } from '../common/format';

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 100_000) return `${(n / 1000).toFixed(1)}k`;
  return `${Math.round(n / 1000)}k`;
}

/** A short one-line preview of a JSON-ish value (the bounded one of a tool call's arguments is core/gateway/limits' `preview`). */
export function valuePreview(value: unknown, max = 80): string {
  let s: string;
  if (value === undefined) return '';
  if (typeof value === 'string') s = JSON.stringify(value);
  else {
    try {
      s = JSON.stringify(value) ?? String(value);
    } catch {
      s = String(value);
    }
  }
  return clip(s, max);
}

/** Python-style keyword arguments for a tool call preview: `order_id="A-1", qty=2`. */
export function argsPreview(args: unknown, max = 90): string {
  if (args && typeof args === 'object' && !Array.isArray(args)) {
    const parts = Object.entries(args as Record<string, unknown>).map(([k, v]) => `${k}=${valuePreview(v, 40)}`);
    const s = parts.join(', ');
    return clip(s, max);
  }
  return valuePreview(args, max);
}

let idCounter = 0;
export function uid(prefix = 'ca'): string {
  return `${prefix}-${++idCounter}`;
}
