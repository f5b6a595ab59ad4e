/**
 * What a narrow panel must not do, checked from the rendered layout inside the chat webview's frame
 * (`frame.evaluate(narrowLayoutProblems)`; self-contained for that reason): nothing sticks out sideways or
 * is cut off, wide content (code, JSON, output) scrolls inside its own box, tool durations stay in view,
 * the provider and model pickers are one compact control with the full names in its tooltip, and JSON
 * tokens are never split over two lines.
 */
export function narrowLayoutProblems(): string[] {
  const out: string[] = [];
  const width = document.documentElement.clientWidth;
  const describe = (el: Element) => {
    const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return `${el.tagName.toLowerCase()}.${Array.from(el.classList).slice(0, 3).join('.')}${text ? ` "${text}"` : ''}`;
  };
  const shown = (el: Element) => el.checkVisibility({ checkVisibilityCSS: true }) && el.getBoundingClientRect().width > 0;
  /** The nearest ancestor that does not let its content spill sideways: one that scrolls (fine), or clips. */
  const container = (el: Element): { box: Element; scrolls: boolean } | undefined => {
    for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o !== 'visible') return { box: e, scrolls: o === 'auto' || o === 'scroll' };
    }
    return undefined;
  };
  const scroller = document.querySelector('.scroller');
  if (document.documentElement.scrollWidth > width + 1) out.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px of ${width})`);
  if (scroller && scroller.scrollWidth > scroller.clientWidth + 1)
    out.push(`the transcript scrolls sideways (${scroller.scrollWidth} px of ${scroller.clientWidth})`);
  // Texts that end in "…" on purpose, with the whole text one click or one hover away.
  const elided = '.tool-args, .json-preview, .conv-title, .history-name, .picker-label, .step-detail, .meta-part, .variables-source, .job-origin';
  for (const el of Array.from(document.querySelectorAll('#app *'))) {
    if (!shown(el) || el.closest('svg, .sr-only')) continue;
    const c = container(el);
    const r = el.getBoundingClientRect();
    if (r.right > width + 0.5 && !c?.scrolls) out.push(`${describe(el)} sticks out of the panel by ${Math.round(r.right - width)} px`);
    else if (c && !c.scrolls && r.right > c.box.getBoundingClientRect().right + 0.5 && !el.matches(elided))
      out.push(`${describe(el)} is cut off by ${describe(c.box).split(' ')[0]} (${Math.round(r.right - c.box.getBoundingClientRect().right)} px)`);
    if (c?.scrolls && c.box.getBoundingClientRect().right > width + 0.5) out.push(`the scrolling box ${describe(c.box)} sticks out of the panel`);
    const style = getComputedStyle(el);
    if (!c?.scrolls && !el.matches(elided) && style.overflowX === 'hidden' && el.scrollWidth > el.clientWidth + 1 && el.children.length === 0)
      out.push(`${describe(el)} is cut off (${el.clientWidth} of ${el.scrollWidth} px)`);
  }
  for (const d of Array.from(document.querySelectorAll('.tool-duration, .card-head .duration'))) {
    if (!d.textContent?.trim()) continue;
    const card = d.closest('.card')!.getBoundingClientRect();
    const r = d.getBoundingClientRect();
    if (r.width === 0 || r.right > card.right + 0.5 || r.left < card.left - 0.5) out.push(`the duration ${describe(d)} is not in view in its card`);
  }
  const selects = Array.from(document.querySelectorAll('.input-row > select')).filter(shown);
  if (selects.length) out.push(`the provider and model pickers are ${selects.length} controls, not one compact control`);
  const picker = document.querySelector('.picker-compact');
  if (!picker || !shown(picker)) out.push('no compact provider and model control');
  else if (!/·/.test(picker.getAttribute('title') ?? ''))
    out.push(`the compact picker's tooltip does not give the provider and the model: ${picker.getAttribute('title')}`);
  for (const t of Array.from(document.querySelectorAll('.json-key, .json-number, .json-boolean, .json-null, .json-word'))) {
    const lines = new Set(Array.from(t.getClientRects(), (r) => Math.round(r.top))).size;
    if (shown(t) && lines > 1) out.push(`the JSON token ${describe(t)} is split over ${lines} lines`);
  }
  return out;
}
