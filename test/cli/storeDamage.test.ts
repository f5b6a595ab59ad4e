/**
 * Damaged and strange conversation files through the built CLI: a torn last line, a bad record in the
 * middle, a damaged first line, a zero-byte file, a folder, a FIFO and a symbolic link to /dev/zero, each
 * with `--list` and `--continue`. Nothing hangs (the FIFO test ends), nothing is hidden or deleted, every
 * refusal says what the file is and what to do.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { STORE_MESSAGES } from '../../src/core/agent/transcriptStore';

const KEY = { ANTHROPIC_API_KEY: 'sk-ant-test' };

describe('codeact chat: damaged and strange conversation files', function () {
  this.timeout(90_000);
  let storage: string;
  let server: WireServer;
  beforeEach(async () => {
    storage = mkdtempSync(path.join(tmpdir(), 'codeact-damage-'));
    server = await startServerFor('anthropic');
  });
  afterEach(async () => {
    rmSync(storage, { recursive: true, force: true });
    await server.close();
  });

  /** One saved turn; returns its id and file. */
  async function saved(): Promise<{ id: string; file: string }> {
    server.push(turn().text('Noted: the code word is "plum".'));
    const r = await runCli(
      ['chat', 'Remember the code word plum.', '--provider', 'anthropic', '--model', 'claude-sonnet-4-6', '--base-url', server.url, '--storage', storage],
      KEY,
    );
    assert.equal(r.code, 0, r.stderr);
    const id = /\[(c_[A-Za-z0-9_]+)\]/.exec(r.stderr)![1];
    return { id, file: path.join(storage, `${id}.jsonl`) };
  }

  function continued(id: string) {
    server.push(turn().text('The code word is plum.'));
    return runCli(['chat', 'What was the code word?', '--continue', id, '--base-url', server.url, '--storage', storage], KEY);
  }

  function wholeLines(file: string): void {
    const text = readFileSync(file, 'utf8');
    assert.ok(text.endsWith('\n'), 'ends with a whole record');
    for (const l of text.trimEnd().split('\n')) JSON.parse(l);
  }

  it('a torn last line is kept aside, cut off before the next turn, and the next prompt is saved whole', async () => {
    const { id, file } = await saved();
    appendFileSync(file, '{"t":1,"item":{"type":"mess');
    const r = await continued(id);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /damaged record/);
    wholeLines(file);
    const aside = readdirSync(storage).filter((n) => n.startsWith(`${id}.jsonl.torn-`));
    assert.equal(aside.length, 1, 'the torn tail is kept beside the file');
    assert.deepEqual(
      readdirSync(storage).filter((n) => n.includes('.damaged-')),
      [],
      'a torn tail alone is no damage to copy',
    );
    assert.equal(readFileSync(path.join(storage, aside[0]), 'utf8'), '{"t":1,"item":{"type":"mess');
    assert.match(readFileSync(file, 'utf8'), /What was the code word\?/);
    assert.match(JSON.stringify(server.turns[1].body.messages), /Remember the code word plum/);
  });

  /** The file as it was, kept beside the repaired copy (`ID.jsonl.damaged-TIME`), named in `stderr`; the repaired copy is whole. */
  function keptBeside(id: string, file: string, original: string, stderr: string): void {
    const aside = readdirSync(storage).filter((n) => n.startsWith(`${id}.jsonl.damaged-`));
    assert.equal(aside.length, 1, 'the damaged file is kept beside the repaired copy');
    assert.equal(readFileSync(path.join(storage, aside[0]), 'utf8'), original, 'kept byte for byte');
    assert.ok(stderr.includes(`kept as it was in ${path.join(storage, aside[0])}; the conversation goes on in a repaired copy`), stderr);
    wholeLines(file);
    assert.ok(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]).meta, 'the repaired copy starts with its meta line');
    // Every whole record of the original is in the repaired copy as it was, in order.
    const repaired = readFileSync(file, 'utf8').split('\n');
    const good = original.split('\n').filter((l) => {
      try {
        return !!JSON.parse(l) && !('meta' in JSON.parse(l));
      } catch {
        return false;
      }
    });
    assert.deepEqual(
      repaired.filter((l) => good.includes(l)),
      good,
    );
  }

  it('a bad record in the middle is skipped with a notice, not silently; the file is kept as it was beside a repaired copy', async () => {
    const { id, file } = await saved();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    lines.splice(2, 0, '{"t":1,"event":{"type":"respo#garbage');
    const original = lines.join('\n') + '\n';
    writeFileSync(file, original);
    const r = await continued(id);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes(STORE_MESSAGES.skipped(file, [3])), r.stderr);
    keptBeside(id, file, original, r.stderr);
    assert.doesNotMatch(readFileSync(file, 'utf8'), /garbage/);
    assert.match(readFileSync(file, 'utf8'), /What was the code word\?/);
    // Said once: the next run reads a whole file.
    const again = await continued(id);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /damaged/);
    assert.equal(readdirSync(storage).filter((n) => n.includes('.damaged-')).length, 1);
  });

  it('a damaged first line: still listed as damaged; --continue recovers it from its turns and keeps the file as it was beside a repaired copy', async () => {
    const { id, file } = await saved();
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[0] = '{"meta":{"id":"' + id + '","tit\u0000';
    const original = lines.join('\n');
    writeFileSync(file, original);
    const list = await runCli(['chat', '--list', '--storage', storage]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${id} .*Remember the code word plum\\..*damaged: its first line`));
    const r = await continued(id);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes(STORE_MESSAGES.firstLineRecovered(file)), r.stderr);
    assert.match(JSON.stringify(server.turns[1].body.messages), /Remember the code word plum/);
    keptBeside(id, file, original, r.stderr);
    // The repaired copy is listed whole, under the title recovered from its first prompt.
    const after = await runCli(['chat', '--list', '--storage', storage]);
    assert.match(after.stdout, new RegExp(`${id} .*Remember the code word plum\\.`));
    assert.doesNotMatch(after.stdout, /damaged/);
  });

  it('a zero-byte file, a folder, a FIFO and a symbolic link to /dev/zero: listed as damaged, refused clearly by --continue, no hang', async () => {
    const { id } = await saved();
    writeFileSync(path.join(storage, 'c_zero.jsonl'), '');
    mkdirSync(path.join(storage, 'c_folder.jsonl'));
    execFileSync('mkfifo', [path.join(storage, 'c_fifo.jsonl')]);
    symlinkSync('/dev/zero', path.join(storage, 'c_zerodev.jsonl'));
    const list = await runCli(['chat', '--list', '--storage', storage, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const listed = JSON.parse(list.stdout) as Array<{ id: string; damaged?: string }>;
    assert.deepEqual(listed.map((c) => c.id).sort(), ['c_fifo', 'c_folder', 'c_zero', 'c_zerodev', id].sort());
    const why = Object.fromEntries(listed.map((c) => [c.id, c.damaged]));
    assert.equal(why[id], undefined);
    assert.match(why.c_zero!, /empty \(zero bytes\)/);
    assert.match(why.c_folder!, /is a folder/);
    assert.match(why.c_fifo!, /is a FIFO/);
    assert.match(why.c_zerodev!, /symbolic link/);
    const expected: Record<string, RegExp> = { c_zero: /empty \(zero bytes\)/, c_folder: /is a folder/, c_fifo: /is a FIFO/, c_zerodev: /symbolic link/ };
    for (const [bad, message] of Object.entries(expected)) {
      const r = await runCli(
        ['chat', 'hi', '--continue', bad, '--provider', 'anthropic', '--model', 'claude-sonnet-4-6', '--base-url', server.url, '--storage', storage],
        KEY,
      );
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
      assert.match(r.stderr, message, bad);
      assert.doesNotMatch(r.stderr, /unexpected error|    at /, 'no stack trace');
    }
  });
});
