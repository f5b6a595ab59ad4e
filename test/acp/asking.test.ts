/**
 * The ACP door's questions (src/core/acpAgent/asking.ts) over a real ACP connection of the official SDK (an agent
 * app connected in memory to a client app): a question the client never answers ends as no answer within its time
 * (and the client is told to cancel it); an option the question did not offer is no answer, never an allow; a
 * stopped run ends its question at once.
 */
import * as assert from 'node:assert/strict';
import { agent, client, type RequestPermissionRequest, type RequestPermissionResponse } from '@agentclientprotocol/sdk';
import { AcpAsking, permissionRequester } from '../../src/core/acpAgent/asking';
import { managedTool } from '../support/managedTool';

/** An AcpAsking whose questions go to a client that answers with `answer` (its cancellations are counted). */
function asked(answer: (r: RequestPermissionRequest, signal: AbortSignal) => Promise<RequestPermissionResponse>, answerMs = 10 * 60_000) {
  const seen = { questions: [] as RequestPermissionRequest[], cancelled: 0 };
  const app = client().onRequest('session/request_permission', ({ params, signal }) => {
    seen.questions.push(params);
    signal.addEventListener('abort', () => seen.cancelled++);
    return answer(params, signal);
  });
  const connection = agent().connect(app);
  return { asking: new AcpAsking('s1', permissionRequester(connection.client), answerMs), seen, connection };
}

const never = () => new Promise<RequestPermissionResponse>(() => {});
const request = (signal = new AbortController().signal) => ({
  tool: managedTool({ name: 'send_mail', approval: 'ask' }),
  arguments: { to: 'a@example.com' },
  itemId: 'exec_1',
  callId: 'exec_1:1',
  signal,
});

describe('acp: the questions the ACP door asks', () => {
  it('a question the client never answers ends as no answer within its time, and the client is told to cancel it', async () => {
    const { asking, seen, connection } = asked(never, 200);
    assert.deepEqual(await asking.approver(request()), { unanswered: 'no answer within 1 s' });
    assert.equal(seen.questions.length, 1);
    // The question names the managed call's own tool call, with every argument.
    assert.equal(seen.questions[0].toolCall.toolCallId, 'exec_1/exec_1:1');
    await waitUntil(() => seen.cancelled === 1);
    connection.close();
  });

  it('a stopped run ends its open question at once, as no answer', async () => {
    const { asking, connection } = asked(never);
    const stop = new AbortController();
    const outcome = asking.approver(request(stop.signal));
    stop.abort();
    assert.deepEqual(await outcome, { unanswered: 'no answer: the run was stopped' });
    connection.close();
  });

  it('an option the question did not offer is no answer, never an allow; "for this session" is remembered only when offered', async () => {
    let pick = 'allow_always_everything';
    const { asking, connection } = asked(async () => ({ outcome: { outcome: 'selected', optionId: pick } }));
    assert.deepEqual(await asking.approver(request()), { unanswered: 'the client answered with an option that was not offered' });
    // Code review offers Run and Deny only: "allow_session" is not one of them.
    pick = 'allow_session';
    const review = await asking.review({ code: 'print(1)', itemId: 'exec_2' }, new AbortController().signal);
    assert.ok('error' in review && /did not run: the client answered with an option that was not offered/.test(review.error!.message), JSON.stringify(review));
    // Offered for a tool: the next call of that tool is not asked.
    assert.equal(await asking.approver(request()), 'allowed');
    pick = 'deny';
    assert.equal(await asking.approver(request()), 'allowed');
    connection.close();
  });

  it('a cancelled question is no answer, never a deny', async () => {
    const { asking, connection } = asked(async () => ({ outcome: { outcome: 'cancelled' } }));
    assert.deepEqual(await asking.approver(request()), { unanswered: 'the client cancelled the question' });
    connection.close();
  });
});

async function waitUntil(ok: () => boolean) {
  for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok());
}
