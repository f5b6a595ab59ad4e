/** Inline SVG icons in the style of VS Code's codicons (16×16, currentColor, no remote fonts). */

const P = (d: string) => `<path d="${d}"/>`;

const ICONS = {
  send: P('M2 2.5l12 5.5-12 5.5 1.8-5.5z') + P('M3.8 8H9'),
  stop: '<rect x="3.5" y="3.5" width="9" height="9" rx="1.5"/>',
  copy:
    '<rect x="5.5" y="5.5" width="8" height="8" rx="1.5"/>' + P('M10.5 5.5V3.8a1.3 1.3 0 0 0-1.3-1.3H3.8a1.3 1.3 0 0 0-1.3 1.3v5.4a1.3 1.3 0 0 0 1.3 1.3h1.7'),
  insert: P('M8 2v7.5') + P('M5 6.8L8 9.8l3-3') + P('M2.5 10.5v2a1 1 0 0 0 1 1h9a1 1 0 0 0 1-1v-2'),
  play: P('M4.5 2.8v10.4L13 8z'),
  check: P('M3 8.5l3.2 3L13 4.5'),
  close: P('M4 4l8 8M12 4l-8 8'),
  error: '<circle cx="8" cy="8" r="6"/>' + P('M6 6l4 4M10 6l-4 4'),
  pass: '<circle cx="8" cy="8" r="6"/>' + P('M5.4 8.2l1.8 1.8 3.4-3.6'),
  chevron: P('M6 3.5L10.5 8 6 12.5'),
  history: P('M2.6 8a5.4 5.4 0 1 0 1.6-3.8') + P('M2.5 2.5v2.7h2.7') + P('M8 5v3.3l2.2 1.4'),
  add: P('M8 3v10M3 8h10'),
  notebook: '<rect x="3" y="2" width="10" height="12" rx="1.5"/>' + P('M5.5 2v12M7.8 5.5h3M7.8 8h3'),
  key: '<circle cx="5.3" cy="10.7" r="2.8"/>' + P('M7.3 8.7L13.2 2.8M11 5l1.6 1.6M9.6 6.4l1.3 1.3'),
  sparkle:
    P('M8 1.8c.5 3.1 1.6 4.3 4.7 4.8-3.1.5-4.2 1.7-4.7 4.8-.5-3.1-1.6-4.3-4.7-4.8 3.1-.5 4.2-1.7 4.7-4.8z') +
    P('M12.6 10.6c.2 1.2.7 1.7 1.9 1.9-1.2.2-1.7.7-1.9 1.9-.2-1.2-.7-1.7-1.9-1.9 1.2-.2 1.7-.7 1.9-1.9z'),
  tools: P('M10.3 2.2a3.2 3.2 0 0 0-3.9 4.1L2.5 10.2a1.4 1.4 0 0 0 2 2l3.9-3.9a3.2 3.2 0 0 0 4.1-3.9l-1.9 1.9-1.8-.4-.4-1.8z'),
  shield: P('M8 1.8l5 1.9v3.9c0 3.1-2.1 5.6-5 6.6-2.9-1-5-3.5-5-6.6V3.7z') + P('M5.8 8l1.5 1.5 2.9-3'),
  terminal: '<rect x="1.8" y="2.8" width="12.4" height="10.4" rx="1.5"/>' + P('M4.5 6.2L6.6 8l-2.1 1.8M8 10h3.5'),
  trash: P('M2.8 4.2h10.4M6.2 4.2V2.8h3.6v1.4M4.2 4.2l.6 9h6.4l.6-9M6.7 6.5v4.5M9.3 6.5v4.5'),
  clock: '<circle cx="8" cy="8" r="6"/>' + P('M8 4.8V8l2.3 1.5'),
  warning: P('M8 2L14.5 13.5h-13z') + P('M8 6.3v3.4M8 11.4v.3'),
  info: '<circle cx="8" cy="8" r="6"/>' + P('M8 7.2v4M8 4.9v.3'),
  file: P('M4 1.8h5.2L12.5 5v9.2H4z') + P('M9 1.8V5.2h3.5'),
  external: P('M9.5 2.5h4v4M13.5 2.5L7.5 8.5') + P('M11.5 9.5v3a1 1 0 0 1-1 1h-7a1 1 0 0 1-1-1v-7a1 1 0 0 1 1-1h3'),
  code: P('M5.5 4.5L2 8l3.5 3.5M10.5 4.5L14 8l-3.5 3.5'),
  braces: P(
    'M5.5 2.5c-1.5 0-2 .6-2 1.8v1.9c0 .9-.5 1.4-1.4 1.8.9.4 1.4.9 1.4 1.8v1.9c0 1.2.5 1.8 2 1.8M10.5 2.5c1.5 0 2 .6 2 1.8v1.9c0 .9.5 1.4 1.4 1.8-.9.4-1.4.9-1.4 1.8v1.9c0 1.2-.5 1.8-2 1.8',
  ),
  edit: P('M10.8 2.6l2.6 2.6-7.9 7.9H2.9v-2.6z') + P('M9.2 4.2l2.6 2.6'),
  image: '<rect x="2" y="2.8" width="12" height="10.4" rx="1.5"/>' + '<circle cx="5.6" cy="6.3" r="1.2"/>' + P('M2.3 11.6l3.7-3.3 2.6 2.3 2-1.7 3.1 2.7'),
  arrowDown: P('M8 2.5v10.5M3.8 8.8L8 13l4.2-4.2'),
  gear: '<circle cx="8" cy="8" r="2.2"/>' + P('M8 1.5v2M8 12.5v2M14.5 8h-2M3.5 8h-2M12.6 3.4l-1.4 1.4M4.8 11.2l-1.4 1.4M12.6 12.6l-1.4-1.4M4.8 4.8L3.4 3.4'),
  person: '<circle cx="8" cy="5.2" r="2.7"/>' + P('M2.8 13.8c.6-2.6 2.6-4.1 5.2-4.1s4.6 1.5 5.2 4.1'),
  debugRerun: P('M13 8a5 5 0 1 1-1.5-3.6') + P('M13.2 2.3v2.9h-2.9'),
  refresh: P('M13 6.5A5.2 5.2 0 0 0 3.4 5.2M3 9.5a5.2 5.2 0 0 0 9.6 1.3') + P('M3.2 2.6v2.8H6M12.8 13.4v-2.8H10'),
  cloud: P('M4.6 12.5h7.1a2.8 2.8 0 0 0 .3-5.6A4 4 0 0 0 4.3 6a3.3 3.3 0 0 0 .3 6.5z'),
  box: P('M8 1.8l5.6 3v6.4L8 14.2l-5.6-3V4.8z') + P('M2.4 4.8L8 7.8l5.6-3M8 7.8v6.4'),
  search: '<circle cx="6.8" cy="6.8" r="4.3"/>' + P('M10 10l3.8 3.8'),
  save: P('M3 2.5h7.8l2.7 2.7v8.3H2.5V3z') + P('M5.2 2.5v3.2h5V2.5M4.8 13.5V9.3h6.4v4.2'),
  folder: P('M1.8 4.2a1 1 0 0 1 1-1h3.4l1.5 1.6h5.5a1 1 0 0 1 1 1v6.9a1 1 0 0 1-1 1H2.8a1 1 0 0 1-1-1z'),
  lock: '<rect x="3.2" y="7" width="9.6" height="6.8" rx="1.3"/>' + P('M5.2 7V5a2.8 2.8 0 0 1 5.6 0v2'),
} as const;

