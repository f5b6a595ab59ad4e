/**
 * A loopback proxy in front of a wire server that hands its server-sent events to the client one at a
 * time, `delayMs` apart, so a human-speed stream can be watched (and screenshotted) in the browser.
 * The wire server itself writes a scripted turn in one go.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WireServer } from '../../support/wire/server';

export interface Throttle {
  /** Base URL for the SDK (the wire server's base path on the proxy's origin). */
  url: string;
  close(): Promise<void>;
}

export async function throttle(target: WireServer, delayMs: number): Promise<Throttle> {
  const upstream = new URL(target.origin);
  const server = http.createServer((req, res) => {
    const up = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        const sse = /event-stream/.test(String(upRes.headers['content-type'] ?? ''));
        if (!sse) {
          upRes.pipe(res);
          return;
        }
        let buffer = '';
        const queue: string[] = [];
        let ended = false;
        let pumping = false;
        const pump = async () => {
          if (pumping) return;
          pumping = true;
          while (queue.length && !res.destroyed) {
            res.write(queue.shift());
            await new Promise((r) => setTimeout(r, delayMs));
          }
          pumping = false;
          if (ended && !queue.length && !res.destroyed) res.end();
        };
        upRes.setEncoding('utf8');
        upRes.on('data', (chunk: string) => {
          buffer += chunk;
          let i: number;
          while ((i = buffer.indexOf('\n\n')) >= 0) {
            queue.push(buffer.slice(0, i + 2));
            buffer = buffer.slice(i + 2);
          }
          void pump();
        });
        upRes.on('end', () => {
          if (buffer) queue.push(buffer);
          ended = true;
          void pump();
        });
      },
    );
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `throttle proxy: ${err.message}` } }));
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${target.dialect.basePath}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
