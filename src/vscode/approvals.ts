/**
 * Approvals: a tool marked `ask` (and, with codeact.approval.reviewCode, the code itself) waits for the
 * user, on a card in the chat panel when it is visible, in a modal dialog otherwise. "Allow for This
 * Session" is remembered here; "Always Allow" is saved to the user's settings. VS Code is reached through
 * ./approvals.apis.
 *
 * One dialog at a time: modal approvals and the quick inputs of MCP forms (./elicitations) wait in one line
 * (core/util/oneAtATime), so two requests at once are asked one after the other and each answer goes to its
 * own request. A request answered on its card, or whose run ended, while its dialog waits is never shown.
 *
 * An approval nobody answered before the run ended (Stop, the conversation closed) is recorded as what it
 * is, `expired` with the reason ("no answer: the run was stopped"), never as the person's "deny". While an
 * approval waits, the run's clock is paused (see the gateway), and the host says so (`changed`).
 */
import type { ApprovalDecision, ApprovalResolution, InstallRequestInfo } from '../common/events';
import { installDialog } from '../common/installCommand';
import { installInfo } from '../core/runtime/install/approvalText';
import type { InstallApproval } from '../core/runtime/install/installer';
import type { TranscriptEvent } from '../common/transcript';
import type { ApprovalOutcome, ApprovalRequest } from '../core/gateway/gateway';
import type { ManagedTool } from '../core/gateway/toolSet';
import { allowancesOverride } from '../core/gateway/approvalPolicy';
import type { BeforeRun } from '../core/runtime/types';
import { newId } from '../core/util/ids';
import { forDisplay } from '../common/untrusted';
import { argumentsJson, codeDialog, toolDialog } from './approvalDialog';
import type { ApprovalsApis } from './approvals.apis';
import type { Log } from './controller.apis';
import { Elicitations } from './elicitations';
import { OneAtATime } from '../core/util/oneAtATime';
import { raceAbort } from '../core/util/abort';

/** What is asked: a tool call, or code to review. */
interface ApprovalSubject {
  kind: 'tool' | 'code' | 'install';
  name?: string;
  arguments?: unknown;
  code?: string;
  /** For `install`: the specs, the environment and the command line, all shown. */
  install?: InstallRequestInfo;
  itemId?: string;
  /** The background job that asks (its call_tool), if not the execution itself. */
  job?: number;
}

interface ApprovalAnswer {
  /** The person's decision, or `expired` when nobody answered before the run ended. */
  decision: ApprovalResolution;
  /** For `expired`: what happened ("no answer: the run was stopped"). */
  reason?: string;
  /** The code as the user edited it (a code review's "Edit"). */
  code?: string;
}

/** Why an approval went unanswered. */
export const NO_ANSWER = {
  stopped: 'no answer: the run was stopped',
  closed: 'no answer: the conversation was closed',
  ended: 'no answer: the run ended',
} as const;

interface ApprovalsDeps {
  apis: ApprovalsApis;
  /** Saves an event in the open conversation and tells the listeners (the request and the decision). */
  emit(e: TranscriptEvent): void;
  log: Log;
  /** Can the panel show approval cards right now? */
  panelVisible(): boolean;
  /** The set of pending approvals changed (the host's status bar and inline status say when one waits). */
  changed?(): void;
}

/** A pending approval, as the host's status shows it. */
export interface PendingApprovalInfo {
  id: string;
  kind: 'tool' | 'code' | 'install';
  name?: string;
  itemId?: string;
}

interface PendingApproval {
  resolve: (r: ApprovalAnswer) => void;
  /** Aborts once the approval has its answer (from the card, a dialog, or the run ending). */
  settled: AbortSignal;
  subject: ApprovalSubject;
  /** A modal dialog asks it now (one at a time per approval). */
  modal?: boolean;
}

const OPEN_ARGUMENTS = 'Open Full Arguments';
const OPEN_CODE = 'Open Full Code';
const ALLOW_BUTTONS = ['Allow Once', 'Allow for This Session', 'Always Allow'] as const;

function toolDecision(pick: string | undefined): ApprovalDecision {
  return pick === 'Allow Once' ? 'allow_once' : pick === 'Allow for This Session' ? 'allow_session' : pick === 'Always Allow' ? 'allow_always' : 'deny';
}

