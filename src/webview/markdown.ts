/**
 * Markdown answers: markdown-it (no raw HTML), highlighted fences, everything sanitised with DOMPurify
 * before it reaches the DOM as HTML. `StreamingMarkdown` renders a growing answer incrementally: each block
 * is rendered and sanitised once, when it is complete; the unfinished last block is shown as plain text.
 */
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';
import { h } from './dom';
import { GrowingText } from './growingText';
import { highlight, escapeHtml } from './highlight';
import { growRevealed, revealTextNodes } from './reveal';

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  typographer: false,
  highlight: (code: string, lang: string) => {
    const language = (lang || '').trim().split(/\s+/)[0].toLowerCase();
    const body = language ? highlight(code, language) : highlight(code, '');
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
  const frag = DOMPurify.sanitize(md.render(text)) as unknown as DocumentFragment;
  // The model's (or the code's) words: invisible and bidirectional characters as marker boxes (./reveal).
  revealTextNodes(frag);
  return frag;
}

/**
 * Steps that make the first real render cheap (the highlighter compiles its grammars, markdown-it and
 * DOMPurify set themselves up on first use): run one at a time in idle time after the panel opens.
 */
export const WARM_UP_STEPS: readonly (() => void)[] = [
  () => void highlight('def f(x):\n    return {"a": [1, 2.5, None, "s"]}  # c\n', 'python'),
  () => void md.render('# t\n\n**b** _i_ `c` [l](https://example.com)\n\n- a\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n'),
  () => void DOMPurify.sanitize('<p><strong>b</strong> <a href="https://example.com">l</a></p><table><tr><td class="align-right">1</td></tr></table>'),
];

/** Link reference definitions (`[x]: url`) make earlier blocks depend on later text. */
const LINK_REFERENCE = /^ {0,3}\[[^\]]+\]:\s*\S/m;

/**
 * The length of the prefix of `text` made of complete blocks: it ends after a blank line that is outside
 * a fenced code block and is followed by more text. Rendering that prefix alone gives what the whole
 * message would render for it (give or take list looseness, fixed by the final render).
 */
function stablePrefixLength(text: string, from = 0): number {
  let fence: string | null = null;
  let stable = from;
  let pos = from;
  let prevBlank = false;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    if (nl < 0) {
      // The last line is not complete; after a blank line, its first character can already say that a new
      // block starts (anything but indentation or what could become a list marker).
      if (!fence && prevBlank && /^[^\s\-*+\d]/.test(text.slice(pos, pos + 1))) stable = pos;
      break;
    }
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

/** Where the live (unfinished) block starts an open code fence: its info string and the code so far. */
const OPEN_FENCE = /^ {0,3}(`{3,}|~{3,})([^\n]*)\n?([\s\S]*)$/;

/**
 * A markdown message that grows at the end. Blocks that can no longer change are rendered (markdown-it, then
 * DOMPurify) once, when they are complete, and frozen. The last, unfinished block is shown as plain text
 * (an open code fence as plain code) until it is complete: cheap, and safe without sanitising on every
 * frame. `finish` renders what is left, once.
 */
export class StreamingMarkdown extends GrowingText {
  private liveText = '';

  constructor(
    root: HTMLElement,
    private readonly decorate: (container: ParentNode) => void = () => {},
  ) {
    super(root, h('div', { class: 'md-frozen' }), h('div', { class: 'md-live' }));
  }

  protected grow(next: string): void {
    const stable = stablePrefixLength(next, this.frozenLen);
    if (stable > this.frozenLen) {
      const frag = renderMarkdownFragment(next.slice(this.frozenLen, stable));
      this.decorate(frag);
      this.frozen.append(frag);
      this.frozenLen = stable;
    }
    this.showLive(next.slice(this.frozenLen));
  }

  /**
   * The message is complete. Blocks split at stable boundaries render as the whole would, so only the tail
   * is rendered; a message with link reference definitions is rendered again as one document.
   */
  finish(finalText?: string): void {
    const text = finalText ?? this.text;
    if (this.frozenLen > 0 && (LINK_REFERENCE.test(text) || !text.startsWith(this.text.slice(0, this.frozenLen)))) {
      this.text = text;
      const all = renderMarkdownFragment(text);
      this.decorate(all);
      this.frozen.replaceChildren(all);
      this.clearLive();
      this.frozenLen = text.length;
      return;
    }
    this.text = text;
    const rest = text.slice(this.frozenLen);
    if (rest) {
      const frag = renderMarkdownFragment(rest);
      this.decorate(frag);
      this.frozen.append(frag);
    }
    this.frozenLen = text.length;
    this.clearLive();
  }

  private clearLive(): void {
    this.liveText = '';
    this.live.textContent = '';
  }

  /** The unfinished block as text nodes: appended to when it only grew, which is the usual case. */
  private showLive(tail: string): void {
    if (tail === this.liveText) return;
    const fence = OPEN_FENCE.exec(tail);
    const wasFence = this.live.firstElementChild?.classList.contains('md-live-code') ?? false;
    if (fence) {
      const code = fence[3];
      let codeEl = wasFence ? this.live.querySelector('code') : null;
      if (!codeEl) {
        const pre = document.createElement('pre');
        pre.className = 'md-pre';
        codeEl = document.createElement('code');
        const lang = fence[2].trim().split(/\s+/)[0];
        if (lang) codeEl.setAttribute('data-lang', lang);
        pre.append(codeEl);
        const wrap = document.createElement('div');
        wrap.className = 'md-code md-live-code';
        wrap.append(pre);
        this.live.replaceChildren(wrap);
      }
      growRevealed(codeEl, code);
    } else {
      let p = wasFence ? null : this.live.querySelector('.md-live-text');
      if (!p) {
        p = document.createElement('p');
        p.className = 'md-live-text';
        this.live.replaceChildren(p);
      }
      growRevealed(p, tail);
    }
    this.liveText = tail;
  }
}
