/**
 * The stdio transport of MCP servers: the server runs in the workspace with exactly the environment it
 * is given, in its own process group, marked ({@link MCP_SERVER_MARKER}) so that everything it starts can
 * be found and killed when the connection closes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { randomToken } from '../../../util/ids';
import { descendantsOf, killMarkedNow, killTree } from '../../../util/processTree';
import { reapProcesses } from '../processes';
import { LineBuffer, MCP_MAX_MESSAGE_BYTES } from './list';

/** The environment variable that marks a stdio server and everything it starts (value: one per server process). */
export const MCP_SERVER_MARKER = 'CODEACT_MCP_SERVER';

/** A stdio server: its argv, working directory and whole environment. */
export type StdioServerSpec = { kind: 'stdio'; argv: string[]; cwd: string; env: Record<string, string> };

const STDERR_KEEP = 64 * 1024;

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

  constructor(
    private readonly spec: StdioServerSpec,
    private readonly graceMs: number,
  ) {}

  get stderr(): string {
    return this.stderrText;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const [program, ...args] = this.spec.argv;
      let spawned = false;
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(program, args, {
          cwd: this.spec.cwd,
          env: { ...this.spec.env, [MCP_SERVER_MARKER]: this.marker },
          stdio: ['pipe', 'pipe', 'pipe'],
          detached: process.platform !== 'win32',
          windowsHide: true,
        });
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
          let message: JSONRPCMessage;
          try {
            message = deserializeMessage(line);
          } catch (e) {
            this.onerror?.(new Error(`the server wrote a line on stdout that is not an MCP message (${(e as Error).message.split('\n')[0]}); servers must log to stderr`));
            continue;
          }
          if ('id' in message && ('result' in message || 'error' in message) && this.pending.delete(message.id as string | number)) this.updateRef();
          this.onmessage?.(message);
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
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
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
    this.onclose?.();
  }
}
