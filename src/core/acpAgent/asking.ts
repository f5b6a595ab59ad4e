/**
 * What the ACP door asks the person (core/acpAgent/agent.ts), as ACP permission requests
 * (`session/request_permission`): a managed tool whose policy is `ask` (Allow once, Allow for this session,
 * Deny), an install of packages, and under codeact.approval.reviewCode the code before it runs. Each question
 * carries everything it is about (every argument, all the code, the exact install command), with invisible and
 * bidirectional characters shown as <U+XXXX>, so the person approves only what they can read.
 *
 * A tool's question names that call's own tool call; code review and installs name the execution's (its title and
 * input are put back when it ends). A client that never answers does not
 * hold the agent: the question ends after `answerMs` as no answer, or when the run is stopped; a question the
 * client cancels is no answer either, never a "deny" by the person.
 */
import type { AgentContext, PermissionOption, RequestPermissionRequest, RequestPermissionResponse, ToolCallUpdate } from '@agentclientprotocol/sdk';
import { installDialog } from '../../common/installCommand';
import { revealInvisible } from '../../common/invisibleChars';
import { jobAsks } from '../../common/tools';
import type { ApprovalOutcome, Approver } from '../gateway/gateway';
import { installInfo } from '../runtime/install/approvalText';
import type { InstallApprover } from '../runtime/install/installer';
import type { BeforeRun } from '../runtime/types';

/** How long a question waits for the person by default (the run's clock is paused meanwhile). */
const DEFAULT_ANSWER_MS = 10 * 60_000;
/** Arguments or code longer than this are not asked about: nobody reads that much in a dialog. */
const MAX_SHOWN_CHARS = 100_000;

