/** What item views share: the context they post through, their contract, small button helpers. */
import type { WebviewToHost } from '../common/protocol';
import type { ItemView } from '../common/transcript';
import { h } from './dom';
import { icon, type IconName } from './icons';

export interface ViewContext {
  post(message: WebviewToHost): void;
  announce(text: string): void;
  /** The largest image the panel draws, in pixels from its header (the host's codeact.outputs.maxImageMegapixels). */
  maxImagePixels(): number;
}

export interface ItemRenderer {
  readonly el: HTMLElement;
  sync(item: ItemView): void;
}

export function iconButton(name: IconName, label: string, onClick: () => void, extra = ''): HTMLButtonElement {
  const b = h('button', { class: `icon-button ${extra}`.trim(), type: 'button', title: label, 'aria-label': label, onclick: () => onClick() });
  b.append(icon(name));
  return b;
}

export function textButton(label: string, onClick: () => void, kind: 'primary' | 'secondary' | 'danger' = 'secondary', iconName?: IconName): HTMLButtonElement {
  const b = h('button', { class: `button ${kind}`, type: 'button', onclick: () => onClick() });
  if (iconName) b.append(icon(iconName));
  b.append(h('span', { text: label }));
  return b;
}

/** A text button of the panel chrome (empty state, notices, history). */
export function button(label: string, iconName: IconName | null, onClick: () => void, cls = 'button secondary', title?: string): HTMLButtonElement {
  const b = h('button', { class: cls, type: 'button', title: title ?? label, onclick: () => onClick() });
  if (iconName) b.append(icon(iconName));
  b.append(h('span', { text: label }));
  return b;
}

export function toolbarButton(iconName: IconName, label: string, onClick: () => void): HTMLButtonElement {
  const b = h('button', { class: 'icon-button', type: 'button', title: label, 'aria-label': label, onclick: () => onClick() });
  b.append(icon(iconName));
  return b;
}

/** The head of a card that waits for the person (an approval, a server's question): icon, title, "needed" badge. */
export function attentionHead(o: { headClass: string; iconClass: string; icon: IconName; title: HTMLElement; badge: string }): HTMLElement {
  return h(
    'header',
    { class: o.headClass },
    h('span', { class: `card-icon ${o.iconClass}`, 'aria-hidden': 'true' }, icon(o.icon)),
    o.title,
    h('span', { class: 'spacer' }),
    h('span', { class: 'badge attention', text: o.badge }),
  );
}