export class Approvals {
  private readonly sessionAllowed = new Set<string>();
  private readonly pending = new Map<string, PendingApproval>();
  /** Modal dialogs and quick input forms: one on screen at a time. */
  private readonly dialogs = new OneAtATime();
  /** Forms MCP servers ask for: the same places to ask as approvals (./elicitations). */
  readonly elicitations: Elicitations;

  constructor(private readonly deps: ApprovalsDeps) {
    this.elicitations = new Elicitations({
      emit: deps.emit,
      log: deps.log,
      panelVisible: deps.panelVisible,
      inputApis: () => deps.apis.elicitInput,
      dialogs: this.dialogs,
    });
  }

  /**
   * The gateway's approver of `ask` tools. `modal`: always in a dialog, and not on the open conversation's
   * cards (a notebook cell's call, which belongs to no conversation).
   */
  async approveTool(req: ApprovalRequest, modal = false): Promise<ApprovalOutcome> {
    const job = req.job === undefined ? {} : { job: req.job };
    const { decision, reason } = await this.request(
      { kind: 'tool', name: req.tool.name, arguments: req.arguments, itemId: req.itemId, ...job },
      req.signal,
      modal,
    );
    if (decision === 'expired') return { unanswered: reason ?? NO_ANSWER.ended };
    if (decision === 'allow_session') this.sessionAllowed.add(req.tool.name);
    if (decision === 'allow_always') {
      const list = this.deps.apis.alwaysAllowed();
      if (!list.includes(req.tool.name)) await this.deps.apis.saveAlwaysAllowed([...list, req.tool.name]);
    }
    return decision === 'deny' ? 'denied' : 'allowed';
  }

  /**
   * The code's install_packages (core/runtime/install): asked every time (no "for this session", no "always":
   * each install is its own list of packages), on the card or in a dialog.
   */
  async approveInstall(req: InstallApproval, modal = false): Promise<ApprovalOutcome> {
    const { decision, reason } = await this.request(
      { kind: 'install', name: 'install_packages', install: installInfo(req), itemId: req.itemId },
      req.signal,
      modal,
    );
    if (decision === 'expired') return { unanswered: reason ?? NO_ANSWER.ended };
    return decision === 'deny' ? 'denied' : 'allowed';
  }

  /**
   * The gateway's policy override: a tool on `alwaysAllow` (the settings' list when the gateway is built) or
   * allowed for this session runs without asking (the gateway still lets `deny` win).
   */
  policyOverride(alwaysAllow: readonly string[]): (tool: ManagedTool) => 'auto' | undefined {
    return allowancesOverride(alwaysAllow, this.sessionAllowed);
  }

  /**
   * Asks the user: a card in the panel when it is visible, a modal dialog otherwise. The run ending first
   * (`signal`) leaves it unanswered (`expired`). Every outcome is logged.
   */
  async request(what: ApprovalSubject, signal?: AbortSignal, modal = false): Promise<ApprovalAnswer> {
    const approvalId = newId('appr');
    const emit = (e: TranscriptEvent) => !modal && this.deps.emit(e);
    emit({
      type: 'codeact.approval.requested',
      approval_id: approvalId,
      item_id: what.itemId,
      kind: what.kind,
      name: what.name,
      arguments: what.arguments,
      code: what.code,
      ...(what.install ? { install: what.install } : {}),
      ...(what.job === undefined ? {} : { job: what.job }),
    });
    const settled = new AbortController();
    const answered = new Promise<ApprovalAnswer>((resolve) =>
      this.pending.set(approvalId, {
        resolve: (r) => {
          settled.abort();
          resolve(r);
        },
        settled: settled.signal,
        subject: what,
      }),
    );
    const onAbort = () => this.pending.get(approvalId)?.resolve({ decision: 'expired', reason: NO_ANSWER.ended });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    this.deps.changed?.();
    if (modal || !this.deps.panelVisible()) this.askInModal(approvalId);
    const result = await answered;
    signal?.removeEventListener('abort', onAbort);
    this.pending.delete(approvalId);
    this.deps.changed?.();
    emit({ type: 'codeact.approval.resolved', approval_id: approvalId, decision: result.decision, ...(result.reason ? { reason: result.reason } : {}) });
    const subject = what.kind === 'tool' ? `tool ${what.name}` : what.kind === 'install' ? `install ${what.install?.packages.join(' ')}` : 'code review';
    this.deps.log.info(`approval ${approvalId}: ${subject} -> ${result.decision === 'expired' ? (result.reason ?? NO_ANSWER.ended) : result.decision}`);
    return result;
  }

