/**
 * Forms MCP servers ask the person to fill in (elicitation), in VS Code: a form in the code card of the
 * execution whose tool call asked, when the panel is visible and the run is the panel's; a quick input
 * sequence otherwise (a notebook cell, Run with Tools with the panel closed). Core bounds the form, makes
 * its text safe to show, checks the answer against the requested schema, and pauses the clocks meanwhile.
 */
import type { ElicitationAnswer, ElicitationPrompt, Elicitor, ElicitValues } from '../common/elicitation';
import type { TranscriptEvent } from '../common/transcript';
import { quickInputElicitor, type ElicitInputApis } from './elicitQuickInput';
import type { Log } from './controller.apis';
import type { OneAtATime } from '../core/util/oneAtATime';

interface ElicitationsDeps {
  /** Saves an event in the open conversation and tells the listeners. */
  emit(e: TranscriptEvent): void;
  log: Log;
  /** Can the panel show the form right now? */
  panelVisible(): boolean;
  /** VS Code's quick input; undefined where there is none (a form then is cancelled, and logged). */
  inputApis(): ElicitInputApis | undefined;
  /** The line of dialogs (shared with modal approvals): a quick input form is asked in its turn. */
  dialogs: OneAtATime;
}

/** How many answers the panel may send that do not pass, before the form is cancelled. */
const MAX_PANEL_ANSWERS = 20;

export class Elicitations {
  private readonly waiting = new Map<string, (a: ElicitationAnswer) => void>();

  constructor(private readonly deps: ElicitationsDeps) {}

  /** The gateway's elicitor. `modal`: never in the panel (a notebook cell's calls belong to no conversation). */
  elicitor(modal = false): Elicitor {
    return (p) => {
      if (!modal && p.itemId && this.deps.panelVisible()) return this.inPanel(p);
      const apis = this.deps.inputApis();
      // In its turn: never while another form or an approval dialog is on screen (quick inputs replace each other).
      if (apis)
        return this.deps.dialogs.run(() => quickInputElicitor(apis)(p), { signal: p.signal, cancelled: (): ElicitationAnswer => ({ action: 'cancel' }) });
      this.deps.log.warn(`${p.server} asked for input, and nothing here can ask you: cancelled`);
      return Promise.resolve({ action: 'cancel' });
    };
  }

  /** The panel answered a form. */
  answer(id: string, action: ElicitationAnswer['action'], content?: ElicitValues): void {
    this.waiting.get(id)?.(action === 'accept' ? { action, content: content ?? {} } : { action });
  }

  private async inPanel(p: ElicitationPrompt): Promise<ElicitationAnswer> {
    const itemId = p.itemId!;
    const form = { server: p.server, message: p.message, ...(p.messageClipped ? { messageClipped: true } : {}), fields: p.fields };
    const show = (problems?: Record<string, string>) =>
      this.deps.emit({
        type: 'codeact.elicitation.requested',
        elicitation_id: p.id,
        item_id: itemId,
        ...(p.callId ? { call_id: p.callId } : {}),
        ...(p.tool ? { tool: p.tool } : {}),
        ...(p.job === undefined ? {} : { job: p.job }),
        form,
        ...(problems && Object.keys(problems).length ? { problems } : {}),
      });
    let result: ElicitationAnswer = { action: 'cancel' };
    show(p.problems);
    try {
      for (let i = 0; i < MAX_PANEL_ANSWERS; i++) {
        const answer = await this.next(p.id, p.signal);
        if (answer.action !== 'accept') return (result = answer);
        const problems = p.check(answer.content);
        if (!Object.keys(problems).length) return (result = answer);
        this.deps.log.info(`elicitation ${p.id}: the answer does not pass (${Object.keys(problems).join(', ')}); shown again`);
        show(problems);
      }
      return result;
    } finally {
      this.deps.emit({ type: 'codeact.elicitation.resolved', elicitation_id: p.id, item_id: itemId, action: result.action });
    }
  }

  /** The panel's next answer to form `id`, or `cancel` when the signal aborts first. */
  private next(id: string, signal: AbortSignal): Promise<ElicitationAnswer> {
    return new Promise((resolve) => {
      const done = (a: ElicitationAnswer) => {
        signal.removeEventListener('abort', onAbort);
        this.waiting.delete(id);
        resolve(a);
      };
      const onAbort = () => done({ action: 'cancel' });
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.set(id, done);
    });
  }
}
