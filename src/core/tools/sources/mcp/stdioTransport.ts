/**
 * The stdio transport of MCP servers: the server runs in the workspace with exactly the environment it
 * is given, in its own process group, marked ({@link MCP_SERVER_MARKER}) so that everything it starts can
 * be found and killed when the connection closes. It runs under the launcher (core/util/launcher.ts), so it
 * dies with the host too.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { randomToken } from '../../../util/ids';
import { descendantsOf, killMarkedNow, killTree } from '../../../util/processTree';
import { spawnGuarded } from '../../../util/launcher';
import { reapProcesses } from '../processes';
import { LineBuffer, MCP_MAX_MESSAGE_BYTES } from './list';

/** The environment variable that marks a stdio server and everything it starts (value: one per server process). */
const MCP_SERVER_MARKER = 'CODEACT_MCP_SERVER';

/** A stdio server: its argv, working directory and whole environment. */
export type StdioServerSpec = { kind: 'stdio'; argv: string[]; cwd: string; env: Record<string, string> };

const STDERR_KEEP = 64 * 1024;

/**
 * What a stdio server may send unasked, and how much of our answers may wait for it to read them. A
 * server is untrusted input: without these, one that sends endless pings makes the host answer each
 * (the answers pile up in memory when it does not read them: 76 MB to 1.3 GB in a minute), and one that
 * sends endless stray responses fills the log.
 */
export interface McpFloodLimits {
  /** Requests and notifications from the server accepted per second; the rest are dropped (and logged, once a second). */
  maxPerSecond: number;
  /** Requests from the server awaiting our answer at once; more are dropped. */
  maxOutstanding: number;
  /** Messages dropped in a row (over the caps, responses to nothing we asked, lines that are not MCP) after which the server is closed as a flood. A second without drops starts the count again. */
  maxDropped: number;
  /** Bytes of our messages waiting for the server to read them, above which we stop reading its output until it reads (backpressure). */
  maxPendingWriteBytes: number;
}

const MCP_FLOOD_LIMITS: McpFloodLimits = { maxPerSecond: 200, maxOutstanding: 16, maxDropped: 2_000, maxPendingWriteBytes: 1024 * 1024 };

/**
 * The SDK's stdio client transport, reworked for a host that must not leak processes: the server
 * gets exactly the environment it is given (the SDK's adds more), runs in its own process group,
 * its stderr is kept (the tail goes into errors), and `close()` ends stdin, waits a grace period,
 * then kills the whole tree.
 */
