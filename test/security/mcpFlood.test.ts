/**
 * An MCP stdio server cannot flood the host. Real stdio servers
 * (test/fixtures/mcp/flood.mjs) send endless pings, notifications or answers to nothing, with and
 * without reading what the host answers. The host drops what passes its caps (and says so, once a
 * second), closes a server that keeps flooding with an error that says why, stops reading a server that
 * does not read its answers (backpressure), and its own memory stays flat. A server under the caps works.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { McpClientPool } from '../../src/core/tools/sources/mcp/pool';
import { StdioServerTransport, type StdioServerSpec } from '../../src/core/tools/sources/mcp/stdioTransport';
import { sleep } from '../support/wait';

const FLOOD = path.resolve(__dirname, '../fixtures/mcp/flood.mjs');
const tag = `--tag=codeact-mcp-flood-${process.pid}-${Date.now()}`;
const MB = 1024 * 1024;

async function gone(budgetMs = 20_000): Promise<number[]> {
  const deadline = Date.now() + budgetMs;
  let left = processesWithCmdline(tag);
  while (left.length && Date.now() < deadline) {
    await sleep(50);
    left = processesWithCmdline(tag);
  }
  return left;
}

describe('security: an MCP stdio server cannot flood the host', function () {
  this.timeout(120_000);
  let ws: string;
  let pool: McpClientPool;
  let logs: string[];
  const spec = (...flags: string[]): StdioServerSpec => ({
    kind: 'stdio',
    argv: [process.execPath, FLOOD, tag, ...flags],
    cwd: ws,
    env: { PATH: process.env.PATH ?? '' },
  });
  beforeEach(() => {
    ws = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-mcp-flood-')));
    logs = [];
    // A call timeout long enough that a flood, not the clock, ends the call.
    pool = new McpClientPool({ connectTimeoutMs: 20_000, callTimeoutMs: 30_000, log: (l) => logs.push(l) });
  });
  afterEach(async () => {
    await pool.dispose();
    rmSync(ws, { recursive: true, force: true });
    assert.deepEqual(await gone(), [], 'a flood server is still running');
  });

  /** Calls "echo" and reports the error, and how much the host's own memory grew meanwhile. */
  async function callDuringFlood(...flags: string[]) {
    const before = process.memoryUsage().rss;
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
    try {
      await pool.callTool(spec(...flags), 'echo', { text: 'hi' });
      return { error: undefined as string | undefined, grewMB: (peak - before) / MB };
    } catch (e) {
      return { error: (e as Error).message, grewMB: (Math.max(peak, process.memoryUsage().rss) - before) / MB };
    } finally {
      clearInterval(watch);
    }
  }
  const FLOODED =
    /^failed: the connection to the MCP server ".*flood\.mjs.*" was dropped: it flooded CodeAct with messages \(2,001 dropped in a row, the last for (.*); CodeAct accepts at most 200 requests and notifications a second, and 16 requests at once\)\. Check the server, or use another one\.$/;

  it('endless pings while a call waits: the call fails saying the server flooded, the server is closed, memory stays flat', async () => {
    const r = await callDuringFlood('--flood=ping', '--when=call');
    assert.match(String(r.error), FLOODED);
    assert.match(String(r.error), /more than 16 requests awaiting an answer|more than 200 requests and notifications in one second/);
    assert.ok(r.grewMB < 200, `the host grew by ${Math.round(r.grewMB)} MB`);
  });

  it('endless pings from a server that never reads the answers: the same, and the answers do not pile up', async () => {
    const r = await callDuringFlood('--flood=ping', '--when=call', '--no-read');
    assert.match(String(r.error), FLOODED);
    assert.ok(r.grewMB < 200, `the host grew by ${Math.round(r.grewMB)} MB`);
  });

  it('endless notifications: closed as a flood; the log says so in a few lines, not one per message', async () => {
    const r = await callDuringFlood('--flood=notify', '--when=call');
    assert.match(String(r.error), FLOODED);
    assert.match(String(r.error), /the last for more than 200 requests and notifications in one second/);
    const about = logs.filter((l) => /dropped/.test(l));
    assert.ok(about.length >= 1 && about.length <= 10, `log lines about drops: ${about.length}\n${about.slice(0, 5).join('\n')}`);
    assert.match(about[0], /dropped a message from the server: more than 200 requests and notifications in one second\. CodeAct accepts at most 200/);
  });

  it('endless answers to requests the host never sent: dropped before the client, closed as a flood, a few log lines', async () => {
    const r = await callDuringFlood('--flood=stray', '--when=call');
    assert.match(String(r.error), FLOODED);
    assert.match(String(r.error), /the last for an answer to a request CodeAct never sent/);
    assert.ok(logs.length < 20, `${logs.length} log lines, for example:\n${logs.slice(0, 5).join('\n')}`);
  });

  it('a server under the caps (100 notifications, then it answers) works, and nothing is dropped', async () => {
    const result = await pool.callTool(spec('--flood=notify', '--trickle=100'), 'echo', { text: 'hi' });
    assert.deepEqual(result.content, [{ type: 'text', text: '{"text":"hi"}' }]);
    assert.deepEqual(
      logs.filter((l) => /dropped|flooded/.test(l)),
      [],
    );
  });

  it('backpressure: with the caps out of the way, a server that does not read its answers is no longer read either', async () => {
    // Caps so high that only backpressure is left; 64 KiB of unread answers at most, plus one chunk's worth.
    const limit = 64 * 1024;
    const transport = new StdioServerTransport(spec('--flood=ping', '--no-read'), 1000, {
      maxPerSecond: 1e9,
      maxOutstanding: 1e9,
      maxDropped: 1e9,
      maxPendingWriteBytes: limit,
    });
    const client = new Client({ name: 'flood-test', version: '1' }, { capabilities: {} });
    client.onerror = () => {};
    await client.connect(transport, { timeout: 20_000 });
    const stdin = () => (transport as unknown as { child: ChildProcessWithoutNullStreams }).child.stdin;
    const sent = () => Number(/sent (\d+)\s*$/.exec(transport.stderr)?.[1] ?? 0);
    let most = 0;
    try {
      // Watch until the server has sent 300,000 pings (it does at once when the host keeps reading), or
      // for 10 s (a host that stopped reading it): the unread answers never pass the limit meanwhile.
      const until = Date.now() + 10_000;
      while (Date.now() < until && sent() < 300_000) {
        most = Math.max(most, stdin().writableLength);
        await sleep(10);
      }
      most = Math.max(most, stdin().writableLength);
    } finally {
      await client.close();
      await transport.close();
    }
    assert.ok(
      most <= limit + 512 * 1024,
      `${Math.round(most / 1024)} KiB of answers waited for a server that does not read them (the server sent ${sent()} pings)`,
    );
    assert.ok(sent() < 300_000, `the host kept reading a server that does not read: it sent ${sent()} pings`);
  });
});
