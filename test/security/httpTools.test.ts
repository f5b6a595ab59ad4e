/**
 * HTTP tools. Real HTTP servers on 127.0.0.1 (two ports are two origins).
 */
import * as assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { loadTools } from '../../src/core/tools/declarations';
import { hostAllowed } from '../../src/core/tools/sources/http';

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
}

async function serve(
  handler: (req: { url: string; headers: IncomingHttpHeaders }, res: ServerResponse) => void,
): Promise<{ server: Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url!, headers: req.headers });
    handler({ url: req.url!, headers: req.headers }, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

const json = (res: ServerResponse, value: unknown) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};

function tool(http: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): ManagedTool {
  const set = loadTools([{ name: 'h', http }], { workspace: '/tmp', hostEnv: env });
  assert.deepEqual(set.errors, []);
  return set.tools[0];
}
const invoke = (t: ManagedTool, args: Record<string, unknown> = {}) => t.invoke(args, { signal: new AbortController().signal, callId: 'c' });

describe('security: HTTP tools', function () {
  this.timeout(30_000);
  let a: Awaited<ReturnType<typeof serve>>;
  let b: Awaited<ReturnType<typeof serve>>;
  before(async () => {
    b = await serve((req, res) => json(res, { at: 'b', url: req.url }));
    a = await serve((req, res) => {
      if (req.url.startsWith('/away')) {
        res.writeHead(302, { location: `http://127.0.0.1:${b.port}/landed` });
        return res.end();
      }
      if (req.url.startsWith('/home')) {
        res.writeHead(302, { location: '/landed' });
        return res.end();
      }
      if (req.url.startsWith('/stall')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"partial": ');
        return; // never ends
      }
      json(res, { at: 'a', url: req.url });
    });
  });
  after(() => {
    a.server.closeAllConnections();
    a.server.close();
    b.server.close();
  });
  beforeEach(() => {
    a.seen.length = 0;
    b.seen.length = 0;
  });

  const secretHeaders = {
    Authorization: 'Bearer ${env:API_TOKEN}',
    Cookie: 'session=s3cr3t',
    'X-Api-Key': 'key-${env:API_KEY}',
    'X-Plain': 'hello',
  };
  const env = { API_TOKEN: 'TOKEN-CANARY', API_KEY: 'KEY-CANARY' };

  it('drops Authorization, Cookie and every ${env:…} header on a redirect to another origin', async () => {
    const t = tool({ url: `http://127.0.0.1:${a.port}/away`, allowedHosts: ['127.0.0.1'], headers: secretHeaders }, env);
    assert.deepEqual(await invoke(t), { at: 'b', url: '/landed' });
    assert.equal(a.seen[0].headers.authorization, 'Bearer TOKEN-CANARY', 'the first request carries the credentials');
    const landed = b.seen[0].headers;
    assert.equal(landed.authorization, undefined);
    assert.equal(landed.cookie, undefined);
    assert.equal(landed['x-api-key'], undefined);
    assert.equal(landed['x-plain'], 'hello', 'a header without a secret still goes');
    assert.ok(!JSON.stringify(landed).includes('CANARY'));
  });

  it('keeps them on a redirect within the origin', async () => {
    const t = tool({ url: `http://127.0.0.1:${a.port}/home`, allowedHosts: ['127.0.0.1'], headers: secretHeaders }, env);
    assert.deepEqual(await invoke(t), { at: 'a', url: '/landed' });
    assert.equal(a.seen[1].headers.authorization, 'Bearer TOKEN-CANARY');
    assert.equal(a.seen[1].headers['x-api-key'], 'key-KEY-CANARY');
  });

  it('query parameters fixed in the URL template cannot be overridden by arguments', async () => {
    const t = tool({ url: `http://127.0.0.1:${a.port}/items?api_key=FIXED&v=2`, allowedHosts: ['127.0.0.1'] });
    await assert.rejects(
      invoke(t, { api_key: 'attacker' }),
      /Tool "h": the argument "api_key" would override the query parameter "api_key" fixed in the URL template/,
    );
    assert.equal(a.seen.length, 0, 'nothing was sent');
    assert.deepEqual(await invoke(t, { q: 'x y' }), { at: 'a', url: '/items?api_key=FIXED&v=2&q=x+y' });
  });

  it('an allowedHosts entry with a port matches only that port, with a scheme only that scheme', async () => {
    const onlyA = tool({ url: `http://127.0.0.1:${a.port}/away`, allowedHosts: [`127.0.0.1:${a.port}`] });
    await assert.rejects(invoke(onlyA), new RegExp(`a redirect went to 127\\.0\\.0\\.1:${b.port}, which is not in allowedHosts`));
    assert.equal(b.seen.length, 0);

    const httpsOnly = tool({ url: `http://127.0.0.1:${a.port}/x`, allowedHosts: [`https://127.0.0.1:${a.port}`] });
    await assert.rejects(invoke(httpsOnly), /the request goes to 127\.0\.0\.1:\d+, which is not in allowedHosts \(https:\/\/127\.0\.0\.1/);
    const httpOk = tool({ url: `http://127.0.0.1:${a.port}/x`, allowedHosts: [`http://127.0.0.1:${a.port}`] });
    assert.deepEqual(await invoke(httpOk), { at: 'a', url: '/x' });

    // The scheme's default port counts as the URL's port.
    assert.equal(hostAllowed(new URL('https://api.example.com/x'), ['api.example.com:443']), true);
    assert.equal(hostAllowed(new URL('https://api.example.com/x'), ['api.example.com:8443']), false);
    assert.equal(hostAllowed(new URL('http://api.example.com/x'), ['https://api.example.com']), false);
    assert.equal(hostAllowed(new URL('https://a.example.com:8443/x'), ['*.example.com:8443']), true);
    assert.equal(hostAllowed(new URL('https://a.example.com/x'), ['*.example.com:8443']), false);
    assert.equal(hostAllowed(new URL('http://[::1]:8080/x'), ['[::1]:8080']), true);

    const bad = loadTools([{ name: 'h', http: { url: 'https://x.example.com', allowedHosts: ['https://x.example.com/path', 'ftp://x'] } }], {
      workspace: '/tmp',
    });
    assert.match(bad.errors[0].message, /"http\.allowedHosts" entries must be \[http\(s\):\/\/\]host\[:port\].*"https:\/\/x\.example\.com\/path", "ftp:\/\/x"/);
  });

  it('a timeout while reading the body names the tool and its timeoutMs', async () => {
    const t = tool({ url: `http://127.0.0.1:${a.port}/stall`, allowedHosts: ['127.0.0.1'], timeoutMs: 500 });
    // The server never ends the body: only the tool's own timeout (named in the answer) can end the call.
    await assert.rejects(
      invoke(t),
      /^Error: Tool "h": timed out after 0\.5 s reading the response from 127\.0\.0\.1:\d+ \(its timeoutMs is 500; raise it in the declaration/,
    );
  });
});
