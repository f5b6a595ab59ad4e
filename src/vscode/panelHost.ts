/**
 * One chat page's host side, without the webview: the ready handshake, append-only event batches (at most one
 * post per frame), the host state when it changed, and every incoming message checked by `parseWebviewMessage`
 * and then answered by its handler. The handlers are a table with one row per message type of `WebviewToHost`
 * (a new message does not compile until its row is written). VS Code is reached through ./panelHost.apis, so
 * test/vscode/ runs a page's messages in plain Node.
 */
import { MODES } from '../common/runtimes';
import { logsOf, type JobChanged } from '../common/events';
import { createEventBatcher, timerScheduler, type EventBatcher, type FrameScheduler } from '../common/eventBatcher';
import { parseWebviewMessage } from '../common/protocolCheck';
import { PROTOCOL_VERSION, type HostCommand, type HostState, type HostToWebview, type TranscriptScroll, type WebviewToHost } from '../common/protocol';
import { forDisplay } from '../common/untrusted';
import type { SettledRows } from '../common/rewind';
import type { StagedSettled } from './stagedReview';
import {
  branchTitle,
  conversationRewindNote,
  cutConversation,
  isMessage,
  turnAt,
  turnOfExecution,
  turnsWere,
  type ConversationCut,
} from '../core/agent/conversationRewind';
import { holdConversation } from '../core/agent/conversationLock';
import { randomToken } from '../core/util/ids';
import type { CodeActController } from './controller';
import { clearHistory, exportNotebook, NO_SESSION_TO_RESTART } from './dialogs';
import { StatePosts } from './hostStateCache';
import type { CodeActNotebookKernel } from './notebook/kernel';
import type { PanelHostApis } from './panelHost.apis';
import { FileGoneError, type PanelOutputs } from './panelOutputs';
import { MANAGE_TRUST, untrustedMessage } from './untrusted';

/** What a page's host reaches: the controller, the notebook kernel, the output actions, VS Code, and the page. */
export interface PanelHostDeps {
  codeact: CodeActController;
  notebooks: Pick<CodeActNotebookKernel, 'turn' | 'setTarget' | 'useKernel' | 'revealCell'>;
  outputs: Pick<PanelOutputs, 'openImage' | 'saveImage' | 'openFile' | 'saveFile' | 'copyPath' | 'diffChange' | 'revertChanges' | 'keepChanges' | 'rewind'>;
  apis: PanelHostApis;
  /** Posts a message to the page. */
  post(message: HostToWebview): void;
  /** When batched events go out (default: a 16 ms timer, one post per frame). */
  scheduler?: FrameScheduler;
}

/** The handler of each message the page may send: exhaustive, so a new message type is a compile error until it has one. */
type PanelHandlers = { [K in WebviewToHost['type']]: (m: WebviewToHost & { type: K }) => unknown };

/** The page's own commands (HostCommand): each the one VS Code command it maps to; the page never names arbitrary ones. */
function hostCommands(apis: PanelHostApis): Record<HostCommand, (setting?: string) => PromiseLike<unknown>> {
  return {
    setApiKey: () => apis.executeCommand('codeact.setApiKey'),
    selectModel: () => apis.executeCommand('codeact.selectModel'),
    declareTools: () => apis.executeCommand('workbench.action.openWorkspaceSettingsFile'),
    // At the setting a failure names (codeact.baseURL, codeact.model…), or all of CodeAct's.
    openSettings: (setting) => apis.executeCommand('workbench.action.openSettings', setting ?? '@ext:codeact.codeact'),
    showLog: () => apis.executeCommand('codeact.showLog'),
    manageTrust: () => apis.executeCommand('workbench.trust.manage'),
    openWalkthrough: () => apis.executeCommand('workbench.action.openWalkthrough', 'codeact.codeact#codeact.gettingStarted', false),
  };
}

export class PanelHost {
  private readonly batcher: EventBatcher;
  private readonly unsubscribe: Array<() => void>;
  private ready = false;
  private pendingInput?: { text: string; send: boolean };
  /** The host state is posted when it changed, not each time something might have changed it. */
  private readonly states = new StatePosts<HostState>();
  private readonly codeact: CodeActController;
  readonly handlers: PanelHandlers;

