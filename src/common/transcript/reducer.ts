/**
 * The transcript reducer: events of the shared vocabulary (plus two turn markers) -> the view model the
 * chat panel renders (turns, messages, execution cards, tool-call timelines, approvals, usage).
 *
 * Pure and DOM-free. For speed the model is a plain, JSON-serialisable object that `applyEvent` updates in
 * place; it returns which turns and items changed so a renderer can update only those (the webview never
 * re-renders the whole transcript). Output panes keep only a bounded tail; the host keeps the full text.
 */
import { isTurnMarker, notShownInPanel } from '../eventTraits';
import type { TranscriptEvent } from './events';
import type { Usage } from '../items';
import { addUsage, emptyTotals, usageOfEvent, type UsageTotals } from '../usage';
import {
  approvalKey,
  compactionKey,
  MAX_SUMMARY_CHARS,
  type CompactionView,
  createTranscript,
  currentTurn,
  execKey,
  findTurn,
  type ApprovalView,
  type ErrorView,
  type ExecView,
  type NoticeView,
  type TranscriptChange,
  type TranscriptModel,
  type TurnView,
} from './model';
import { applyExecEvent } from './execEvents';
import { applyJobEvent, jobCodeLine, syncDetachOffers } from './jobEvents';
import { Ctx } from './reducerContext';

/** Reduces a whole event list into a fresh model. */
export function buildTranscript(events: readonly TranscriptEvent[]): TranscriptModel {
  const model = createTranscript();
  for (const event of events) applyEvent(model, event);
  return model;
}

// ---- the reducer ----------------------------------------------------------------------------------

/**
 * Applies one event to the model, in place, and returns what changed. Unknown event types are ignored,
 * so newer hosts can talk to older panels; a known one has a case here unless its traits (../eventTraits)
 * say the panel does not show it.
 */