const ACP_ASKING = {
  tooLong: (what: string) => `${what} is too long to ask the person about (over ${MAX_SHOWN_CHARS.toLocaleString('en-US')} characters)`,
  noAnswer: (ms: number) => `no answer within ${ms < 60_000 ? `${Math.ceil(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`}`,
  cancelled: 'the client cancelled the question',
  stopped: 'no answer: the run was stopped',
};

/** Asks the client one permission request; the option chosen, or why there is none. */
type RequestPermission = (request: RequestPermissionRequest, signal: AbortSignal) => Promise<RequestPermissionResponse>;

/**
 * How a question goes to the client: a stopped run or the question's time cancels it, and the wait ends at once
 * (without `stopWaitingOnCancel` the SDK would go on waiting for the client's answer, which may never come).
 */
export function permissionRequester(client: AgentContext): RequestPermission {
  return (request, signal) => client.request('session/request_permission', request, { cancellationSignal: signal, stopWaitingOnCancel: true });
}

const ALLOW: PermissionOption = { optionId: 'allow', name: 'Allow once', kind: 'allow_once' };
const ALLOW_SESSION: PermissionOption = { optionId: 'allow_session', name: 'Allow for this session', kind: 'allow_always' };
const DENY: PermissionOption = { optionId: 'deny', name: 'Deny', kind: 'reject_once' };

const said = (t: string): NonNullable<ToolCallUpdate['content']>[number] => ({ type: 'content', content: { type: 'text', text: t } });

export class AcpAsking {
  /** Tools allowed "for this session" (for as long as this ACP session lasts). */
  readonly session = new Set<string>();

  constructor(
    private readonly sessionId: string,
    private readonly request: RequestPermission,
    private readonly answerMs = DEFAULT_ANSWER_MS,
  ) {}

  readonly approver: Approver = async (req): Promise<ApprovalOutcome> => {
    const name = req.tool.name;
    if (this.session.has(name)) return 'allowed';
    const args = revealInvisible(JSON.stringify(req.arguments ?? {}, null, 2) ?? '{}');
    if (args.length > MAX_SHOWN_CHARS) return { unanswered: ACP_ASKING.tooLong(`The call's arguments`) };
    const who = req.job === undefined ? 'The code calls' : `${jobAsks(req.job)} (it runs in the background of this session): it calls`;
    const answer = await this.ask(
      {
        // The call's own tool call (./updates shows each managed-tool call as one), not the execution's.
        toolCallId: `${req.itemId}/${req.callId}`,
        title: `Allow the tool "${revealInvisible(name)}"?`,
        content: [said(`${who} the tool "${revealInvisible(name)}", which needs your approval. Its arguments, all of them:\n\n${args}`)],
        rawInput: req.arguments ?? {},
      },
      [ALLOW, ALLOW_SESSION, DENY],
      req.signal,
    );
    if (answer.unanswered !== undefined) return { unanswered: answer.unanswered };
    if (answer.option === 'allow_session') {
      this.session.add(name);
      return 'allowed';
    }
    return answer.option === 'allow' ? 'allowed' : 'denied';
  };

  /** codeact.approval.reviewCode: the code, all of it, then Run or Deny. */
  readonly review: BeforeRun = async (request, signal) => {
    const refuse = (message: string) => ({ error: { type: 'CodeReview', message } });
    if (request.code.length > MAX_SHOWN_CHARS) return refuse(`It did not run: ${ACP_ASKING.tooLong('The code')}.`);
    const answer = await this.ask(
      {
        ...(request.itemId ? { toolCallId: request.itemId } : { toolCallId: 'review' }),
        title: 'Run this Python code?',
        kind: 'execute',
        content: [
          said(
            `The code below asks to run (codeact.approval.reviewCode). All of it (invisible characters shown as <U+XXXX>):\n\n${revealInvisible(request.code)}`,
          ),
        ],
      },
      [
        { optionId: 'run', name: 'Run', kind: 'allow_once' },
        { optionId: 'deny', name: 'Deny', kind: 'reject_once' },
      ],
      signal,
    );
    if (answer.unanswered !== undefined) return refuse(`It did not run: ${answer.unanswered}.`);
    return answer.option === 'run' ? { code: request.code } : refuse('The person denied running this code.');
  };

  /** install_packages: what is installed, where, and the exact command; Install or Don't. */
  readonly install: InstallApprover = async (req) => {
    const dialog = installDialog(installInfo(req));
    const answer = await this.ask(
      { toolCallId: req.itemId, title: dialog.message, content: [said(`${dialog.message}\n\n${dialog.detail}`)], rawInput: { packages: req.packages } },
      [
        { optionId: 'install', name: req.createVenv ? 'Create .venv and install' : 'Install', kind: 'allow_once' },
        { optionId: 'deny', name: "Don't install", kind: 'reject_once' },
      ],
      req.signal,
    );
    if (answer.unanswered !== undefined) return { unanswered: answer.unanswered };
    return answer.option === 'install' ? 'allowed' : 'denied';
  };

  private async ask(toolCall: ToolCallUpdate, options: PermissionOption[], signal?: AbortSignal): Promise<{ option?: string; unanswered?: string }> {
    const timeout = AbortSignal.timeout(this.answerMs);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const r = await this.request({ sessionId: this.sessionId, toolCall, options }, both);
      if (r.outcome.outcome !== 'selected')
        return { unanswered: signal?.aborted ? ACP_ASKING.stopped : timeout.aborted ? ACP_ASKING.noAnswer(this.answerMs) : ACP_ASKING.cancelled };
      const chosen = r.outcome.optionId;
      // Only an option this question offered is an answer (a client cannot pick "for this session" where it was not offered).
      if (!options.some((o) => o.optionId === chosen)) return { unanswered: `the client answered with an option that was not offered` };
      return { option: chosen };
    } catch (e) {
      if (signal?.aborted) return { unanswered: ACP_ASKING.stopped };
      if (timeout.aborted) return { unanswered: ACP_ASKING.noAnswer(this.answerMs) };
      return { unanswered: `no answer: ${(e instanceof Error ? e.message : String(e)).slice(0, 200)}` };
    }
  }
}