  constructor(private readonly deps: PanelHostDeps) {
    const codeact = (this.codeact = deps.codeact);
    this.batcher = createEventBatcher((m) => deps.post(m), deps.scheduler ?? timerScheduler(16), {
      conversationId: codeact.currentConversation?.id,
      epoch: randomToken(8),
    });
    this.handlers = this.table();
    this.unsubscribe = [
      codeact.onEvent((e) => {
        if (this.batcher.conversationId !== codeact.currentConversation?.id) this.resetTranscript();
        else this.batcher.push(e);
        if (e.type === 'codeact.job' && e.state !== 'running') this.jobEnded(e);
      }),
      codeact.onState(() => this.pushState().catch((e) => codeact.log.error(`panel: state update failed: ${(e as Error).message}`))),
      codeact.onVariables((v) => {
        if (this.ready)
          deps.post({
            type: 'variables',
            ...(v.sessionId ? { sessionId: v.sessionId } : {}),
            ...(v.label ? { label: v.label } : {}),
            variables: v.summary?.variables ?? [],
            total: v.summary?.total ?? 0,
            ...(v.note ? { note: v.note } : {}),
            ...(v.summary?.checkpoints ? { checkpoints: v.summary.checkpoints } : {}),
          });
      }),
    ];
  }

  /** A job ended: a notification, whose "Show" brings its card into view. */
  private jobEnded(e: JobChanged): void {
    const text = forDisplay(e.message.split('\n')[0], { line: true });
    void Promise.resolve(this.deps.apis.showInformationMessage(`CodeAct: ${text}`, 'Show')).then(async (pick) => {
      if (pick !== 'Show') return;
      await this.deps.apis.executeCommand('codeact.chat.focus'); // the panel's view (chatPanel.ts VIEW_ID)
      this.post({ type: 'revealJob', sessionId: e.session_id, job: e.job });
    });
  }

  private post(message: HostToWebview): void {
    this.deps.post(message);
  }

  private notice(level: 'info' | 'warning' | 'error', message: string): void {
    this.post({ type: 'notice', level, message });
  }

  private async pushState(): Promise<void> {
    if (!this.ready) return;
    if (this.batcher.conversationId !== this.codeact.currentConversation?.id) this.resetTranscript();
    const state = await this.states.changed(() => this.codeact.hostState());
    if (state) this.post({ type: 'state', state });
  }

  /** Tells the card what a Revert or Keep did, and the person how many files it did it to (the rows say which and why: file names are the code's). */
  private settled(itemId: string, done: SettledRows | undefined, verb: 'revert' | 'keep') {
    if (!done) return;
    this.post({ type: 'changes.reverted', itemId, ...done, ...(verb === 'keep' ? { kept: true } : {}) });
    const files = (k: number) => `${k} file${k === 1 ? '' : 's'}`;
    const [did, where, could] = verb === 'keep' ? ['Kept', ' in the workspace', 'kept'] : ['Reverted', ' to before the execution', 'reverted'];
    if (done.failed.length)
      this.notice(
        'warning',
        `${did} ${files(done.reverted.length)}${verb === 'keep' ? where : ''}; ${files(done.failed.length)} could not be ${could}: the card says why.`,
      );
    else this.notice('info', `${did} ${files(done.reverted.length)}${where}.`);
  }

  /** Files Review Staged Changes kept or reverted: each card of this conversation that lists one as staged shows it so. */
  stagedSettled(e: StagedSettled): void {
    if (!this.ready) return;
    const rows = new Set(e.done.reverted);
    for (const ev of this.codeact.currentConversation?.events ?? []) {
      if (ev.type !== 'response.output_item.done' || ev.item.type !== 'code_interpreter_call' || !ev.item.changes?.staged) continue;
      const reverted = ev.item.changes.changes.filter((c) => rows.has(c.path)).map((c) => c.path);
      if (reverted.length) this.post({ type: 'changes.reverted', itemId: ev.item.id, reverted, failed: [], ...(e.verb === 'keep' ? { kept: true } : {}) });
    }
  }

