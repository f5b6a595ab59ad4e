/**
 * Syntax highlighting with highlight.js (a few languages, registered on the core build to keep the bundle
 * small), and an incremental highlighter for code that streams in while the model writes it.
 */
import hljs from 'highlight.js/lib/core';
import python from 'highlight.js/lib/languages/python';
import json from 'highlight.js/lib/languages/json';
import bash from 'highlight.js/lib/languages/bash';
import javascript from 'highlight.js/lib/languages/javascript';
import typescript from 'highlight.js/lib/languages/typescript';
import sql from 'highlight.js/lib/languages/sql';
import yaml from 'highlight.js/lib/languages/yaml';
import plaintext from 'highlight.js/lib/languages/plaintext';
import pythonRepl from 'highlight.js/lib/languages/python-repl';
import { GrowingText } from './growingText';
import { revealHtml } from './reveal';

hljs.registerLanguage('python', python);
hljs.registerLanguage('python-repl', pythonRepl);
hljs.registerLanguage('json', json);
hljs.registerLanguage('bash', bash);
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('typescript', typescript);
hljs.registerLanguage('sql', sql);
hljs.registerLanguage('yaml', yaml);
hljs.registerLanguage('plaintext', plaintext);
hljs.registerAliases(['py', 'python3', 'ipython'], { languageName: 'python' });
hljs.registerAliases(['sh', 'shell', 'console', 'zsh'], { languageName: 'bash' });
hljs.registerAliases(['js', 'mjs', 'cjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts'], { languageName: 'typescript' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['text', 'txt', 'output'], { languageName: 'plaintext' });

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/**
 * Highlighted HTML for a code string (escaped plain text when the language is unknown). Invisible and
 * bidirectional characters come out as visible markers (./reveal): Trojan Source cannot reorder the code.
 */
export function highlight(code: string, lang = 'python'): string {
  const language = lang && hljs.getLanguage(lang) ? lang : undefined;
  if (!language) return revealHtml(escapeHtml(code));
  try {
    return revealHtml(hljs.highlight(code, { language, ignoreIllegals: true }).value);
  } catch {
    return revealHtml(escapeHtml(code));
  }
}

/** Highlights `code` and says whether the highlighter ended at top level (no open string or comment). */
function highlightChunk(code: string, language: string): { html: string; clean: boolean } {
  try {
    const r = hljs.highlight(code, { language, ignoreIllegals: true });
    const top = r._top as { parent?: unknown } | undefined;
    return { html: revealHtml(r.value), clean: !top || top.parent === undefined };
  } catch {
    return { html: revealHtml(escapeHtml(code)), clean: true };
  }
}

/**
 * Code that grows at the end. Completed lines are highlighted once and frozen, as soon as the highlighter
 * is back at top level after them (so a triple-quoted string spanning lines stays correct); only the
 * unfinished tail is highlighted again on each update. Cost per update is O(tail), not O(code).
 */
export class IncrementalHighlighter extends GrowingText {
  private lastFreezeTry = 0;

  constructor(
    root: HTMLElement,
    private readonly language = 'python',
    private readonly freezeEvery = 512,
  ) {
    super(root, document.createElement('span'), document.createElement('span'));
  }

  protected override restarted(): void {
    this.lastFreezeTry = 0;
  }

  protected grow(next: string): void {
    let tail = next.slice(this.frozenLen);
    if (tail.length - this.lastFreezeTry >= this.freezeEvery) {
      this.lastFreezeTry = tail.length;
      const cut = tail.lastIndexOf('\n') + 1;
      if (cut > 0) {
        const done = highlightChunk(tail.slice(0, cut), this.language);
        if (done.clean) {
          this.frozen.insertAdjacentHTML('beforeend', done.html);
          this.frozenLen += cut;
          this.lastFreezeTry = 0;
          tail = tail.slice(cut);
        }
      }
    }
    this.live.innerHTML = highlight(tail, this.language);
  }

  /** Highlights the whole text in one pass (when the code is complete). */
  finish(): void {
    this.frozen.innerHTML = highlight(this.text, this.language);
    this.live.textContent = '';
    this.frozenLen = this.text.length;
    this.lastFreezeTry = 0;
  }
}
