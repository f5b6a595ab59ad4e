/**
 * Nothing left behind after a crash (issue 32, point 6). The built CLI is killed with SIGKILL while a
 * managed command tool and a stdio MCP server run: both die with it. A hung tool whose host is frozen
 * still ends at its timeout. The temporary folders of the killed run are swept by the next start, and
 * nobody else's: not a live process's, not another user's, not a symbolic link (nor what it points to).
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { processesWithCmdline, startTimeOf } from '../../src/core/util/processTree';
import { CLI, ROOT, CLI_ENV, runCli } from '../support/cli';
import { waitFor } from '../support/wait';
import { TESTER } from './support/asUser';

const MCP_SERVER = path.join(ROOT, 'test/fixtures/mcp/server.mjs');

/** A workspace declaring a command tool that sleeps (its argv carries `mark`) and a stdio MCP server (tagged with `mark`). */
function workspace(mark: string, timeoutMs: number): string {
  const ws = mkdtempSync(path.join(tmpdir(), 'codeact-crash-ws-'));
  mkdirSync(path.join(ws, '.vscode'));
  const tools = [
    { name: 'hang', command: { argv: ['python3', '-c', 'import time; time.sleep(600)', `${mark}-tool`], timeoutMs } },
    { name: 'echo', mcp: { command: [process.execPath, MCP_SERVER, `--tag=${mark}-mcp`], tool: 'echo_text' }, inputSchema: { type: 'object' } },
  ];
  writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': tools }));
  return ws;
}

