/** The one-line status under the transcript: what the running turn is doing right now. */
import { currentTurn, type ExecView, type TranscriptModel } from '../common/transcript';
import { callingText } from './discoveryCall';
import { revealedPlain } from './reveal';

export function statusText(model: TranscriptModel, hostBusy: boolean): string {
  const turn = currentTurn(model);
  if (!turn) return hostBusy ? 'Working…' : '';
  let last: string | undefined;
  for (let i = turn.itemKeys.length - 1; i >= 0; i--) {
    const item = model.items[turn.itemKeys[i]];
    if (!item) continue;
    if (item.kind === 'approval' && item.status === 'pending') return 'Waiting for your approval…';
    if (!last) {
      if (item.kind === 'exec') last = execStatus(item);
      else if (item.kind === 'message' && !item.done) last = item.thinking ? 'Thinking…' : 'Writing the answer…';
      else if (item.kind === 'function' && item.status === 'in_progress') last = `Calling ${revealedPlain(item.name)}…`;
    }
  }
  return last ?? 'Working…';
}

function execStatus(x: ExecView): string | undefined {
  if (x.status === 'writing') return 'Writing code…';
  if (x.status === 'running') {
    const running = x.tools.filter((c) => c.status === 'running');
    if (running.length === 1) return `Running code · ${revealedPlain(callingText(running[0]))}…`;
    if (running.length > 1) return `Running code · ${running.length} tool calls in flight…`;
    return 'Running code…';
  }
  return undefined;
}
