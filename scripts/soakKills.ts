/**
 * The soak's kills (see scripts/soak.ts): `count` times, the built CLI runs code that starts a daemon,
 * calls a stdio MCP server and a command tool that hangs, and is killed with SIGKILL at a random point
 * (while it starts, once the daemon, the server or the tool runs, plus a random delay). Then one more CLI
 * start sweeps the stale temporary folders. Every process they started carries `mark` in its argv.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { processesWithCmdline } from '../src/core/util/processTree';
import { waitFor } from '../test/support/wait';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const PHASES = ['start', 'daemon', 'mcp', 'tool'] as const;

export interface KillFigures {
  kills: number;
  kills_by_phase: Record<string, number>;
  orphans_after_kills: number;
  temp_leftovers_after_kills: number;
  kill_errors: string[];
}

/** Whether `test` came to hold within `maxMs` (a bounded poll). */
const until = (test: () => boolean, maxMs: number): Promise<boolean> =>
  waitFor(test, { timeoutMs: maxMs }).then(
    () => true,
    () => false,
  );

export async function soakKills(count: number, sandbox: string, mark: string): Promise<KillFigures> {
  const figures: KillFigures = { kills: 0, kills_by_phase: {}, orphans_after_kills: 0, temp_leftovers_after_kills: 0, kill_errors: [] };
  if (count <= 0) return figures;
  if (!existsSync(CLI)) throw new Error('--kills needs the built CLI (dist/cli.js): run `node esbuild.mjs` first, or pass --kills 0.');
  const ws = mkdtempSync(path.join(tmpdir(), 'codeact-soak-ws-'));
  const tmp = mkdtempSync(path.join(tmpdir(), 'codeact-soak-tmp-'));
  const home = mkdtempSync(path.join(tmpdir(), 'codeact-soak-home-'));
  mkdirSync(path.join(ws, '.vscode'));
  const tools = [
    { name: 'hang', command: { argv: ['python3', '-c', 'import time; time.sleep(600)', `${mark}-tool`], timeoutMs: 600_000 } },
    {
      name: 'echo',
      mcp: { command: [process.execPath, path.join(ROOT, 'test/fixtures/mcp/server.mjs'), `--tag=${mark}-mcp`], tool: 'echo_text' },
      inputSchema: { type: 'object' },
    },
  ];
  writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': tools }));
  const code = [
    'import subprocess, sys',
    `subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "${mark}-daemon"], start_new_session=True)`,
    'await call_tool("echo", text="up")',
    'await call_tool("hang")',
    'return 1',
  ].join('\n');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, CODEACT_HOME: home, CODEACT_TRUST_WORKSPACE: '1', TMPDIR: tmp };
  const args = [CLI, 'run', '-', '--workspace', ws, '--sandbox', sandbox];
  for (let i = 0; i < count; i++) {
    const phase = PHASES[Math.floor(Math.random() * PHASES.length)];
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end(code);
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    if (phase !== 'start' && !(await until(() => processesWithCmdline(`${mark}-${phase}`).length > 0, 60_000))) {
      figures.kill_errors.push(`kill ${i}: the ${phase} never started`);
    }
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 300)));
    child.kill('SIGKILL');
    await gone;
    figures.kills++;
    figures.kills_by_phase[phase] = (figures.kills_by_phase[phase] ?? 0) + 1;
    // What it started dies with it: wait (bounded) before the next one, so each kill is counted on its own.
    if (!(await until(() => processesWithCmdline(mark).length === 0, 10_000))) figures.kill_errors.push(`kill ${i} (${phase}): processes left running`);
  }
  // The next start sweeps what the killed runs left.
  const last = spawnSync(process.execPath, args, { cwd: ROOT, env, input: 'return 1\n', encoding: 'utf8', timeout: 120_000 });
  if (last.status !== 0) figures.kill_errors.push(`the run after the kills failed (${last.status}): ${last.stderr.slice(0, 300)}`);
  figures.orphans_after_kills = processesWithCmdline(mark).length;
  figures.temp_leftovers_after_kills = readdirSync(tmp).filter((n) => n.startsWith('codeact-')).length;
  for (const pid of processesWithCmdline(mark)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  for (const d of [ws, tmp, home]) rmSync(d, { recursive: true, force: true });
  figures.kill_errors = figures.kill_errors.slice(0, 5);
  return figures;
}
