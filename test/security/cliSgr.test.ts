/**
 * The CLI's human output cannot hide text with colours. The sanitiser's SGR filter
 * (pure), and the real `codeact run` whose code prints conceal and black-on-black before a tool call:
 * a small terminal model, independent of the code under test, reads the output and says what was
 * hidden where.
 */
import * as assert from 'node:assert/strict';
import { sanitizeTerminal, SgrState, TerminalSanitizer } from '../../src/common/terminal';
import { runCli } from '../support/cli';

const ESC = '\x1b';

/**
 * What a terminal does with SGR, reduced to what hides text: conceal, and the same colour in front and
 * behind (compared as written: palette slot 0–255 or r,g,b; `30`–`37` are slots 0–7, `90`–`97` 8–15).
 * For each line, whether any of its visible characters were drawn hidden, and the state at its start.
 */
function terminalModel(output: string): Array<{ line: string; hiddenChars: string; plainAtStart: boolean }> {
  let conceal = false;
  let fg: string | undefined;
  let bg: string | undefined;
  const rows: Array<{ line: string; hiddenChars: string; plainAtStart: boolean }> = [];
  let row = { line: '', hiddenChars: '', plainAtStart: true };
  const hidden = () => conceal || (fg !== undefined && fg === bg);
  const sgr = /^\x1b\[([0-9;:]*)m/;
  for (let i = 0; i < output.length;) {
    const m = sgr.exec(output.slice(i, i + 200));
    if (m) {
      const f = (m[1] === '' ? '0' : m[1]).split(/[;:]/).map((x) => (x === '' ? 0 : Number(x)));
      for (let k = 0; k < f.length; k++) {
        const n = f[k];
        if (n === 0) [conceal, fg, bg] = [false, undefined, undefined];
        else if (n === 8) conceal = true;
        else if (n === 28) conceal = false;
        else if (n >= 30 && n <= 37) fg = `p${n - 30}`;
        else if (n >= 90 && n <= 97) fg = `p${n - 82}`;
        else if (n >= 40 && n <= 47) bg = `p${n - 40}`;
        else if (n >= 100 && n <= 107) bg = `p${n - 92}`;
        else if (n === 39) fg = undefined;
        else if (n === 49) bg = undefined;
        else if (n === 38 || n === 48) {
          const c = f[k + 1] === 5 ? slot(f[k + 2]) : f[k + 1] === 2 ? `rgb${f.slice(k + 2, k + 5).join(',')}` : undefined;
          k += f[k + 1] === 5 ? 2 : f[k + 1] === 2 ? 4 : 0;
          if (n === 38) fg = c;
          else bg = c;
        }
      }
      i += m[0].length;
      continue;
    }
    const ch = output[i++];
    if (ch === '\n') {
      rows.push(row);
      row = { line: '', hiddenChars: '', plainAtStart: !hidden() && fg === undefined && bg === undefined };
      continue;
    }
    row.line += ch;
    if (hidden() && ch !== ' ') row.hiddenChars += ch;
  }
  rows.push(row);
  return rows;
}

/** A 256-colour slot as the model compares it: 0–15 by slot (the theme decides), the cube and greys as r,g,b. */
function slot(n: number): string {
  if (n < 16) return `p${n}`;
  const level = [0, 95, 135, 175, 215, 255];
  if (n < 232) return `rgb${[level[Math.floor((n - 16) / 36)], level[Math.floor((n - 16) / 6) % 6], level[(n - 16) % 6]].join(',')}`;
  const g = 8 + 10 * (n - 232);
  return `rgb${g},${g},${g}`;
}

describe('security: colours cannot hide text in the CLI', function () {
  this.timeout(120_000);

  describe('the SGR filter (src/common/sgr, in sanitizeTerminal)', () => {
    const hiddenAfter = (text: string) => terminalModel(sanitizeTerminal(text)).some((r) => r.hiddenChars.length > 0);

    it('drops conceal, alone or among other attributes, and keeps the rest', () => {
      assert.equal(sanitizeTerminal(`${ESC}[8mhidden${ESC}[0m`), `hidden${ESC}[0m`, 'nothing is sent for a sequence that was only conceal (ESC[m would reset)');
      assert.equal(sanitizeTerminal(`${ESC}[1;8;31mx`), `${ESC}[1;31mx`);
      assert.equal(sanitizeTerminal(`${ESC}[8:0mx`), 'x');
    });

    it('resets the colours when the foreground would be the background: 8, 16, 256 and truecolor forms', () => {
      for (const seq of [
        '30;40',
        '37;47',
        '97;107',
        '31;41',
        '38;5;0;40',
        '38;5;16;48;2;0;0;0',
        '38;2;10;20;30;48;2;12;21;30',
        '38:2::10:20:30;48:2::10:20:30',
        '38:5:231;48:5:15',
      ]) {
        const out = sanitizeTerminal(`${ESC}[${seq}msecret`);
        assert.ok(!hiddenAfter(`${ESC}[${seq}msecret`), `${seq} -> ${JSON.stringify(out)}`);
        assert.match(out, /;39;49msecret$/, seq);
      }
    });

    it('remembers the colours between sequences and between the chunks of a stream, shared by stdout and stderr', () => {
      assert.ok(!hiddenAfter(`${ESC}[40mabc${ESC}[30msecret`));
      const shared = new SgrState();
      const stdout = new TerminalSanitizer(shared);
      const stderr = new TerminalSanitizer(shared);
      const a = stdout.write(`${ESC}[4`);
      const b = stdout.write(`4mx`);
      const c = stderr.write(`${ESC}[34msecret`);
      assert.equal(a + b, `${ESC}[44mx`);
      assert.equal(c, `${ESC}[34;39;49msecret`, 'blue on blue, set on two streams of one terminal');
    });

    it('passes readable colours unchanged', () => {
      for (const t of [
        `${ESC}[31;42mred on green`,
        `${ESC}[38;5;208;48;5;16morange on black`,
        `${ESC}[38:2::255:255:255;48:2::0:0:0mwhite on black`,
        `${ESC}[2;3;4mstyles`,
        `${ESC}[7mreverse`,
      ]) {
        assert.equal(sanitizeTerminal(t), t);
      }
    });
  });

  describe('codeact run', () => {
    it('shows what the code hid with colours, and starts each tool line and the value line plain', async () => {
      const code = [
        'import sys',
        // Conceal, then a fake "all good" line; black on black; a colour left on for the tool line.
        'print("\\x1b[8mIBAN-DE00-HIDDEN-CONCEAL\\x1b[28m")',
        'print("\\x1b[40m\\x1b[30mHIDDEN-BLACK-ON-BLACK")',
        'sys.stdout.write("\\x1b[38;5;16m\\x1b[48;2;0;0;0mHIDDEN-256-ON-TRUECOLOR ")',
        'sys.stderr.write("\\x1b[45m")',
        'await call_tool("check_inventory", sku="LMP-LED-010")',
        'sys.stdout.write("\\x1b[35m\\x1b[8m")',
        'return "the value"',
      ].join('\n');
      const r = await runCli(['run', '-', '--workspace', 'examples/orders', '--sandbox', 'none'], {}, code);
      assert.equal(r.code, 0, r.stderr);
      const rows = terminalModel(r.stdout);
      const hiddenText = rows.map((x) => x.hiddenChars).join('');
      assert.equal(hiddenText, '', `nothing is drawn hidden: ${JSON.stringify(r.stdout)}`);
      for (const word of ['IBAN-DE00-HIDDEN-CONCEAL', 'HIDDEN-BLACK-ON-BLACK', 'HIDDEN-256-ON-TRUECOLOR'])
        assert.ok(
          rows.some((x) => x.line.includes(word)),
          word,
        );
      const tool = r.stdout.indexOf('→ check_inventory');
      const value = r.stdout.indexOf('⇒ "the value"');
      assert.ok(tool > 0 && value > tool, r.stdout);
      // Plain attributes right before each: the last SGR before the arrow is a reset.
      for (const at of [tool, value]) {
        const before = r.stdout.slice(0, at);
        const lastSgr = before.match(/\x1b\[[0-9;:]*m/g)?.at(-1);
        assert.equal(lastSgr, `${ESC}[0m`, `the attributes are reset before ${JSON.stringify(r.stdout.slice(at, at + 20))}`);
        assert.ok(before.endsWith(`\n${ESC}[0m`), 'on a line of its own');
      }
    });
  });
});
