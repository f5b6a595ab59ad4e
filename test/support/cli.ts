/**
 * Runs the built CLI (dist/cli.js) as a user would, with a minimal environment plus `env`. The test
 * folders are trusted for the command (CODEACT_TRUST_WORKSPACE=1) unless `env` says otherwise, and the
 * CLI's user config (trust store, user settings) lives in a private folder, never the real user's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI = path.join(ROOT, 'dist', 'cli.js');
export const TEST_HOME = mkdtempSync(path.join(tmpdir(), 'codeact-cli-home-'));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input = '', cwd = ROOT): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEACT_HOME: TEST_HOME, CODEACT_TRUST_WORKSPACE: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}
