/**
 * Review mode in the CLI (codeact.sandbox.reviewWrites, src/cli/stagedReview.ts), on real bubblewrap and a real
 * overlay: the code's writes to the workspace are staged, listed after the run, and reach the workspace only when
 * kept, by --staged or at a real terminal (a pty through script(1)), all of them or file by file. With a session
 * host, `codeact chat` can leave them staged, and the next chat in the folder keeps them. Without a terminal and
 * without --staged, nothing runs.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { CLI, runCli, runCliOnPty, SCRIPT, scriptedModel } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

describe('codeact run and chat in review mode (staged writes)', function () {
  this.timeout(180_000);
  let noBwrap: string | null | undefined;
  let root: string;
  let ws: string;
  let code: string;
  before(async function () {
    if (!existsSync(CLI)) this.skip();
    noBwrap = await probeBubblewrap();
    if (noBwrap) this.skip();
  });
  beforeEach(() => {
    root = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-cli-staged-')));
    ws = path.join(root, 'ws');
    mkdirSync(path.join(ws, '.vscode'), { recursive: true });
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({ 'codeact.sandbox.mountWorkspace': 'readwrite', 'codeact.sandbox.reviewWrites': true, 'codeact.sandbox.kind': 'bubblewrap' }),
    );
    writeFileSync(path.join(ws, 'c.txt'), 'old');
    code = `import os\nos.chdir(${JSON.stringify(ws)})\nopen("a.txt", "w").write("A")\nopen("b.txt", "w").write("B")\nopen("c.txt", "w").write("new")\nreturn sorted(os.listdir("."))`;
    writeFileSync(path.join(root, 'write.py'), code);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const inWs = () => ['a.txt', 'b.txt', 'c.txt'].filter((f) => existsSync(path.join(ws, f)));
  const lines = (stdout: string) =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  /** The finished code execution among `--json`'s lines. */
  const codeItem = (stdout: string) =>
    lines(stdout)
      .filter((l) => l.type === 'response.output_item.done')
      .map((l) => l.item as { type: string; value?: unknown; changes?: { staged?: boolean } })
      .find((i) => i.type === 'code_interpreter_call');

  it('codeact review starts no session host: with none for the folder it says nothing is staged there; with review mode off it says so', async () => {
    const env = { XDG_RUNTIME_DIR: path.join(root, 'run') };
    mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
    const none = await runCli(['review', '--workspace', ws, '--json'], env);
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stderr, /No session host runs for this folder, so nothing is staged there/);
    assert.deepEqual(lines(none.stdout), [{ type: 'codeact.staged', kept: [], reverted: [], failed: [], left: [] }]);
    const hosts = path.join(env.XDG_RUNTIME_DIR, 'codeact'); // core/sessionHost/place.ts hostFolder
    assert.deepEqual(existsSync(hosts) ? readdirSync(hosts).filter((n) => n.endsWith('.sock') || n.endsWith('.log')) : [], [], 'no host was started');
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.sandbox.mountWorkspace': 'readwrite' }));
    const off = await runCli(['review', '--workspace', ws], env);
    assert.equal(off.code, 2);
    assert.match(off.stderr, /Review mode is off for this folder/);
  });

  it('without a terminal and without --staged nothing runs, saying what to do', async () => {
    const r = await runCli(['run', path.join(root, 'write.py'), '--workspace', ws]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /codeact\.sandbox\.reviewWrites is on for this folder, .*stdin is not a terminal to ask about them: pass --staged keep or --staged revert/,
    );
    assert.deepEqual(inWs(), ['c.txt']);
    assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'old');
  });

  it('--staged keep puts every staged write in the workspace; --staged revert none; --staged anything else is refused', async () => {
    const reverted = await runCli(['run', '-', '--workspace', ws, '--staged', 'revert', '--json'], {}, code);
    assert.equal(reverted.code, 0, reverted.stderr);
    // The code saw its writes; the workspace never did.
    const item = codeItem(reverted.stdout);
    assert.deepEqual(item?.value, ['.vscode', 'a.txt', 'b.txt', 'c.txt']);
    assert.equal(item?.changes?.staged, true);
    assert.match(reverted.stderr, /\[3 files staged by the code, not in the workspace yet\]\n {2}created a\.txt\n {2}created b\.txt\n {2}changed c\.txt/);
    assert.deepEqual(lines(reverted.stdout).at(-1), { type: 'codeact.staged', kept: [], reverted: ['a.txt', 'b.txt', 'c.txt'], failed: [], left: [] });
    assert.deepEqual(inWs(), ['c.txt']);
    assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'old');

    const kept = await runCli(['run', '-', '--workspace', ws, '--staged', 'keep'], {}, code);
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stderr, /Kept 3 files in the workspace\./);
    assert.deepEqual(inWs(), ['a.txt', 'b.txt', 'c.txt']);
    assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'new');

    const bad = await runCli(['run', '-', '--workspace', ws, '--staged', 'yes'], {}, code);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--staged takes keep or revert, not "yes"/);
  });

  (existsSync(SCRIPT) ? it : it.skip)(
    'at a terminal: listed, asked again on a wrong answer, then file by file; only the kept ones reach the workspace',
    async () => {
      const cli = runCliOnPty(['run', path.join(root, 'write.py'), '--workspace', ws]);
      try {
        await cli.expect('[3 files staged by the code, not in the workspace yet]');
        // Nothing reached the workspace while the question waits.
        await cli.expect('or one by one (o)? ');
        assert.deepEqual(inWs(), ['c.txt']);
        assert.ok(!cli.output.includes('Enter leaves them staged'), 'a run without a session host cannot leave them staged');
        cli.type('x\r');
        await cli.expect('Answer k, r or o.');
        await cli.expect('or one by one (o)? ', 'o');
        await cli.expect('Keep created a.txt? (y/n) ', 'y');
        await cli.expect('Keep created b.txt? (y/n) ', 'n');
        await cli.expect('Keep changed c.txt? (y/n) ', 'y');
        assert.equal(await cli.exited, 0, cli.output);
        assert.match(cli.output, /Kept 2 files in the workspace\./);
        assert.match(cli.output, /Reverted 1 file: the code's writes to it are dropped/);
        assert.deepEqual(inWs(), ['a.txt', 'c.txt']);
        assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'new');
      } finally {
        cli.kill();
      }
    },
  );

  describe('codeact chat with a session host', () => {
    let server: WireServer;
    before(async () => {
      server = await startServerFor('openai-compatible', 'ollama');
    });
    after(() => server.close());

    (existsSync(SCRIPT) ? it : it.skip)(
      'Enter leaves the writes staged (the code still sees them); codeact review lists them and keeps one by name; the next chat keeps the rest',
      async () => {
        mkdirSync(path.join(root, 'run'), { mode: 0o700 });
        // This test's own session host (its folder under root), ended before root is removed.
        const env = { XDG_RUNTIME_DIR: path.join(root, 'run'), OPENAI_COMPATIBLE_API_KEY: 'sk-test' };
        const args = (prompt: string, extra: string[]) => [
          'chat',
          prompt,
          ...scriptedModel(server.url, path.join(root, 'store')),
          '--workspace',
          ws,
          '--session-host',
          'auto',
          ...extra,
        ];
        try {
          server.push(turn().call('execute_tool_code', { code }));
          server.push(turn().text('Written.'));
          const cli = runCliOnPty(args('Write the files.', []), env);
          let id = '';
          try {
            await cli.expect('[3 files staged by the code, not in the workspace yet]');
            await cli.expect('; Enter leaves them staged? ', '');
            assert.equal(await cli.exited, 0, cli.output);
            assert.match(
              cli.output,
              /3 files left staged: the code still sees them, the workspace does not; codeact review \(or the next codeact chat in this folder\) asks again\./,
            );
            id = /\[([^\]\s]+)\] completed/.exec(cli.output)?.[1] ?? '';
            assert.ok(id, cli.output);
          } finally {
            cli.kill();
          }
          assert.deepEqual(inWs(), ['c.txt']);

          // codeact review, with no one to ask: listed, left as they are.
          const listed = await runCli(['review', '--workspace', ws], env);
          assert.equal(listed.code, 0, listed.stderr);
          assert.match(
            listed.stderr,
            /\[3 files staged by the code, not in the workspace yet\]\n {2}created a\.txt\n {2}created b\.txt\n {2}changed c\.txt\n3 files left staged/,
          );
          assert.deepEqual(inWs(), ['c.txt']);
          // One of them, kept by name.
          const one = await runCli(['review', 'a.txt', '--workspace', ws, '--staged', 'keep', '--json'], env);
          assert.equal(one.code, 0, one.stderr);
          assert.deepEqual(lines(one.stdout), [{ type: 'codeact.staged', kept: ['a.txt'], reverted: [], failed: [], left: [] }]);
          assert.deepEqual(inWs(), ['a.txt', 'c.txt']);
          assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'old');

          server.push(turn().call('execute_tool_code', { code: `import os\nreturn sorted(os.listdir(${JSON.stringify(ws)}))` }));
          server.push(turn().text('Listed.'));
          const next = await runCli(args('List them.', ['--continue', id, '--staged', 'keep', '--json']), env);
          assert.equal(next.code, 0, next.stderr);
          assert.deepEqual(codeItem(next.stdout)?.value, ['.vscode', 'a.txt', 'b.txt', 'c.txt']);
          assert.deepEqual(
            lines(next.stdout).find((l) => l.type === 'codeact.staged'),
            {
              type: 'codeact.staged',
              kept: ['b.txt', 'c.txt'],
              reverted: [],
              failed: [],
              left: [],
            },
          );
          assert.deepEqual(inWs(), ['a.txt', 'b.txt', 'c.txt']);
          assert.equal(readFileSync(path.join(ws, 'c.txt'), 'utf8'), 'new');

          // The host's overlay helper killed: review says the list cannot be read (not that nothing is staged), exit 1.
          const cmdline = (pid: string) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
            } catch {
              return [];
            }
          };
          const helpers = readdirSync('/proc').filter(
            (n) => /^\d+$/.test(n) && cmdline(n).includes(ws) && cmdline(n).some((a) => a.includes('codeact-stage-')),
          );
          assert.equal(helpers.length, 1, 'one overlay helper for the folder');
          process.kill(Number(helpers[0]), 'SIGKILL');
          const broken = await runCli(['review', '--workspace', ws], env);
          assert.equal(broken.code, 1, broken.stderr);
          assert.match(broken.stderr, /codeact: the staged writes could not be listed: /);
          assert.doesNotMatch(broken.stderr, /Nothing is staged/);
        } finally {
          await runCli(['sessions', 'end', '--all'], env);
        }
      },
    );
  });
});
