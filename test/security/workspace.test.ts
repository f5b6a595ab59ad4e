/**
 * Nothing the code writes can reconfigure CodeAct or git, and no setuid or setgid
 * file it creates survives on the host.
 *
 * With `mountWorkspace: "readwrite"` the code can write the workspace, but `.git`, `.vscode` and
 * `.codeact` stay read-only, whether they exist or not (a name that does not exist yet cannot be
 * created), through renames, links and symbolic links alike. The seccomp filter refuses setuid and
 * setgid modes however the file is made (chmod, open with O_CREAT, mknod). Each attack runs in a
 * cold guest and in a guest forked by the zygote; without a sandbox the same writes succeed (documented).
 */
import * as assert from 'node:assert/strict';
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { cannotSwitchUser, runInChild, TESTER } from './support/asUser';

const ATTACK = String.raw`
import os, shutil, stat
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as e:
        out[name] = e.errno
ws = os.environ.get("WS") or WS
attempt("write_git_config", lambda: open(f"{ws}/.git/config", "a").write("[core]\n\tfsmonitor = touch /tmp/pwned\n"))
attempt("add_git_hook", lambda: open(f"{ws}/.git/hooks/post-checkout", "w").write("#!/bin/sh\ntouch /tmp/pwned\n"))
attempt("write_vscode_settings", lambda: open(f"{ws}/.vscode/settings.json", "w").write('{"codeact.sandbox.kind": "none"}'))
attempt("new_vscode_file", lambda: open(f"{ws}/.vscode/tasks.json", "w").write("{}"))
attempt("rename_vscode", lambda: os.rename(f"{ws}/.vscode", f"{ws}/vscode-old"))
attempt("rmtree_git", lambda: shutil.rmtree(f"{ws}/.git"))
attempt("rename_git", lambda: os.rename(f"{ws}/.git", f"{ws}/git-old"))
attempt("create_codeact", lambda: os.makedirs(f"{ws}/.codeact/x"))
attempt("file_in_codeact", lambda: open(f"{ws}/.codeact/config.json", "w").write("{}"))
attempt("rmdir_codeact", lambda: os.rmdir(f"{ws}/.codeact"))
attempt("symlink_codeact", lambda: os.symlink("elsewhere", f"{ws}/.codeact"))
attempt("write_through_symlink", lambda: (os.symlink(f"{ws}/.vscode", f"{ws}/link"), open(f"{ws}/link/settings.json", "w").write("{}")))
attempt("hardlink_out_of_git", lambda: (os.link(f"{ws}/.git/config", f"{ws}/config-link"), open(f"{ws}/config-link", "a").write("x")))
attempt("ordinary_file", lambda: open(f"{ws}/result.csv", "w").write("a,b\n1,2\n"))
attempt("ordinary_dir", lambda: (os.makedirs(f"{ws}/out/deep"), open(f"{ws}/out/deep/x.txt", "w").write("x")))
out["codeact_listing"] = sorted(os.listdir(f"{ws}/.codeact")) if os.path.isdir(f"{ws}/.codeact") else None
return out`;

const SETUID = String.raw`
import os, stat
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as e:
        out[name] = e.errno
ws = WS
open(f"{ws}/prog", "w").write("#!/bin/sh\n")
attempt("chmod_setuid", lambda: os.chmod(f"{ws}/prog", 0o4755))
attempt("chmod_setgid", lambda: os.chmod(f"{ws}/prog", 0o2755))
attempt("fchmod_setuid", lambda: os.fchmod(os.open(f"{ws}/prog", os.O_RDONLY), 0o6755))
attempt("open_creat_setuid", lambda: os.close(os.open(f"{ws}/prog2", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("mknod_setuid", lambda: os.mknod(f"{ws}/prog3", 0o4755 | stat.S_IFREG))
attempt("chmod_setgid_dir", lambda: (os.mkdir(f"{ws}/shared"), os.chmod(f"{ws}/shared", 0o2775)))
attempt("chmod_plain", lambda: os.chmod(f"{ws}/prog", 0o755))
attempt("open_creat_plain", lambda: os.close(os.open(f"{ws}/plain", os.O_CREAT | os.O_WRONLY, 0o644)))
return out`;

