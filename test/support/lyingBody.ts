/**
 * For the tests of bounded remote bodies: a response body far larger than any cap, sent without a declared
 * size (chunked) in chunks that wait for the socket (backpressure), with counts of what was sent and of what
 * the client read. Counted, never timed: the test waits for the client to close the connection.
 *
 * What the client read is the byte count of its socket (`bytesRead`), found through undici's diagnostics
 * channel (Node's `fetch` is undici): it is exact, whereas the sender's count also holds what the kernel's
 * socket buffers took in (several MiB on loopback) when the client closed.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The size of each chunk the liar writes. */
export const LIE_CHUNK = 64 * 1024;
/** What Node and undici may hold beyond the chunk that passed the cap (a socket read, the body's queue). */
export const CLIENT_SLACK = 1024 * 1024;

/** By local port, taken when the socket connects (a closed socket no longer knows its port). */
const clientSockets = new Map<number, Socket>();
let subscribed = false;

/** Starts recording the sockets `fetch` opens (call before the client connects). */
export function watchClientSockets(): void {
  if (subscribed) return;
  subscribed = true;
  subscribe('undici:client:connected', (message) => {
    const socket = (message as { socket: Socket }).socket;
    if (socket.localPort) clientSockets.set(socket.localPort, socket);
  });
}

/** What the client read on the connection whose client end is `port`. */
export function clientBytesRead(port: number): number {
  const socket = clientSockets.get(port);
  if (!socket) throw new Error(`no fetch connection from port ${port} was seen (call watchClientSockets() first)`);
  return socket.bytesRead;
}

/** What the client read on every connection `fetch` opened since {@link watchClientSockets}. */
export function totalClientBytesRead(): number {
  let n = 0;
  for (const socket of clientSockets.values()) n += socket.bytesRead;
  return n;
}

export interface Lie {
  /** Bytes of the body written to the socket (accepted by the kernel). */
  sent: number;
  /** True when the whole body went out; false when the client closed first. */
  completed: boolean;
  /** The client's end of the connection (its local port), for {@link clientBytesRead}. */
  clientPort: number;
}

/**
 * Answers `res` with `head`, then filler bytes up to `total`, then `tail`: chunked, no Content-Length.
 * Resolves when the body is done or the client has closed the connection.
 */
export function sendHuge(
  res: ServerResponse,
  options: { total: number; head?: string; tail?: string; filler?: number; contentType?: string; status?: number },
): Promise<Lie> {
  const head = Buffer.from(options.head ?? '');
  const tail = Buffer.from(options.tail ?? '');
  const chunk = Buffer.alloc(LIE_CHUNK, options.filler ?? 0x41);
  const lie: Lie = { sent: 0, completed: false, clientPort: res.socket?.remotePort ?? 0 };
  res.writeHead(options.status ?? 200, { 'content-type': options.contentType ?? 'application/json' });
  return new Promise((resolve) => {
    let closed = false;
    res.on('close', () => {
      closed = true;
      resolve(lie);
    });
    res.on('error', () => {});
    const write = (buf: Buffer): boolean => {
      lie.sent += buf.length;
      return res.write(buf);
    };
    let started = false;
    const pump = () => {
      if (!started) {
        started = true;
        if (head.length && !write(head)) return void res.once('drain', pump);
      }
      while (!closed && lie.sent + chunk.length <= options.total - tail.length) {
        if (!write(chunk)) return void res.once('drain', pump);
      }
      if (closed) return;
      lie.completed = true;
      lie.sent += tail.length;
      res.end(tail);
    };
    pump();
  });
}
