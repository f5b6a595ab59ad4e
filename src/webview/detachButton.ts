/**
 * "Keep running in background" on a running execution card (issue 34): a local session's run goes on as a
 * background job of its session (core/runtime/local/detach.ts), and the model's step goes on. Shown only while the
 * card runs, its runtime offered it (`ExecView.detach`: a local session, jobs on) and its session has room for one
 * more job (`full`); the host says why not otherwise.
 */
import type { ExecView } from '../common/transcript';
import { textButton, type ViewContext } from './viewKit';

const LABEL = 'Keep running in background';
const TITLE =
  'Let this run go on as a background job of its session, like Ctrl+Z then bg in a terminal: the model gets its answer now ' +
  "and is told when the run ends. The session's next run waits for it; the job's Stop ends it.";

export function detachButton(ctx: ViewContext, item: () => ExecView): HTMLButtonElement {
  const b = textButton(
    LABEL,
    () => {
      const x = item();
      if (!x.detach) return;
      b.disabled = true;
      ctx.post({ type: 'detachRun', sessionId: x.detach.sessionId, itemId: x.id });
      ctx.announce('Sending the run to the background');
    },
    'secondary',
  );
  b.classList.add('detach-run');
  b.title = TITLE;
  b.hidden = true;
  return b;
}

/** Shown while the card runs and its run can be sent to the background. */
export function syncDetachButton(b: HTMLButtonElement, x: ExecView): void {
  const show = x.status === 'running' && !!x.detach && x.detach.maxJobs > 0 && !x.detach.full;
  if (b.hidden === show) b.hidden = !show;
  if (!show) b.disabled = false;
}
