/**
 * The chat page's host side in plain Node (src/vscode/panelHost.ts): the handler table against the page's
 * messages, the ready handshake and the transcript, and what each message does through the seam
 * (src/vscode/panelHost.apis.ts, faked), over a controller on fakes.
 */
import assert from 'node:assert/strict';
import type { HostToWebview, WebviewToHost } from '../../src/common/protocol';
import { parseWebviewMessage } from '../../src/common/protocolCheck';
import { NO_SESSION_TO_RESTART } from '../../src/vscode/dialogs';
import { PanelHost, type PanelHostDeps } from '../../src/vscode/panelHost';
import { FileGoneError, type RewindTurn } from '../../src/vscode/panelOutputs';
import { MANAGE_TRUST, untrustedMessage } from '../../src/vscode/untrusted';
import { FakePanelHostApis, harness, type Harness } from './fakes';
import { SESSION_GONE_NOTICE } from '../../src/vscode/conversationMemory';

const tick = () => new Promise((r) => setImmediate(r));
const PNG = 'iVBORw0KGgo=';

/** One valid message of each type the page may send: a new type does not compile until it has one here. */
const SAMPLES: { [K in WebviewToHost['type']]: WebviewToHost & { type: K } } = {
  ready: { type: 'ready', protocol: 1, seq: 0, conversationId: undefined },
  resync: { type: 'resync', seq: 3, conversationId: 'c_1' },
  scrolled: { type: 'scrolled', conversationId: 'c_1', scroll: { stuck: true } },
  send: { type: 'send', text: 'hello' },
  stop: { type: 'stop' },
  selectModel: { type: 'selectModel', provider: 'openai', model: 'gpt-test' },
  command: { type: 'command', command: 'openSettings', setting: 'codeact.model' },
  approval: { type: 'approval', approvalId: 'ap_1', decision: 'deny' },
  elicitation: { type: 'elicitation', elicitationId: 'el_1', action: 'decline' },
  copy: { type: 'copy', text: 'x = 1' },
  insertCode: { type: 'insertCode', code: 'x = 1' },
  runCode: { type: 'runCode', code: 'x = 1' },
  openFullOutput: { type: 'openFullOutput', itemId: 'exec_1' },
  openFile: { type: 'openFile', itemId: 'exec_1', file: { type: 'file', filename: 'report.csv', file_id: 'file_1' } },
  'image.open': { type: 'image.open', mime: 'image/png', data: PNG, name: 'plot-1.png' },
  'image.save': { type: 'image.save', mime: 'image/png', data: PNG, name: 'plot-1.png' },
  'file.open': { type: 'file.open', itemId: 'exec_1', path: '/tmp/out.csv' },
  'file.save': { type: 'file.save', itemId: 'exec_1', path: '/tmp/out.csv' },
  'file.copyPath': { type: 'file.copyPath', itemId: 'exec_1', path: '/tmp/out.csv' },
  'changes.diff': { type: 'changes.diff', itemId: 'exec_1', path: 'out.csv' },
  'changes.revert': { type: 'changes.revert', itemId: 'exec_1', paths: ['out.csv'] },
  'changes.keep': { type: 'changes.keep', itemId: 'exec_1', paths: ['out.csv'] },
  'exec.rewind': { type: 'exec.rewind', itemId: 'exec_1' },
  'turn.rewind': { type: 'turn.rewind', turnId: 'turn_1' },
  openLink: { type: 'openLink', href: 'https://example.com/' },
  newConversation: { type: 'newConversation' },
  'history.list': { type: 'history.list' },
  'history.open': { type: 'history.open', conversationId: 'c_1' },
  'history.delete': { type: 'history.delete', conversationId: 'c_1' },
  'history.clear': { type: 'history.clear' },
  'history.fromCli': { type: 'history.fromCli' },
  exportNotebook: { type: 'exportNotebook' },
  restartSession: { type: 'restartSession' },
  stopJob: { type: 'stopJob', sessionId: 'c_1', job: 2 },
  detachRun: { type: 'detachRun', sessionId: 'c_1', itemId: 'exec_1' },
  'variables.refresh': { type: 'variables.refresh' },
  'notebook.target': { type: 'notebook.target', uri: 'file:///work/a.ipynb', on: true },
  'notebook.useKernel': { type: 'notebook.useKernel', uri: 'file:///work/a.ipynb' },
  'notebook.reveal': { type: 'notebook.reveal', uri: 'file:///work/a.ipynb', itemId: 'exec_1' },
  'workspace.folder': { type: 'workspace.folder', path: '/work/b' },
  'python.select': { type: 'python.select' },
  webviewError: { type: 'webviewError', message: 'boom' },
};

