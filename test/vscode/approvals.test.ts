import * as assert from 'node:assert/strict';
import { approvalKey, buildTranscript, type ApprovalView, type TranscriptEvent } from '../../src/common/transcript';
import { demoTurn } from '../webview/support/fixtures';
import type { ApprovalRequest } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { Approvals, NO_ANSWER } from '../../src/vscode/approvals';
import { FakeApprovalsApis, FakeLog, FakeRuntime } from './fakes';
import { managedTool } from '../support/managedTool';

function tool(name: string): ManagedTool {
  return managedTool({ name, approval: 'ask', source: 'command' });
}

function request(name: string, signal = new AbortController().signal): ApprovalRequest {
  return { tool: tool(name), arguments: { q: 1 }, itemId: 'exec_1', callId: 'call_1', signal };
}

function setup(panel = false) {
  const apis = new FakeApprovalsApis();
  const events: TranscriptEvent[] = [];
  const log = new FakeLog();
  const state = { panel };
  const approvals = new Approvals({ apis, emit: (e) => events.push(e), log, panelVisible: () => state.panel });
  /** The id of the latest card or dialog asked for. */
  const lastId = () => (events.filter((e) => e.type === 'codeact.approval.requested').at(-1) as { approval_id: string }).approval_id;
  return { apis, events, log, state, approvals, lastId };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('vscode approvals (fake seams)', () => {
  describe('the modal dialog (panel hidden)', () => {
    it('"Allow Once" runs the call and asks again next time', async () => {
      const { apis, approvals } = setup();
      apis.answers = ['Allow Once', 'Allow Once'];
      assert.equal(await approvals.approveTool(request('lookup')), 'allowed');
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined);
      assert.equal(await approvals.approveTool(request('lookup')), 'allowed');
      assert.equal(apis.dialogs.length, 2);
      assert.equal(apis.dialogs[0].message, 'CodeAct: allow the tool "lookup"?');
      assert.deepEqual(apis.dialogs[0].items, ['Allow Once', 'Allow for This Session', 'Always Allow']);
      assert.match(apis.dialogs[0].detail!, /^Arguments:\n\{\n {2}"q": 1\n\}$/);
      assert.deepEqual(apis.saved, []);
    });

    it('"Allow for This Session" lets that tool (only) run without asking from then on', async () => {
      const { apis, approvals } = setup();
      apis.answers = ['Allow for This Session'];
      assert.equal(await approvals.approveTool(request('lookup')), 'allowed');
      const override = approvals.policyOverride([]);
      assert.equal(override(tool('lookup')), 'auto');
      assert.equal(override(tool('other')), undefined);
      assert.deepEqual(apis.saved, [], 'not saved to the settings');
    });

    it('"Always Allow" saves the tool to the user\'s alwaysAllow once, keeping what is there', async () => {
      const { apis, approvals } = setup();
      apis.always = ['first'];
      apis.answers = ['Always Allow', 'Always Allow'];
      assert.equal(await approvals.approveTool(request('lookup')), 'allowed');
      assert.equal(await approvals.approveTool(request('lookup')), 'allowed');
      assert.deepEqual(apis.saved, [['first', 'lookup']]);
      assert.equal(approvals.policyOverride(['lookup'])(tool('lookup')), 'auto');
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined, 'the gateway reads alwaysAllow from the settings it was built with');
    });

    it('a dismissed dialog denies', async () => {
      const { apis, approvals, events, log } = setup();
      apis.answers = [undefined];
      assert.equal(await approvals.approveTool(request('lookup')), 'denied');
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined);
      const resolved = events.find((e) => e.type === 'codeact.approval.resolved') as { decision: string };
      assert.equal(resolved.decision, 'deny');
      assert.ok(
        log.lines.some((l) => /approval appr_\w+: tool lookup -> deny/.test(l)),
        log.lines.join('\n'),
      );
    });

    it('a code review asks "run this code?" with the code, Run or not', async () => {
      const { apis, approvals } = setup();
      apis.answers = ['Run', undefined];
      assert.deepEqual(await approvals.request({ kind: 'code', code: 'print(1)' }), { decision: 'allow_once' });
      assert.deepEqual(await approvals.request({ kind: 'code', code: 'print(2)' }), { decision: 'deny' });
      assert.equal(apis.dialogs[0].message, 'CodeAct: run this code?');
      assert.equal(apis.dialogs[0].detail, 'print(1)');
      assert.deepEqual(apis.dialogs[0].items, ['Run']);
    });
  });

  describe('the card in the panel (panel visible)', () => {
    it("waits for the panel's answer; the request and the decision are events", async () => {
      const { apis, approvals, events, lastId } = setup(true);
      const pending = approvals.approveTool(request('lookup'));
      await tick();
      const requested = events[0] as { type: string; kind: string; name: string; item_id: string; arguments: unknown };
      assert.deepEqual(
        [requested.type, requested.kind, requested.name, requested.item_id, requested.arguments],
        ['codeact.approval.requested', 'tool', 'lookup', 'exec_1', { q: 1 }],
      );
      approvals.resolve(lastId(), 'allow_session');
      assert.equal(await pending, 'allowed');
      assert.equal(apis.dialogs.length, 0, 'no modal while the panel shows cards');
      assert.deepEqual(
        events.map((e) => e.type),
        ['codeact.approval.requested', 'codeact.approval.resolved'],
      );
      assert.equal(approvals.policyOverride([])(tool('lookup')), 'auto');
    });

    it("a background job's call says which job asks: on the card (with the code that started it), and in the dialog", async () => {
      const { apis, approvals, events, lastId, state } = setup(true);
      const pending = approvals.approveTool({ ...request('lookup'), itemId: 'ci_1', job: 2 });
      await tick();
      assert.equal((events[0] as { job?: number }).job, 2);
      // The chat moved on: the card joins the newest turn, and says which job asks and where it came from.
      const model = buildTranscript([...demoTurn('turn-1', 'ci_1'), ...demoTurn('turn-2', 'ci_2'), events[0]]);
      const card = model.items[approvalKey(lastId())] as ApprovalView;
      assert.equal(card.turnId, model.turns.at(-1)!.id);
      assert.deepEqual([card.job, card.jobCode, card.status], [2, 'orders = await call_tool("list_orders", customer="ACME", status="open")', 'pending']);
      // Asked while a turn runs, it shows in that turn, and the turn's end leaves it waiting (its job's end settles it).
      const during = demoTurn('turn-3', 'ci_3');
      during.splice(during.length - 1, 0, { ...events[0], approval_id: 'appr_during' } as TranscriptEvent);
      const later = buildTranscript([...demoTurn('turn-1', 'ci_1'), ...during]);
      assert.equal((later.items[approvalKey('appr_during')] as ApprovalView).status, 'pending');
      approvals.resolve(lastId(), 'allow_once');
      assert.equal(await pending, 'allowed');
      state.panel = false;
      apis.answers = ['Allow Once'];
      assert.equal(await approvals.approveTool({ ...request('lookup'), job: 3 }), 'allowed');
      assert.equal(apis.dialogs[0].message, 'CodeAct: Background job 3 asks: allow the tool "lookup"?');
    });

    it("Stop of a turn leaves a background job's approval open; closing the window expires it", async () => {
      const { approvals } = setup(true);
      const fromJob = approvals.approveTool({ ...request('lookup'), job: 1 });
      const fromRun = approvals.approveTool(request('lookup'));
      await tick();
      approvals.expirePending(NO_ANSWER.stopped);
      assert.deepEqual(await fromRun, { unanswered: NO_ANSWER.stopped });
      assert.deepEqual(
        approvals.pendingList().map((p) => p.name),
        ['lookup'],
        "the job's question still waits",
      );
      approvals.expirePending(NO_ANSWER.closed);
      assert.deepEqual(await fromJob, { unanswered: NO_ANSWER.closed });
    });

    it('an answer for an unknown card changes nothing; "deny" denies', async () => {
      const { approvals, lastId } = setup(true);
      const pending = approvals.approveTool(request('lookup'));
      await tick();
      approvals.resolve('appr_nope', 'allow_once');
      approvals.resolve(lastId(), 'deny');
      assert.equal(await pending, 'denied');
    });

    it('Stop and an ended run leave open cards unanswered: "expired" with why, never the person\'s "deny"', async () => {
      const { approvals, events, log } = setup(true);
      const a = approvals.approveTool(request('one'));
      const b = approvals.approveTool(request('two'));
      await tick();
      assert.deepEqual(
        approvals.pendingList().map((p) => p.name),
        ['one', 'two'],
      );
      approvals.expirePending(NO_ANSWER.stopped);
      assert.deepEqual(await Promise.all([a, b]), [{ unanswered: 'no answer: the run was stopped' }, { unanswered: 'no answer: the run was stopped' }]);
      assert.deepEqual(approvals.pendingList(), []);
      const resolved = events.filter((e) => e.type === 'codeact.approval.resolved') as { decision: string; reason?: string }[];
      assert.deepEqual(
        resolved.map((r) => [r.decision, r.reason]),
        [
          ['expired', 'no answer: the run was stopped'],
          ['expired', 'no answer: the run was stopped'],
        ],
      );
      assert.ok(
        log.lines.some((l) => /approval appr_\w+: tool one -> no answer: the run was stopped/.test(l)),
        log.lines.join('\n'),
      );
      assert.ok(!log.lines.some((l) => /-> deny/.test(l)));

      const ac = new AbortController();
      const c = approvals.approveTool(request('three', ac.signal));
      await tick();
      ac.abort();
      assert.deepEqual(await c, { unanswered: 'no answer: the run ended' });

      const done = new AbortController();
      done.abort();
      assert.deepEqual(
        await approvals.approveTool(request('four', done.signal)),
        { unanswered: 'no answer: the run ended' },
        'an already-ended run is not asked',
      );
    });

    it('says when approvals wait (changed), and "Show Pending Approval" with the panel hidden asks in a modal dialog', async () => {
      const { apis, state } = setup(true);
      let changes = 0;
      const watched = new Approvals({ apis, emit: () => undefined, log: new FakeLog(), panelVisible: () => state.panel, changed: () => changes++ });
      const pending = watched.approveTool(request('lookup'));
      await tick();
      assert.equal(changes, 1);
      assert.equal(apis.dialogs.length, 0);
      // The panel was closed since: the dialog asks the same approval.
      apis.answers = ['Allow Once'];
      watched.askInModal(watched.pendingList()[0].id);
      watched.askInModal(watched.pendingList()[0].id);
      assert.equal(await pending, 'allowed');
      assert.equal(apis.dialogs.length, 1, 'one dialog per approval');
      assert.equal(changes, 2);
    });

    it('a code review card may send edited code', async () => {
      const { approvals, lastId } = setup(true);
      const pending = approvals.request({ kind: 'code', code: 'x = 1' });
      await tick();
      approvals.resolve(lastId(), 'allow_once', 'x = 2');
      assert.deepEqual(await pending, { decision: 'allow_once', code: 'x = 2' });
    });
  });

  describe('reviewing the code (codeact.approval.reviewCode)', () => {
    it('adds no beforeRun hook when reviewCode is off', () => {
      const { approvals } = setup();
      assert.equal(approvals.beforeRun(false), undefined);
    });

    it('runs the code when allowed, the edited code when edited, and nothing when denied', async () => {
      const { approvals, lastId, state } = setup(true);
      const rt = new FakeRuntime({ runtime: 'local' });
      const beforeRun = approvals.beforeRun(true);
      assert.equal(rt.kind, 'local');
      assert.equal(rt.sessions.persist, true);

      let run = rt.execute({ code: 'a = 1', sessionId: 's' }, { beforeRun });
      await tick();
      approvals.resolve(lastId(), 'allow_once', 'a = 2');
      assert.equal((await run).status, 'completed');
      assert.deepEqual(
        rt.executed.map((r) => r.code),
        ['a = 2'],
      );
      assert.equal(rt.sessions.has('s'), true, "the reviewed run went to the runtime's session");

      const seen: string[] = [];
      run = rt.execute({ code: 'rm()', itemId: 'exec_9' }, { beforeRun, onEvent: (e) => seen.push(e.type) });
      await tick();
      approvals.resolve(lastId(), 'deny');
      const item = await run;
      assert.equal(item.status, 'failed');
      assert.equal(item.id, 'exec_9');
      assert.deepEqual(item.error, { type: 'Denied', message: 'The user declined to run this code.' });
      assert.deepEqual(
        seen,
        ['response.code_interpreter_call_code.done', 'response.code_interpreter_call.completed', 'response.output_item.done'],
        'a card that never ran closes like every other (notRunItem)',
      );
      assert.equal(rt.executed.length, 1, 'denied code never reaches the runtime');

      state.panel = false;
      await rt.dispose();
      assert.equal(rt.disposed, 1);
    });
  });
});
