/**
 * Markdown answers: markdown-it (no raw HTML), highlighted fences, everything sanitised with DOMPurify
 * before it reaches the DOM. `StreamingMarkdown` renders a growing answer incrementally: blocks that can no
 * longer change are rendered once and frozen; only the last block is rendered again per frame.
 */
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';
import { highlight, escapeHtml } from './highlight';

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  typographer: false,
  highlight: (code: string, lang: string) => {
    const language = (lang || '').trim().split(/\s+/)[0].toLowerCase();
    const body = language ? highlight(code, language) : escapeHtml(code);
    return `<pre class="md-pre"><code class="hljs${language ? ` language-${escapeHtml(language)}` : ''}">${body}</code></pre>`;
  },
});

// Table alignment comes as style attributes, which the CSP (rightly) refuses: use classes instead.
for (const rule of ['th_open', 'td_open'] as const) {
  md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx];
    const style = token.attrGet('style');
    if (style) {
      const m = /text-align:\s*(left|right|center)/.exec(style);
      const attrs = token.attrs?.filter(([k]) => k !== 'style') ?? null;
      token.attrs = attrs;
      if (m) token.attrJoin('class', `align-${m[1]}`);
    }
    return self.renderToken(tokens, idx, options);
  };
}

// One configuration, set once (DOMPurify parses a configuration passed per call every time).
DOMPurify.setConfig({
  FORBID_TAGS: ['style', 'form', 'input', 'textarea', 'select', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
});

/** Sanitised DOM for a markdown string (no second HTML parse: DOMPurify hands over its own fragment). */
export function renderMarkdownFragment(text: string): DocumentFragment {
  return DOMPurify.sanitize(md.render(text)) as unknown as DocumentFragment;
}

/** Sanitised HTML for a markdown string. */
export function renderMarkdown(text: string): string {
  const div = document.createElement('div');
  div.append(renderMarkdownFragment(text));
  return div.innerHTML;
}

/** Link reference definitions (`[x]: url`) make earlier blocks depend on later text. */
const LINK_REFERENCE = /^ {0,3}\[[^\]]+\]:\s*\S/m;

/**
 * The length of the prefix of `text` made of complete blocks: it ends after a blank line that is outside
 * a fenced code block and is followed by more text. Rendering that prefix alone gives what the whole
 * message would render for it (give or take list looseness, fixed by the final render).
 */
export function stablePrefixLength(text: string, from = 0): number {
  let fence: string | null = null;
  let stable = from;
  let pos = from;
  let prevBlank = false;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    if (nl < 0) break; // the last line is not complete
    const line = text.slice(pos, nl);
    const trimmed = line.replace(/^ {0,3}/, '');
    const fm = /^(`{3,}|~{3,})/.exec(trimmed);
    if (fence) {
      if (fm && fm[1][0] === fence[0] && fm[1].length >= fence.length && trimmed.slice(fm[1].length).trim() === '') fence = null;
    } else if (fm) {
      fence = fm[1];
    } else if (line.trim() === '') {
      prevBlank = true;
      pos = nl + 1;
      continue;
    } else if (prevBlank && !/^\s/.test(line) && !/^([-*+]|\d+[.)])\s/.test(line)) {
      // A new, unindented, non-list block starts here: everything before it is complete.
      stable = pos;
    }
    prevBlank = false;
    pos = nl + 1;
  }
  return stable;
}

/** A markdown message that grows at the end. */
export class StreamingMarkdown {
  private readonly frozen: HTMLElement;
  private readonly live: HTMLElement;
  private text = '';
  private frozenLen = 0;

  constructor(
    readonly root: HTMLElement,
    private readonly decorate: (container: ParentNode) => void = () => {},
  ) {
    this.frozen = document.createElement('div');
    this.frozen.className = 'md-frozen';
    this.live = document.createElement('div');
    this.live.className = 'md-live';
    root.append(this.frozen, this.live);
  }

  get value(): string {
    return this.text;
  }

  update(next: string): void {
    if (next === this.text) return;
    if (!next.startsWith(this.text.slice(0, this.frozenLen))) {
      this.frozen.textContent = '';
      this.frozenLen = 0;
    }
    this.text = next;
    const stable = stablePrefixLength(next, this.frozenLen);
    if (stable > this.frozenLen) {
      const frag = renderMarkdownFragment(next.slice(this.frozenLen, stable));
      this.decorate(frag);
      this.frozen.append(frag);
      this.frozenLen = stable;
    }
    const live = renderMarkdownFragment(next.slice(this.frozenLen));
    this.decorate(live);
    this.live.replaceChildren(live);
  }

  /**
   * The message is complete. Blocks split at stable boundaries render as the whole would, so only the tail
   * is brought up to date; a message with link reference definitions is rendered again as one document.
   */
  finish(finalText?: string): void {
    const text = finalText ?? this.text;
    if (this.frozenLen > 0 && LINK_REFERENCE.test(text)) {
      this.text = text;
      const all = renderMarkdownFragment(text);
      this.decorate(all);
      this.frozen.replaceChildren(all);
      this.live.textContent = '';
      this.frozenLen = text.length;
      return;
    }
    this.update(text);
  }
}