const EROFS = 30;
const EPERM = 1;

/** Regular files under dir with the setuid or setgid bit (folders are not followed through links). */
function setidFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...setidFiles(p));
    else if (st.isFile() && st.mode & 0o6000) out.push(`${p} ${(st.mode & 0o7777).toString(8)}`);
  }
  return out;
}

function makeWorkspace(withCodeact = false): string {
  const ws = mkdtempSync(path.join(tmpdir(), 'codeact-rw-'));
  mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
  writeFileSync(path.join(ws, '.git', 'config'), '[core]\n\tbare = false\n');
  mkdirSync(path.join(ws, '.vscode'));
  writeFileSync(path.join(ws, '.vscode', 'settings.json'), '{"codeact.sandbox.kind": "bubblewrap"}');
  if (withCodeact) mkdirSync(path.join(ws, '.codeact'));
  return ws;
}

for (const zygote of [false, true]) {
  describe(`readwrite workspace in the sandbox (${zygote ? 'forked from the zygote' : 'cold start'})`, function () {
    this.timeout(120_000);
    const dirs: string[] = [];
    const runtimes: LocalRuntime[] = [];
    const warnings: string[] = [];

    before(async function () {
      const reason = await probeBubblewrap();
      if (reason) {
        console.log(`      skipped: ${reason}`);
        this.skip();
      }
    });
    after(async () => {
      await Promise.all(runtimes.map((r) => r.dispose()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    function runtime(ws: string, extra: { seccomp?: boolean } = {}): LocalRuntime {
      const rt = new LocalRuntime({
        sandbox: { kind: 'bubblewrap', mountWorkspace: 'readwrite', workspace: ws, ...extra },
        zygote,
        onWarning: (m) => warnings.push(m),
      });
      runtimes.push(rt);
      return rt;
    }
    const exec = (rt: LocalRuntime, code: string, ws: string): Promise<CodeInterpreterCallItem> =>
      rt.execute({ code: `WS = ${JSON.stringify(ws)}\n${code}`, timeoutMs: 60_000 });

    it('.git, .vscode and .codeact stay read-only and cannot be created, renamed or linked around; other files are written', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const rt = runtime(ws);
      const item = await exec(rt, ATTACK, ws);
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      const v = item.value as Record<string, unknown>;
      assert.equal(v.write_git_config, EROFS);
      assert.equal(v.add_git_hook, EROFS);
      assert.equal(v.write_vscode_settings, EROFS);
      assert.equal(v.new_vscode_file, EROFS);
      assert.notEqual(v.rename_vscode, 'ok', 'a mount point cannot be renamed');
      assert.notEqual(v.rmtree_git, 'ok');
      assert.notEqual(v.rename_git, 'ok');
      assert.notEqual(v.create_codeact, 'ok', '.codeact did not exist and cannot be created');
      assert.notEqual(v.file_in_codeact, 'ok');
      assert.notEqual(v.rmdir_codeact, 'ok');
      assert.notEqual(v.symlink_codeact, 'ok');
      assert.notEqual(v.write_through_symlink, 'ok');
      assert.notEqual(v.hardlink_out_of_git, 'ok');
      assert.equal(v.ordinary_file, 'ok');
      assert.equal(v.ordinary_dir, 'ok');
      assert.deepEqual(v.codeact_listing, ['README.codeact'], 'the placeholder holds only its note');
      assert.equal(item.sandbox?.workspace, 'readwrite');
      // On the host: the configuration is as it was, and the code's own files are there.
      assert.equal(readFileSync(path.join(ws, '.git', 'config'), 'utf8'), '[core]\n\tbare = false\n');
      assert.deepEqual(readdirSync(path.join(ws, '.git', 'hooks')), []);
      assert.deepEqual(readdirSync(path.join(ws, '.vscode')), ['settings.json']);
      assert.equal(readFileSync(path.join(ws, '.vscode', 'settings.json'), 'utf8'), '{"codeact.sandbox.kind": "bubblewrap"}');
      assert.equal(readFileSync(path.join(ws, 'result.csv'), 'utf8'), 'a,b\n1,2\n');
      assert.ok(existsSync(path.join(ws, 'out', 'deep', 'x.txt')));
      if (zygote) {
        // The zygote's sandbox holds the placeholder while it lives: its note, nothing the code wrote, and
        // read-only, so cleaning the workspace on the host (git clean -fdx) cannot pull it from under the sandbox.
        assert.deepEqual(readdirSync(path.join(ws, '.codeact')), ['README.codeact']);
        assert.equal(statSync(path.join(ws, '.codeact')).mode & 0o777, 0o555);
        await rt.dispose();
      }
      assert.ok(!existsSync(path.join(ws, '.codeact')), 'the placeholder for .codeact is gone once no sandbox uses it');
    });

    it('an existing .codeact and a .git pointer file (worktree) with its git folder inside the workspace stay read-only', async () => {
      const ws = makeWorkspace(true);
      dirs.push(ws);
      rmSync(path.join(ws, '.git'), { recursive: true });
      mkdirSync(path.join(ws, 'gitstore', 'worktrees', 'wt'), { recursive: true });
      writeFileSync(path.join(ws, 'gitstore', 'worktrees', 'wt', 'HEAD'), 'ref: refs/heads/main\n');
      writeFileSync(path.join(ws, '.git'), 'gitdir: gitstore/worktrees/wt\n');
      const rt = runtime(ws);
      const item = await exec(
        rt,
        String.raw`
out = {}
for name, p in [("pointer", ".git"), ("gitdir", "gitstore/worktrees/wt/HEAD"), ("codeact", ".codeact/x")]:
    try:
        open(f"{WS}/{p}", "w").write("gitdir: /tmp/evil\n")
        out[name] = "ok"
    except OSError as e:
        out[name] = e.errno
return out`,
        ws,
      );
      assert.deepEqual(item.value, { pointer: EROFS, gitdir: EROFS, codeact: EROFS });
      assert.equal(readFileSync(path.join(ws, '.git'), 'utf8'), 'gitdir: gitstore/worktrees/wt\n');
    });

    it('no setuid or setgid file can be made: chmod, fchmod, open(O_CREAT) and mknod with those bits get EPERM; plain modes work', async () => {
      const ws = makeWorkspace();
      dirs.push(ws);
      const rt = runtime(ws);
      const item = await exec(rt, SETUID, ws);
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.deepEqual(item.value, {
        chmod_setuid: EPERM,
        chmod_setgid: EPERM,
        fchmod_setuid: EPERM,
        open_creat_setuid: EPERM,
        mknod_setuid: EPERM,
        chmod_setgid_dir: EPERM,
        chmod_plain: 'ok',
        open_creat_plain: 'ok',
      });
      assert.deepEqual(setidFiles(ws), [], 'setuid or setgid files on the host');
      assert.equal(statSync(path.join(ws, 'prog')).mode & 0o7777, 0o755);
    });

    if (!zygote) {
      it('a .vscode that is a symbolic link cannot be protected: the workspace is mounted read-only, with a warning', async () => {
        const ws = makeWorkspace();
        dirs.push(ws);
        rmSync(path.join(ws, '.vscode'), { recursive: true });
        mkdirSync(path.join(ws, 'editor-config'));
        symlinkSync('editor-config', path.join(ws, '.vscode'));
        warnings.length = 0;
        const rt = runtime(ws);
        const item = await exec(rt, 'import os\ntry:\n    os.unlink(WS + "/.vscode")\n    return "replaced"\nexcept OSError as e:\n    return e.errno', ws);
        assert.equal(item.value, EROFS);
        assert.equal(item.sandbox?.workspace, 'readonly');
        assert.ok(lstatSync(path.join(ws, '.vscode')).isSymbolicLink());
        assert.match(warnings.join('\n'), /\.vscode in the workspace is a symbolic link/);
      });

      it('without the seccomp filter (an architecture without one) a readwrite workspace is mounted read-only, with a warning', async () => {
        const ws = makeWorkspace();
        dirs.push(ws);
        warnings.length = 0;
        const rt = runtime(ws, { seccomp: false });
        const item = await exec(rt, 'import os\ntry:\n    open(WS + "/x", "w")\n    return "written"\nexcept OSError as e:\n    return e.errno', ws);
        assert.equal(item.value, EROFS);
        assert.equal(item.sandbox?.workspace, 'readonly');
        assert.equal(item.sandbox?.seccomp, false);
        assert.match(warnings.join('\n'), /no seccomp filter/);
      });
    }
  });
}

describe('readwrite workspace in the sandbox, as an unprivileged user', function () {
  this.timeout(180_000);
  for (const zygote of [false, true]) {
    it(`${zygote ? 'forked' : 'cold'}: the configuration stays read-only and no setuid file can be made (the user owns every file)`, async function () {
      const why = cannotSwitchUser() ?? (await probeBubblewrap());
      if (why) {
        console.log(`      not run: ${why}`);
        return this.skip();
      }
      const ws = makeWorkspace();
      try {
        const own = (p: string) => {
          chownSync(p, TESTER.uid, TESTER.gid);
          if (statSync(p).isDirectory()) for (const n of readdirSync(p)) own(path.join(p, n));
        };
        own(ws);
        const options = { sandbox: { kind: 'bubblewrap' as const, mountWorkspace: 'readwrite' as const, workspace: ws }, zygote };
        const attack = await runInChild(`WS = ${JSON.stringify(ws)}\n${ATTACK}`, options, TESTER);
        const v = attack.item.value as Record<string, unknown>;
        assert.equal(attack.item.status, 'completed', JSON.stringify(attack.item.error));
        assert.equal(v.write_git_config, EROFS);
        assert.equal(v.write_vscode_settings, EROFS);
        assert.notEqual(v.create_codeact, 'ok');
        assert.equal(v.ordinary_file, 'ok');
        assert.equal(readFileSync(path.join(ws, '.git', 'config'), 'utf8'), '[core]\n\tbare = false\n');
        assert.ok(!existsSync(path.join(ws, '.codeact')));
        const setuid = await runInChild(`WS = ${JSON.stringify(ws)}\n${SETUID}`, options, TESTER);
        assert.equal(setuid.item.status, 'completed', JSON.stringify(setuid.item.error));
        const s = setuid.item.value as Record<string, unknown>;
        for (const k of ['chmod_setuid', 'chmod_setgid', 'fchmod_setuid', 'open_creat_setuid', 'mknod_setuid']) assert.equal(s[k], EPERM, k);
        assert.equal(s.chmod_plain, 'ok');
        assert.deepEqual(setidFiles(ws), []);
      } finally {
        rmSync(ws, { recursive: true, force: true });
      }
    });
  }
});

describe('workspace without a sandbox', function () {
  this.timeout(60_000);
  it('DOCUMENTS: without a sandbox the code rewrites .vscode/settings.json and makes setuid files (it runs as you)', async () => {
    const ws = makeWorkspace();
    const rt = new LocalRuntime({ sandbox: { kind: 'none', mountWorkspace: 'readwrite', workspace: ws } });
    try {
      const item = await rt.execute({
        code: `WS = ${JSON.stringify(ws)}\nimport os\nopen(WS + "/.vscode/settings.json", "w").write("{}")\nopen(WS + "/p", "w")\nos.chmod(WS + "/p", 0o4755)\nreturn "done"`,
      });
      assert.equal(item.value, 'done');
      assert.equal(readFileSync(path.join(ws, '.vscode', 'settings.json'), 'utf8'), '{}');
      assert.equal(statSync(path.join(ws, 'p')).mode & 0o4000, 0o4000);
    } finally {
      await rt.dispose();
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
