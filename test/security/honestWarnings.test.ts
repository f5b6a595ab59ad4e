/**
 * Honest warnings. Without a sandbox, guest code can read the parent process's
 * environment through /proc, API keys included: the warning says so, and this test shows it is true
 * with the real CLI holding a key in its environment (and that the bubblewrap sandbox stops it).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { runCli } from '../support/cli';

const CANARY = `sk-canary-${process.pid}-${Date.now()}`;
// Looks for the canary in every process environment it can read, its host's included.
const SNOOP = `
import os
found = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            with open(f'/proc/{pid}/environ', 'rb') as f:
                if b'${CANARY}' in f.read():
                    found.append(int(pid))
        except OSError:
            pass
return {"found": len(found)}
`;

describe('security: honest warnings', function () {
  this.timeout(60_000);
  let ws: string;
  let file: string;
  before(function () {
    if (process.platform !== 'linux') this.skip();
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-warn-'));
    file = path.join(ws, 'snoop.py');
    writeFileSync(file, SNOOP);
  });
  after(() => ws && rmSync(ws, { recursive: true, force: true }));

  it("without a sandbox the warning says the code can read CodeAct's environment, API keys included, and how to get a sandbox; and it is true", async () => {
    // A PATH with python3 but no bwrap: `auto` falls back to no sandbox, and warns.
    const bin = path.join(ws, 'bin');
    mkdirSync(bin);
    symlinkSync(realpathSync(execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()), path.join(bin, 'python3'));
    const r = await runCli(['run', file, '--workspace', ws, '--sandbox', 'auto', '--json', '--verbose'], { PATH: bin, OPENAI_API_KEY: CANARY });
    // Two lines: what is missing and what the code can do, then the one command (this system's, from os-release).
    const lines = r.stderr.split('\n');
    const at = lines.findIndex((l) => l.startsWith('warning: Code runs without a sandbox: '));
    assert.ok(at >= 0, r.stderr);
    assert.match(
      lines[at],
      /^warning: Code runs without a sandbox: bubblewrap \(bwrap\) is not installed\. .*read this process's environment through \/proc, API keys included\.$/,
    );
    assert.match(lines[at + 1], /^To isolate it[:,] .*bubblewrap/);
    assert.doesNotMatch(lines.slice(at, at + 2).join('\n'), /PATH/);
    // --verbose: the full detail in the log, the PATH searched and every system's command among it.
    assert.ok(
      lines.some((l) => l.startsWith('log: Why code runs without a sandbox: ') && l.includes(`on PATH (${bin})`) && l.includes('sudo dnf install bubblewrap')),
      r.stderr,
    );
    // What it says is true: the code found the key in the CLI's own environment.
    assert.match(r.stdout, /"value":\{"found":[1-9]/, r.stdout + r.stderr);
  });

  it('with bubblewrap the code cannot read it', async function () {
    const reason = await probeBubblewrap();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      this.skip();
    }
    const r = await runCli(['run', file, '--workspace', ws, '--sandbox', 'bubblewrap', '--json'], { OPENAI_API_KEY: CANARY });
    assert.match(r.stdout, /"value":\{"found":0\}/, r.stdout + r.stderr);
  });
});
