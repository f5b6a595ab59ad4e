/**
 * A background job asks for an approval after the chat has moved on, in a real VS Code (code-server 4.139 =
 * VS Code 1.139, the current release) driven in headless Chromium, with a scripted model on loopback (OpenAI Chat Completions, the
 * `openai-compatible` provider).
 *
 * Turn 1 starts a background job that waits for a file in the workspace (mounted read-only), then calls `send_note`
 * (approval "ask"). Turn 2 is about something else. Once it has ended, the test makes the file (so the job's call comes
 * between runs, whatever the machine's speed). The job's approval card then appears in the newest turn, and says
 * which job asks and the code that started it. Allowed, the job finishes, and its result reaches the model's next
 * request.
 *
 * Screenshots go to test-artifacts/e2e/ (98-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import { useCodeServer } from './support/suite';

const UI = 60_000;
const RUN = 120_000;
const MODEL = 'qwen2.5-coder:7b';

const job = (ws: string) => `import os, asyncio
while not os.path.exists(${JSON.stringify(`${ws}/go-job`)}):
    await asyncio.sleep(0.05)
note = await call_tool("send_note", customer_id="ACME-42", text="Your quote is ready.")
note["note_id"]`;

describe('e2e: a background job asks for an approval after the chat moved on', function () {
  this.timeout(900_000);
  const e2e = useCodeServer({
    name: 'jobApprovals',
    wire: ['openai-compatible', 'ollama'],
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 90,
      'codeact.sandbox.mountWorkspace': 'readonly',
    }),
    minWaitMs: UI,
  });

  it('the card says which job asks; allowed, the job ends and its result reaches the next request', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    e2e.wire.push(
      turn().call('execute_tool_code', { code: job(e2e.ws.folder), background: true }, { id: 'call_job' }),
      turn().text('I started the note in the background (job 1).'),
    );
    await e2e.panel.send('Send ACME-42 a note that their quote is ready, in the background.');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], RUN), 'completed', await e2e.panel.text());

    // The chat moves on; once its turn has ended, the job may go on to its tool call.
    e2e.wire.push(turn().call('execute_tool_code', { code: '6 * 7' }, { id: 'call_other' }), turn().text('6 × 7 is 42.'));
    await e2e.panel.send('Meanwhile, what is 6 times 7?');
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], RUN), 'completed', await e2e.panel.text());
    writeFileSync(join(e2e.ws.folder, 'go-job'), '');

    const card = await e2e.panel.waitForApproval(RUN);
    const text = await card.innerText();
    assert.match(text, /Background job 1 asks: allow\s+send_note\s+to run\?/);
    assert.match(text, /Background job 1 \(started by the code\s+while not os\.path\.exists\("[^"]*\/go-job"\):\s*\)/);
    assert.match(text, /ACME-42/);
    await card.scrollIntoViewIfNeeded();
    const shot = await e2e.wb.screenshot('98-job-approval-after-the-chat-moved-on');
    console.log(`      screenshot: ${shot}`);
    await e2e.panel.decide('Allow once');

    // The next turn waits for the job; its result reaches the model's next request.
    const before = e2e.wire.requests.length;
    e2e.wire.push(turn().call('execute_tool_code', { code: 'wait_job(1, timeout=60)["status"]' }, { id: 'call_wait' }), turn().text('The note went out.'));
    await e2e.panel.send('Did the note go out?');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], RUN), 'completed', await e2e.panel.text());
    const later = e2e.wire.requests.slice(before).map((r) => r.rawBody);
    assert.ok(
      later.some((b) => /Background job 1 finished after [^"]*; its value: \\"NOTE-ACME-42-\d+\\"/.test(b)),
      `no request after the approval told the model of the job's result:\n${later.map((b) => b.slice(Math.max(0, b.indexOf('Background job') - 200), b.indexOf('Background job') + 800)).join('\n---\n')}`,
    );
  });
});
