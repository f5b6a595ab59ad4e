/**
 * An `--outputs` save killed midway (SIGKILL as soon as anything appears in the folder): no file under a
 * final name is shorter than the output. The save is written under a hidden temporary name and takes its
 * final name only when whole.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, ROOT, CLI_ENV } from '../support/cli';

/** Under the local runtime's 10 MB copy-out limit; three of them, so the kill lands in a save. */
const BYTES = 9 * 1024 * 1024;
const CODE = `for n in range(3):\n    with open(f"big{n}.bin", "wb") as f:\n        f.write(b"x" * ${BYTES})\nprint("written")\n`;

describe('codeact run --outputs: a save killed midway', function () {
  this.timeout(120_000);
  let out: string;
  beforeEach(() => (out = mkdtempSync(path.join(tmpdir(), 'codeact-outkill-'))));
  afterEach(() => rmSync(out, { recursive: true, force: true }));

  it('leaves no file under the final name that is shorter than the output', async () => {
    const child = spawn(process.execPath, [CLI, 'run', '-', '--python', '/usr/bin/python3', '--outputs', out], {
      cwd: ROOT,
      env: { ...CLI_ENV },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    await new Promise<void>((r) => child.stdin.end(CODE, () => r()));
    const exited = new Promise<void>((r) => child.on('close', () => r()));
    // Watch the folder in a tight loop (the child is another process) and kill at the first entry, mid-save.
    // The deadline is only a failure net: the save starts within seconds.
    let seen: string[] = [];
    for (const deadline = Date.now() + 60_000; !seen.length && Date.now() < deadline;) {
      seen = readdirSync(out);
      if (seen.length) child.kill('SIGKILL');
    }
    if (!seen.length) child.kill('SIGKILL');
    await exited;
    assert.ok(seen.length, 'the save had started when the CLI was killed');
    for (const name of readdirSync(out)) {
      if (name.startsWith('.') && name.endsWith('.tmp')) continue; // the unfinished save, hidden and named so
      assert.equal(statSync(path.join(out, name)).size, BYTES, `${name} is under its final name, so it must be whole`);
    }
  });
});
