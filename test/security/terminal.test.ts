/**
 * The terminal is safe. The sanitiser (pure) and the CLI that applies it to the
 * code's output (the real `codeact run`, running Python).
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { sanitizeTerminal, TerminalSanitizer } from '../../src/common/terminal';
import { runCli } from '../support/cli';

const ESC = '\x1b';

describe('security: the terminal is safe', function () {
  this.timeout(60_000);

  describe('sanitizeTerminal', () => {
    it('passes text, newlines, tabs, Unicode and colours (SGR) through unchanged', () => {
      const text = `plain\ttab\nnext line ünïcödé 😀 ${ESC}[31mred${ESC}[0m ${ESC}[1;38;5;208mbold orange${ESC}[m ${ESC}[38:2::10:20:30mtrue${ESC}[39m`;
      assert.equal(sanitizeTerminal(text), text);
    });

    it('removes cursor movement, erasing and other CSI sequences whole', () => {
      assert.equal(sanitizeTerminal(`a${ESC}[2Jb${ESC}[Hc${ESC}[10;5Hd${ESC}[1Ae${ESC}[Kf${ESC}[?1049hg${ESC}[6nh${ESC}[>0qi`), 'abcdefghi');
    });

    it('removes OSC (titles, clipboard writes, hyperlinks), ended by BEL or ST', () => {
      assert.equal(sanitizeTerminal(`x${ESC}]0;evil title\x07y`), 'xy');
      assert.equal(sanitizeTerminal(`x${ESC}]52;c;ZWNobyBwd25lZA==\x07y`), 'xy');
      assert.equal(sanitizeTerminal(`x${ESC}]8;;https://evil.example/${ESC}\\link${ESC}]8;;${ESC}\\y`), 'xlinky');
      assert.equal(sanitizeTerminal(`x${ESC}]2;never ended`), 'x');
    });

    it('removes DCS, SOS, PM and APC strings, and other escapes', () => {
      assert.equal(sanitizeTerminal(`a${ESC}P1$qm${ESC}\\b${ESC}X sos ${ESC}\\c${ESC}^pm${ESC}\\d${ESC}_apc${ESC}\\e`), 'abcde');
      assert.equal(sanitizeTerminal(`a${ESC}cb${ESC}7c${ESC}8d${ESC}(0e${ESC}#8f${ESC}`), 'abcdef');
    });

    it('removes the C0 and C1 controls other than newline and tab, including 8-bit CSI/OSC/DCS', () => {
      assert.equal(sanitizeTerminal('a\x00b\x07c\x08d\re\x0bf\x0cg\x7fh\x85i'), 'abcdefghi');
      assert.equal(sanitizeTerminal('a\x9b2Jb\x9d0;title\x9cc\x90q\x9cd\x9b31me'), 'abcde', '8-bit CSI is dropped whole, colours included');
    });

    it('drops an over-long or malformed colour sequence rather than pass it', () => {
      assert.equal(sanitizeTerminal(`a${ESC}[${'1;'.repeat(100)}mb`), 'ab');
      assert.equal(sanitizeTerminal(`a${ESC}[3\x01xb`), 'axb');
      assert.equal(sanitizeTerminal(`a${ESC}[31;?mb`), 'ab', 'SGR parameters are digits, ; and : only');
    });

    it('handles sequences split across chunks of a stream', () => {
      const s = new TerminalSanitizer();
      const out = [`red ${ESC}`, '[3', '1mR', `${ESC}[0m ${ESC}]52;c;`, 'QUJD', '\x07done'].map((c) => s.write(c)).join('');
      assert.equal(out, `red ${ESC}[31mR${ESC}[0m done`);
    });

    it('is linear: a megabyte of escapes is cleaned reading each character at most twice (counted, not timed)', () => {
      // Counted: the sanitizer reads its input with charCodeAt; a broken sequence re-reads one character.
      const charCodeAt = String.prototype.charCodeAt;
      let reads = 0;
      String.prototype.charCodeAt = function (this: string, i: number) {
        reads++;
        return charCodeAt.call(this, i);
      };
      try {
        for (const input of [`${ESC}[`.repeat(500_000), `${ESC}]`.repeat(500_000), `${ESC}[${'1;'.repeat(500_000)}m`]) {
          reads = 0;
          assert.equal(sanitizeTerminal(input), '');
          assert.ok(
            reads >= input.length && reads <= 2 * input.length,
            `${reads.toLocaleString('en-US')} reads for ${input.length.toLocaleString('en-US')} characters`,
          );
        }
      } finally {
        String.prototype.charCodeAt = charCodeAt;
      }
    });
  });

  describe('codeact run', () => {
    let ws: string;
    before(() => (ws = mkdtempSync(path.join(tmpdir(), 'codeact-term-'))));
    after(() => rmSync(ws, { recursive: true, force: true }));

    it("strips the code's control sequences from human output, keeps its colours, and leaves --json alone", async () => {
      const file = path.join(ws, 'evil.py');
      writeFileSync(
        file,
        [
          'import sys',
          'print("\\x1b]0;pwned title\\x07\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\x1b[Hhello \\x1b[31mred\\x1b[0m")',
          'sys.stderr.write("\\x1b[1Aerr\\x9b2K\\n")',
          'raise ValueError("\\x1b]2;title from the traceback\\x07boom")',
        ].join('\n'),
      );
      const human = await runCli(['run', file, '--workspace', ws, '--sandbox', 'none']);
      const all = human.stdout + human.stderr;
      assert.match(human.stdout, /hello \x1b\[31mred\x1b\[0m/);
      assert.match(human.stderr, /err\n/);
      assert.match(human.stderr, /ValueError: boom/);
      assert.ok(!/\x1b\]|\x1b\[2J|\x1b\[H|\x1b\[1A|\x9b|\x07/.test(all), JSON.stringify(all));

      const json = await runCli(['run', file, '--workspace', ws, '--sandbox', 'none', '--json']);
      assert.match(json.stdout, /\\u001b\]52;c;ZWNobyBwd25lZA==\\u0007/, '--json carries the output as it was');
    });
  });
});
