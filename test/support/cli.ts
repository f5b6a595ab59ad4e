/**
 * Runs the built CLI (dist/cli.js) as a user would, with a minimal environment plus `env`. The test
 * folders are trusted for the command (CODEACT_TRUST_WORKSPACE=1) unless `env` says otherwise, and the
 * CLI's user config (trust store, user settings) lives in a private folder, never the real user's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { everyHost } from '../../src/core/sessionHost/launch';
import { isAlive } from '../../src/core/util/processTree';
import { waitFor } from './wait';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI = path.join(ROOT, 'dist', 'cli.js');
export const TEST_HOME = mkdtempSync(path.join(tmpdir(), 'codeact-cli-home-'));
/**
 * The session hosts `codeact chat` starts (codeact.session.host is "auto" by default) live in this private
 * folder (0700, as mkdtemp makes it), never the user's; they are ended when the test run ends (below).
 */
export const TEST_RUNTIME_DIR = mkdtempSync(path.join(tmpdir(), 'codeact-cli-run-'));

/** The environment a CLI command of the tests runs with (plus its own). */
export const CLI_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  CODEACT_HOME: TEST_HOME,
  CODEACT_TRUST_WORKSPACE: '1',
  XDG_RUNTIME_DIR: TEST_RUNTIME_DIR,
};

/** Ends every session host the CLI started for the tests, and waits for them to exit. */
export async function endTestHosts(): Promise<void> {
  const hosts = await everyHost({ XDG_RUNTIME_DIR: TEST_RUNTIME_DIR });
  for (const h of hosts) h.end();
  for (const h of hosts) h.close();
  await waitFor(() => hosts.every((h) => !isAlive(h.welcome.pid)), { what: "the CLI's session hosts to end", timeoutMs: 60_000 });
}

// Root hooks of the mocha run: the hosts a test's commands started end with the test (a host outlives its
// command by design, for 30 minutes), and the folder goes at the end.
if (typeof afterEach === 'function') {
  afterEach(async function () {
    this.timeout(90_000);
    await endTestHosts();
  });
  after(() => rmSync(TEST_RUNTIME_DIR, { recursive: true, force: true }));
}

/** The flags of a `codeact chat` or `codeact acp` that talks to the scripted local model on loopback (`url`) and keeps its conversations in `storage`. */
export function scriptedModel(url: string, storage: string): string[] {
  return ['--provider', 'openai-compatible', '--model', 'qwen2.5-coder:7b', '--base-url', url, '--storage', storage];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input = '', cwd = ROOT): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...CLI_ENV, ...env },
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

/** script(1) of util-linux: runs the CLI on a real pseudo-terminal (stdin and stderr are a TTY). */
export const SCRIPT = '/usr/bin/script';

/** The built CLI on a pseudo-terminal, and what it printed so far (stdout and stderr, as the terminal shows them). */
export interface CliOnPty {
  /** Everything the terminal showed so far. */
  readonly output: string;
  /**
   * Waits (generously) for `text` after what earlier calls saw, then types `answer` and Enter; returns the
   * output from there on.
   */
  expect(text: string | RegExp, answer?: string): Promise<string>;
  /** Types `keys` as they are (no Enter added). */
  type(keys: string): void;
  /** The exit code (after the command ends). */
  exited: Promise<number | null>;
  kill(): void;
}

/** `user`: run as that user (the security tests run as root); give it an `env` HOME and CODEACT_HOME it can write. */
export function runCliOnPty(args: string[], env: NodeJS.ProcessEnv = {}, user?: { uid: number; gid: number }): CliOnPty {
  const cmd = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn(SCRIPT, ['-qfec', cmd, '/dev/null'], {
    cwd: ROOT,
    // Another user cannot use this user's private folder: its hosts go to its own (/tmp/codeact-<uid>).
    env: { ...CLI_ENV, ...(user ? { XDG_RUNTIME_DIR: undefined } : {}), TERM: 'dumb', ...env },
    ...(user ?? {}),
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on('close', r));
  let seen = 0;
  return {
    get output() {
      return out;
    },
    async expect(text, answer) {
      for (let i = 0; i < 2400; i++) {
        const rest = out.slice(seen);
        const m = typeof text === 'string' ? rest.indexOf(text) : rest.search(text);
        if (m >= 0) {
          seen += m + 1;
          if (answer !== undefined) child.stdin.write(answer + '\r');
          return out.slice(seen - 1);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`never saw ${text} in:\n${out}`);
    },
    type: (keys) => child.stdin.write(keys),
    exited,
    kill: () => child.kill(),
  };
}