  /**
   * "Rewind to here" from an execution's card (`itemId`; `redo`: its Redo) or a turn's message (`turnId`): the person
   * chooses the code, the conversation or both (./panelOutputs); the conversation is cut back to before the turn
   * (core/agent/conversationRewind), the page shown it, the turn's prompt put back in the chat box; the model is told.
   */
  private async rewind(m: { itemId?: string; redo?: string; turnId?: string }): Promise<void> {
    const s = this.codeact;
    // The model would go on building on the state the rewind changes under it.
    if (s.busy) throw new Error('Wait for the turn to end (or stop it), then rewind.');
    const convo = s.currentConversation;
    const turnId = m.turnId ?? (convo && m.itemId && m.redo === undefined ? turnOfExecution(convo.events, m.itemId) : undefined);
    const at = convo && turnId ? turnAt(convo.events, turnId) : undefined;
    if (m.turnId && !at) throw new Error('That turn is no longer in this conversation.');
    const first = at?.firstExecution;
    // From a turn: the code goes back to before its first execution.
    const itemId = m.itemId ?? first;
    // The conversation is this window's while it is cut (a `codeact chat --continue` of it is refused meanwhile).
    let release: (() => void) | undefined;
    try {
      const done = await this.deps.outputs.rewind(
        { itemId: itemId ?? '', ...(m.redo !== undefined ? { redo: m.redo } : {}) },
        at && convo ? { ...at, branchTitle: branchTitle(convo.meta.title), ...(m.turnId ? { fromTurn: true } : {}) } : undefined,
        (conversation) => {
          if (s.busy) throw new Error('A turn started while you chose; nothing was rewound. Rewind again once it ends.');
          // Another process holding it (a turn of `codeact chat`) refuses the rewind before anything changes.
          if (conversation && convo) release = holdConversation(convo.id, convo.file);
        },
      );
      if (!done) return;
      let cut: ConversationCut | undefined;
      let notCut: string | undefined;
      if (done.conversation && convo && turnId)
        try {
          cut = cutConversation(s.store, convo, turnId);
        } catch (e) {
          notCut = (e as Error).message;
        }
      const note = cut ? conversationRewindNote(cut, done.note) : done.note;
      if (note) s.noteForModel(note, convo?.id);
      const code = done.outcome ? done.lines.join(' ') : '';
      const partly = notCut !== undefined || (done.outcome && (!done.outcome.python.restored || 'why' in done.outcome.files));
      if (cut) {
        // The page shows the conversation as it is now, at its end (the turn it was at may be gone); a message of the
        // turn gone back before is in the chat box again.
        if (convo) s.memory.rememberScroll(convo.id, { stuck: true });
        this.resetTranscript(true);
        if (isMessage(cut.source)) this.setInput(cut.prompt);
        const where = `${turnsWere(cut.removed, 'is')} kept in History as "${forDisplay(cut.branchTitle, { line: true })}".`;
        this.notice(partly ? 'warning' : 'info', `Rewound the conversation to before turn ${cut.turn}; from there on, ${where}${code ? ` Code: ${code}` : ''}`);
        return;
      }
      if (done.outcome && itemId) {
        const redo = done.outcome.redo;
        this.post({ type: 'exec.rewound', itemId, redone: done.redone, lines: done.lines, ...(redo ? { redo } : {}) });
      }
      const said = notCut !== undefined ? ` The conversation was not rewound: ${notCut}` : '';
      this.notice(partly ? 'warning' : 'info', `${done.redone ? 'Redone' : 'Rewound'}: ${code}${said}`);
    } finally {
      release?.();
    }
  }

  /** The whole transcript of the open conversation (`reset`), numbered from `seq`. */
  private postReset(seq: number, toEnd = false): void {
    const convo = this.codeact.currentConversation;
    this.post({
      type: 'reset',
      conversationId: convo?.id,
      title: convo?.meta.title,
      seq,
      events: convo ? [...convo.events] : [],
      epoch: this.batcher.epoch,
      ...(toEnd ? { toEnd } : this.scrollOf(convo?.id)),
    });
  }

