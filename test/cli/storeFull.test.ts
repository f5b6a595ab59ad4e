/**
 * A full disk under `--storage` (a small tmpfs that the test fills): the turn that cannot be saved is said
 * in plain words (human output and --json), the file still ends with a whole record and parses, and once
 * there is space again `--continue` goes on with every earlier turn.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const KEY = { ANTHROPIC_API_KEY: 'sk-ant-test' };

describe('codeact chat: a full disk under the conversations', function () {
  this.timeout(90_000);
  let storage: string;
  let server: WireServer;
  let mounted = false;
  before(function () {
    storage = mkdtempSync(path.join(tmpdir(), 'codeact-full-'));
    mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', storage]).status === 0;
    if (!mounted) {
      console.log('  cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN): skipping the full-disk test');
      this.skip();
    }
  });
  after(() => {
    if (mounted) spawnSync('umount', [storage]);
    rmSync(storage, { recursive: true, force: true });
  });
  beforeEach(async () => (server = await startServerFor('anthropic')));
  afterEach(async () => server.close());

  function chat(prompt: string, extra: string[]) {
    return runCli(['chat', prompt, '--provider', 'anthropic', '--model', 'claude-sonnet-4-6', '--base-url', server.url, '--storage', storage, ...extra], KEY);
  }

  it('says the turn was not saved (where and why), keeps the file whole, and --continue works once there is space', async () => {
    server.push(turn().text('Noted: the code word is "plum".'));
    const first = await chat('Remember the code word plum.', []);
    assert.equal(first.code, 0, first.stderr);
    const id = /\[(c_[A-Za-z0-9_]+)\]/.exec(first.stderr)![1];
    const file = path.join(storage, `${id}.jsonl`);
    const before = readFileSync(file, 'utf8');

    // Fill the tmpfs: the filler is written until the disk is full (the error is the point).
    const filler = path.join(storage, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(1024 * 1024, 1));
    } catch (e) {
      assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
    }

    server.push(turn().text('It was plum.'));
    const human = await chat('What was the code word?', ['--continue', id]);
    assert.doesNotMatch(human.stderr, /unexpected error|    at /, 'no stack trace');
    assert.match(human.stderr, new RegExp(`This turn was not saved: writing ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed \\(the disk is full\\)`));
    assert.match(human.stdout, /It was plum\./, 'the answer is still shown');

    server.push(turn().text('It was plum.'));
    const json = await chat('And again?', ['--continue', id, '--json']);
    const errors = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; code?: string; message?: string })
      .filter((e) => e.type === 'error');
    assert.equal(errors.length, 1, json.stdout);
    assert.equal(errors[0].code, 'store_failed');
    assert.match(errors[0].message!, /This turn was not saved: .* \(the disk is full\)\. The turns before it are kept\./);

    const after = readFileSync(file, 'utf8');
    assert.ok(after.endsWith('\n'), 'the file ends with a whole record');
    assert.ok(after.startsWith(before), 'the earlier turns are intact');
    for (const l of after.trimEnd().split('\n')) JSON.parse(l);

    rmSync(filler);
    server.push(turn().text('Plum.'));
    const again = await chat('Once more: the code word?', ['--continue', id]);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /not saved/);
    const messages = JSON.stringify(server.turns.at(-1)!.body.messages);
    assert.match(messages, /Remember the code word plum/);
    assert.match(readFileSync(file, 'utf8'), /Once more: the code word\?/);
  });
});
