/**
 * One question at a time on the CLI's terminal (issue 31, point 2): the built CLI on a real pseudo-terminal
 * (script(1)), real command tools whose policy is `ask`, real Python. Two questions asked at once are asked
 * one after the other, and each answer lands on its own question; a line typed while no question was on
 * screen answers none; code review shows the whole code first.
 */
import * as assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, runCli, runCliOnPty, SCRIPT, scriptedModel } from '../support/cli';
import { waitFor } from '../support/wait';
import { startServerFor } from '../support/wire/harness';
import { turn } from '../support/wire/turn';
import { TESTER } from '../security/support/asUser';
import { REFUSALS } from '../../src/core/gateway/gateway';

/** A command tool that says it ran, with its argument. */
function tool(name: string) {
  return {
    name,
    approval: 'ask',
    command: [
      'python3',
      '-c',
      `import json, os, sys; a = json.load(sys.stdin); print(json.dumps({"ran": ${JSON.stringify(name)}, "x": a.get("x"), "uid": os.getuid()}))`,
    ],
    inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
  };
}

/** Calls `name`; the error's text when it is refused. */
const ONE = `
async def one(name):
    try:
        return await call_tool(name, x="for " + name)
    except Exception as e:
        return "refused: " + str(e)
`;

/** The value of the (last) execution, from its `response.output_item.done` event. */
function valueOf(output: string): Record<string, unknown> {
  const line = output
    .split(/\r?\n/)
    .filter((l) => l.includes('"response.output_item.done"') && l.includes('"type":"code_interpreter_call"'))
    .at(-1);
  assert.ok(line, `no result in:\n${output}`);
  const json = line.slice(line.indexOf('{'));
  return (JSON.parse(json) as { item: { value: Record<string, unknown> } }).item.value;
}

const count = (text: string, what: string) => text.split(what).length - 1;
const ASKED = 'which needs your approval';