export class StdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcessWithoutNullStreams;
  private readonly lines = new LineBuffer(MCP_MAX_MESSAGE_BYTES);
  /** In the server's environment, so its daemons (setsid, double fork) can be found and killed. */
  private readonly marker = randomToken(9);
  private stderrText = '';
  private closing?: Promise<void>;
  private notified = false;
  /** Ids of requests awaiting an answer: only while there are some does the server keep Node's event loop alive. */
  private readonly pending = new Set<string | number>();
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** Why the client dropped the connection itself, if it did. */
  fatal?: string;
  private readonly limits: McpFloodLimits;
  /** Ids of the server's requests we have not answered yet. */
  private readonly serverRequests = new Set<string | number>();
  /** This second's count of unasked messages and drops; `dropped` counts drops since the last calm second. */
  private window = { start: 0, count: 0, dropped: 0 };
  private dropped = 0;
  private readingPaused = false;
  private drainWaiters: Array<() => void> = [];
  /** What came in and what was done with it, for the host's diagnostics and the tests. */
  readonly stats = { delivered: 0, dropped: 0, pauses: 0, maxPendingWriteBytes: 0 };

  constructor(
    private readonly spec: StdioServerSpec,
    private readonly graceMs: number,
    limits: Partial<McpFloodLimits> = {},
  ) {
    this.limits = { ...MCP_FLOOD_LIMITS, ...limits };
  }

  get stderr(): string {
    return this.stderrText;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const [program, ...args] = this.spec.argv;
      let spawned = false;
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawnGuarded(program, args, { cwd: this.spec.cwd, env: { ...this.spec.env, [MCP_SERVER_MARKER]: this.marker }, windowsHide: true });
      } catch (e) {
        return reject(e);
      }
      // A spawn that fails with EMFILE has no pipes: its 'error' event is all there is.
      if (!child.stdout || !child.stderr || !child.stdin) {
        child.once('error', reject);
        return;
      }
      this.child = child;
      child.once('spawn', () => {
        spawned = true;
        this.updateRef();
        resolve();
      });
      child.on('error', (e) => {
        if (!spawned) reject(e);
        else this.onerror?.(e);
      });
      child.stdout.on('data', (chunk: Buffer) => {
        let lines: string[];
        try {
          lines = this.lines.push(chunk);
        } catch (e) {
          // A message too large to buffer: the stream cannot be resynchronised, so drop the connection.
          this.fatal = `it sent a message over CodeAct's limits: ${(e as Error).message}`;
          this.onerror?.(e as Error);
          void this.close();
          return;
        }
        for (const line of lines) {
          if (this.fatal) return;
          this.tick();
          let message: JSONRPCMessage;
          try {
            message = deserializeMessage(line);
          } catch (e) {
            this.drop(`a line on stdout that is not an MCP message (${(e as Error).message.split('\n')[0].slice(0, 200)}); servers must log to stderr`);
            continue;
          }
          if (this.admit(message)) {
            this.stats.delivered++;
            this.onmessage?.(message);
          }
        }
      });
      child.stderr.on('data', (b: Buffer) => {
        this.stderrText += b.toString('utf8');
        if (this.stderrText.length > STDERR_KEEP) this.stderrText = this.stderrText.slice(-STDERR_KEEP);
      });
      for (const s of [child.stdin, child.stdout, child.stderr]) s.on('error', () => {});
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        // Let the pipes drain (for the stderr tail), but never wait on a grandchild that holds them.
        let open = (child.stdout.readableEnded ? 0 : 1) + (child.stderr.readableEnded ? 0 : 1);
        if (open === 0) return this.notifyClosed();
        const t = setTimeout(() => this.notifyClosed(), 200);
        const ended = () => {
          if (--open === 0) {
            clearTimeout(t);
            this.notifyClosed();
          }
        };
        child.stdout.once('end', ended);
        child.stderr.once('end', ended);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.exit || this.closing || !stdin.writable) return reject(new Error('the server is not running'));
      if ('method' in message) {
        if ('id' in message) this.pending.add(message.id);
        else if (message.method === 'notifications/cancelled') this.pending.delete((message.params as { requestId: string | number }).requestId);
        this.updateRef();
      } else if ('id' in message) this.serverRequests.delete(message.id as string | number);
      if (stdin.write(serializeMessage(message))) return resolve();
      // One 'drain' listener for every waiting send, however many.
      if (this.drainWaiters.push(resolve) === 1) stdin.once('drain', this.onDrain);
      this.backpressure(stdin);
    });
  }

  /** Ends stdin, gives the server `graceMs` to exit, then kills its process group and every descendant. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const child = this.child;
      if (child?.pid) {
        const pid = child.pid;
        const tree = descendantsOf(pid);
        if (!this.exit) {
          // Keep Node alive for the grace period: a caller awaiting dispose() at the end of main() must see it through.
          child.ref();
          let timer: NodeJS.Timeout | undefined;
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          try {
            child.stdin.end();
          } catch {}
          await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, this.graceMs)))]);
          clearTimeout(timer);
        }
        // The tree as it was before the grace period too: a process may have left it since. Daemons that
        // left the tree (setsid, double fork) still carry the marker. Resolves once all are really gone,
        // so "after dispose() nothing runs" holds.
        await reapProcesses(pid, this.exit !== undefined, MCP_SERVER_MARKER, this.marker, [...tree, ...descendantsOf(pid)]);
      }
      this.notifyClosed();
    })();
    return this.closing;
  }

  /** Synchronous teardown, for `process.on('exit')`. */
  killNow(): void {
    if (this.child?.pid && !this.exit) killTree(this.child.pid);
    if (this.child) killMarkedNow(MCP_SERVER_MARKER, this.marker);
  }

  /**
   * Whether a message from the server goes on to the client. Answers to our requests do; answers to
   * nothing we asked are dropped; requests and notifications count against the caps ({@link McpFloodLimits}).
   */
  private admit(message: JSONRPCMessage): boolean {
    if (!('method' in message)) {
      const id = 'id' in message ? (message.id as string | number) : undefined;
      if (id !== undefined && this.pending.delete(id)) {
        this.updateRef();
        return true;
      }
      return this.drop('an answer to a request CodeAct never sent (or already gave up on)');
    }
    const isRequest = 'id' in message;
    if (this.window.count >= this.limits.maxPerSecond) return this.drop(`more than ${this.limits.maxPerSecond} requests and notifications in one second`);
    if (isRequest && this.serverRequests.size >= this.limits.maxOutstanding)
      return this.drop(`more than ${this.limits.maxOutstanding} requests awaiting an answer`);
    this.window.count++;
    if (isRequest) this.serverRequests.add(message.id as string | number);
    return true;
  }

  /** Starts a new one-second window when the last one is over: logs what it dropped, and forgives after a calm second. */
  private tick(): void {
    const now = Date.now();
    if (now - this.window.start < 1000) return;
    if (this.window.dropped === 0 || now - this.window.start >= 2000) this.dropped = 0;
    if (this.window.dropped > 1) this.onerror?.(new Error(`dropped ${this.window.dropped.toLocaleString('en-US')} messages from the server in one second`));
    this.window = { start: now, count: 0, dropped: 0 };
  }

  /** Drops one message; logs the first of each second; closes the connection when the server keeps flooding. */
  private drop(what: string): false {
    this.stats.dropped++;
    this.dropped++;
    if (this.window.dropped++ === 0)
      this.onerror?.(new Error(`dropped a message from the server: ${what}. CodeAct accepts ${this.capsText()}, and closes the connection if it goes on`));
    if (this.dropped > this.limits.maxDropped && !this.fatal) {
      this.fatal = `it flooded CodeAct with messages (${this.dropped.toLocaleString('en-US')} dropped in a row, the last for ${what}; CodeAct accepts ${this.capsText()}). Check the server, or use another one`;
      this.onerror?.(new Error(this.fatal));
      void this.close();
    }
    return false;
  }

  private capsText(): string {
    return `at most ${this.limits.maxPerSecond} requests and notifications a second, and ${this.limits.maxOutstanding} requests at once`;
  }

  /** Our messages pile up unread: stop reading the server's output until it reads them (resumed by {@link onDrain}). */
  private backpressure(stdin: { writableLength: number }): void {
    this.stats.maxPendingWriteBytes = Math.max(this.stats.maxPendingWriteBytes, stdin.writableLength);
    const stdout = this.child?.stdout;
    if (!stdout || this.readingPaused || stdin.writableLength <= this.limits.maxPendingWriteBytes) return;
    this.readingPaused = true;
    this.stats.pauses++;
    stdout.pause();
  }

  private readonly onDrain = () => {
    this.releaseWaiters();
    if (this.readingPaused) {
      this.readingPaused = false;
      this.child?.stdout.resume();
    }
  };

  /** Settles the sends waiting for the server to read (on drain; on close, where what they sent is lost anyway). */
  private releaseWaiters(): void {
    const waiting = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiting) resolve();
  }

  /** An idle server must not keep a finished CLI alive; a pending request must keep it waiting. */
  private updateRef(): void {
    const child = this.child;
    if (!child) return;
    const op = this.pending.size > 0 ? 'ref' : 'unref';
    child[op]();
    for (const s of [child.stdin, child.stdout, child.stderr] as unknown as Array<{ ref?: () => void; unref?: () => void }>) s[op]?.();
  }

  private notifyClosed(): void {
    if (this.notified) return;
    this.notified = true;
    this.releaseWaiters();
    this.onclose?.();
  }
}
