/**
 * One rich output of an execution, drawn with the richest MIME type the panel can draw safely
 * (`bestFor('panel', …)`, the panel's ranks in ../common/mimeTypes): HTML through the strict sanitiser (./htmlOutput), markdown through
 * the messages' pipeline (./markdown), images as `<img>` (./imageOutput), LaTeX and plain text as text, JSON
 * in the JSON tree. Every text is bounded.
 */
import type { DisplayOutput } from '../common/events';
import { capDisplayImages } from '../common/displays';
import { bestFor, isJson, isPanelImage, mimeText, panelTextOf } from '../common/mimeTypes';
import { countNewlines } from '../common/transcript';
import { formatCount, h } from './dom';
import { lazyHtmlOutput } from './htmlOutput';
import { displayImage, renderImage, type ImageEnv } from './imageOutput';
import { decorateMarkdown } from './itemCards';
import { renderJson } from './jsonTree';
import { renderMarkdownFragment } from './markdown';
import { revealed } from './reveal';

/** Characters of a text output shown (markdown, LaTeX, plain text); the rest is counted. */
const DISPLAY_TEXT_CAP = 100_000;
/** Lines of a plain-text output shown. */
const DISPLAY_LINE_CAP = 500;

/** Whether a display draws as an image (the execution counts its images for their default names). */
export function isImageDisplay(d: DisplayOutput): boolean {
  const mime = bestFor('panel', d.data);
  return mime !== undefined && isPanelImage(mime);
}

const ANSI = /\u001b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\u001b[@-Z\\-_]/g;

/** Text within the caps, and what was left out. */
function bounded(text: string): { head: string; more: string } {
  let shown = text.length > DISPLAY_TEXT_CAP ? text.slice(0, DISPLAY_TEXT_CAP) : text;
  let lines = 0;
  let i = shown.indexOf('\n');
  while (i >= 0 && ++lines < DISPLAY_LINE_CAP) i = shown.indexOf('\n', i + 1);
  const byLines = i >= 0 && i + 1 < shown.length;
  if (byLines) shown = shown.slice(0, i + 1);
  if (shown.length === text.length) return { head: text, more: '' };
  if (byLines) {
    const rest = countNewlines(text.slice(shown.length)) + (text.endsWith('\n') ? 0 : 1);
    return { head: shown, more: `${formatCount(rest)} more ${rest === 1 ? 'line' : 'lines'} not shown` };
  }
  const rest = text.length - shown.length;
  return { head: shown, more: `${formatCount(rest)} more ${rest === 1 ? 'character' : 'characters'} not shown` };
}

function textBlock(text: string, cls: string): HTMLElement {
  const b = bounded(text.replace(ANSI, ''));
  // The code's text: invisible and bidirectional characters as marker boxes (./reveal).
  const pre = h('pre', { class: cls, tabindex: '0' }, revealed(b.head));
  return b.more ? h('div', null, pre, h('div', { class: 'html-more', text: b.more })) : pre;
}

/** The element of a display. `n`: its image number in the execution, when it is an image. */
export function renderDisplay(shown: DisplayOutput, n: number, env: ImageEnv): HTMLElement {
  // Each image's header within the pixel cap before an <img> (or the full-size view) can decode it.
  const d = capDisplayImages(shown, env.maxImagePixels());
  const mime = bestFor('panel', d.data);
  const wrap = h('div', { class: `display${d.result ? ' display-result' : ''}`, 'data-mime': mime ?? 'none' });
  if (mime === undefined) {
    const types = Object.keys(d.data).slice(0, 5).join(', ');
    wrap.append(
      h('div', { class: 'display-note' }, types ? revealed(`An output of a type the panel cannot show (${types}).`, { line: true }) : 'An empty output.'),
    );
    return wrap;
  }
  if (isPanelImage(mime)) {
    const img = displayImage(d);
    if (img) wrap.append(renderImage(d, img, n, env));
    return wrap;
  }
  if (isJson(mime)) {
    wrap.append(renderJson(d.data[mime], { expandDepth: 1 }));
    return wrap;
  }
  const text = mimeText(d.data[mime]) ?? '';
  const view = panelTextOf(mime);
  if (view === 'html') wrap.append(lazyHtmlOutput(text));
  else if (view === 'markdown') {
    const b = bounded(text);
    const md = h('div', { class: 'md display-md' });
    const frag = renderMarkdownFragment(b.head);
    decorateMarkdown(frag);
    md.append(frag);
    wrap.append(md);
    if (b.more) wrap.append(h('div', { class: 'html-more', text: b.more }));
  } else wrap.append(textBlock(text, view === 'latex' ? 'display-text display-latex' : 'display-text'));
  return wrap;
}