describe('codeact run and chat: one question at a time on the terminal', function () {
  this.timeout(180_000);
  let ws: string;
  before(function () {
    if (!existsSync(CLI) || !existsSync(SCRIPT)) this.skip();
  });
  beforeEach(() => {
    ws = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-cli-questions-')));
    mkdirSync(path.join(ws, '.vscode'));
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool('a'), tool('b')] }));
  });
  afterEach(() => rmSync(ws, { recursive: true, force: true }));

  for (const who of ['root', 'the unprivileged user'] as const)
    it(`asyncio.gather of two "ask" tools, as ${who}: the second question comes only once the first is answered, and each answer is its own`, async () => {
      writeFileSync(path.join(ws, 'both.py'), `import asyncio\n${ONE}\nra, rb = await asyncio.gather(one("a"), one("b"))\nreturn {"a": ra, "b": rb}\n`);
      let as: { env: NodeJS.ProcessEnv; user?: typeof TESTER } = { env: {} };
      if (who !== 'root') {
        // The folder readable by the tester, and a home (the CLI's config folder) of its own.
        const home = path.join(ws, 'home');
        mkdirSync(home);
        chownSync(home, TESTER.uid, TESTER.gid);
        for (const p of [ws, path.join(ws, '.vscode')]) chmodSync(p, 0o755);
        for (const p of [path.join(ws, 'both.py'), path.join(ws, '.vscode', 'settings.json')]) chmodSync(p, 0o644);
        as = { env: { HOME: home, CODEACT_HOME: home }, user: TESTER };
      }
      const cli = runCliOnPty(['run', path.join(ws, 'both.py'), '--json', '--sandbox', 'none', '--workspace', ws], as.env, as.user);
      try {
        // Both calls reached the host (each is announced before the gateway asks), and one question is on screen.
        await waitFor(
          () =>
            /"type":"codeact\.tool_call\.started"[^\n]*"name":"a"/.test(cli.output) &&
            /"type":"codeact\.tool_call\.started"[^\n]*"name":"b"/.test(cli.output) &&
            cli.output.includes('Allow once (y), allow for this session (s), or deny (n)? [n] '),
          { timeoutMs: 120_000, what: 'both calls announced and one question asked' },
        );
        const firstName = /The code calls the tool "(a|b)", which needs your approval/.exec(cli.output)?.[1];
        assert.ok(firstName, cli.output);
        const secondName = firstName === 'a' ? 'b' : 'a';
        assert.equal(count(cli.output, ASKED), 1, `two questions on screen at once:\n${cli.output}`);
        assert.match(cli.output, new RegExp(`"x": "for ${firstName}"`), 'the arguments are shown');
        // Allow the first: only then is the second asked.
        cli.type('y\r');
        const after = await cli.expect(`The code calls the tool "${secondName}", which needs your approval`);
        assert.equal(count(cli.output, ASKED), 2);
        await cli.expect('Allow once (y), allow for this session (s), or deny (n)? [n] ', 'n');
        assert.equal(await cli.exited, 0, cli.output);
        assert.match(after, new RegExp(`"x": "for ${secondName}"`));
        const value = valueOf(cli.output);
        assert.deepEqual(value[firstName], { ran: firstName, x: `for ${firstName}`, uid: as.user?.uid ?? 0 }, cli.output);
        assert.match(String(value[secondName]), new RegExp(`^refused: The user denied the call to "${secondName}"\\.`), cli.output);
      } finally {
        cli.kill();
      }
    });

  it("two MCP servers' forms and an approval at once: one at a time, each answer to its own question and its own server", async () => {
    const fixture = path.join(ROOT, 'test/fixtures/mcp/elicitServer.mjs');
    const form = (name: string, server: string) => ({ name, mcp: { command: [process.execPath, fixture, server], tool: 'ask' } });
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool('a'), form('form1', 'one'), form('form2', 'two')] }));
    writeFileSync(
      path.join(ws, 'mix.py'),
      `import asyncio\n${ONE}\nasync def ask(name):\n    return await call_tool(name, form="tricky")\n` +
        `r1, r2, ra = await asyncio.gather(ask("form1"), ask("form2"), one("a"))\nreturn {"form1": r1, "form2": r2, "a": ra}\n`,
    );
    const cli = runCliOnPty(['run', path.join(ws, 'mix.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    const HEADER = /asks for input while running the tool "(form1|form2)"|The code calls the tool "(a)"/g;
    try {
      const asked: string[] = [];
      for (let i = 0; i < 3; i++) {
        const from = await cli.expect(/asks for input while running the tool "form[12]"|The code calls the tool "a"/);
        const which = /"(form1|form2|a)"/.exec(from)![1];
        asked.push(which);
        if (which === 'a') await cli.expect('or deny (n)? [n] ');
        else await cli.expect('Fill in the form (f), decline (d) or cancel (c)? [f] ');
        // Only this question is on screen: no other has started.
        assert.equal(cli.output.match(HEADER)?.length, i + 1, `two questions at once:\n${cli.output}`);
        if (which === 'a') cli.type('y\r');
        else if (which === 'form2') cli.type('d\r');
        else {
          // The server's words are shown through the sanitiser: its invisible characters as markers.
          assert.match(from, /Pay <U\+202E>attention<U\+202C>/);
          cli.type('f\r');
          await cli.expect('O<U+200B>k (y/n)', 'y');
        }
      }
      assert.deepEqual([...asked].sort(), ['a', 'form1', 'form2']);
      assert.equal(await cli.exited, 0, cli.output);
      const value = valueOf(cli.output);
      assert.deepEqual(value.form1, { action: 'accept', content: { ok: true } }, cli.output);
      assert.deepEqual(value.form2, { action: 'decline' }, cli.output);
      assert.deepEqual(value.a, { ran: 'a', x: 'for a', uid: 0 }, cli.output);
    } finally {
      cli.kill();
    }
  });

  it('Ctrl-C at a question stops the run: the question waiting behind it is never asked', async () => {
    writeFileSync(path.join(ws, 'both.py'), `import asyncio\n${ONE}\nra, rb = await asyncio.gather(one("a"), one("b"))\nreturn {"a": ra, "b": rb}\n`);
    const cli = runCliOnPty(['run', path.join(ws, 'both.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    try {
      await waitFor(() => (cli.output.match(/"type":"codeact\.tool_call\.started"/g) ?? []).length === 2 && cli.output.includes('or deny (n)? [n] '), {
        timeoutMs: 120_000,
        what: 'both calls announced and one question asked',
      });
      cli.type('\x03');
      assert.equal(await cli.exited, 1, cli.output);
      assert.equal(count(cli.output, ASKED), 1, `the waiting question was asked:\n${cli.output}`);
      assert.doesNotMatch(cli.output, /"type":"codeact\.tool_call\.completed"[^\n]*"output":\{"ran"/, 'a tool ran');
    } finally {
      cli.kill();
    }
  });

  it('codeact chat: the code review, then two approvals at once, each asked in turn and answered on its own', async () => {
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [tool('a'), tool('b')], 'codeact.approval.reviewCode': true }));
    const server = await startServerFor('openai-compatible', 'ollama');
    const storage = path.join(ws, 'conversations');
    try {
      server.push(
        turn().call('execute_tool_code', { code: `import asyncio\n${ONE}\nra, rb = await asyncio.gather(one("a"), one("b"))\nreturn {"a": ra, "b": rb}\n` }),
      );
      server.push(turn().text('Done.'));
      const cli = runCliOnPty(['chat', 'Call a and b.', ...scriptedModel(server.url, storage), '--workspace', ws, '--sandbox', 'none', '--json']);
      try {
        await cli.expect('The code below asks to run (codeact.approval.reviewCode is on).');
        assert.equal(count(cli.output, ASKED), 0, 'no tool is asked about before the code may run');
        await cli.expect('Run this code? [y/N] ', 'y');
        const first = /The code calls the tool "(a|b)"/.exec(await cli.expect(/The code calls the tool "[ab]"/))![1];
        await cli.expect('or deny (n)? [n] ');
        assert.equal(count(cli.output, ASKED), 1, cli.output);
        cli.type('n\r');
        const second = first === 'a' ? 'b' : 'a';
        await cli.expect(`The code calls the tool "${second}"`);
        await cli.expect('or deny (n)? [n] ', 'y');
        assert.equal(await cli.exited, 0, cli.output);
        const value = valueOf(cli.output);
        assert.match(String(value[first]), new RegExp(`^refused: The user denied the call to "${first}"\\.`), cli.output);
        assert.deepEqual(value[second], { ran: second, x: `for ${second}`, uid: 0 }, cli.output);
      } finally {
        cli.kill();
      }
    } finally {
      await server.close();
    }
  });

  it('a line typed while no question is on screen answers none: the next question waits for its own', async () => {
    const go = path.join(ws, 'go');
    writeFileSync(
      path.join(ws, 'typeahead.py'),
      `import asyncio, os\n${ONE}\nra = await one("a")\nprint("between the questions", flush=True)\n` +
        `while not os.path.exists(${JSON.stringify(go)}):\n    await asyncio.sleep(0.05)\nrb = await one("b")\nreturn {"a": ra, "b": rb}\n`,
    );
    const cli = runCliOnPty(['run', path.join(ws, 'typeahead.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    try {
      await cli.expect('The code calls the tool "a"');
      await cli.expect('or deny (n)? [n] ', 'y');
      await cli.expect('between the questions');
      // Typed now, with no question open; the terminal echoes it, so it is in the terminal's input.
      cli.type('yes\r');
      await cli.expect('yes');
      writeFileSync(go, '');
      await cli.expect('The code calls the tool "b"');
      await cli.expect('or deny (n)? [n] ', 'n');
      assert.equal(await cli.exited, 0, cli.output);
      const value = valueOf(cli.output);
      assert.deepEqual(value.a, { ran: 'a', x: 'for a', uid: 0 });
      assert.ok(String(value.b).startsWith(`refused: ${REFUSALS.userDenied('b')}`), cli.output);
    } finally {
      cli.kill();
    }
  });

  it('"allow for this session" lets that tool (only) run again without asking', async () => {
    writeFileSync(path.join(ws, 'twice.py'), `${ONE}\nr1 = await one("a")\nr2 = await one("a")\nr3 = await one("b")\nreturn {"r1": r1, "r2": r2, "r3": r3}\n`);
    const cli = runCliOnPty(['run', path.join(ws, 'twice.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    try {
      await cli.expect('The code calls the tool "a"');
      await cli.expect('or deny (n)? [n] ', 's');
      await cli.expect('The code calls the tool "b"');
      await cli.expect('or deny (n)? [n] ', 'y');
      assert.equal(await cli.exited, 0, cli.output);
      assert.equal(count(cli.output, 'The code calls the tool "a"'), 1, 'asked once for "a"');
      const value = valueOf(cli.output);
      assert.deepEqual(value, { r1: { ran: 'a', x: 'for a', uid: 0 }, r2: { ran: 'a', x: 'for a', uid: 0 }, r3: { ran: 'b', x: 'for b', uid: 0 } });
    } finally {
      cli.kill();
    }
  });

  it('code review (codeact.approval.reviewCode): the whole code, then Run or Deny; without a terminal it does not run and says why', async () => {
    writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.approval.reviewCode': true }));
    const code = Array.from({ length: 30 }, (_, i) => `v${i} = ${i}`).join('\n') + '\nprint("ran the reviewed code")\nreturn v29\n';
    writeFileSync(path.join(ws, 'review.py'), code);
    const cli = runCliOnPty(['run', path.join(ws, 'review.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    try {
      await cli.expect('The code below asks to run (codeact.approval.reviewCode is on). All of it, 33 lines:');
      await cli.expect(' 1 | v0 = 0');
      await cli.expect('30 | v29 = 29');
      await cli.expect('32 | return v29');
      await cli.expect('Run this code? [y/N] ', 'y');
      assert.equal(await cli.exited, 0, cli.output);
      assert.equal(valueOf(cli.output), 29);
      assert.match(cli.output, /ran the reviewed code/);
    } finally {
      cli.kill();
    }
    const piped = await runCli(['run', path.join(ws, 'review.py'), '--json', '--sandbox', 'none', '--workspace', ws]);
    assert.equal(piped.code, 1, piped.stderr);
    assert.doesNotMatch(piped.stdout, /"type":"codeact\.output\.delta"/, 'the code printed: it ran');
    assert.match(piped.stdout, /codeact\.approval\.reviewCode is on, and nobody can review the code here \(stdin is not a terminal\)/);
  });
});
