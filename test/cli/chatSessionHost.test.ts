/**
 * `codeact chat --session-host auto`: the conversation's Python session lives in a session host, so a second
 * `codeact chat --continue` process reads the variable the first defined; `codeact sessions` lists it, and
 * after `codeact sessions end` a third process is told plainly that the session is gone.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { CLI, ROOT, runCli, scriptedModel, TEST_HOME } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { waitFor } from '../support/wait';
import { isAlive as alive } from '../../src/core/util/processTree';

describe('codeact chat with a session host', function () {
  this.timeout(120_000);
  let root: string;
  let server: WireServer;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'codeact-chathost-'));
    mkdirSync(path.join(root, 'run'), { mode: 0o700 });
    mkdirSync(path.join(root, 'ws'));
    env = { XDG_RUNTIME_DIR: path.join(root, 'run'), OPENAI_COMPATIBLE_API_KEY: 'sk-test' };
    server = await startServerFor('openai-compatible', 'ollama');
  });
  after(async () => {
    await runCli(['sessions', 'end', '--all'], env);
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  const chatArgs = (prompt: string, extra: string[], json = true) => [
    'chat',
    prompt,
    ...scriptedModel(server.url, path.join(root, 'store')),
    '--workspace',
    path.join(root, 'ws'),
    '--sandbox',
    'none',
    '--session-host',
    'auto',
    ...(json ? ['--json'] : []),
    ...extra,
  ];
  const chat = (prompt: string, extra: string[]) => runCli(chatArgs(prompt, extra), env);
  const items = (stdout: string) =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as CodeActEvent)
      .flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item] : []));

  /** The CLI as runCli starts it, left running: its pid and what it printed so far. */
  const started = (args: string[]) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEACT_HOME: TEST_HOME, CODEACT_TRUST_WORKSPACE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { stdout: '', stderr: '', code: undefined as number | null | undefined };
    child.stdout.on('data', (d) => (out.stdout += d));
    child.stderr.on('data', (d) => (out.stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r((out.code = code))));
    return { child, out, exited };
  };

  it('a continued chat shows the run a killed earlier chat left going, to its end, then goes on', async () => {
    const go = path.join(root, 'go'); // the earlier run waits for this file (a barrier, not a clock)
    const code = `import os, time\nprint("before the barrier", flush=True)\nwhile not os.path.exists(${JSON.stringify(go)}): time.sleep(0.05)\nprint("after the barrier")\nreturn 7`;
    server.push(turn().call('execute_tool_code', { code }));
    const first = started(chatArgs('Run the long one.', []));
    const rows = async () => JSON.parse((await runCli(['sessions', '--json'], env)).stdout) as Array<{ id: string; running?: string }>;
    let id = '';
    await waitFor(async () => !!(id = (await rows()).find((r) => r.running)?.id ?? '') && first.out.stdout.includes('before the barrier'), {
      what: 'the first chat to be running its code',
      timeoutMs: 90_000,
    });
    first.child.kill('SIGKILL');
    await first.exited;

    server.push(turn().call('execute_tool_code', { code: 'return 6 * 7' }));
    server.push(turn().text('Done.'));
    const second = started(chatArgs('And now?', ['--continue', id], false));
    await waitFor(() => /waiting for the run an earlier codeact chat left going; its output follows\. Ctrl\+C to stop it\./.test(second.out.stderr), {
      what: 'the second chat to say it waits for the earlier run',
      timeoutMs: 60_000,
    });
    await waitFor(() => second.out.stderr.includes('before the barrier'), { what: 'the earlier output replayed' });
    writeFileSync(go, '');
    assert.equal(await second.exited, 0, second.out.stderr);
    assert.match(second.out.stderr, /before the barrier\nafter the barrier\n[^]*the earlier run finished\./);
    assert.match(second.out.stdout, /42/);
  });

  it('a second process continues in the live session; after sessions end, a third is told it is gone', async () => {
    server.push(turn().call('execute_tool_code', { code: 'x = 6 * 7\nreturn x' }));
    server.push(turn().text('x is defined.'));
    const first = await chat('Define x.', []);
    assert.equal(first.code, 0, first.stderr);
    const id = JSON.parse(first.stdout.trim().split('\n').pop()!).conversation_id as string;
    assert.ok(id, first.stdout);

    server.push(turn().call('execute_tool_code', { code: 'return x' }));
    server.push(turn().text('x is 42.'));
    const second = await chat('What is x?', ['--continue', id]);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(items(second.stdout)[0]?.value, 42, second.stdout);

    const listed = await runCli(['sessions', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Array<{ id: string; workspace: string; host: number; memoryBytes?: number; jobs?: number }>;
    const row = rows.find((r) => r.id === id);
    assert.ok(row, listed.stdout);
    assert.equal(row.workspace, path.join(root, 'ws'));
    assert.ok(row.memoryBytes! > 1 << 20, `the guest's tree is measured: ${listed.stdout}`);
    assert.equal(row.jobs, 0);
    const text = await runCli(['sessions'], env);
    assert.match(text.stdout, new RegExp(`^${id}  .*  idle \\d+ s  \\d+\\.\\d MB$`, 'm'), text.stdout);

    const ended = await runCli(['sessions', 'end', id], env);
    assert.equal(ended.code, 0, ended.stderr);
    const again = await runCli(['sessions', 'end', id], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no live session/);

    server.push(turn().call('execute_tool_code', { code: 'return x' }));
    server.push(turn().text('x is gone.'));
    const third = await chat('What is x now?', ['--continue', id]);
    assert.equal(third.code, 0, third.stderr);
    assert.equal(items(third.stdout)[0]?.status, 'failed');
    assert.match(JSON.stringify(items(third.stdout)[0]?.error), /NameError/);
    // The model is told, in the request, that the earlier variables are gone.
    assert.match(JSON.stringify(server.turns[server.turns.length - 2].body), /no longer exist/);

    await runCli(['sessions', 'end', '--all'], env);
    await waitFor(() => !alive(row.host), { what: 'the session host to end', timeoutMs: 60_000 });
  });

  it('--continue ID --list numbers its executions; --rewind N brings the session back to before execution N and tells the model', async () => {
    server.push(turn().call('execute_tool_code', { code: 'x = 1\nreturn x' }));
    server.push(turn().text('x is 1.'));
    const first = await chat('Set x to 1.', []);
    assert.equal(first.code, 0, first.stderr);
    const id = JSON.parse(first.stdout.trim().split('\n').pop()!).conversation_id as string;
    server.push(turn().call('execute_tool_code', { code: 'x = 2\ny = "later"\nreturn x' }));
    server.push(turn().text('x is 2.'));
    assert.equal((await chat('Now 2.', ['--continue', id])).code, 0);

    const listed = await runCli(['chat', '--continue', id, '--list', '--storage', path.join(root, 'store')], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ {2}1 {2}completed +x = 1\n {2}2 {2}completed +x = 2\n$/);

    server.push(turn().call('execute_tool_code', { code: 'return [x, "y" in globals()]' }));
    server.push(turn().text('x is 1 again.'));
    const back = await runCli(chatArgs('What is x?', ['--continue', id, '--rewind', '2'], false), env);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stderr, new RegExp(`${id}: rewound to before execution 2\\. Python state restored\\. Files not restored: `));
    assert.match(back.stdout, /⇒ \[1, ?false\]/, `x as execution 1 left it, y gone: ${back.stdout}${back.stderr}`);
    const told = JSON.stringify(server.turns[server.turns.length - 2].body);
    assert.match(
      told,
      /The user rewound the conversation to before their message \\"Now 2\.\\" \(turn 2\): 1 turn was taken out of this conversation\.\\n\[codeact\] The user rewound the code to before execution 2\./,
    );
    assert.ok(!told.includes('x is 2.'), 'the turn rewound away is not in the history sent');
    const branch = /kept as (\S+) \(codeact chat --continue \1\)/.exec(back.stderr)?.[1];
    assert.ok(branch, back.stderr);
    const points = (who: string) => runCli(['chat', '--continue', who, '--list', '--json', '--storage', path.join(root, 'store')], env);
    assert.equal(JSON.parse((await points(id)).stdout).length, 2, 'execution 1 and the one after the rewind');
    assert.equal(JSON.parse((await points(branch)).stdout).length, 2, 'the branch keeps the conversation as it was');

    const wrong = await runCli(chatArgs('Again?', ['--continue', id, '--rewind', '9']), env);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /--rewind takes an execution number from 1 to 2/);
    const only = await runCli(chatArgs('Again?', ['--continue', id, '--rewind', '1', '--only', 'files']), env);
    assert.equal(only.code, 2);
    assert.match(only.stderr, /--only goes with --rewind N and is "code" \(the conversation stays\) or "conversation"/);
  });
});
