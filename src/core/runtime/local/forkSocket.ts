/**
 * The socket one forked guest connects back to (zygote.ts): its three connections (protocol, stdout,
 * stderr), each opening with `{"token":…, "stream":…}` and the fork's one-time token.
 *
 * Each fork has a socket of its own, with a random name, in the zygote's socket folder (mode 0300: the host
 * makes sockets there, a guest connects to the one it was told of, and nothing without a capability that
 * bypasses file modes can list it; guests have none). The host listens on it from the fork request until its
 * guest's three connections are in (or the fork failed), then closes and removes it: guest code, which runs
 * only after that, finds nothing to connect to. While it listens it holds at most
 * {@link MAX_FORK_CONNECTIONS} connections at once (more are closed as they come); a connection whose first
 * line does not carry the fork's token, or names a stream twice, is closed at once, and one that stays silent
 * is closed after {@link HELLO_MS}. So the host's descriptors stay bounded whatever the code does.
 */
import { unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import * as path from 'node:path';
import { randomToken } from '../../util/ids';

type GuestStream = 'proto' | 'stdout' | 'stderr';

/** Connections one fork's socket holds at once: its guest's three, and a few to spare. */
const MAX_FORK_CONNECTIONS = 8;
/** How long a connection may take to say which fork and stream it is. */
const HELLO_MS = 5000;
const STREAMS: readonly string[] = ['proto', 'stdout', 'stderr'];

export class ForkSocket {
  /** The guest's connections so far (paused: the session resumes them). */
  readonly streams: Partial<Record<GuestStream, Socket>> = {};
  private server?: Server;
  private hostPath?: string;
  /** The socket's path as the guest sees it. */
  readonly guestPath: string;

  /**
   * Listens (the socket is bound before this returns: connections wait in its backlog until accepted).
   * `guestDir`: the socket folder as the guest sees it. `onStream` is called as each stream connects;
   * `onError` when the socket cannot listen.
   */
  constructor(
    dir: string,
    guestDir: string,
    private readonly token: string,
    private readonly onStream: () => void,
    onError: (err: Error) => void,
  ) {
    const name = `${randomToken(16)}.sock`;
    this.hostPath = path.join(dir, name);
    this.guestPath = path.posix.join(guestDir, name);
    const server = createServer((socket) => this.onConnection(socket));
    server.maxConnections = MAX_FORK_CONNECTIONS;
    server.on('error', onError);
    this.server = server;
    server.listen(this.hostPath);
  }

  /** True while it still accepts connections. */
  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Stops listening and removes the socket; with `all`, the guest's connections are closed too. */
  close(all = false): void {
    this.server?.close();
    this.server = undefined;
    if (this.hostPath) {
      try {
        unlinkSync(this.hostPath);
      } catch {}
      this.hostPath = undefined;
    }
    if (all) for (const s of Object.values(this.streams)) s?.destroy();
  }

  private onConnection(socket: Socket): void {
    socket.on('error', () => {});
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), HELLO_MS);
    socket.once('close', () => clearTimeout(timer));
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(10);
      if (nl < 0) {
        if (head.length > 512) socket.destroy();
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      let hello: { token?: unknown; stream?: unknown } | null = null;
      try {
        hello = JSON.parse(head.subarray(0, nl).toString('utf8'));
      } catch {}
      const stream = hello?.stream;
      if (!this.listening || hello?.token !== this.token || typeof stream !== 'string' || !STREAMS.includes(stream) || this.streams[stream as GuestStream]) {
        return socket.destroy();
      }
      const rest = head.subarray(nl + 1);
      if (rest.length) socket.unshift(rest);
      this.streams[stream as GuestStream] = socket;
      this.onStream();
    };
    socket.on('data', onData);
  }
}
