/**
 * The session host's wire (src/core/sessionHost/wire.ts) over a real Unix socket: what one side writes in a
 * tick goes out in one write, in order (a short run's events and its `done` wake the other side once), and
 * what is held still goes out before the socket closes.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { endSocket, readLines, send, writeEvent } from '../../src/core/sessionHost/wire';
import { waitFor } from '../support/wait';

describe('session host wire', function () {
  let dir: string;
  let server: Server;
  let sender: Socket;
  let received: unknown[];
  let writes: number;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-wire-'));
    received = [];
    const file = path.join(dir, 's');
    server = createServer((s) => readLines(s, (v) => received.push(v), assert.fail));
    await new Promise<void>((r) => server.listen(file, r));
    sender = connect(file);
    await new Promise((r) => sender.once('connect', r));
    writes = 0;
    const write = sender.write.bind(sender) as (chunk: string) => boolean;
    sender.write = ((chunk: string) => (writes++, write(chunk))) as typeof sender.write;
  });
  afterEach(async () => {
    sender.destroy();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const event = (n: number) => `{"type":"event","rid":"r1","event":{"type":"codeact.output.delta","delta":"line ${n}"}}\n`;

  it("sends a run's events and the message after them in one write, in order", async () => {
    for (let n = 1; n <= 5; n++) writeEvent(sender, event(n));
    send(sender, { type: 'done', rid: 'r1', item: null });
    await waitFor(() => received.length === 6, { what: 'the six lines' });
    assert.equal(writes, 1);
    assert.deepEqual(
      received.map((m) => (m as { event?: { delta: string }; type: string }).event?.delta ?? (m as { type: string }).type),
      ['line 1', 'line 2', 'line 3', 'line 4', 'line 5', 'done'],
    );
  });

  it('sends events without a message after them, and what is held before the socket closes', async () => {
    writeEvent(sender, event(1));
    await waitFor(() => received.length === 1, { what: 'the event alone' });
    writeEvent(sender, event(2));
    send(sender, { type: 'end' });
    endSocket(sender);
    await waitFor(() => received.length === 3, { what: 'the held event and end' });
    assert.equal((received[2] as { type: string }).type, 'end');
  });
});