/** The built CLI running `code`, with its own temporary folder `tmp`. */
function startCli(ws: string, tmp: string, code: string): ChildProcess {
  const child = spawn(process.execPath, [CLI, 'run', '-', '--workspace', ws], {
    cwd: ROOT,
    env: { ...CLI_ENV, TMPDIR: tmp },
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.stdin!.end(code);
  return child;
}

const RUN_BOTH = 'await call_tool("echo", text="up")\nawait call_tool("hang")\nreturn 1\n';

describe('security: nothing left behind after a crash', function () {
  this.timeout(120_000);
  if (process.platform !== 'linux') {
    it('skipped: counting processes needs /proc (Linux)', function () {
      this.skip();
    });
    return;
  }
  const cleanup: string[] = [];
  let cli: ChildProcess | undefined;
  let mark = '';
  afterEach(() => {
    try {
      cli?.kill('SIGKILL');
    } catch {}
    for (const pid of processesWithCmdline(mark)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    for (const dir of cleanup.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('SIGKILL of the CLI while a command tool and a stdio MCP server run: 0 orphans after; the next start sweeps its temp folders, nobody else’s', async () => {
    mark = `codeact-crash-${process.pid}-${Date.now()}`;
    const ws = workspace(mark, 600_000);
    const tmp = mkdtempSync(path.join(tmpdir(), 'codeact-crash-tmp-'));
    cleanup.push(ws, tmp);
    cli = startCli(ws, tmp, RUN_BOTH);
    // Both seen in the same look (a third scan of /proc on a loaded machine can miss a process that is there).
    let seen: number[] = [];
    await waitFor(
      () => {
        const tool = processesWithCmdline(`${mark}-tool`);
        const mcp = processesWithCmdline(`${mark}-mcp`);
        seen = [...new Set([...tool, ...mcp])];
        return tool.length > 0 && mcp.length > 0;
      },
      { timeoutMs: 60_000, what: 'the command tool and the MCP server to run' },
    );
    assert.ok(seen.length >= 2, `expected the tool and the server running, found ${seen.length}`);
    const atKill = readdirSync(tmp);
    cli.kill('SIGKILL');
    // A bounded poll for the deaths (the kernel delivers them asynchronously), not a pause.
    await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 20_000, what: 'the tool and the server to die with the CLI' }).catch(() => {});
    assert.deepEqual(processesWithCmdline(mark), [], 'orphans of the killed CLI');
    const killedRun = atKill.filter((n) => n.startsWith(`codeact-guest-${cli!.pid}-`));
    assert.equal(killedRun.length, 1, `the CLI's guest folder is named after it: ${atKill.join(', ')}`);

    // Folders that are not the killed run's: a live process's, another user's, a symbolic link.
    const dead = cli.pid!;
    const live = path.join(tmp, `codeact-files-${process.pid}-${startTimeOf(process.pid)}-live00`);
    const theirs = path.join(tmp, `codeact-run-${dead}-1-their0`);
    const outside = mkdtempSync(path.join(tmpdir(), 'codeact-crash-target-'));
    cleanup.push(outside);
    writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    const link = path.join(tmp, `codeact-run-${dead}-1-link00`);
    const stale = path.join(tmp, `codeact-run-${dead}-1-stale0`);
    for (const d of [live, theirs, stale]) mkdirSync(d);
    for (const d of [live, theirs]) writeFileSync(path.join(d, 'f'), 'x');
    chownSync(theirs, TESTER.uid, TESTER.gid);
    symlinkSync(outside, link);
    // Inside a stale folder of ours, a link out: removed as a link, its target untouched.
    symlinkSync(outside, path.join(stale, 'out'));

    const next = await runCli(['run', '-', '--workspace', ws], { TMPDIR: tmp }, 'return 1\n');
    assert.equal(next.code, 0, next.stderr);
    const left = readdirSync(tmp);
    for (const name of killedRun) assert.ok(!left.includes(name), `the killed run's ${name} was swept`);
    assert.ok(!left.some((n) => n.includes(`-${dead}-`) && !['their0', 'link00'].some((s) => n.endsWith(s))), `stale folders left: ${left.join(', ')}`);
    assert.ok(existsSync(path.join(live, 'f')), "a live process's folder is untouched");
    assert.ok(existsSync(path.join(theirs, 'f')), "another user's folder is untouched");
    assert.ok(left.includes(path.basename(link)) && existsSync(path.join(outside, 'keep.txt')), 'the symbolic link and what it points to are untouched');
  });

  it('a hung command tool whose host is frozen still ends at its timeout', async function () {
    this.timeout(240_000);
    mark = `codeact-frozen-${process.pid}-${Date.now()}`;
    // The call's timeout is long enough that the host is frozen before it acts on it, however slowly a busy machine
    // lets this test see the tool start: a host stopped in the middle of its own kill (its SIGSTOP of the launcher sent,
    // its SIGKILL not) would leave the launcher stopped too, which is not what this test is about.
    const ws = workspace(mark, 15_000);
    const tmp = mkdtempSync(path.join(tmpdir(), 'codeact-crash-tmp-'));
    cleanup.push(ws, tmp);
    cli = startCli(ws, tmp, 'await call_tool("hang")\nreturn 1\n');
    await waitFor(() => processesWithCmdline(`${mark}-tool`).length > 0, { timeoutMs: 60_000, what: 'the command tool to run' });
    // The host can no longer act on the timeout: only the launcher can.
    cli.kill('SIGSTOP');
    // Its launcher's deadline is 17 s after the start (the call's 15 s and the grace); a busy machine gets a generous budget.
    await waitFor(() => processesWithCmdline(`${mark}-tool`).length === 0, { timeoutMs: 90_000, what: 'the hung tool to end' }).catch(() => {});
    const left = processesWithCmdline(`${mark}-tool`);
    // What a failure needs to be understood: each one's state and parent, and the parent's command line.
    const about = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const parent = readFileSync(`/proc/${ppid}/cmdline`, 'latin1').replace(/\0/g, ' ').slice(0, 160);
        // The parent's state and signals (stopped by a half-done kill of the host's, or running with its alarm pending).
        const signals = (p: string) => {
          try {
            const status = readFileSync(`/proc/${p}/status`, 'latin1');
            const wchan = readFileSync(`/proc/${p}/wchan`, 'latin1');
            return `${status.match(/^(State|SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt):.*$/gm)?.join(', ')}, wchan ${wchan}`;
          } catch (err) {
            return (err as Error).message;
          }
        };
        return `pid ${pid} state ${state} [${signals(String(pid))}], parent ${ppid} (${ppid === String(cli!.pid) ? 'the frozen host' : parent.slice(0, 40)}) [${signals(ppid)}]`;
      } catch (err) {
        return `pid ${pid}: ${(err as Error).message}`;
      }
    };
    assert.deepEqual(left, [], `the hung tool outlived its timeout: ${left.map(about).join('; ')}`);
    cli.kill('SIGKILL');
  });

  it('SIGKILL of a host while the package installer (pip, uv) runs: the installer dies with it', async () => {
    mark = `codeact-pip-${process.pid}-${Date.now()}`;
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-crash-pip-'));
    cleanup.push(dir);
    // A host (one node process: tsx's require hook, not its CLI, which runs the script in a child) that runs the
    // installer as install_packages does (runInstaller); the "installer" hangs, its argv marked.
    const script = path.join(dir, 'host.ts');
    writeFileSync(
      script,
      [
        `import { runInstaller } from ${JSON.stringify(path.join(ROOT, 'src/core/runtime/install/pipRun'))};`,
        `void runInstaller({ argv: ['python3', '-c', 'import time; time.sleep(600)', ${JSON.stringify(mark)}], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },`,
        `  timeoutMs: 600_000, signal: new AbortController().signal, onOutput: () => {} });`,
      ].join('\n'),
    );
    cli = spawn(process.execPath, ['--require', path.join(ROOT, 'node_modules/tsx/dist/cjs/index.cjs'), script], {
      cwd: dir,
      env: { PATH: process.env.PATH },
      stdio: 'ignore',
    });
    await waitFor(() => processesWithCmdline(mark).length > 0, { timeoutMs: 60_000, what: 'the installer to run' });
    const host = cli;
    const gone = new Promise((r) => host.once('exit', r));
    cli.kill('SIGKILL');
    await gone;
    await waitFor(() => processesWithCmdline(mark).length === 0, { timeoutMs: 20_000, what: 'the installer to die with its host' }).catch(() => {});
    assert.deepEqual(processesWithCmdline(mark), [], 'the installer outlived its host');
  });
});
