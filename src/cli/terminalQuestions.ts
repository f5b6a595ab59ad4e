/**
 * The CLI's one line of questions on the terminal. Every question the CLI asks goes through it: tool
 * approvals, install approvals, code review, MCP sign-in and MCP servers' forms. Two questions asked at once
 * (code doing `asyncio.gather` over two `ask` tools, two installs, a form while an install waits) are asked
 * one after the other, in the order they came (core/util/oneAtATime).
 *
 * Each question owns its readline for as long as it is asked, and closes it when it ends, so a line typed
 * for one question never reaches another, nor another server's form. What was typed while no question was
 * on screen (type-ahead) is thrown away when the next question starts: an answer counts only once its
 * question is shown. A question whose request is cancelled while it waits (Stop, the run ended) leaves the
 * line without being shown; one cancelled while it is asked ends at once. Ctrl-C at a question stops the
 * run, as it does anywhere in the CLI; Ctrl-D ends the question without an answer.
 *
 * Questions go to stderr (stdout stays the run's output). Text from outside (tool names, arguments, server
 * titles) is printed through {@link Asking.shown}: the terminal sanitiser with invisible characters revealed.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { OneAtATime } from '../core/util/oneAtATime';
import { plain, shown } from './print';

type Input = NodeJS.ReadableStream & { isTTY?: boolean; fd?: number; setRawMode?(on: boolean): unknown };

export interface TerminalIo {
  input: Input;
  output: NodeJS.WritableStream;
}

/** A question while it is asked: its own lines on the terminal. */
export interface Asking {
  /** Prints the CLI's own words. */
  say(text: string): void;
  /** Text from outside as it may be printed: escape sequences removed, invisible characters as `<U+…>`. */
  shown(text: string): string;
  /** The next line typed for this question; null when there is none (Ctrl-D, Ctrl-C, the request cancelled). */
  line(prompt: string): Promise<string | null>;
  /** The request was cancelled while asked (Stop, the run ended). */
  readonly cancelled: boolean;
}

export class TerminalQuestions {
  private readonly queue = new OneAtATime();

  constructor(private readonly io: TerminalIo = { input: process.stdin, output: process.stderr }) {}

  /** Is there a person at a terminal to ask (stdin is a TTY)? Without one, every question is refused by its asker. */
  get interactive(): boolean {
    return !!this.io.input.isTTY;
  }

  /**
   * Asks `body` once every question asked before it has ended. `signal`: the request's; when it aborts
   * before the question's turn, the question is never shown and resolves to `cancelled()`.
   */
  ask<T>(signal: AbortSignal | undefined, cancelled: () => T, body: (q: Asking) => Promise<T>): Promise<T> {
    return this.queue.run(() => this.turn(signal, body), { signal, cancelled });
  }

  private async turn<T>(signal: AbortSignal | undefined, body: (q: Asking) => Promise<T>): Promise<T> {
    const { input, output } = this.io;
    if (input.isTTY) discardTypeAhead(input);
    const rl = createInterface({ input, output, terminal: !!input.isTTY });
    const stop = new AbortController();
    const end = () => stop.abort();
    signal?.addEventListener('abort', end, { once: true });
    rl.on('close', end);
    // Raw mode turns Ctrl-C into a key: it stops the run, as everywhere else in the CLI. The stop ends this
    // question (its signal is the run's) and every question waiting behind it at once, so none is shown.
    rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
    const asking: Asking = {
      say: (text) => output.write(text),
      shown,
      get cancelled() {
        return !!signal?.aborted;
      },
      line: (prompt) =>
        new Promise<string | null>((resolve) => {
          if (stop.signal.aborted) return resolve(null);
          const onStop = () => resolve(null);
          stop.signal.addEventListener('abort', onStop, { once: true });
          rl.question(prompt, { signal: stop.signal }, (answer) => {
            stop.signal.removeEventListener('abort', onStop);
            resolve(answer);
          });
        }),
    };
    output.write(plain());
    try {
      return await body(asking);
    } finally {
      signal?.removeEventListener('abort', end);
      rl.close();
      if (signal?.aborted) output.write('\n');
    }
  }
}

/** Pages of type-ahead thrown away at most (a paste of a few MB), so a question never waits on a flood. */
const MAX_DISCARD_READS = 1024;

/**
 * Throws away what was typed on the terminal while no question was shown, so it cannot answer the question
 * that starts now. Raw mode first, so a half-typed line goes too; then the terminal's input queue is read
 * without waiting (a second, non-blocking opening of the same terminal) until it is empty. Linux only
 * (elsewhere `/dev/fd/N` is the same descriptor, which would block); best effort.
 */
function discardTypeAhead(input: Input): void {
  if (process.platform !== 'linux' || typeof input.fd !== 'number') return;
  let fd: number | undefined;
  try {
    input.setRawMode?.(true);
    fd = openSync(`/proc/self/fd/${input.fd}`, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const page = Buffer.alloc(4096);
    for (let i = 0; i < MAX_DISCARD_READS && readSync(fd, page, 0, page.length, null) > 0; i++);
  } catch {
    // EAGAIN: nothing (more) was typed.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Text set in by two spaces, every line of it. */
export function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}

let shared: TerminalQuestions | undefined;

/** The process's one line of questions on its terminal (stdin, stderr). */
export function terminalQuestions(): TerminalQuestions {
  return (shared ??= new TerminalQuestions());
}