  private resetTranscript(toEnd = false): void {
    this.batcher.reset(this.codeact.currentConversation?.id, 0);
    this.postReset(0, toEnd);
  }

  /** The batches the page missed, or the whole transcript (`reset`) when they are gone or the page asks for it all. */
  private catchUp(seq: number, conversationId: string | undefined, epoch: string | undefined, full = false): void {
    // A page whose seq is of another epoch (it was last in sync with an extension host that has since
    // restarted) gets the whole transcript: the new host's seq 0 is not the old host's.
    const replay = full ? undefined : this.batcher.replaySince(seq, conversationId, epoch);
    if (replay && conversationId === this.codeact.currentConversation?.id) for (const m of replay) this.post(m);
    else {
      this.batcher.flush();
      this.postReset(this.batcher.seq);
    }
  }

  private scrollOf(id: string | undefined): { scroll?: TranscriptScroll } {
    const scroll = this.codeact.memory.scrollOf(id);
    return scroll ? { scroll } : {};
  }

  /** A message from the page: checked, then handled; a handler's failure is logged and shown in the panel. */
  async onMessage(raw: unknown): Promise<void> {
    const m = parseWebviewMessage(raw);
    if (!m) {
      this.codeact.log.warn(`panel: ignored a malformed message ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    try {
      await (this.handlers[m.type] as (m: WebviewToHost) => unknown)(m);
    } catch (err) {
      const message = (err as Error).message;
      this.codeact.log.error(`panel: ${m.type} failed: ${message}`);
      this.notice('error', message);
    }
  }

  private table(): PanelHandlers {
    const s = this.codeact;
    const { apis, notebooks, outputs } = this.deps;
    const commands = hostCommands(apis);
    const history = () => this.post({ type: 'history', conversations: s.listConversations() });
    /** A file action on a file the execution no longer has: the card says so, and a notice. */
    const fileAction =
      (act: (m: WebviewToHost & { type: 'file.open' | 'file.save' | 'file.copyPath' }) => PromiseLike<unknown>) =>
      async (m: WebviewToHost & { type: 'file.open' | 'file.save' | 'file.copyPath' }) => {
        try {
          await act(m);
        } catch (err) {
          if (!(err instanceof FileGoneError)) throw err;
          this.post({ type: 'file.missing', itemId: m.itemId, path: m.path, message: err.message });
          this.notice('warning', err.message);
        }
      };
    return {
      ready: async (m) => {
        this.ready = true;
        this.post({ type: 'init', protocol: PROTOCOL_VERSION, state: await this.states.initial(() => s.hostState()) });
        this.catchUp(m.seq, m.conversationId, m.epoch, m.full === true);
        void s.refreshVariables();
        // A reload brought the conversation back, but not its Python session (unless a session host kept it): said once.
        const restored = await s.restoredNotice();
        if (restored) this.notice('info', restored);
        // Jobs that went on in the session host while no window was attached: their output, whole and in order.
        await s.replayJobs();
        // (An untrusted workspace is shown by the page's own empty state, from HostState.trusted.)
        if (this.pendingInput) {
          this.post({ type: 'setInput', ...this.pendingInput });
          this.pendingInput = undefined;
        }
      },
      resync: (m) => this.catchUp(m.seq, m.conversationId, m.epoch),
      scrolled: (m) => s.memory.rememberScroll(m.conversationId, m.scroll),
      send: async (m) => {
        // Asked before the notebook's part of the turn is made; the refusal is the controller's (its send asks again).
        const refused = s.trustGate('Running code', 'prompt');
        if (refused) {
          this.post({ type: 'notice', level: 'warning', message: untrustedMessage(refused.what), actions: [{ label: MANAGE_TRUST, command: 'manageTrust' }] });
          return;
        }
        await s.send(m.text, 'chat', !MODES[s.settings.mode].ourRuntime ? undefined : { notebook: notebooks.turn() });
      },
      'notebook.target': (m) => notebooks.setTarget(m.uri, m.on),
      'notebook.useKernel': (m) => notebooks.useKernel(m.uri),
      'notebook.reveal': (m) => notebooks.revealCell(m.uri, m.itemId),
      'workspace.folder': (m) => s.pickFolder(m.path),
      'python.select': () => apis.executeCommand('codeact.selectPythonEnvironment'),
      stop: () => s.stop(),
      selectModel: (m) => apis.saveModel(m.provider, m.model),
      command: (m) => commands[m.command](m.setting),
      approval: (m) => s.approvals.resolve(m.approvalId, m.decision, m.code),
      elicitation: (m) => s.approvals.elicitations.answer(m.elicitationId, m.action, m.content),
      copy: (m) => apis.writeClipboard(m.text),
      insertCode: (m) => apis.insertCode(m.code),
      runCode: async (m) => {
        const refused = s.trustGate('Running code with tools');
        if (refused) return apis.showUntrusted(refused.what);
        await s.runCode(m.code, 'Run again with tools', 'chat');
      },
      openFullOutput: async (m) => {
        const item = s.fullOutput(m.itemId);
        if (!item) throw new Error('That output is no longer available.');
        await apis.openText(logsOf(item, m.stream ?? 'both'), 'log');
      },
      openFile: async (m) => {
        const name = forDisplay(m.file.filename ?? m.file.file_id ?? 'the file', { line: true });
        const { bytes, filename } = await apis.withProgress(`CodeAct: downloading ${name}…`, () => s.downloadHostedFile(m.file));
        const target = await apis.saveAs({ folders: [s.folders.current().folder], name: filename, title: 'Save the file from the sandbox' }, () => bytes);
        if (target) await apis.openUri(target);
      },
      'image.open': (m) => outputs.openImage(m),
      'image.save': (m) => outputs.saveImage(m),
      'file.open': fileAction((m) => outputs.openFile(m)),
      'file.save': fileAction((m) => outputs.saveFile(m)),
      'file.copyPath': fileAction((m) => outputs.copyPath(m)),
      'changes.diff': (m) => outputs.diffChange(m),
      'changes.revert': async (m) => this.settled(m.itemId, await outputs.revertChanges(m), 'revert'),
      'changes.keep': async (m) => this.settled(m.itemId, await outputs.keepChanges(m), 'keep'),
      'exec.rewind': (m) => this.rewind(m),
      'turn.rewind': (m) => this.rewind({ turnId: m.turnId }),
      openLink: (m) => apis.openExternal(m.href),
      newConversation: () => s.newConversation(),
      'history.list': history,
      'history.open': async (m) => {
        const { notice } = await s.openConversation(m.conversationId);
        if (notice) this.notice('info', notice);
        if (this.batcher.conversationId !== s.currentConversation?.id) this.resetTranscript();
        await s.replayJobs();
      },
      restartSession: async (m) => {
        if (!(await s.restartSession(m.sessionId))) this.notice('info', NO_SESSION_TO_RESTART);
      },
      stopJob: async (m) => {
        try {
          await s.stopJob(m.sessionId, m.job);
        } catch (err) {
          this.notice('warning', (err as Error).message);
        }
      },
      detachRun: async (m) => {
        try {
          await s.detachRun(m.sessionId, m.itemId);
        } catch (err) {
          this.notice('warning', (err as Error).message);
        }
      },
      'variables.refresh': () => s.refreshVariables(),
      'history.delete': (m) => {
        s.deleteConversation(m.conversationId);
        history();
      },
      'history.clear': async () => {
        await clearHistory(s, apis);
        history();
      },
      'history.fromCli': () => apis.executeCommand('codeact.continueCliConversation'),
      exportNotebook: (m) => exportNotebook(s, apis, m.conversationId),
      webviewError: (m) => s.log.error(`panel: ${m.message}`),
    };
  }

  /** Puts text in the page's input box (Ask Agent with Tools…), once the page is ready. */
  setInput(text: string, send = false): void {
    if (this.ready) this.post({ type: 'setInput', text, send });
    else this.pendingInput = { text, send };
  }

  dispose(): void {
    this.batcher.dispose();
    for (const u of this.unsubscribe) u();
  }
}
