/**
 * Runs code on the real local runtime in a child Node process, optionally as another (unprivileged)
 * user: the security tests run as root here, and some protections only bind, or only matter, for an
 * ordinary user (file permissions, capabilities).
 *
 * The child reports the item, the warnings, whether the folder named by the value's `root` is still
 * there after the run and after dispose, and how often the event loop turned between the result
 * event and the end of execute (cleanup must not stall it).
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../../src/common/events';
import type { LocalRuntimeOptions } from '../../../src/core/runtime/local/localRuntime';

const REPO = path.resolve(__dirname, '..', '..', '..');

export const TESTER = { name: 'tester', uid: 1001, gid: 1001 };

const SCRIPT = String.raw`
import { existsSync } from 'node:fs';
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { code, options } = JSON.parse(process.argv[2]);
  const warnings: string[] = [];
  const rt = new LocalRuntime({ ...options, onWarning: (m: string) => warnings.push(m) });
  let ticks = 0;
  let counting = false;
  const tick = () => { if (counting) { ticks++; setImmediate(tick); } };
  const item = await rt.execute({ code, timeoutMs: 120_000 }, {
    onEvent: (e) => { if (e.type === 'response.output_item.done') { counting = true; setImmediate(tick); } },
  });
  counting = false;
  const root = (item.value as { root?: string } | null)?.root ?? '';
  const afterRun = root ? existsSync(root) : null;
  await rt.dispose();
  console.log(JSON.stringify({ item, afterRun, afterDispose: root ? existsSync(root) : null, ticks, warnings }));
})();
`;

export interface ChildOutcome {
  item: CodeInterpreterCallItem;
  afterRun: boolean | null;
  afterDispose: boolean | null;
  ticks: number;
  warnings: string[];
}

/**
 * The children's cache folder (XDG_CACHE_HOME), one per user and kept between children: the runtime builds
 * matplotlib's font cache there in a background process that may outlive the child by seconds, so it must
 * not be in the child's own folder (removed when the child ends).
 */
function cacheFor(user?: { uid: number; gid: number }): string {
  const dir = path.join(tmpdir(), `codeact-test-cache-${user?.uid ?? process.getuid?.() ?? 'me'}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

/**
 * Runs a TypeScript `script` (tsx, with the repository's imports) in a child Node process, as `user` when
 * given, with `input` as its JSON argument, and returns the JSON of its last line of stdout. The child gets a
 * folder of its own (its cwd and HOME), readable by that user, and a minimal environment.
 */
export async function runScriptInChild<T>(script: string, input: unknown, user?: { uid: number; gid: number }, what = 'the runner'): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'codeact-child-'));
  const file = path.join(dir, 'run.ts');
  writeFileSync(file, script);
  chmodSync(dir, 0o755);
  chmodSync(file, 0o644);
  try {
    const child = spawn(
      process.execPath,
      [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), '--require', path.join(REPO, 'test/support/pyText.cjs'), file, JSON.stringify(input)],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: tmpdir(), XDG_CACHE_HOME: cacheFor(user) },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(user ?? {}),
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(status, 0, `${what} failed:\n${err.slice(-4000)}${out.slice(-2000)}`);
    return JSON.parse(out.trim().split('\n').pop()!) as T;
  } finally {
    // Nothing of the child's writes here once it has ended (its background font-cache build writes to
    // cacheFor); the retries only cover a guest's last moments.
    rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
}

/** Runs `code` in a fresh runtime with `options` (JSON-able) in a child process, as `user` when given. */
export function runInChild(code: string, options: LocalRuntimeOptions, user?: { uid: number; gid: number }): Promise<ChildOutcome> {
  return runScriptInChild<ChildOutcome>(SCRIPT, { code, options }, user);
}

/** Why the tests cannot switch to the unprivileged user here, or null when they can. */
export function cannotSwitchUser(): string | null {
  if (process.getuid?.() !== 0) return 'the tests already run unprivileged (switching users needs root)';
  try {
    execFileSync('id', [TESTER.name], { stdio: 'ignore' });
    return null;
  } catch {
    return `there is no user "${TESTER.name}" to run as`;
  }
}
