/**
 * The Jupyter client acknowledges the server's messages at once (an unsolicited WebSocket pong after
 * what one socket read delivered), so that a server with Nagle's algorithm on (stock Jupyter Server)
 * never waits ~40 ms for our delayed ACK between two messages of a run.
 *
 * These tests check the behaviour, not the timing (the timing is `npm run bench`:
 * `jupyter_exec_ms_p50` against `jupyter_raw_exec_ms_p50`):
 * - against a `ws` server on loopback that sends one message at a time and waits for a pong;
 * - against the real jupyter-server, through a TCP proxy that decodes the WebSocket frames the
 *   client sends and counts the pongs among them during each run.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { makeServerSettings } from '../../src/core/runtime/jupyter/connection';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { SKIP_MESSAGE, findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';

const OP_PONG = 0xa;

/** Resolves with the next pong the server side receives, or rejects after `ms` (a hang guard only). */
function nextPong(socket: ServerSocket, ms: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      socket.off('pong', onPong);
      reject(new Error(`the client sent no pong after ${what} (waited ${ms / 1000} s): it leaves the ACK to the delayed-ACK timer`));
    }, ms);
    const onPong = () => {
      clearTimeout(t);
      resolve();
    };
    socket.once('pong', onPong);
  });
}

describe('Jupyter client: prompt ACKs against Nagle stalls', function () {
  this.timeout(60_000);

  it('answers every message a server sends with a pong, and sends none unprompted', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(wss, 'listening');
    const port = (wss.address() as AddressInfo).port;
    const settings = makeServerSettings({ baseUrl: `http://127.0.0.1:${port}/`, token: 'secret', requestTimeoutMs: 10_000 });
    const accepted = once(wss, 'connection') as Promise<[ServerSocket, IncomingMessage]>;
    const client = new settings.WebSocket(`ws://127.0.0.1:${port}/api/kernels/k/channels`);
    try {
      const [socket, request] = await accepted;
      assert.equal(request.headers.authorization, 'token secret');
      let pongs = 0;
      socket.on('pong', (data: Buffer) => {
        if (data.toString() !== 'probe') pongs++;
      });
      const received: string[] = [];
      client.onmessage = (e: MessageEvent) => received.push(String(e.data));

      // Nothing received yet, so nothing to acknowledge. The answer to a ping comes after anything
      // the client sent before it (TCP keeps the order), so once it is here the count is final.
      const answered = new Promise<void>((r) => socket.on('pong', (data: Buffer) => data.toString() === 'probe' && r()));
      socket.ping('probe');
      await answered;
      assert.equal(pongs, 0, 'the client sent a pong before it had received anything');

      for (let i = 0; i < 5; i++) {
        const pong = nextPong(socket, 10_000, `message ${i}`);
        socket.send(JSON.stringify({ msg_type: 'status', i }));
        await pong;
      }
      assert.equal(pongs, 5);
      assert.deepEqual(
        received.map((m) => JSON.parse(m).i),
        [0, 1, 2, 3, 4],
        'the messages still reach the library',
      );
    } finally {
      client.close();
      for (const c of wss.clients) c.terminate();
      await new Promise((r) => wss.close(r));
    }
  });
});

/**
 * A TCP proxy that decodes the client's WebSocket frames on upgraded connections and counts pongs.
 * Plain HTTP connections (the REST calls) pass through untouched.
 */
async function pongCountingProxy(targetPort: number): Promise<{ url: string; pongs: () => number; close: () => void }> {
  const sockets = new Set<Socket>();
  let pongs = 0;
  const proxy = createTcpServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
    upstream.pipe(client);
    let head = Buffer.alloc(0);
    let mode: 'head' | 'http' | 'ws' = 'head';
    let buf = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (mode === 'http') return;
      if (mode === 'head') {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        mode = /^upgrade:\s*websocket\s*$/im.test(head.subarray(0, end).toString('latin1')) ? 'ws' : 'http';
        if (mode === 'http') return;
        chunk = head.subarray(end + 4);
      }
      buf = Buffer.concat([buf, chunk]);
      // RFC 6455 §5.2: opcode in the low nibble of byte 0; mask bit and length in byte 1.
      for (;;) {
        if (buf.length < 2) break;
        let len = buf[1] & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) break;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) break;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        if (buf[1] & 0x80) off += 4;
        if (buf.length < off + len) break;
        if ((buf[0] & 0x0f) === OP_PONG) pongs++;
        buf = buf.subarray(off + len);
      }
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/`,
    pongs: () => pongs,
    close: () => {
      for (const s of sockets) s.destroy();
      proxy.close();
    },
  };
}

const available = !!findJupyterServer();
if (!available) console.log(`  ${SKIP_MESSAGE}`);

(available ? describe : describe.skip)('Jupyter client: prompt ACKs on a real jupyter-server', function () {
  this.timeout(120_000);
  let server: JupyterServer;
  let proxy: Awaited<ReturnType<typeof pongCountingProxy>>;
  let rt: JupyterRuntime;

  before(async function () {
    server = await startJupyterServer();
    proxy = await pongCountingProxy(server.port);
    rt = new JupyterRuntime({ url: proxy.url, token: server.token });
  });

  after(async function () {
    await rt?.dispose();
    proxy?.close();
    await server?.stop();
  });

  it('sends pongs during every run, and the runs still complete', async () => {
    const first = await rt.execute({ code: '1 + 1', sessionId: 'ack' });
    assert.equal(first.status, 'completed', JSON.stringify(first.error));
    for (let i = 0; i < 5; i++) {
      const before = proxy.pongs();
      const item = await rt.execute({ code: `print(${i}); ${i} * 2`, sessionId: 'ack' });
      assert.equal(item.status, 'completed', JSON.stringify(item.error));
      assert.equal(item.value, i * 2);
      // The proxy counts what it has read; give it the chance to read what the client wrote (a hang
      // guard, not a timing check: the pongs of a run's first messages were written long before).
      const deadline = Date.now() + 10_000;
      while (proxy.pongs() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      assert.ok(proxy.pongs() > before, `run ${i}: the client sent no pong while the server sent the run's messages`);
    }
  });
});