export type IconName = keyof typeof ICONS;

/** An inline SVG icon; decorative (aria-hidden) unless a label is given. */
const cache = new Map<IconName, SVGSVGElement>();

export function icon(name: IconName, label?: string, extraClass = ''): SVGSVGElement {
  let proto = cache.get(name);
  if (!proto) {
    const tpl = document.createElement('template');
    tpl.innerHTML = `<svg class="icon icon-${name}" viewBox="0 0 16 16" width="16" height="16" fill="none" stroke="currentColor" stroke-width="1.25" stroke-linecap="round" stroke-linejoin="round" focusable="false">${ICONS[name]}</svg>`;
    proto = tpl.content.firstChild as SVGSVGElement;
    cache.set(name, proto);
  }
  const svg = proto.cloneNode(true) as SVGSVGElement;
  if (extraClass) svg.classList.add(...extraClass.split(/\s+/).filter(Boolean));
  if (label) {
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
  } else {
    svg.setAttribute('aria-hidden', 'true');
  }
  return svg;
}

/** A spinner (CSS-animated arc). */
let spinnerProto: SVGSVGElement | undefined;

export function spinner(label?: string): SVGSVGElement {
  if (!spinnerProto) {
    const tpl = document.createElement('template');
    tpl.innerHTML =
      '<svg class="icon spinner" viewBox="0 0 16 16" width="16" height="16" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round" focusable="false"><circle cx="8" cy="8" r="5.6" opacity=".25"/><path d="M8 2.4a5.6 5.6 0 0 1 5.6 5.6"/></svg>';
    spinnerProto = tpl.content.firstChild as SVGSVGElement;
  }
  const svg = spinnerProto.cloneNode(true) as SVGSVGElement;
  if (label) {
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
  } else svg.setAttribute('aria-hidden', 'true');
  return svg;
}
