import * as assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../src/common/transcript';
import type { ApprovalRequest } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { Approvals } from '../../src/vscode/approvals';
import { FakeApprovalsApis, FakeLog, FakeRuntime } from './fakes';

function tool(name: string): ManagedTool {
  return { name, description: '', inputSchema: { type: 'object' }, approval: 'ask', expose: 'code', source: 'command', invoke: async () => null };
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
      assert.equal(await approvals.approveTool(request('lookup')), true);
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined);
      assert.equal(await approvals.approveTool(request('lookup')), true);
      assert.equal(apis.dialogs.length, 2);
      assert.equal(apis.dialogs[0].message, 'CodeAct: allow the tool "lookup"?');
      assert.deepEqual(apis.dialogs[0].items, ['Allow Once', 'Allow for This Session', 'Always Allow']);
      assert.match(apis.dialogs[0].detail!, /^Arguments:\n\{\n {2}"q": 1\n\}$/);
      assert.deepEqual(apis.saved, []);
    });

    it('"Allow for This Session" lets that tool (only) run without asking from then on', async () => {
      const { apis, approvals } = setup();
      apis.answers = ['Allow for This Session'];
      assert.equal(await approvals.approveTool(request('lookup')), true);
      const override = approvals.policyOverride([]);
      assert.equal(override(tool('lookup')), 'auto');
      assert.equal(override(tool('other')), undefined);
      assert.deepEqual(apis.saved, [], 'not saved to the settings');
    });

    it('"Always Allow" saves the tool to the user\'s alwaysAllow once, keeping what is there', async () => {
      const { apis, approvals } = setup();
      apis.always = ['first'];
      apis.answers = ['Always Allow', 'Always Allow'];
      assert.equal(await approvals.approveTool(request('lookup')), true);
      assert.equal(await approvals.approveTool(request('lookup')), true);
      assert.deepEqual(apis.saved, [['first', 'lookup']]);
      assert.equal(approvals.policyOverride(['lookup'])(tool('lookup')), 'auto');
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined, 'the gateway reads alwaysAllow from the settings it was built with');
    });

    it('a dismissed dialog denies', async () => {
      const { apis, approvals, events, log } = setup();
      apis.answers = [undefined];
      assert.equal(await approvals.approveTool(request('lookup')), false);
      assert.equal(approvals.policyOverride([])(tool('lookup')), undefined);
      const resolved = events.find((e) => e.type === 'codeact.approval.resolved') as { decision: string };
      assert.equal(resolved.decision, 'deny');
      assert.ok(log.lines.some((l) => /approval appr_\w+: tool lookup -> deny/.test(l)), log.lines.join('\n'));
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
    it('waits for the panel\'s answer; the request and the decision are events', async () => {
      const { apis, approvals, events, lastId } = setup(true);
      const pending = approvals.approveTool(request('lookup'));
      await tick();
      const requested = events[0] as { type: string; kind: string; name: string; item_id: string; arguments: unknown };
      assert.deepEqual([requested.type, requested.kind, requested.name, requested.item_id, requested.arguments], ['codeact.approval.requested', 'tool', 'lookup', 'exec_1', { q: 1 }]);
      approvals.resolve(lastId(), 'allow_session');
      assert.equal(await pending, true);
      assert.equal(apis.dialogs.length, 0, 'no modal while the panel shows cards');
      assert.deepEqual(
        events.map((e) => e.type),
        ['codeact.approval.requested', 'codeact.approval.resolved'],
      );
      assert.equal(approvals.policyOverride([])(tool('lookup')), 'auto');
    });

    it('an answer for an unknown card changes nothing; "deny" denies', async () => {
      const { approvals, lastId } = setup(true);
      const pending = approvals.approveTool(request('lookup'));
      await tick();
      approvals.resolve('appr_nope', 'allow_once');
      approvals.resolve(lastId(), 'deny');
      assert.equal(await pending, false);
    });

    it('Stop (denyPending) and an aborted run answer open cards "deny"', async () => {
      const { approvals } = setup(true);
      const a = approvals.approveTool(request('one'));
      const b = approvals.approveTool(request('two'));
      await tick();
      approvals.denyPending();
      assert.deepEqual(await Promise.all([a, b]), [false, false]);

      const ac = new AbortController();
      const c = approvals.approveTool(request('three', ac.signal));
      await tick();
      ac.abort();
      assert.equal(await c, false);

      const done = new AbortController();
      done.abort();
      assert.equal(await approvals.approveTool(request('four', done.signal)), false, 'an already-aborted run is denied at once');
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
    it('is the runtime itself when reviewCode is off', () => {
      const { approvals } = setup();
      const rt = new FakeRuntime({ runtime: 'local' });
      assert.equal(approvals.reviewing(rt, false), rt);
    });

    it('runs the code when allowed, the edited code when edited, and nothing when denied', async () => {
      const { approvals, lastId, state } = setup(true);
      const rt = new FakeRuntime({ runtime: 'local' });
      const reviewed = approvals.reviewing(rt, true);
      assert.equal(reviewed.kind, 'local');
      assert.equal(reviewed.statePersists, true);

      let run = reviewed.execute({ code: 'a = 1', sessionId: 's' });
      await tick();
      approvals.resolve(lastId(), 'allow_once', 'a = 2');
      assert.equal((await run).status, 'completed');
      assert.deepEqual(
        rt.executed.map((r) => r.code),
        ['a = 2'],
      );
      assert.equal(reviewed.hasSession!('s'), true, 'session methods go to the runtime');

      const seen: string[] = [];
      run = reviewed.execute({ code: 'rm()', itemId: 'exec_9' }, { onEvent: (e) => seen.push(e.type) });
      await tick();
      approvals.resolve(lastId(), 'deny');
      const item = await run;
      assert.equal(item.status, 'failed');
      assert.equal(item.id, 'exec_9');
      assert.deepEqual(item.error, { type: 'Denied', message: 'The user declined to run this code.' });
      assert.deepEqual(seen, ['response.code_interpreter_call.completed', 'response.output_item.done']);
      assert.equal(rt.executed.length, 1, 'denied code never reaches the runtime');

      state.panel = false;
      await reviewed.dispose();
      assert.equal(rt.disposed, 1);
    });
  });
});
