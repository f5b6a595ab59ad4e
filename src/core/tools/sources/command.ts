/**
 * `command` tools: argv run in the workspace folder, JSON arguments on stdin, one JSON value on stdout.
 * A non-zero exit is an error carrying the stderr tail. Each call has a timeout, an output cap and a
 * minimal environment plus the variables the declaration lists.
 *
 * Nothing a call starts outlives it: the program runs in its own process group with a marker in its
 * environment ({@link TOOL_MARKER}), and when it exits (or times out, or is stopped) its group and every
 * process still carrying the marker are killed, background children, `setsid` and double forks included.
 * The program runs under the launcher (core/util/launcher.ts): it dies with the host, and its timeout holds
 * even when the host cannot act.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import type { CommandSource } from '../../../common/tools';
import { killTree } from '../../util/processTree';
import { randomToken } from '../../util/ids';
import { spawnGuarded } from '../../util/launcher';
import { commandEnv, reapProcesses, spawnFailure, tail } from './processes';

/** The environment variable that marks every process a tool call starts (value: one per call). */
const TOOL_MARKER = 'CODEACT_TOOL_CALL';

const COMMAND_DEFAULTS = { timeoutMs: 30_000, maxOutputBytes: 4 * 1024 * 1024 };

interface CommandRunOptions {
  workspace: string;
  signal: AbortSignal;
  hostEnv?: NodeJS.ProcessEnv;
}

/** A declaration's `command` (an argv array, or an object with `argv`) as a source, or what is wrong with it. */
export function commandSource(raw: unknown): CommandSource | string {
  const src = Array.isArray(raw) ? { argv: raw } : raw;
  if (!src || typeof src !== 'object') return '"command" must be an argv array or an object with "argv"';
  const c = src as CommandSource;
  if (!Array.isArray(c.argv) || c.argv.length === 0 || !c.argv.every((a) => typeof a === 'string')) {
    return '"command" needs a non-empty argv array of strings, for example ["python3", "tools/search.py"]';
  }
  if (c.env !== undefined && (!Array.isArray(c.env) || !c.env.every((e) => typeof e === 'string'))) return '"command.env" must list environment variable names';
  if (c.timeoutMs !== undefined && !(typeof c.timeoutMs === 'number' && c.timeoutMs > 0)) return '"command.timeoutMs" must be a positive number';
  return c;
}

export function runCommandTool(toolName: string, source: CommandSource, args: unknown, options: CommandRunOptions): Promise<unknown> {
  const timeoutMs = source.timeoutMs ?? COMMAND_DEFAULTS.timeoutMs;
  const cap = source.maxOutputBytes ?? COMMAND_DEFAULTS.maxOutputBytes;
  const cwd = source.cwd ? path.resolve(options.workspace, source.cwd) : options.workspace;
  const [program, ...rest] = source.argv;
  const marker = randomToken(9);
  return new Promise((resolve, reject) => {
    const cannotStart = (e: unknown) =>
      new Error(`Tool "${toolName}" could not start ${JSON.stringify(program)}: ${spawnFailure(program, cwd, e, 'command')}.`);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawnGuarded(program, rest, { cwd, env: { ...commandEnv(source.env, options.hostEnv ?? process.env), [TOOL_MARKER]: marker } }, timeoutMs);
    } catch (e) {
      // Invalid arguments (a NUL byte), or a failure Node reports at once.
      return reject(cannotStart(e));
    }
    // A spawn that fails (ENOENT, EACCES, EMFILE) emits 'error', and with EMFILE it has no pipes at all:
    // listen first, and touch the pipes only when they exist.
    if (!child.stdout || !child.stderr || !child.stdin) {
      child.once('error', (e) => reject(cannotStart(e)));
      return;
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let settled = false;
    let exited = false;
    let failure: string | undefined;
    const stop = (reason: string) => {
      failure ??= reason;
      if (child.pid && !exited) killTree(child.pid);
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs / 1000} s (raise "timeoutMs" in its declaration if it needs longer)`), timeoutMs);
    const onAbort = () => stop('was stopped');
    options.signal.addEventListener('abort', onAbort, { once: true });
    let reaping: Promise<void> | undefined;
    const reap = () => (reaping ??= reapProcesses(child.pid, exited, TOOL_MARKER, marker));
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      // The call has ended: whatever it left running goes with it before the caller hears back.
      void reap().finally(fn);
    };
    child.stdout.on('data', (b: Buffer) => {
      outBytes += b.length;
      if (outBytes > cap) return stop(`wrote more than ${cap.toLocaleString('en-US')} bytes to stdout (its maxOutputBytes)`);
      out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      errBytes += b.length;
      if (errBytes <= 64 * 1024) err.push(b);
    });
    for (const s of [child.stdin, child.stdout, child.stderr]) s.on('error', () => {});
    child.on('error', (e) => settle(() => reject(exited ? new Error(`Tool "${toolName}" failed: ${(e as Error).message}.`) : cannotStart(e))));
    child.on('exit', (code, sig) => {
      exited = true;
      // Background children holding the pipes die now; what the program wrote is already in them.
      void reap();
      // Give the pipes a moment to drain, but never wait on a grandchild that holds them.
      const finish = () =>
        settle(() => {
          const stderr = Buffer.concat(err).toString('utf8');
          if (failure) return reject(new Error(`Tool "${toolName}" ${failure}.` + (stderr.trim() ? `\nstderr:\n${tail(stderr)}` : '')));
          if (code !== 0) {
            return reject(
              new Error(
                `Tool "${toolName}" failed (${sig ? `killed by ${sig}` : `exit code ${code}`})` +
                  (stderr.trim() ? `:\n${tail(stderr)}` : ' and wrote nothing to stderr.'),
              ),
            );
          }
          const text = Buffer.concat(out).toString('utf8').trim();
          if (!text) return resolve(null);
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(
              new Error(
                `Tool "${toolName}" must print one JSON value on stdout, but printed: ${JSON.stringify(text.slice(0, 200))}${text.length > 200 ? '…' : ''}`,
              ),
            );
          }
        });
      if (child.stdout.readableEnded) return finish();
      const t = setTimeout(finish, 200);
      child.stdout.once('end', () => {
        clearTimeout(t);
        finish();
      });
    });
    child.stdin.end(JSON.stringify(args ?? {}));
  });
}
