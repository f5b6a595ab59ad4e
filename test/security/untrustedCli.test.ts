/**
 * The built CLI shows a hostile MCP server's strings, a hostile file name and a hostile tool error through
 * one sanitiser (src/common/untrusted.ts): every string carries a window-title escape (OSC 0), a bare CR,
 * a backspace, a RIGHT-TO-LEFT OVERRIDE and a ZERO WIDTH SPACE, and the bytes the CLI writes hold none of
 * them, only their markers. Against a real MCP server on stdio (test/fixtures/mcp/elicitServer.mjs); the
 * form is answered on a real pseudo-terminal (script(1)).
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, runCli, CLI_ENV } from '../support/cli';

const fixture = path.join(ROOT, 'test/fixtures/mcp/elicitServer.mjs');
const SCRIPT = '/usr/bin/script';

/** The fixture's HOSTILE, as a one-line string shows it (a name, a title, a label, a value). */
const ONE_LINE = 'A<U+001B>]0;pwned<U+0007>B⏎C<U+0008>D<U+202E>E<U+200B>F';
/** The same, as multi-line text shows it (a message, a description): the bare CR is a marker of its own. */
const MULTI_LINE = 'A<U+001B>]0;pwned<U+0007>B<U+000D>C<U+0008>D<U+202E>E<U+200B>F';

/** What must never reach the terminal from outside: each as the bytes it would be. */
const FORBIDDEN: Array<[string, string]> = [
  ['an OSC sequence', '\x1b]0;pwned'],
  ['BEL', '\x07'],
  ['a backspace', '\b'],
  ['RIGHT-TO-LEFT OVERRIDE', '\u202e'],
  ['ZERO WIDTH SPACE', '\u200b'],
  ['an 8-bit CSI', '\u009b'],
  ['DEL', '\x7f'],
];

function assertClean(out: string, where: string): void {
  for (const [what, bytes] of FORBIDDEN) assert.ok(!out.includes(bytes), `${where} holds ${what}:\n${JSON.stringify(out)}`);
}

describe('security: the CLI shows text from outside through one sanitiser', function () {
  this.timeout(120_000);
  let ws: string;
  before(function () {
    if (!existsSync(CLI)) this.skip();
  });
  beforeEach(() => {
    ws = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-cli-untrusted-')));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({
        'codeact.tools': [
          { name: 'ask', mcp: { command: [process.execPath, fixture], tool: 'ask' } },
          { name: 'hostile', mcp: { command: [process.execPath, fixture], tool: 'hostile' } },
        ],
      }),
    );
  });
  afterEach(() => rmSync(ws, { recursive: true, force: true }));

  it("codeact tools: the server's tool description, with markers and no escape, CR, backspace or bidi", async () => {
    const r = await runCli(['tools', '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
    assertClean(r.stdout, 'stdout');
    assert.ok(!r.stdout.includes('\r'), 'no CR');
    assert.ok(r.stdout.includes(`Description ${ONE_LINE}`), r.stdout);
  });

  it("codeact run: the code's output (colours kept), a file name it chose and a server's tool error, with markers and no escape, CR, backspace or bidi", async () => {
    writeFileSync(
      path.join(ws, 'go.py'),
      [
        // The runtime does not copy out a name with a C0 control (core/runtime/artifacts): C1 and DEL it does.
        'open("N\\u202e\\u200b\\x9b2J\\x7f.txt", "w").write("x")',
        // The code's own output: its colours pass, everything else is a marker or gone.
        'print("\\x1b[31mred\\x1b[0m\\u202e\\u200b\\x1b]0;pwned\\x07\\r\\b.")',
        'try:',
        '    await call_tool("hostile")',
        'except Exception:',
        '    pass',
        'return "done"',
        '',
      ].join('\n'),
    );
    const r = await runCli(['run', path.join(ws, 'go.py'), '--sandbox', 'none', '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
    for (const [name, out] of [
      ['stdout', r.stdout],
      ['stderr', r.stderr],
    ] as const) {
      assertClean(out, name);
      assert.ok(!out.includes('\r'), `no CR in ${name}`);
    }
    assert.match(r.stdout, /→ hostile\(\{\}\) ✗ \d+ ms .*Error A<U\+001B>\]0;pwned<U\+0007>B/, r.stdout);
    assert.ok(r.stdout.includes(`Error ${MULTI_LINE}`), r.stdout);
    assert.ok(r.stdout.includes('[file N<U+202E><U+200B><U+009B>2J<U+007F>.txt'), r.stdout);
    assert.ok(r.stdout.includes('\x1b[31mred\x1b[0m<U+202E><U+200B>.\n'), JSON.stringify(r.stdout));
  });

  (existsSync(SCRIPT) ? it : it.skip)("an elicitation form on a terminal: the server's message, title, description, default and choice label", async () => {
    writeFileSync(path.join(ws, 'ask.py'), 'r = await call_tool("ask", form="hostile")\nreturn r\n');
    const cmd = [process.execPath, CLI, 'run', path.join(ws, 'ask.py'), '--sandbox', 'none', '--workspace', ws].map((a) => `'${a}'`).join(' ');
    const child = spawn(SCRIPT, ['-qfec', cmd, '/dev/null'], {
      cwd: ROOT,
      env: { ...CLI_ENV, TERM: 'dumb' },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    let seen = 0;
    /** Waits (generously) for `text` after what was seen so far, then types `answer`. */
    const expect = async (text: string, answer?: string) => {
      for (let i = 0; i < 1200; i++) {
        const m = out.indexOf(text, seen);
        if (m >= 0) {
          seen = m + 1;
          if (answer !== undefined) child.stdin.write(answer + '\r');
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.fail(`never saw ${JSON.stringify(text)} in:\n${JSON.stringify(out)}`);
    };
    try {
      await expect(`Message ${MULTI_LINE}`);
      await expect('Fill in the form (f), decline (d) or cancel (c)?', 'f');
      await expect(`Description ${MULTI_LINE}`);
      await expect(`Title ${ONE_LINE} (text) [Default ${ONE_LINE}]: `, '');
      await expect(`1) Label ${ONE_LINE}`);
      await expect('Pick (a number or the value)', '1');
      assert.equal(await exited, 0, out);
      // The value went back as the server sent it, and is shown (⇒) with markers too.
      await expect(`"name": "Default A\\u001b]0;pwned\\u0007B\\rC\\bD<U+202E>E<U+200B>F"`);
      assertClean(out, 'the terminal');
    } finally {
      child.kill();
    }
  });
});
