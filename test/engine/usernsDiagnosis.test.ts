/**
 * When bubblewrap cannot create its namespaces, the message names the cause that was
 * detected and gives the exact fix. Each restriction is faked where it lives: the sysctl files in a
 * folder laid out like /proc/sys, the container marks in a folder laid out like /, a PATH without bwrap,
 * and a bwrap that fails the way the real one does on such a host (it prints the real bwrap's error).
 * The probe spawns it, usernsDiagnosis.ts reads the files, and planLaunch turns it into the strict
 * setting's error and `auto`'s warning. `auto`'s warning is two lines (what is missing; the one command,
 * for this system by its os-release), its full detail goes to the log; it warns once per process, however
 * many runtimes are built.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { resolvePython, type PythonInfo } from '../../src/core/runtime/local/python';
import { planLaunch, SandboxUnavailableError, type SandboxOptions } from '../../src/core/runtime/local/sandbox';
import {
  apparmorProfile,
  DEVCONTAINER_RUN_ARGS,
  diagnoseUserns,
  fallbackWarning,
  installCommand,
  type UsernsHost,
} from '../../src/core/runtime/local/usernsDiagnosis';

// bwrap's own words (bubblewrap 0.8, bubblewrap.c) on each kind of host.
const UID_MAP = 'bwrap: setting up uid map: Permission denied';
const NO_PERMISSION =
  "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.";
const ENOSPC = 'bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)';
const PROC_MASKED = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted";

describe('bubblewrap diagnosis: each restriction named, with its fix', function () {
  this.timeout(60_000);
  let dir: string;
  let python: PythonInfo;
  let n = 0;
  before(async function () {
    if (process.platform !== 'linux') this.skip();
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-userns-'));
    python = await resolvePython('python3');
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  /** A host: a fake /proc with these sysctls (path under /proc/sys -> value), a fake / with these marks, a bwrap printing `stderr`. */
  function fakeHost(sysctls: Record<string, string>, opts: { marks?: string[]; env?: Record<string, string>; cgroup?: string; stderr?: string } = {}) {
    const base = path.join(dir, `host-${++n}`);
    const proc = path.join(base, 'proc');
    const root = path.join(base, 'root');
    mkdirSync(path.join(proc, '1'), { recursive: true });
    mkdirSync(path.join(root, 'run'), { recursive: true });
    writeFileSync(path.join(proc, '1', 'cgroup'), opts.cgroup ?? '0::/init.scope\n');
    for (const [rel, value] of Object.entries(sysctls)) {
      mkdirSync(path.dirname(path.join(proc, 'sys', rel)), { recursive: true });
      writeFileSync(path.join(proc, 'sys', rel), `${value}\n`);
    }
    for (const m of opts.marks ?? []) writeFileSync(path.join(root, m), '');
    const bin = path.join(base, 'bin');
    mkdirSync(bin);
    const bwrap = path.join(bin, 'bwrap');
    writeFileSync(bwrap, `#!/bin/sh\nprintf '%s\\n' ${shellQuote(opts.stderr ?? UID_MAP)} >&2\nexit 1\n`);
    chmodSync(bwrap, 0o755);
    const host: UsernsHost = { procRoot: proc, rootDir: root, env: { PATH: `${bin}:/usr/bin:/bin`, ...(opts.env ?? {}) } };
    const sandbox: SandboxOptions = { bwrapPath: bwrap, host, mplCache: null };
    return { host, sandbox, bwrap, base };
  }

  async function strictError(sandbox: SandboxOptions): Promise<string> {
    const err = await planLaunch(python, dir, { role: 'guest', marker: 'x', workdir: dir }, { ...sandbox, kind: 'bubblewrap' }).then(
      () => assert.fail('the strict setting must fail when bubblewrap cannot run'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SandboxUnavailableError, String(err));
    return err.message;
  }

  async function autoWarning(sandbox: SandboxOptions): Promise<string> {
    const plan = await planLaunch(python, dir, { role: 'guest', marker: 'x', workdir: dir }, { ...sandbox, kind: 'auto' });
    assert.equal(plan.info.kind, 'none', '`auto` falls back to the hardened process');
    assert.ok(plan.warning, 'and says why');
    // The first screen: two lines, without the PATH searched; everything else is in the detail, for the log.
    assert.ok(plan.warning.split('\n').length <= 2, plan.warning);
    assert.doesNotMatch(plan.warning, /PATH/);
    assert.match(plan.warningDetail ?? '', /^Why code runs without a sandbox: /);
    return plan.warning;
  }

  it('AppArmor (Ubuntu 23.10+): names kernel.apparmor_restrict_unprivileged_userns = 1, gives the bwrap profile, and the sysctl with its trade-off', async () => {
    const { sandbox, bwrap } = fakeHost({ 'kernel/apparmor_restrict_unprivileged_userns': '1', 'user/max_user_namespaces': '63000' });
    const msg = await strictError(sandbox);
    assert.match(
      msg,
      /^codeact\.sandbox\.kind is "bubblewrap" but bubblewrap cannot run here: AppArmor restricts unprivileged user namespaces on this machine \(kernel\.apparmor_restrict_unprivileged_userns = 1, the default on Ubuntu 23\.10 and later\)/,
    );
    assert.ok(msg.includes('(bwrap: setting up uid map: Permission denied)'), msg);
    // The profile, for this bwrap, written with one command that a shell turns into the exact file.
    const command = /printf ('[^']*') \| sudo tee \/etc\/apparmor\.d\/bwrap && sudo apparmor_parser -r \/etc\/apparmor\.d\/bwrap/.exec(msg);
    assert.ok(command, msg);
    assert.equal(execFileSync('sh', ['-c', `printf ${command[1]}`], { encoding: 'utf8' }), apparmorProfile(bwrap));
    assert.match(
      apparmorProfile(bwrap),
      new RegExp(`^abi <abi/4\\.0>,\\ninclude <tunables/global>\\n\\nprofile bwrap ${bwrap} flags=\\(unconfined\\) \\{\\n  userns,\\n`),
    );
    assert.ok(msg.includes('sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0'), msg);
    assert.ok(msg.includes("echo 'kernel.apparmor_restrict_unprivileged_userns = 0' | sudo tee /etc/sysctl.d/60-codeact-userns.conf"), msg);
    assert.match(msg, /weaker: it gives the kernel's user-namespace attack surface back to all of them/);
    assert.match(msg, /Or set codeact\.sandbox\.kind to "auto"/);
    const warning = await autoWarning(sandbox);
    assert.match(
      warning,
      /^Code runs without a sandbox: AppArmor restricts unprivileged user namespaces on this machine \(kernel\.apparmor_restrict_unprivileged_userns = 1\)\. .*API keys included\.\nTo isolate it, let bwrap alone create user namespaces: printf '[^']*' \| sudo tee \/etc\/apparmor\.d\/bwrap && sudo apparmor_parser -r \/etc\/apparmor\.d\/bwrap \(or set codeact\.sandbox\.kind to "none" to silence this warning\)$/,
    );
  });

  it('Debian: names kernel.unprivileged_userns_clone = 0 and gives the sysctl', async () => {
    const { sandbox } = fakeHost({ 'kernel/unprivileged_userns_clone': '0', 'user/max_user_namespaces': '63000' }, { stderr: NO_PERMISSION });
    const msg = await strictError(sandbox);
    assert.match(
      msg,
      /cannot run here: this kernel does not let unprivileged users create user namespaces \(kernel\.unprivileged_userns_clone = 0, Debian's switch on older kernels\)/,
    );
    assert.ok(msg.includes('sudo sysctl -w kernel.unprivileged_userns_clone=1'), msg);
    assert.ok(msg.includes("echo 'kernel.unprivileged_userns_clone = 1' | sudo tee /etc/sysctl.d/60-codeact-userns.conf"), msg);
    assert.doesNotMatch(msg, /AppArmor|container/);
    assert.match(await autoWarning(sandbox), /^Code runs without a sandbox: this kernel does not let unprivileged users create user namespaces/);
  });

  it('user.max_user_namespaces = 0: names it and gives the sysctl', async () => {
    const { sandbox } = fakeHost({ 'user/max_user_namespaces': '0' }, { stderr: ENOSPC });
    const msg = await strictError(sandbox);
    assert.match(
      msg,
      /cannot run here: user namespaces are switched off here \(user\.max_user_namespaces = 0\) \(bwrap: Creating new namespace failed: nesting depth/,
    );
    assert.ok(msg.includes('sudo sysctl -w user.max_user_namespaces=15000'), msg);
    assert.ok(msg.includes("echo 'user.max_user_namespaces = 15000' | sudo tee /etc/sysctl.d/60-codeact-userns.conf"), msg);
    assert.match(await autoWarning(sandbox), /^Code runs without a sandbox: user namespaces are switched off here/);
  });

  it('a container without the privilege: names the container and the layer that refused, and gives the devcontainer.json runArgs', async () => {
    const { sandbox } = fakeHost({ 'user/max_user_namespaces': '63000' }, { marks: ['.dockerenv'], stderr: NO_PERMISSION });
    const msg = await strictError(sandbox);
    assert.match(
      msg,
      /cannot run here: CodeAct runs in a Docker container \(\/\.dockerenv\) that does not let bubblewrap create its namespaces: the container's seccomp profile refuses new namespaces/,
    );
    assert.ok(
      msg.includes('"runArgs": ["--security-opt","seccomp=unconfined","--security-opt","apparmor=unconfined","--security-opt","systempaths=unconfined"]'),
      msg,
    );
    assert.deepEqual(DEVCONTAINER_RUN_ARGS, [
      '--security-opt',
      'seccomp=unconfined',
      '--security-opt',
      'apparmor=unconfined',
      '--security-opt',
      'systempaths=unconfined',
    ]);
    assert.match(msg, /or "--privileged" \(broader: every capability and the host's devices\); then rebuild the container/);
    // Not the Debian sysctl bwrap's own text suggests: the container is what refused.
    assert.doesNotMatch(msg, /sysctl -w/);
    assert.match(await autoWarning(sandbox), /^Code runs without a sandbox: CodeAct runs in a Docker container/);

    // Docker's masked /proc paths: the kernel refuses a new /proc (seen for real: a bind mount over /proc/keys does it).
    const masked = fakeHost({}, { marks: ['run/.containerenv'], stderr: PROC_MASKED });
    assert.match(
      await strictError(masked.sandbox),
      /runs in a Podman container \(\/run\/\.containerenv\) .*: the container masks parts of \/proc, so the kernel refuses the sandbox a \/proc of its own \(bwrap: Can't mount proc/,
    );
    // Docker's AppArmor profile: the mounts are refused.
    const mounts = fakeHost({}, { env: { container: 'docker' }, stderr: 'bwrap: Failed to make / slave: Permission denied' });
    assert.match(
      await strictError(mounts.sandbox),
      /runs in a container \(container=docker\) .*: the container's AppArmor profile refuses the sandbox's mounts/,
    );
    // Kubernetes, by its cgroup.
    const pod = fakeHost({}, { cgroup: '0::/kubepods/besteffort/pod1234/abcd\n', stderr: NO_PERMISSION });
    assert.match(await strictError(pod.sandbox), /runs in a container \(\/proc\/1\/cgroup names kubepods\)/);
  });

  it('a container on an Ubuntu host with the AppArmor restriction: the container fix, and the host fix too', async () => {
    const { sandbox } = fakeHost({ 'kernel/apparmor_restrict_unprivileged_userns': '1' }, { marks: ['.dockerenv'], stderr: NO_PERMISSION });
    const msg = await strictError(sandbox);
    assert.match(
      msg,
      /CodeAct runs in a Docker container .*"runArgs".* The host also restricts user namespaces with AppArmor \(kernel\.apparmor_restrict_unprivileged_userns = 1\); on the host: Let bwrap alone create user namespaces/s,
    );
  });

  it('bubblewrap missing: says it is not on PATH and how to install it', async () => {
    const { host, base } = fakeHost({});
    const empty = path.join(base, 'empty');
    mkdirSync(empty);
    const sandbox: SandboxOptions = { bwrapPath: 'bwrap', host: { ...host, env: { PATH: empty } }, mplCache: null };
    const d = diagnoseUserns('bubblewrap (bwrap) is not installed', 'bwrap', sandbox.host);
    assert.equal(d.cause, 'bwrap-missing');
    assert.equal(d.detected, `bubblewrap (bwrap) is not installed: no "bwrap" on PATH (${empty})`);
    // Through the launch: a bwrap path that does not exist (spawn's ENOENT, as with no bwrap on PATH).
    const gone = { ...sandbox, bwrapPath: path.join(empty, 'bwrap') };
    const msg = await strictError(gone);
    assert.ok(msg.includes(`bubblewrap cannot run here: bubblewrap (bwrap) is not installed: there is no ${path.join(empty, 'bwrap')}.`), msg);
    for (const cmd of [
      'sudo apt-get install bubblewrap',
      'sudo dnf install bubblewrap',
      'sudo zypper install bubblewrap',
      'sudo pacman -S bubblewrap',
      'sudo apk add bubblewrap',
    ])
      assert.ok(msg.includes(cmd), cmd);
    // No os-release here: the generic line.
    assert.match(
      await autoWarning(gone),
      /^Code runs without a sandbox: bubblewrap \(bwrap\) is not installed\. .*\nTo isolate it, install the "bubblewrap" package with your system's package manager \(or set/,
    );
  });

  it('bubblewrap missing on Debian: two lines, the second `sudo apt install bubblewrap`, without the PATH; the detail keeps it', async () => {
    const { host, base } = fakeHost({});
    mkdirSync(path.join(host.rootDir!, 'etc'));
    writeFileSync(
      path.join(host.rootDir!, 'etc', 'os-release'),
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n',
    );
    const empty = path.join(base, 'empty');
    mkdirSync(empty);
    const debian: UsernsHost = { ...host, env: { PATH: `${empty}:/nowhere/bin` }, uid: 1000 };
    const d = diagnoseUserns('bubblewrap (bwrap) is not installed', 'bwrap', debian);
    const expected = [
      "Code runs without a sandbox: bubblewrap (bwrap) is not installed. It can read your files, use the network, and read this process's environment through /proc, API keys included.",
      'To isolate it: sudo apt install bubblewrap (or set codeact.sandbox.kind to "none" to silence this warning)',
    ];
    assert.deepEqual(fallbackWarning(d).split('\n'), expected);
    assert.doesNotMatch(fallbackWarning(d), /PATH|nowhere/);
    assert.ok(d.detected.includes(`no "bwrap" on PATH (${empty}:/nowhere/bin)`), d.detected);
    // Through the launch: the same two lines; the detail, for the log, says where it looked.
    const sandbox: SandboxOptions = { bwrapPath: path.join(empty, 'bwrap'), host: debian, mplCache: null };
    assert.deepEqual((await autoWarning(sandbox)).split('\n'), expected);
    const plan = await planLaunch(python, dir, { role: 'guest', marker: 'x', workdir: dir }, { ...sandbox, kind: 'auto' });
    assert.match(
      plan.warningDetail!,
      new RegExp(`is not installed: there is no ${path.join(empty, 'bwrap')}\\. Install bubblewrap to isolate it \\(Debian/Ubuntu`),
    );
  });

  it("the install command comes from os-release's ID, then ID_LIKE; root needs no sudo; an unknown system gets none", () => {
    const host = (osRelease: string | undefined, uid = 1000, where = 'etc'): UsernsHost => {
      const root = path.join(dir, `root-${++n}`);
      mkdirSync(path.join(root, where), { recursive: true });
      if (osRelease !== undefined) writeFileSync(path.join(root, where, 'os-release'), osRelease);
      return { rootDir: root, uid };
    };
    assert.equal(installCommand(host('ID=ubuntu\nID_LIKE=debian\n')), 'sudo apt install bubblewrap');
    assert.equal(installCommand(host('ID=linuxmint\nID_LIKE="ubuntu debian"\n')), 'sudo apt install bubblewrap');
    assert.equal(installCommand(host('ID="fedora"\n')), 'sudo dnf install bubblewrap');
    assert.equal(installCommand(host('ID="rocky"\nID_LIKE="rhel centos fedora"\n')), 'sudo dnf install bubblewrap');
    assert.equal(installCommand(host('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n')), 'sudo zypper install bubblewrap');
    assert.equal(installCommand(host('ID=arch\n')), 'sudo pacman -S bubblewrap');
    assert.equal(installCommand(host('ID=alpine\n', 0)), 'apk add bubblewrap');
    assert.equal(installCommand(host('ID=debian\n', 1000, 'usr/lib')), 'sudo apt install bubblewrap', '/usr/lib/os-release when /etc has none');
    assert.equal(installCommand(host('ID=nixos\n')), undefined);
    assert.equal(installCommand(host(undefined)), undefined);
  });

  it('WSL 1 (no namespaces at all): says so and how to move to WSL 2; WSL 2 is not taken for it', async () => {
    const einval =
      'bwrap: Creating new namespace failed, likely because the kernel does not support user namespaces.  bwrap must be installed setuid on such systems.';
    const wsl1 = fakeHost({ 'kernel/osrelease': '4.4.0-19041-Microsoft' }, { stderr: einval });
    const msg = await strictError(wsl1.sandbox);
    assert.match(
      msg,
      /cannot run here: this is WSL 1, which has no Linux namespaces \(bwrap: Creating new namespace failed, likely because the kernel does not support user namespaces/,
    );
    assert.ok(msg.includes('wsl --set-version <distribution> 2'), msg);
    const wsl2 = fakeHost({ 'kernel/osrelease': '5.15.167.4-microsoft-standard-WSL2', 'kernel/unprivileged_userns_clone': '0' }, { stderr: NO_PERMISSION });
    assert.equal(diagnoseUserns(NO_PERMISSION, wsl2.bwrap, wsl2.host).cause, 'userns-clone');
  });

  it('reads nothing that could hang: a FIFO where a sysctl should be is treated as absent', () => {
    const { host } = fakeHost({ 'kernel/unprivileged_userns_clone': '0' }, { stderr: NO_PERMISSION });
    const fifo = path.join(host.procRoot!, 'sys', 'kernel', 'apparmor_restrict_unprivileged_userns');
    execFileSync('mkfifo', [fifo]);
    const bwrap = path.join(path.dirname(host.procRoot!), 'bin', 'bwrap');
    assert.equal(diagnoseUserns(NO_PERMISSION, bwrap, host).cause, 'userns-clone');
  });

  it('`auto` warns once per process, with the cause, however many runtimes and runs; later runtimes only log it', async () => {
    const { sandbox } = fakeHost({ 'kernel/apparmor_restrict_unprivileged_userns': '1' });
    const warnings: string[] = [];
    const logged: string[] = [];
    for (let i = 0; i < 2; i++) {
      // A new runtime, as after a settings change (or one per folder): the same process.
      const rt = new LocalRuntime({ sandbox: { ...sandbox, kind: 'auto' }, session: 'run', onWarning: (m) => warnings.push(m), log: (l) => logged.push(l) });
      try {
        for (let run = 0; run < 2; run++) {
          const item = await rt.execute({ code: 'print(6 * 7)', timeoutMs: 60_000 }, {});
          assert.equal(item.status, 'completed', JSON.stringify(item));
          assert.equal(item.sandbox?.kind, 'none');
        }
      } finally {
        await rt.dispose();
      }
    }
    const fallback = warnings.filter((w) => w.startsWith('Code runs without a sandbox'));
    assert.equal(fallback.length, 1, warnings.join('\n'));
    assert.match(fallback[0], /AppArmor restricts unprivileged user namespaces .*kernel\.apparmor_restrict_unprivileged_userns = 1/);
    assert.ok(logged.includes(fallback[0]), 'the second runtime logs it');
    // The detail, with the fix the warning leaves out, is logged with the warning.
    assert.ok(
      logged.some(
        (l) => l.startsWith('Why code runs without a sandbox: AppArmor') && l.includes('sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0'),
      ),
      logged.join('\n'),
    );
  });
});

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
