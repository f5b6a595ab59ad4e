/**
 * Runs a sequence of executions on the real local runtime in a child Node process, optionally as
 * another (unprivileged) user, each in the session it names: sessions stay alive between steps, so two
 * guests live at the same time. A step's code may use the values earlier steps returned, as `prev`
 * (a list, in order). The child reports every item and the runtime's warnings and log lines.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../../src/common/events';
import type { LocalRuntimeOptions } from '../../../src/core/runtime/local/localRuntime';

const REPO = path.resolve(__dirname, '..', '..', '..');

const SCRIPT = String.raw`
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { steps, options } = JSON.parse(process.argv[2]);
  const warnings: string[] = [];
  const log: string[] = [];
  const rt = new LocalRuntime({ ...options, onWarning: (m: string) => warnings.push(m), log: (l: string) => log.push(l) });
  const items = [];
  const prev = [];
  for (const step of steps) {
    const code = 'prev = ' + JSON.stringify(JSON.stringify(prev)) + '\nimport json as _j\nprev = _j.loads(prev)\n' + step.code;
    const item = await rt.execute({ code, sessionId: step.session, timeoutMs: 120_000 });
    items.push(item);
    prev.push(item.value ?? null);
  }
  await rt.dispose();
  console.log(JSON.stringify({ items, warnings, log }));
})();
`;

export interface SessionsOutcome {
  items: CodeInterpreterCallItem[];
  warnings: string[];
  log: string[];
}

export interface Step {
  session: string;
  code: string;
}

/** Runs `steps` in a fresh runtime with `options` (JSON-able) in a child process, as `user` when given. */
export async function runSessionsInChild(steps: Step[], options: LocalRuntimeOptions, user?: { uid: number; gid: number }): Promise<SessionsOutcome> {
  const dir = mkdtempSync(path.join(tmpdir(), 'codeact-sessions-'));
  const script = path.join(dir, 'run.ts');
  writeFileSync(script, SCRIPT);
  chmodSync(dir, 0o755);
  chmodSync(script, 0o644);
  try {
    const child = spawn(
      process.execPath,
      [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), '--require', path.join(REPO, 'test/support/pyText.cjs'), script, JSON.stringify({ steps, options })],
      { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: tmpdir() }, stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(status, 0, `the runner failed:\n${err}${out}`);
    return JSON.parse(out.trim().split('\n').pop()!) as SessionsOutcome;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
