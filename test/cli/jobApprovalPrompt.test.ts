/**
 * The CLI's approval prompt (src/cli/approvalPrompt.ts) over real readline, on streams that say they are a
 * terminal: a call from a background job says which job asks; the code's own call says the code calls.
 */
import * as assert from 'node:assert/strict';
import { cliAsking } from '../../src/cli/approvalPrompt';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import type { ApprovalRequest } from '../../src/core/gateway/gateway';
import { managedTool } from '../support/managedTool';
import { fakeTerminal } from '../support/fakeTerminal';

const settle = () => new Promise((r) => setImmediate(r));

describe('cli: an approval asked by a background job', () => {
  it('says which job asks; the answer goes to that call', async () => {
    const t = fakeTerminal();
    const config = resolveEngineConfig(() => undefined, { trusted: true }).config;
    const approver = cliAsking(config, { dir: process.cwd(), trusted: true }, t.questions).gateway.approver!;
    const request = (job?: number): ApprovalRequest => ({
      tool: managedTool({ name: 'send_note', approval: 'ask' }),
      arguments: { text: 'hi' },
      itemId: 'exec_1',
      callId: 'exec_1:job2.1',
      signal: new AbortController().signal,
      ...(job === undefined ? {} : { job }),
    });
    const fromJob = approver(request(2));
    await settle();
    assert.match(t.shown(), /Background job 2 asks \(it runs in the background of this session\): it calls the tool "send_note", which needs your approval/);
    t.input.write('y\n');
    assert.equal(await fromJob, 'allowed');
    const fromCode = approver(request());
    await settle();
    assert.match(t.shown(), /\nThe code calls the tool "send_note"/);
    t.input.write('n\n');
    assert.equal(await fromCode, 'denied');
  });
});
