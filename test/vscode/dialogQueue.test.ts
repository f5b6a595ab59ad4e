/**
 * One dialog at a time in VS Code (issue 31, point 2): modal approvals and MCP forms in quick inputs, asked
 * for two requests at once, are shown one after the other and each answer goes to its own request; a request
 * answered on its card, or whose run ended, while its dialog waits is never shown. The VS Code seams are
 * fakes that keep every dialog open until the test answers it.
 */
import * as assert from 'node:assert/strict';
import type { ElicitationAnswer, ElicitationPrompt } from '../../src/common/elicitation';
import type { TranscriptEvent } from '../../src/common/transcript';
import type { ApprovalRequest } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { managedTool } from '../support/managedTool';
import { Approvals } from '../../src/vscode/approvals';
import type { ApprovalsApis } from '../../src/vscode/approvals.apis';
import type { ElicitInputApis } from '../../src/vscode/elicitQuickInput';
import { FakeLog } from './fakes';

/** A dialog on screen: what it says, and how to answer it. */
interface OpenDialog {
  message: string;
  detail?: string;
  answer(pick: string | undefined): void;
}

/** VS Code's dialogs and quick inputs, each held open until answered. */
class HeldDialogs implements ApprovalsApis {
  readonly open: OpenDialog[] = [];
  /** Every dialog ever shown, in order. */
  readonly shown: string[] = [];
  private show(message: string, detail?: string): Promise<string | undefined> {
    this.shown.push(message);
    return new Promise((resolve) => {
      const d: OpenDialog = {
        message,
        detail,
        answer: (pick) => {
          this.open.splice(this.open.indexOf(d), 1);
          resolve(pick);
        },
      };
      this.open.push(d);
    });
  }
  showWarningMessage(message: string, options: { modal: boolean; detail?: string }): Promise<string | undefined> {
    return this.show(message, options.detail);
  }
  alwaysAllowed(): string[] {
    return [];
  }
  async saveAlwaysAllowed(): Promise<void> {}
  async showFullText(): Promise<void> {}
  readonly elicitInput: ElicitInputApis = {
    showInformationMessage: (message, options) => this.show(message, options.detail),
    showQuickPick: () => Promise.resolve(undefined),
    showInputBox: (options) => this.show(options.title),
  };
}

function tool(name: string): ManagedTool {
  return managedTool({ name, approval: 'ask', source: 'command' });
}

function request(name: string, signal = new AbortController().signal): ApprovalRequest {
  return { tool: tool(name), arguments: { q: name }, itemId: 'exec_1', callId: `call_${name}`, signal };
}

function form(server: string, signal = new AbortController().signal): ElicitationPrompt {
  return {
    id: `elicit_${server}`,
    server: `MCP server "${server}"`,
    message: `${server} asks`,
    fields: [{ key: 'name', title: 'Name', kind: 'string', required: true }],
    signal,
    check: () => ({}),
  };
}

/** Lets every pending promise callback run. */
const settle = () => new Promise((r) => setImmediate(r));

function setup(panel = false) {
  const apis = new HeldDialogs();
  const events: TranscriptEvent[] = [];
  const state = { panel };
  const approvals = new Approvals({ apis, emit: (e) => events.push(e), log: new FakeLog(), panelVisible: () => state.panel });
  return { apis, approvals, events, state };
}

describe('vscode: one dialog at a time, each answer to its own request', () => {
  it('two tool approvals at once (panel hidden): the second dialog opens only once the first is answered, and each gets its own answer', async () => {
    const { apis, approvals } = setup();
    const first = approvals.approveTool(request('first'));
    const second = approvals.approveTool(request('second'));
    await settle();
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['CodeAct: allow the tool "first"?'],
      'one dialog on screen',
    );
    apis.open[0].answer('Allow Once');
    assert.equal(await first, 'allowed');
    await settle();
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['CodeAct: allow the tool "second"?'],
    );
    apis.open[0].answer(undefined);
    assert.equal(await second, 'denied');
  });

  it('an approval answered on its card, or whose run ended, while its dialog waits is never shown', async () => {
    const { apis, approvals, events, state } = setup();
    const stop = new AbortController();
    const first = approvals.approveTool(request('first'));
    const stopped = approvals.approveTool(request('stopped', stop.signal));
    const carded = approvals.approveTool(request('carded'));
    await settle();
    assert.equal(apis.open.length, 1);
    stop.abort();
    // The panel shows again and its card answers the third request.
    state.panel = true;
    const cardId = (events.filter((e) => e.type === 'codeact.approval.requested') as Array<{ approval_id: string; name?: string }>).find(
      (e) => e.name === 'carded',
    )!.approval_id;
    approvals.resolve(cardId, 'allow_once');
    // A repeated or stale answer, and one for no request, decide nothing more.
    approvals.resolve(cardId, 'deny');
    approvals.resolve('appr_unknown', 'deny');
    assert.deepEqual(await stopped, { unanswered: 'no answer: the run ended' });
    assert.equal(await carded, 'allowed');
    apis.open[0].answer('Allow Once');
    assert.equal(await first, 'allowed');
    await settle();
    assert.deepEqual(apis.shown, ['CodeAct: allow the tool "first"?'], 'the waiting dialogs were never shown');
    assert.equal(apis.open.length, 0);
  });

  it("two MCP forms and an approval at once: one quick input or dialog at a time, each answer to its own server's form", async () => {
    const { apis, approvals } = setup();
    const elicit = approvals.elicitations.elicitor(true);
    const approval = approvals.approveTool(request('lookup'));
    const one = elicit(form('one'));
    const two = elicit(form('two'));
    await settle();
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['CodeAct: allow the tool "lookup"?'],
    );
    apis.open[0].answer('Allow Once');
    assert.equal(await approval, 'allowed');
    await settle();
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['The MCP server "one" asks for input'],
    );
    apis.open[0].answer('Fill In…');
    await settle();
    // The first form's field is asked before the second form is shown at all.
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['MCP server "one": Name (required) (1/1)'],
    );
    apis.open[0].answer('Ada');
    assert.deepEqual(await one, { action: 'accept', content: { name: 'Ada' } } satisfies ElicitationAnswer);
    await settle();
    assert.deepEqual(
      apis.open.map((d) => d.message),
      ['The MCP server "two" asks for input'],
    );
    apis.open[0].answer('Decline');
    assert.deepEqual(await two, { action: 'decline' });
  });
});
