/**
 * What the MCP door asks the person (core/mcpServer/server.ts), through the client's MCP elicitation: a managed
 * tool whose policy is `ask` (Allow once, Allow for this session, Deny), an install of packages (install_packages:
 * what, where, the exact command; Install or Don't) and, under codeact.approval.reviewCode, the code itself before
 * it runs. The question carries everything asked about (the tool's arguments, all of them;
 * the code, all of it), so the person approves only what they can read.
 *
 * A client that does not support elicitation cannot ask anyone: the call is refused, saying why (never allowed).
 * A client that never answers does not hold the server: the question ends after `answerMs` as no answer, and
 * when the tool call that asked is cancelled.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { revealInvisible } from '../../common/invisibleChars';
import { jobAsks } from '../../common/tools';
import type { ApprovalOutcome, Approver } from '../gateway/gateway';
import { installDialog } from '../../common/installCommand';
import { installInfo } from '../runtime/install/approvalText';
import type { InstallApprover } from '../runtime/install/installer';
import type { BeforeRun } from '../runtime/types';

/** How long a question waits for the person by default (the run's clock is paused meanwhile). */
const DEFAULT_ANSWER_MS = 10 * 60_000;
/** Arguments or code longer than this are not asked about: nobody reads that much in a dialog. */
const MAX_SHOWN_CHARS = 100_000;

export const MCP_ASKING = {
  noElicitation: (what: string) =>
    `${what} needs the person's approval, and this MCP client cannot ask them (it does not support elicitation). ` +
    "Use a client that supports MCP elicitation, or change the tool's approval policy in codeact.tools (or codeact.approval.alwaysAllow).",
  tooLong: (what: string) => `${what} is too long to ask the person about (over ${MAX_SHOWN_CHARS.toLocaleString('en-US')} characters)`,
  noAnswer: (ms: number) => `no answer within ${ms < 60_000 ? `${Math.ceil(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`}`,
  dismissed: 'the person dismissed the question',
};

/** The client's side of a question: the running tool call it belongs to, when there is one. */
export interface Asked {
  /** The JSON-RPC id of the tools/call that asks (the question goes with it); none: a background job's call. */
  relatedRequestId?: string | number;
  signal?: AbortSignal;
}

export class McpAsking {
  /** Tools allowed "for this session" (for as long as this MCP session lasts). */
  readonly session = new Set<string>();

  constructor(
    private readonly server: Server,
    /** The call in progress for an execution's item id (its approvals go with that call). */
    private readonly callOf: (itemId: string) => Asked | undefined,
    private readonly answerMs = DEFAULT_ANSWER_MS,
  ) {}

  /** The client answers forms (MCP elicitation, form mode). */
  private canAsk(): boolean {
    return !!this.server.getClientCapabilities()?.elicitation?.form;
  }

  readonly approver: Approver = async (req): Promise<ApprovalOutcome> => {
    const name = req.tool.name;
    if (this.session.has(name)) return 'allowed';
    if (!this.canAsk()) return { unanswered: MCP_ASKING.noElicitation(`The tool "${name}"`) };
    // Invisible and bidirectional characters, line separators and control characters are shown as <U+XXXX>: what the
    // person reads is what the tool gets, and no argument can start a line or reorder the text around it.
    const args = revealInvisible(JSON.stringify(req.arguments ?? {}, null, 2) ?? '{}');
    if (args.length > MAX_SHOWN_CHARS) return { unanswered: MCP_ASKING.tooLong(`The call's arguments`) };
    const who = req.job === undefined ? 'The code calls' : `${jobAsks(req.job)} (it runs in the background of this session): it calls`;
    const answer = await this.ask(
      `${who} the tool "${revealInvisible(name)}", which needs your approval. Its arguments, all of them:\n\n${args}`,
      {
        decision: {
          type: 'string',
          title: 'Your answer',
          enum: ['allow', 'allow_session', 'deny'],
          enumNames: ['Allow once', 'Allow for this session', 'Deny'],
        },
      },
      req.itemId,
      req.signal,
    );
    if (typeof answer === 'string') return { unanswered: answer };
    if (answer.decision === 'allow_session') {
      this.session.add(name);
      return 'allowed';
    }
    return answer.decision === 'allow' ? 'allowed' : 'denied';
  };

  /** codeact.approval.reviewCode: the code, all of it, then Run or Deny. */
  readonly review: BeforeRun = async (request, signal) => {
    const refuse = (message: string) => ({ error: { type: 'CodeReview', message } });
    if (!this.canAsk()) return refuse(MCP_ASKING.noElicitation('The code (codeact.approval.reviewCode)'));
    if (request.code.length > MAX_SHOWN_CHARS) return refuse(`It did not run: ${MCP_ASKING.tooLong('The code')}.`);
    const answer = await this.ask(
      `The code below asks to run (codeact.approval.reviewCode). All of it (invisible characters shown as <U+XXXX>):\n\n${revealInvisible(request.code)}`,
      { decision: { type: 'string', title: 'Your answer', enum: ['run', 'deny'], enumNames: ['Run', 'Deny'] } },
      request.itemId,
      signal,
    );
    if (typeof answer === 'string') return refuse(`It did not run: ${answer}.`);
    return answer.decision === 'run' ? { code: request.code } : refuse('The person denied running this code.');
  };

  /** install_packages: what is installed, where, and the exact command (all of it); Install or Don't. */
  readonly install: InstallApprover = async (req) => {
    if (!this.canAsk()) return { unanswered: MCP_ASKING.noElicitation('install_packages') };
    const dialog = installDialog(installInfo(req));
    const shown = revealInvisible(`${dialog.message}\n\n${dialog.detail}`);
    if (shown.length > MAX_SHOWN_CHARS) return { unanswered: MCP_ASKING.tooLong('The install') };
    const answer = await this.ask(
      shown,
      {
        decision: {
          type: 'string',
          title: 'Your answer',
          enum: ['install', 'deny'],
          enumNames: [req.createVenv ? 'Create .venv and install' : 'Install', "Don't install"],
        },
      },
      req.itemId,
      req.signal,
    );
    if (typeof answer === 'string') return { unanswered: answer };
    return answer.decision === 'install' ? 'allowed' : 'denied';
  };

  /** One form with one required choice; the chosen values, or why there is no answer. */
  private async ask(
    message: string,
    properties: Record<string, unknown>,
    itemId: string | undefined,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown> | string> {
    const call = itemId ? this.callOf(itemId) : undefined;
    const signals = [signal, call?.signal].filter((s): s is AbortSignal => !!s);
    try {
      const r = await this.server.elicitInput(
        { mode: 'form', message, requestedSchema: { type: 'object', properties, required: Object.keys(properties) } as never },
        {
          timeout: this.answerMs,
          ...(signals.length ? { signal: AbortSignal.any(signals) } : {}),
          ...(call?.relatedRequestId !== undefined ? { relatedRequestId: call.relatedRequestId } : {}),
        },
      );
      // Declined is the person's no; cancelled (the dialog dismissed) is no answer.
      if (r.action === 'decline') return { decision: 'deny' };
      if (r.action !== 'accept') return MCP_ASKING.dismissed;
      return (r.content ?? {}) as Record<string, unknown>;
    } catch (e) {
      if (signals.some((s) => s.aborted)) return 'no answer: the run was stopped';
      const msg = e instanceof Error ? e.message : String(e);
      return /timed out|timeout/i.test(msg) ? MCP_ASKING.noAnswer(this.answerMs) : `no answer: ${msg.slice(0, 200)}`;
    }
  }
}
