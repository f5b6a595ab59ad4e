/**
 * On the real kernel: the restrictions are made for real, in a user namespace of the
 * test's own (`unshare --user --map-root-user`), and the real CLI, the real bwrap and the real /proc
 * meet them:
 * - `user.max_user_namespaces = 0` (per user namespace: the namespace's root may lower it): bwrap's clone
 *   fails with ENOSPC;
 * - a masked /proc path (a bind mount over /proc/keys, as Docker masks it): the kernel refuses bwrap a
 *   new /proc ("Can't mount proc on /newroot/proc: Operation not permitted").
 * The strict setting exits 2 with the cause and the fix; `auto` runs the code and warns once, with the
 * cause. As root and as an unprivileged user.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI } from '../support/cli';
import { cannotSwitchUser, TESTER } from './support/asUser';

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI inside a fresh user (and mount) namespace after `setup` (a shell line run there as its root). */
function cliRestricted(dir: string, setup: string, args: string[], user?: { uid: number; gid: number }): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', `${setup} && exec "$@"`, 'sh', process.execPath, CLI, ...args], {
      cwd: dir,
      // /usr/bin/python3: the pyenv one on PATH lives in root's home, which the other user cannot read.
      env: { PATH: '/usr/bin:/bin', HOME: dir, CODEACT_HOME: dir, CODEACT_TRUST_WORKSPACE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(user ?? {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const NO_USERNS = 'echo 0 > /proc/sys/user/max_user_namespaces';
const MASKED_PROC = 'mount --bind /dev/null /proc/keys';

describe('security: bubblewrap on a restricted host, for real', function () {
  this.timeout(120_000);
  let dir: string;
  let file: string;
  before(function () {
    if (process.platform !== 'linux') this.skip();
    try {
      execFileSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', `${NO_USERNS} && ${MASKED_PROC}`], { stdio: 'ignore' });
    } catch {
      console.log('      skipped: this host does not let the tests make the restrictions in a user namespace of their own (unshare --user)');
      this.skip();
    }
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-restricted-'));
    chmodSync(dir, 0o777);
    file = path.join(dir, 'answer.py');
    writeFileSync(file, 'print(6 * 7)\n');
    chmodSync(file, 0o644);
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  for (const as of ['root', 'an unprivileged user'] as const) {
    describe(`as ${as}`, () => {
      let user: { uid: number; gid: number } | undefined;
      before(function () {
        if (as === 'root') return;
        const why = cannotSwitchUser();
        if (why) {
          console.log(`      skipped: ${why}`);
          this.skip();
        }
        user = { uid: TESTER.uid, gid: TESTER.gid };
      });

      it('user.max_user_namespaces = 0: "bubblewrap" exits 2 naming it, with the sysctl that fixes it', async () => {
        const r = await cliRestricted(dir, NO_USERNS, ['run', file, '--workspace', dir, '--sandbox', 'bubblewrap'], user);
        assert.equal(r.code, 2, r.stdout + r.stderr);
        assert.match(
          r.stderr,
          /codeact\.sandbox\.kind is "bubblewrap" but bubblewrap cannot run here: user namespaces are switched off here \(user\.max_user_namespaces = 0\) \(bwrap: Creating new namespace failed: .*\(ENOSPC\)\)\. Allow them: sudo sysctl -w user\.max_user_namespaces=15000/,
        );
        assert.doesNotMatch(r.stdout, /42/);
      });

      it('user.max_user_namespaces = 0: "auto" runs the code without a sandbox and warns once, with the cause', async () => {
        const r = await cliRestricted(dir, NO_USERNS, ['run', file, '--workspace', dir, '--sandbox', 'auto'], user);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /^42$/m);
        assert.equal(r.stderr.match(/Code runs without a sandbox/g)?.length, 1, r.stderr);
        assert.match(r.stderr, /warning: Code runs without a sandbox: user namespaces are switched off here \(user\.max_user_namespaces = 0\)/);
      });

      it('a masked /proc path: names the masking and gives the dev container flags (systempaths=unconfined among them)', async () => {
        const r = await cliRestricted(dir, MASKED_PROC, ['run', file, '--workspace', dir, '--sandbox', 'bubblewrap'], user);
        assert.equal(r.code, 2, r.stdout + r.stderr);
        assert.match(
          r.stderr,
          /bubblewrap cannot run here: CodeAct runs in .* that does not let bubblewrap create its namespaces: the container masks parts of \/proc, so the kernel refuses the sandbox a \/proc of its own \(bwrap: Can't mount proc on \/newroot\/proc: Operation not permitted\)/,
        );
        assert.ok(
          r.stderr.includes(
            '"runArgs": ["--security-opt","seccomp=unconfined","--security-opt","apparmor=unconfined","--security-opt","systempaths=unconfined"]',
          ),
          r.stderr,
        );
      });
    });
  }
});