interface Rig {
  h: Harness;
  apis: FakePanelHostApis;
  host: PanelHost;
  posted: HostToWebview[];
  /** What the notebook kernel and the output actions were asked. */
  asked: unknown[][];
  /** The output actions throw this for a file (default: none). */
  fileError?: Error;
  /** What the rewind dialogs were told of the turn a conversation rewind goes back before. */
  rewindTurns: RewindTurn[];
  /** The person chose to rewind the conversation too (default: the code only). */
  conversationToo?: boolean;
  /** Happens while the rewind dialog is open. */
  whileChoosing?: () => void;
  send(m: unknown): Promise<void>;
  /** The posted messages of a type. */
  of<T extends HostToWebview['type']>(type: T): Array<HostToWebview & { type: T }>;
}

function rig(values: Record<string, unknown> = {}): Rig {
  const h = harness(values);
  const apis = new FakePanelHostApis();
  const posted: HostToWebview[] = [];
  const asked: unknown[][] = [];
  const file = async (what: string, m: unknown): Promise<void> => {
    asked.push([what, m]);
    if (r.fileError) throw r.fileError;
  };
  const notebooks: PanelHostDeps['notebooks'] = {
    turn: () => undefined,
    setTarget: (uri, on) => void asked.push(['setTarget', uri, on]),
    useKernel: async (uri) => void asked.push(['useKernel', uri]),
    revealCell: async (uri, itemId) => void asked.push(['revealCell', uri, itemId]),
  };
  const outputs: PanelHostDeps['outputs'] = {
    openImage: async (m) => (await file('openImage', m), '/tmp/plot-1.png'),
    saveImage: async (m) => (await file('saveImage', m), undefined),
    openFile: (m) => file('openFile', m),
    saveFile: async (m) => (await file('saveFile', m), undefined),
    copyPath: (m) => file('copyPath', m),
    diffChange: (m) => file('diffChange', m),
    revertChanges: async (m) => (await file('revertChanges', m), { reverted: ['out.csv'], failed: [] }),
    keepChanges: async (m) => (await file('keepChanges', m), { reverted: ['out.csv'], failed: [] }),
    rewind: async (m, turn, ready) => {
      await file('rewind', m);
      if (turn) r.rewindTurns.push(turn);
      r.whileChoosing?.();
      ready?.(!!r.conversationToo);
      if (r.conversationToo) return { conversation: true, redone: false, lines: [] };
      const outcome = { python: { restored: true as const }, files: { written: ['out.csv'], removed: [], failed: [] }, redo: 'redo_1' };
      return {
        conversation: false,
        outcome,
        redone: false,
        lines: ['Python state restored.', 'Files: 1 file put back.'],
        note: '[codeact] The user rewound the code to before execution 2.',
      };
    },
  };
  const host = new PanelHost({
    codeact: h.controller,
    notebooks,
    outputs,
    apis,
    post: (m) => posted.push(m),
    scheduler: (flush) => {
      const t = setImmediate(flush);
      return () => clearImmediate(t);
    },
  });
  const r: Rig = {
    h,
    apis,
    host,
    posted,
    asked,
    rewindTurns: [],
    send: (m) => host.onMessage(m),
    of: (type) => posted.filter((m) => m.type === type) as never,
  };
  return r;
}