export function applyEvent(model: TranscriptModel, event: TranscriptEvent): TranscriptChange[] {
  const ctx = new Ctx(model, isTurnMarker(event) ? undefined : event.turn_id);
  model.events++;
  switch (event.type) {
    case 'codeact.turn.started': {
      const existing = findTurn(model, event.turn_id);
      if (existing) {
        existing.status = 'running';
        ctx.turnChanged(existing);
        break;
      }
      // A turn left open by an implicit start is closed when a real one begins.
      const open = currentTurn(model);
      if (open && open.implicit) {
        open.status = 'completed';
        ctx.turnChanged(open);
      }
      const turn: TurnView = {
        id: event.turn_id,
        implicit: false,
        prompt: event.prompt,
        source: event.source,
        provider: event.provider,
        model: event.model,
        runtime: event.runtime,
        status: 'running',
        startedAt: event.started_at,
        itemKeys: [],
        responses: 0,
        rev: 1,
      };
      model.turns.push(turn);
      ctx.changes.push({ kind: 'turn', id: turn.id, added: true });
      break;
    }
    case 'codeact.turn.ended': {
      const turn = findTurn(model, event.turn_id);
      if (!turn) break;
      turn.status = event.status;
      if (event.duration_ms !== undefined) turn.durationMs = event.duration_ms;
      if (event.message) turn.message = event.message;
      if (event.interrupted) turn.interrupted = true;
      ctx.settleTurn(turn, event.status === 'completed' ? 'completed' : 'stopped');
      endRetries(ctx, model, turn);
      ctx.turnChanged(turn);
      break;
    }
    case 'response.output_text.delta':
    case 'response.reasoning_text.delta': {
      // (`thinking` on output_text: reasoning in transcripts saved before it had events of its own.)
      const msg = ctx.message(event.item_id, event.type === 'response.reasoning_text.delta' || event.thinking === true);
      msg.text += event.delta;
      ctx.itemChanged(msg);
      break;
    }
    case 'response.output_text.done':
    case 'response.reasoning_text.done': {
      const msg = ctx.message(event.item_id, event.type === 'response.reasoning_text.done' || event.thinking === true);
      msg.text = event.text;
      msg.done = true;
      ctx.itemChanged(msg);
      break;
    }
    case 'response.code_interpreter_call.in_progress':
    case 'response.code_interpreter_call_code.delta':
    case 'response.code_interpreter_call_code.done':
    case 'response.code_interpreter_call.interpreting':
    case 'response.code_interpreter_call.completed':
    case 'codeact.output.delta':
    case 'codeact.output.display':
    case 'codeact.tool_call.started':
    case 'codeact.tool_call.completed':
    case 'codeact.notebook.cell':
    case 'codeact.elicitation.requested':
    case 'codeact.elicitation.resolved':
      applyExecEvent(ctx, event);
      if (event.type === 'response.code_interpreter_call.interpreting' && event.detach) syncDetachOffers(ctx, model);
      break;
    case 'response.output_item.added':
    case 'response.output_item.done':
      ctx.outputItem(event.item, event.type === 'response.output_item.done');
      break;
    case 'response.function_call_arguments.delta': {
      const fn = ctx.functionCall(event.item_id);
      if (fn) {
        fn.arguments += event.delta;
        ctx.itemChanged(fn);
      }
      break;
    }
    case 'response.function_call_arguments.done': {
      const fn = ctx.functionCall(event.item_id, event.name, event.call_id);
      if (fn) {
        fn.arguments = event.arguments;
        if (event.name) fn.name = event.name;
        ctx.itemChanged(fn);
      }
      break;
    }
    case 'codeact.approval.requested': {
      const turn = typeof event.job === 'number' ? ctx.turnForJobItem() : ctx.turnForNewItem();
      const key = approvalKey(event.approval_id);
      if (model.items[key]) break;
      const view: ApprovalView = {
        kind: 'approval',
        key,
        turnId: turn.id,
        id: event.approval_id,
        approvalKind: event.kind,
        itemId: event.item_id,
        name: event.name,
        arguments: event.arguments,
        code: event.code,
        ...(event.install ? { install: event.install } : {}),
        status: 'pending',
        rev: 1,
      };
      const exec = event.item_id ? (ctx.lookup(execKey(event.item_id)) as ExecView | undefined) : undefined;
      if (typeof event.job === 'number') {
        view.job = event.job;
        const first = exec?.kind === 'exec' ? jobCodeLine(exec.code) : undefined;
        if (first) view.jobCode = first;
      }
      ctx.addItem(turn, view);
      if (exec && exec.kind === 'exec') {
        exec.awaiting++;
        ctx.itemChanged(exec);
      }
      break;
    }
    case 'codeact.approval.resolved': {
      const view = model.items[approvalKey(event.approval_id)];
      if (!view || view.kind !== 'approval') break;
      const wasPending = view.status === 'pending';
      if (event.decision === 'expired') {
        // Nobody answered before the run ended: not the person's "deny".
        view.status = 'expired';
        view.decision = undefined;
      } else {
        view.status = 'resolved';
        view.decision = event.decision;
      }
      view.reason = event.reason;
      ctx.itemChanged(view);
      if (wasPending) ctx.releaseApproval(view);
      break;
    }
    case 'codeact.retry': {
      // One notice per turn, updated by each retry: its text carries the one counter ("attempt 2 of 4").
      const turn = ctx.turnForNewItem();
      const retry = event.delay_ms > 0;
      const open = !retry ? undefined : turn.itemKeys.map((k) => model.items[k]).find((i): i is NoticeView => i?.kind === 'notice' && !!i.retry && !i.done);
      if (open) {
        open.text = event.message;
        open.rev++;
        ctx.itemChanged(open);
        break;
      }
      const view: NoticeView = {
        kind: 'notice',
        key: `n:${++model.serial}`,
        turnId: turn.id,
        level: 'warning',
        text: event.message,
        ...(retry ? { retry: true } : {}),
        rev: 1,
      };
      ctx.addItem(turn, view);
      break;
    }
    case 'codeact.session': {
      // A session that ended (idle, evicted, restarted, crashed) or a reopened conversation: said where
      // the conversation is, not as a turn of its own.
      if (event.state !== 'ended') break;
      const turn = ctx.owner ?? currentTurn(model) ?? model.turns[model.turns.length - 1] ?? ctx.turnForNewItem();
      const view: NoticeView = { kind: 'notice', key: `n:${++model.serial}`, turnId: turn.id, level: 'warning', text: event.message, rev: 1 };
      ctx.addItem(turn, view);
      break;
    }
    case 'codeact.job':
    case 'codeact.job.output':
    case 'codeact.job.notes':
      applyJobEvent(ctx, model, event);
      if (event.type === 'codeact.job') syncDetachOffers(ctx, model);
      break;
    case 'response.completed': {
      const turn = ctx.turnForNewItem();
      turn.responses++;
      countUsage(model, turn, usageOfEvent(event));
      for (const key of turn.itemKeys) {
        const item = model.items[key];
        if (item && item.kind === 'message' && !item.done) {
          item.done = true;
          ctx.itemChanged(item);
        }
      }
      if (turn.implicit) {
        turn.status = 'completed';
        ctx.settleTurn(turn, 'completed');
      }
      // A response arrived: the retries worked.
      endRetries(ctx, model, turn);
      ctx.turnChanged(turn);
      break;
    }
    case 'codeact.context.compacted': {
      // The boundary, in the turn whose request was compacted, where it happened.
      const turn = findTurn(model, String(event.turn_id)) ?? ctx.turnForNewItem();
      const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);
      const summary = typeof event.summary === 'string' ? event.summary : '';
      const view: CompactionView = {
        kind: 'compaction',
        key: compactionKey(++model.serial),
        turnId: turn.id,
        beforeTokens: count(event.before_tokens),
        afterTokens: count(event.after_tokens),
        summary:
          summary.length > MAX_SUMMARY_CHARS
            ? `${summary.slice(0, MAX_SUMMARY_CHARS)}\n…[${summary.length - MAX_SUMMARY_CHARS} more characters in the saved conversation]`
            : summary,
        keptTurns: count(event.kept_turns),
        method: event.method === 'stand-ins' || event.method === 'fallback' ? event.method : 'summary',
        rev: 1,
      };
      ctx.addItem(turn, view);
      // The summary request is a model request: its tokens and cost count in the turn's and the conversation's.
      if (countUsage(model, turn, usageOfEvent(event))) ctx.turnChanged(turn);
      break;
    }
    case 'codeact.context.usage': {
      // The meter reads it (the app redraws the chrome with every batch).
      model.context = { used_tokens: event.used_tokens, window_tokens: event.window_tokens, compact_at_tokens: event.compact_at_tokens };
      break;
    }
    case 'error': {
      // Stopping is not an error: the turn's end marker shows it as stopped.
      if (event.code === 'cancelled') break;
      const turn = ctx.turnForNewItem();
      const view: ErrorView = { kind: 'error', key: `e:${++model.serial}`, turnId: turn.id, message: event.message, code: event.code, rev: 1 };
      ctx.addItem(turn, view);
      if (turn.implicit) {
        turn.status = 'failed';
        ctx.settleTurn(turn, 'stopped');
        ctx.turnChanged(turn);
      }
      break;
    }
    default:
      // A known type only when its traits say the panel does not show it (the compiler checks), or a newer host's.
      notShownInPanel(event);
      break;
  }
  return ctx.changes;
}

/** Retry notices go once the retries are over (a response arrived, or the turn ended). */
/** Adds one model request's usage to its turn's and the conversation's sums; whether there was any. */
function countUsage(model: TranscriptModel, turn: TurnView, usage: Usage | undefined): boolean {
  if (!usage) return false;
  // (A turn saved before cached tokens and costs were counted goes on from its sums.)
  const was = turn.usage;
  const sum: UsageTotals =
    was?.unpriced !== undefined
      ? (was as UsageTotals)
      : { ...emptyTotals(), input_tokens: was?.input_tokens || 0, output_tokens: was?.output_tokens || 0, total_tokens: was?.total_tokens || 0 };
  turn.usage = addUsage(sum, usage, turn.provider, turn.model);
  model.usage = addUsage(model.usage ?? emptyTotals(), usage, turn.provider, turn.model);
  return true;
}

function endRetries(ctx: Ctx, model: TranscriptModel, turn: TurnView): void {
  for (const key of turn.itemKeys) {
    const item = model.items[key];
    if (item?.kind === 'notice' && item.retry && !item.done) {
      item.done = true;
      item.rev++;
      ctx.itemChanged(item);
    }
  }
}
