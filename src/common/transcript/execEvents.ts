/** The events about one execution card: its code streaming in, its status, its live output and its tool calls. */
import type { TranscriptEvent } from './events';
import type { ExecView, ToolCallView } from './model';
import { addDisplay } from './displayList';
import { appendOutput } from './outputTail';
import type { Ctx } from './reducerContext';

type ExecEvent = Extract<
  TranscriptEvent,
  {
    type:
      | 'response.code_interpreter_call.in_progress'
      | 'response.code_interpreter_call_code.delta'
      | 'response.code_interpreter_call_code.done'
      | 'response.code_interpreter_call.interpreting'
      | 'response.code_interpreter_call.completed'
      | 'codeact.output.delta'
      | 'codeact.output.display'
      | 'codeact.tool_call.started'
      | 'codeact.tool_call.completed'
      | 'codeact.notebook.cell'
      | 'codeact.elicitation.requested'
      | 'codeact.elicitation.resolved';
  }
>;

/** Most forms kept on one card (the oldest answered ones go first). */
const MAX_ELICITATIONS = 20;

/** Finds (or makes) the card once, applies the event, and reports the card changed once. */
export function applyExecEvent(ctx: Ctx, event: ExecEvent): void {
  const exec = ctx.exec(event.item_id);
  switch (event.type) {
    case 'response.code_interpreter_call.in_progress':
      if (event.runtime) exec.runtime = event.runtime;
      break;
    case 'response.code_interpreter_call_code.delta':
      exec.code += event.delta;
      break;
    case 'response.code_interpreter_call_code.done':
      exec.code = event.code;
      exec.codeDone = true;
      break;
    case 'response.code_interpreter_call.interpreting':
      if (event.detach && typeof event.detach.session_id === 'string')
        exec.detach = { sessionId: event.detach.session_id, maxJobs: Number(event.detach.max_jobs) || 0 };
      running(exec);
      break;
    case 'response.code_interpreter_call.completed':
      exec.codeDone = true;
      if (exec.status === 'writing' || exec.status === 'running') exec.status = exec.error ? 'failed' : 'done';
      break;
    case 'codeact.output.delta':
      exec.liveOutput = true;
      running(exec);
      appendOutput(exec.output, event.stream, event.delta);
      break;
    case 'codeact.output.display':
      // In order with the text: after what arrived so far. An update replaces the display where it stands.
      exec.displaysKnown = true;
      running(exec);
      addDisplay(exec, event.output, event.update === true, exec.output.totalChars);
      break;
    case 'codeact.notebook.cell':
      exec.notebook = { uri: event.notebook, name: event.name };
      break;
    case 'codeact.tool_call.started':
      running(exec);
      toolCall(exec, event.call_id, event.name, event.arguments).rev++;
      break;
    case 'codeact.elicitation.requested': {
      const list = (exec.elicitations ??= []);
      const open = list.find((e) => e.id === event.elicitation_id);
      if (open) {
        open.problems = event.problems;
        open.rev++;
        break;
      }
      const job = typeof event.job === 'number' ? { job: event.job } : {};
      list.push({
        id: event.elicitation_id,
        tool: event.tool,
        callId: event.call_id,
        ...job,
        form: event.form,
        problems: event.problems,
        status: 'open',
        rev: 0,
      });
      const answered = list.findIndex((e) => e.status !== 'open');
      if (list.length > MAX_ELICITATIONS && answered >= 0) list.splice(answered, 1);
      break;
    }
    case 'codeact.elicitation.resolved': {
      const e = exec.elicitations?.find((x) => x.id === event.elicitation_id);
      if (e) {
        e.status = event.action;
        e.rev++;
      }
      break;
    }
    case 'codeact.tool_call.completed': {
      const call = toolCall(exec, event.call_id, event.name, undefined);
      call.status = event.error !== undefined ? 'error' : 'ok';
      call.error = event.error;
      call.output = event.output;
      call.durationMs = event.duration_ms;
      call.rev++;
      break;
    }
  }
  ctx.itemChanged(exec);
}

/** Code that runs (or makes output, or calls a tool) is written in full. */
function running(exec: ExecView): void {
  exec.codeDone = true;
  if (exec.status === 'writing') exec.status = 'running';
}

function toolCall(exec: ExecView, callId: string, name: string, args: unknown): ToolCallView {
  let call = exec.tools.find((c) => c.callId === callId);
  if (!call) {
    call = { callId, name, arguments: args, status: 'running', rev: 0 };
    exec.tools.push(call);
  }
  return call;
}