describe('vscode panel host (fake seams)', () => {
  let r: Rig;
  /** The open conversation (a call: never narrowed by an earlier assertion). */
  const current = () => r.h.controller.currentConversation;
  afterEach(async () => {
    r?.host.dispose();
    await r?.h.controller.shutdown();
    r?.h.cleanup();
  });

  it('the handler table has one row per message the page may send, and the checker lets each of them through', () => {
    r = rig();
    assert.deepEqual(Object.keys(r.host.handlers).sort(), Object.keys(SAMPLES).sort());
    for (const [type, sample] of Object.entries(SAMPLES)) assert.deepEqual(parseWebviewMessage(sample), sample, type);
  });

  it("ready: the host state, the transcript, the input Ask left waiting; then the turn's events in batches", async () => {
    r = rig();
    r.host.setInput('Which orders are late?', true);
    assert.deepEqual([...r.posted], [], 'nothing goes to a page that is not ready');
    await r.send({ type: 'ready', protocol: 1, seq: 0 });
    const [init] = r.of('init');
    assert.equal(init.state.trusted, true);
    assert.equal(init.state.version, '9.9.9');
    assert.deepEqual(r.of('reset')[0].events, []);
    assert.deepEqual(r.of('setInput'), [{ type: 'setInput', text: 'Which orders are late?', send: true }]);
    r.host.setInput('again');
    assert.deepEqual(r.of('setInput').at(-1), { type: 'setInput', text: 'again', send: false }, 'a ready page gets it at once');

    r.posted.length = 0;
    await r.h.controller.runCode('x = 1', 'first run');
    await tick();
    const convo = current()!;
    const [reset] = r.of('reset');
    assert.equal(reset.conversationId, convo.id, 'a new conversation resets the page');
    const streamed = [...reset.events, ...r.of('events').flatMap((b) => b.events)].map((e) => e.type);
    assert.ok(streamed.includes('response.output_item.done'), streamed.join());
    assert.ok(r.of('events').every((b) => b.conversationId === convo.id));
    assert.ok(r.of('state').length > 0, 'the host state follows the turn');

    // A page that saw a gap catches up from its seq; a page of another host's numbering gets it all.
    const last = r.of('events').at(-1)!;
    r.posted.length = 0;
    await r.send({ type: 'resync', seq: last.seq - 1, conversationId: convo.id, epoch: reset.epoch });
    assert.deepEqual([...r.posted], [last]);
    r.posted.length = 0;
    await r.send({ type: 'resync', seq: last.seq, conversationId: convo.id, epoch: 'another host' });
    assert.deepEqual(
      r.posted.map((m) => m.type),
      ['reset'],
    );
    assert.equal(r.of('reset')[0].events.length, convo.events.length);
  });

  it('untrusted: a prompt is refused in the panel with Manage Workspace Trust, Run again with tools with the trust warning; nothing runs', async () => {
    r = rig();
    r.h.apis.trusted = false;
    await r.send({ type: 'send', text: 'hello' });
    assert.deepEqual(r.of('notice'), [
      { type: 'notice', level: 'warning', message: untrustedMessage('Running code'), actions: [{ label: MANAGE_TRUST, command: 'manageTrust' }] },
    ]);
    await r.send({ type: 'runCode', code: 'x = 1' });
    assert.deepEqual(r.apis.calls, [['showUntrusted', 'Running code with tools']]);
    assert.equal(current(), undefined);
    assert.equal(r.h.runtimes.built.length, 0);
  });

  it('history: the list, reopening says a gone session, delete; clear asks first and a refusal deletes nothing', async () => {
    r = rig();
    await r.h.controller.runCode('a = 1', 'first');
    const first = current()!.id;
    await r.send({ type: 'newConversation' });
    assert.equal(current(), undefined);
    await r.send({ type: 'history.list' });
    assert.deepEqual(
      r.of('history')[0].conversations.map((c) => c.id),
      [first],
    );
    await r.send({ type: 'history.open', conversationId: first });
    assert.equal(current()?.id, first);
    assert.ok(r.of('notice')[0].message.includes(SESSION_GONE_NOTICE), r.of('notice')[0].message);

    r.posted.length = 0;
    await r.send({ type: 'history.clear' });
    assert.deepEqual(r.apis.calls, [['showWarningMessage', 'Delete every CodeAct conversation?', { modal: true }, 'Delete All']]);
    assert.equal(r.h.controller.listConversations().length, 1, 'declined: nothing deleted');
    assert.equal(r.of('history')[0].conversations.length, 1);
    r.apis.warningAnswer = 'Delete All';
    await r.send({ type: 'history.clear' });
    assert.deepEqual(r.of('history')[1].conversations, []);
    assert.equal(current(), undefined);

    await r.h.controller.runCode('b = 1', 'second');
    const second = current()!.id;
    await r.send({ type: 'history.delete', conversationId: second });
    assert.deepEqual(r.of('history').at(-1)!.conversations, []);
    assert.equal(current(), undefined);
  });

  it('a malformed message is logged and ignored; a failing handler is logged and shown; no session to restart is said', async () => {
    r = rig();
    await r.send({ type: 'send' });
    await r.send({ type: 'nonsense' });
    assert.deepEqual([...r.posted], []);
    assert.equal(r.h.log.lines.filter((l) => l.startsWith('warn panel: ignored a malformed message')).length, 2);
    await r.send({ type: 'openFullOutput', itemId: 'exec_gone' });
    assert.deepEqual(r.of('notice'), [{ type: 'notice', level: 'error', message: 'That output is no longer available.' }]);
    assert.ok(r.h.log.lines.includes('error panel: openFullOutput failed: That output is no longer available.'));
    await r.send({ type: 'restartSession' });
    assert.deepEqual(r.of('notice').at(-1), { type: 'notice', level: 'info', message: NO_SESSION_TO_RESTART });
    await r.send({ type: 'webviewError', message: 'boom' });
    assert.ok(r.h.log.lines.includes('error panel: boom'));
  });

  it("a run's full output opens in an editor; a file its execution no longer has is marked on its chip, other failures are errors", async () => {
    r = rig();
    r.h.runtimes.setup = (rt) => (rt.script = async () => ({ outputs: [{ type: 'logs', logs: 'hello\n' }] }));
    const item = await r.h.controller.runCode('print("hello")', 'run');
    await r.send({ type: 'openFullOutput', itemId: item.id });
    assert.deepEqual(r.apis.calls.at(-1), ['openText', 'hello\n', 'log']);

    const m = { type: 'file.save', itemId: item.id, path: '/tmp/out.csv' };
    r.fileError = new FileGoneError('/tmp/out.csv', 'out.csv');
    await r.send(m);
    assert.deepEqual(r.of('file.missing'), [{ type: 'file.missing', itemId: item.id, path: '/tmp/out.csv', message: r.fileError.message }]);
    assert.deepEqual(r.of('notice').at(-1), { type: 'notice', level: 'warning', message: r.fileError.message });
    r.fileError = new Error('disk full');
    await r.send({ ...m, type: 'file.copyPath' });
    assert.deepEqual(r.of('notice').at(-1), { type: 'notice', level: 'error', message: 'disk full' });
    assert.equal(r.of('file.missing').length, 1);
    assert.deepEqual(
      r.asked.map((a) => a[0]),
      ['saveFile', 'copyPath'],
    );
  });

  it('the rest go where they belong: VS Code commands, the model choice, clipboard, editor, links, the notebook, the folder, outputs', async () => {
    r = rig();
    for (const type of [
      'command',
      'selectModel',
      'copy',
      'insertCode',
      'openLink',
      'python.select',
      'history.fromCli',
      'notebook.target',
      'notebook.useKernel',
      'notebook.reveal',
      'image.open',
      'image.save',
      'file.open',
    ] as const)
      await r.send(SAMPLES[type]);
    await r.send({ type: 'command', command: 'openSettings' });
    await r.send({ type: 'command', command: 'openWalkthrough' });
    assert.deepEqual(r.apis.calls, [
      ['executeCommand', 'workbench.action.openSettings', 'codeact.model'],
      ['saveModel', 'openai', 'gpt-test'],
      ['writeClipboard', 'x = 1'],
      ['insertCode', 'x = 1'],
      ['openExternal', 'https://example.com/'],
      ['executeCommand', 'codeact.selectPythonEnvironment'],
      ['executeCommand', 'codeact.continueCliConversation'],
      ['executeCommand', 'workbench.action.openSettings', '@ext:codeact.codeact'],
      ['executeCommand', 'workbench.action.openWalkthrough', 'codeact.codeact#codeact.gettingStarted', false],
    ]);
    assert.deepEqual(
      r.asked.map((a) => a[0]),
      ['setTarget', 'useKernel', 'revealCell', 'openImage', 'saveImage', 'openFile'],
    );
    assert.deepEqual([...r.posted], [], 'nothing failed');

    r.h.apis.workspaceFolders = [
      { name: 'a', path: '/work/a' },
      { name: 'b', path: '/work/b' },
    ];
    await r.send(SAMPLES['workspace.folder']);
    assert.equal(r.h.controller.folders.current().folder, '/work/b');
  });

  it('Rewind to here: the card is told what was done (with its redo point), a notice says it, and the model is told at its next turn', async () => {
    r = rig();
    await r.h.controller.runCode('a = 1', 'first');
    const convo = current()!;
    await r.send(SAMPLES['exec.rewind']);
    assert.deepEqual(r.asked.at(-1), ['rewind', { itemId: 'exec_1' }]);
    assert.deepEqual(r.of('exec.rewound'), [
      { type: 'exec.rewound', itemId: 'exec_1', redone: false, lines: ['Python state restored.', 'Files: 1 file put back.'], redo: 'redo_1' },
    ]);
    assert.match(r.of('notice')[0].message, /^Rewound: Python state restored\. Files: 1 file put back\.$/);
    assert.deepEqual(convo.meta.endedNotes, ['[codeact] The user rewound the code to before execution 2.'], 'kept for the next turn (a reload keeps it)');
  });

  it('Rewind to here, the conversation too: it is cut back to before the turn (the rest kept as a branch), the page shows it, the prompt is back', async () => {
    r = rig();
    await r.send(SAMPLES.ready);
    await r.h.controller.runCode('a = 1', 'first');
    await r.h.controller.runCode('a = 2', 'second', 'chat');
    const convo = current()!;
    const itemId = convo.events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item.id] : []))[1];
    r.conversationToo = true;
    await r.send({ type: 'exec.rewind', itemId });
    assert.equal(r.rewindTurns.length, 1);
    assert.deepEqual(r.rewindTurns[0], {
      turn: 2,
      prompt: 'second',
      source: 'chat',
      branchTitle: `${convo.meta.title} (before rewind)`,
      firstExecution: itemId,
    });
    assert.equal(current(), convo, 'the same conversation, cut back');
    assert.equal(convo.events.filter((e) => e.type === 'codeact.turn.started').length, 1);
    const reset = r.of('reset').at(-1)!;
    assert.equal(reset.conversationId, convo.id);
    assert.equal(reset.toEnd, true, 'shown at its end (the turn the page was at may be gone)');
    assert.equal(reset.events.filter((e) => e.type === 'codeact.turn.started').length, 1, 'the page shows the cut conversation');
    assert.deepEqual(r.of('setInput').at(-1), { type: 'setInput', text: r.rewindTurns[0].prompt, send: false });
    assert.deepEqual(r.of('exec.rewound'), [], 'the card went with its turn');
    assert.match(
      r.of('notice').at(-1)!.message,
      /^Rewound the conversation to before turn 2; from there on, 1 turn is kept in History as ".* \(before rewind\)"\.$/,
    );
    const branch = r.h.controller.store.list().find((c) => c.id !== convo.id)!;
    assert.equal(branch.turns, 2, 'the whole conversation is kept as the branch');
    assert.match(
      convo.meta.endedNotes!.at(-1)!,
      /^\[codeact\] The user rewound the conversation to before their message "second" \(turn 2\): 1 turn was taken out .*were not rewound with it\.$/,
    );
  });

  it('a turn that starts while the person chooses: nothing is rewound, no branch is made, and it says so', async () => {
    r = rig();
    await r.h.controller.runCode('a = 1', 'first', 'chat');
    const convo = current()!;
    const slot = (r.h.controller as unknown as { turn: { begin(label: string): AbortSignal; end(): void } }).turn;
    r.conversationToo = true;
    r.whileChoosing = () => void slot.begin('another turn');
    try {
      await assert.rejects(
        async () => r.host.handlers['exec.rewind']({ type: 'exec.rewind', itemId: 'exec_1' }),
        /A turn started while you chose; nothing was rewound\./,
      );
    } finally {
      slot.end();
    }
    assert.equal(convo.events.filter((e) => e.type === 'codeact.turn.started').length, 1);
    assert.equal(r.h.controller.store.list().length, 1, 'no branch');
    assert.equal(convo.meta.endedNotes, undefined, 'the model is told of nothing');
  });

  it("Rewind to here on a turn's message: the code from the turn's first execution, the conversation from before the turn", async () => {
    r = rig();
    await r.send(SAMPLES.ready);
    await r.h.controller.runCode('a = 1', 'first');
    await r.h.controller.runCode('a = 2', 'second');
    const convo = current()!;
    const starts = convo.events.flatMap((e) => (e.type === 'codeact.turn.started' ? [e.turn_id] : []));
    const execs = convo.events.flatMap((e) => (e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call' ? [e.item.id] : []));
    r.conversationToo = true;
    await r.send({ type: 'turn.rewind', turnId: starts[0] });
    assert.deepEqual(r.asked.at(-1), ['rewind', { itemId: execs[0] }]);
    assert.equal(r.rewindTurns[0].turn, 1);
    assert.equal(r.rewindTurns[0].fromTurn, true);
    assert.equal(convo.events.filter((e) => e.type === 'codeact.turn.started').length, 0, 'back to before the first turn');
    assert.deepEqual(r.of('setInput'), [], "a Run with Tools turn's label is not put in the chat box");
    await assert.rejects(
      async () => r.host.handlers['turn.rewind']({ type: 'turn.rewind', turnId: starts[1] }),
      /That turn is no longer in this conversation\./,
    );
  });

  it("a hosted file: downloaded under a progress note, saved where the person says in the chat's folder, then opened; cancelled, nothing opens", async () => {
    r = rig();
    const bytes = new TextEncoder().encode('a,b\n');
    r.h.controller.downloadHostedFile = async () => ({ bytes, filename: 'report.csv' });
    await r.send(SAMPLES.openFile);
    assert.deepEqual(r.apis.names, ['withProgress', 'saveAs']);
    assert.deepEqual(r.apis.calls[0], ['withProgress', 'CodeAct: downloading report.csv…']);
    r.apis.saveTarget = 'file:///work/report.csv';
    await r.send(SAMPLES.openFile);
    assert.deepEqual(r.apis.saved, [{ options: { folders: [r.h.apis.folder], name: 'report.csv', title: 'Save the file from the sandbox' }, bytes }]);
    assert.deepEqual(r.apis.calls.at(-1), ['openUri', 'file:///work/report.csv']);
  });

  it('export as a notebook: none yet says so; else Save As named after the conversation in its folder, the notebook written, Open opens it as one', async () => {
    r = rig();
    await r.send({ type: 'exportNotebook' });
    assert.deepEqual(r.apis.calls, [['showInformationMessage', 'CodeAct: there is no conversation to export yet.']]);
    await r.h.controller.runCode('x = 1', 'Late orders: Q3 / EU!');
    const convo = current()!;
    r.apis.calls.length = 0;
    await r.send({ type: 'exportNotebook', conversationId: convo.id });
    assert.deepEqual(r.apis.names, ['saveAs'], 'cancelled: nothing written or said');
    r.apis.saveTarget = 'file:///work/late.ipynb';
    r.apis.infoAnswer = 'Open';
    await r.send({ type: 'exportNotebook' });
    const [saved] = r.apis.saved;
    assert.deepEqual(saved.options, {
      folders: [convo.meta.workspace, r.h.apis.folder],
      name: 'Late orders Q3  EU.ipynb',
      filters: { 'Jupyter Notebook': ['ipynb'] },
      title: 'Export Conversation as Notebook',
    });
    const nb = JSON.parse(new TextDecoder().decode(saved.bytes)) as { cells: Array<{ source: string[] | string }> };
    assert.ok(nb.cells.some((c) => [c.source].flat().join('').includes('x = 1')));
    assert.deepEqual(r.apis.calls.slice(-2), [
      ['showInformationMessage', 'CodeAct: exported to late.ipynb.', 'Open'],
      ['openUri', 'file:///work/late.ipynb', 'jupyter-notebook'],
    ]);
  });
});
