/**
 * `codeact chat --session-host auto`: the conversation's Python session lives in a session host, so a second
 * `codeact chat --continue` process reads the variable the first defined; `codeact sessions` lists it, and
 * after `codeact sessions end` a third process is told plainly that the session is gone.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent } from '../../src/common/events';
import { runCli } from '../support/cli';
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

  const chat = (prompt: string, extra: string[]) =>
    runCli(
      [
        'chat',
        prompt,
        '--provider',
        'openai-compatible',
        '--model',
        'qwen2.5-coder:7b',
        '--base-url',
        server.url,
        '--storage',
        path.join(root, 'store'),
        '--workspace',
        path.join(root, 'ws'),
        '--sandbox',
        'none',
        '--session-host',
        'auto',
        '--json',
        ...extra,
      ],
      env,
    );
  const items = (stdout: string) =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as CodeActEvent)
      .flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item] : []));

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
});