  /** The approvals waiting for an answer, oldest first; names as shown (invisible characters as `<U+…>` markers). */
  pendingList(): PendingApprovalInfo[] {
    return [...this.pending].map(([id, p]) => ({
      id,
      kind: p.subject.kind,
      name: p.subject.name === undefined ? undefined : forDisplay(p.subject.name, { line: true }),
      itemId: p.subject.itemId,
    }));
  }

  /**
   * Asks a pending approval in a modal dialog (the panel is hidden), in its turn after the dialogs asked
   * before it; whichever answers first, card or dialog, counts.
   */
  askInModal(approvalId: string): void {
    const p = this.pending.get(approvalId);
    if (!p || p.modal) return;
    p.modal = true;
    // Answered elsewhere while its dialog is open (the card, the run ended): the next one need not wait for it.
    void this.dialogs
      .run(() => raceAbort(this.modal(p.subject), p.settled), { signal: p.settled, cancelled: () => undefined })
      .then(
        (answer) => answer && p.resolve(answer),
        () => undefined,
      );
  }

  /**
   * The dialog shows what fits and says what it leaves out; then "Open Full Arguments" (or "Open Full
   * Code") opens everything in a read-only editor and asks again in a notification, which, unlike a
   * modal dialog, leaves the editor free to read.
   */
  private async modal(what: ApprovalSubject): Promise<ApprovalAnswer> {
    const { apis } = this.deps;
    if (what.kind === 'install' && what.install) {
      const dialog = installDialog(what.install);
      const go = what.install.create_venv ? 'Create .venv and Install' : 'Install';
      const pick = await apis.showWarningMessage(dialog.message, { modal: true, detail: dialog.detail }, go);
      return { decision: pick === go ? 'allow_once' : 'deny' };
    }
    if (what.kind === 'code') {
      const dialog = codeDialog(what.code ?? '');
      const pick = await apis.showWarningMessage(dialog.message, { modal: true, detail: dialog.detail }, ...(dialog.clipped ? [OPEN_CODE] : []), 'Run');
      if (pick !== OPEN_CODE) return { decision: pick === 'Run' ? 'allow_once' : 'deny' };
      await apis.showFullText(what.code ?? '', 'python');
      const again = await apis.showWarningMessage('CodeAct: run this code? All of it is open in the editor.', { modal: false }, 'Run', 'Deny');
      return { decision: again === 'Run' ? 'allow_once' : 'deny' };
    }
    const dialog = toolDialog(what.name ?? '', what.arguments, what.job);
    const pick = await apis.showWarningMessage(
      dialog.message,
      { modal: true, detail: dialog.detail },
      ...(dialog.clipped ? [OPEN_ARGUMENTS] : []),
      ...ALLOW_BUTTONS,
    );
    if (pick !== OPEN_ARGUMENTS) return { decision: toolDecision(pick) };
    await apis.showFullText(argumentsJson(what.arguments), 'json');
    const again = await apis.showWarningMessage(
      `${dialog.message.replace(/\?$/, '')}? All of its arguments are open in the editor.`,
      { modal: false },
      ...ALLOW_BUTTONS,
      'Deny',
    );
    return { decision: toolDecision(again) };
  }

  /** The panel answered an approval card. */
  resolve(approvalId: string, decision: ApprovalDecision, code?: string): void {
    this.pending.get(approvalId)?.resolve({ decision, code });
  }

  /** The run ends (Stop, the conversation closed) with approvals unanswered: each is recorded as expired, with why (a job's only on close). */
  expirePending(reason: string): void {
    for (const [, p] of this.pending) {
      // A background job's question is not the stopped run's: it stays open until its job ends, or the window closes.
      if (p.subject.job !== undefined && reason !== NO_ANSWER.closed) continue;
      p.resolve({ decision: 'expired', reason });
    }
  }

  /** With codeact.approval.reviewCode, the hook that shows the user the code before it runs (Run, Edit, Deny); none without. */
  beforeRun(reviewCode: boolean): BeforeRun | undefined {
    if (!reviewCode) return undefined;
    return async (request, signal) => {
      const r = await this.request({ kind: 'code', code: request.code, itemId: request.itemId }, signal);
      if (r.decision === 'deny') return { error: { type: 'Denied', message: 'The user declined to run this code.' } };
      if (r.decision === 'expired') return { error: { type: 'Cancelled', message: `The code did not run (${r.reason ?? NO_ANSWER.ended}).` } };
      return { code: r.code ?? request.code };
    };
  }
}
