/**
 * Invisible and bidirectional characters are made visible. The one classifier
 * (src/common/invisibleChars, used by the panel and the CLI), and the real `codeact run` showing them as
 * markers in its tool and value lines. The panel's side runs in Chromium: approvalTruth.test.ts.
 */
import * as assert from 'node:assert/strict';
import { countInvisible, findInvisible, hasInvisible, InvisibleRevealer, revealInvisible, splitInvisible } from '../../src/common/invisibleChars';
import { runCli } from '../support/cli';
import { TROJAN_SOURCE } from './support/trojanSource';

const BIDI = /[\u202a-\u202e\u2066-\u2069]/;

const hex = (cp: number) => cp.toString(16).toUpperCase().padStart(4, '0');
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('security: invisible and bidirectional characters are made visible', function () {
  this.timeout(120_000);

  describe('the classifier (src/common/invisibleChars)', () => {
    it('marks every bidirectional control, zero-width, format, tag and filler character as <U+XXXX>', () => {
      const listed = [
        ...range(0x202a, 0x202e),
        ...range(0x2066, 0x2069),
        0x200e,
        0x200f,
        0x061c, // bidi
        ...range(0x200b, 0x200d),
        ...range(0x2060, 0x2064),
        0xfeff,
        0x00ad,
        0x180e,
        0x034f, // zero-width, format
        ...range(0xe0000, 0xe007f),
        ...range(0xe0100, 0xe01ef), // tags, supplementary variation selectors
        0x115f,
        0x1160,
        0x3164,
        0xffa0,
        0x2800,
        0x17b4,
        0x17b5,
        0x2028,
        0x2029, // fillers, separators
        0x00,
        0x07,
        0x08,
        0x0b,
        0x0c,
        0x1b,
        0x7f,
        0x85,
        0x9b, // controls
      ];
      for (const cp of listed) {
        const text = `a${String.fromCodePoint(cp)}b`;
        assert.equal(revealInvisible(text), `a<U+${hex(cp)}>b`, `U+${hex(cp)}`);
        assert.ok(hasInvisible(text), `U+${hex(cp)}`);
      }
      assert.deepEqual(countInvisible('\u202e\u2066x\u200b\u2069'), { total: 4, bidi: 3 });
      const [rlo] = findInvisible('x\u202e');
      assert.equal(rlo.kind, 'bidi');
      assert.match(rlo.title, /RIGHT-TO-LEFT OVERRIDE/);
    });

    it('leaves visible text alone: tabs and newlines, right-to-left scripts, emoji sequences, one emoji selector', () => {
      const visible = [
        'tab\tnew\nline\r\n',
        'שלום עולם — مرحبا بالعالم',
        'family 👨\u200d👩\u200d👧, rainbow flag 🏳\ufe0f\u200d🌈, thumbs 👍🏽, heart ❤\ufe0f, keycap 1\ufe0f\u20e3',
        'ünïcödé 中文 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
      ];
      for (const text of visible) assert.equal(revealInvisible(text), text);
    });

    it('marks what the emoji exceptions would otherwise hide: a joiner between letters, a second selector, a selector at the start', () => {
      assert.equal(revealInvisible('a\u200db'), 'a<U+200D>b');
      assert.equal(revealInvisible('❤\ufe0f\ufe0f'), '❤\ufe0f<U+FE0F>');
      assert.equal(revealInvisible('\ufe0fx'), '<U+FE0F>x');
      assert.equal(revealInvisible('\u200b\ufe0f'), '<U+200B><U+FE0F>');
    });

    it('turns Trojan Source into the order the interpreter reads, with no bidirectional control left', () => {
      const shown = revealInvisible(TROJAN_SOURCE);
      assert.ok(!BIDI.test(shown));
      assert.match(shown, /if access_level != 'user<U\+202E> <U\+2066># Check if admin<U\+2069> <U\+2066>':/);
      const parts = splitInvisible(TROJAN_SOURCE);
      assert.equal(parts.filter((p) => typeof p === 'object').length, 4);
      assert.equal(
        parts.map((p) => (typeof p === 'string' ? p : String.fromCodePoint(p.codePoint))).join(''),
        TROJAN_SOURCE,
        'the parts put back are the text',
      );
    });

    it('reveals a stream the same however it is cut, inside surrogate pairs too', () => {
      const text = `x\u{e0041}\u{e0042}y 👨\u200d👩 a\u200db ❤\ufe0f\ufe0f\u202e!`;
      const whole = revealInvisible(text);
      for (let cut = 0; cut <= text.length; cut++) {
        const r = new InvisibleRevealer();
        assert.equal(r.write(text.slice(0, cut)) + r.write(text.slice(cut)) + r.end(), whole, `cut at ${cut}`);
      }
      const r = new InvisibleRevealer();
      assert.equal(
        [...text]
          .map((c) =>
            c
              .split('')
              .map((u) => r.write(u))
              .join(''),
          )
          .join('') + r.end(),
        whole,
        'one code unit at a time',
      );
    });

    it('is linear and bounded: a run of one character is one marker, a megabyte of them too', () => {
      assert.equal(revealInvisible('a\u200b\u200b\u200bb'), 'a<U+200B×3>b');
      assert.equal(revealInvisible('\u200b'.repeat(1 << 20)), `<U+200B×${1 << 20}>`);
      assert.equal(revealInvisible('a\u200b'.repeat(1 << 19)).length, (1 << 19) * 9);
      assert.deepEqual(countInvisible('\u200b'.repeat(1000) + '\u202e'), { total: 1001, bidi: 1 });
    });
  });

  describe('codeact run', () => {
    it('shows invisible characters as markers in the tool line and the value line', async () => {
      const code = ['await call_tool("search_catalog", query="lamp\\u202e\\u2066 x\\u2069")', 'return {"to": "IBAN\\u200b-DE00\\u202e", "note": "ok"}'].join(
        '\n',
      );
      const r = await runCli(['run', '-', '--workspace', 'examples/orders', '--sandbox', 'none'], {}, code);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!BIDI.test(r.stdout) && !/\u200b/.test(r.stdout), JSON.stringify(r.stdout));
      assert.match(r.stdout, /→ search_catalog\(\{"query":"lamp<U\+202E><U\+2066> x<U\+2069>"\}\) ✓/);
      assert.match(r.stdout, /⇒ \{\n {2}"to": "IBAN<U\+200B>-DE00<U\+202E>",/);
    });
  });
});
