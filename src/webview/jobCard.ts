/**
 * Background jobs in the panel: a job's card in the transcript (which execution started it, its live output,
 * on its end the status, duration, value and output whole or cut), the card of what the model was told of
 * jobs that ended, and the job strip above the composer (each running job: number, what started it, elapsed
 * time, its last lines, Stop).
 */
import { formatElapsed } from '../common/format';
import { outputText, runningJobs, type ItemView, type JobNotesView, type JobView, type TranscriptModel } from '../common/transcript';
import { h, setText } from './dom';
import { icon, spinner } from './icons';
import { revealed, updateRevealed } from './reveal';
import { ToolCallList } from './toolCallRow';
import { iconButton, textButton, type ItemRenderer, type ViewContext } from './viewKit';

const STATUS_TEXT: Record<JobView['status'], string> = {
  running: 'Running',
  done: 'Finished',
  failed: 'Failed',
  stopped: 'Stopped',
  timed_out: 'Stopped at its time limit',
  ended: 'Ended with its session',
};
/** The strip shows this many last lines of a running job's output. */
const STRIP_LINES = 2;

const chipClass = (s: JobView['status']): string => (s === 'running' ? 'running' : s === 'done' ? 'done' : s === 'failed' ? 'failed' : 'stopped');
const startedBy = (j: JobView): string => j.what ?? 'started by an earlier execution';

export class JobRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly chip = h('span', { class: 'status-chip' });
  private readonly duration = h('span', { class: 'duration' });
  private readonly out = h('pre', { class: 'job-output', tabindex: '0', 'aria-label': 'Job output' });
  private readonly note = h('div', { class: 'job-note' });
  private readonly tools = new ToolCallList('Tool calls made by the job');
  private readonly stop: HTMLButtonElement;
  private lastRev = -1;
  private lastStatus = '';

  constructor(
    private item: JobView,
    ctx: ViewContext,
  ) {
    this.stop = iconButton('stop', `Stop background job ${item.job}`, () => ctx.post({ type: 'stopJob', sessionId: this.item.sessionId, job: this.item.job }));
    this.el = h(
      'section',
      { class: 'card job-card', 'data-job': String(item.job), 'data-session': item.sessionId, 'aria-label': `Background job ${item.job}` },
      h(
        'header',
        { class: 'card-head' },
        h('span', { class: 'card-icon', 'aria-hidden': 'true' }, icon('clock')),
        h('span', { class: 'job-title', text: `Background job ${item.job}` }),
        this.chip,
        // Beside the status it stops (a narrow card wraps the duration, not the button, to a line of its own).
        this.stop,
        h('span', { class: 'spacer' }),
        this.duration,
      ),
      h('div', { class: 'job-origin-line' }, h('span', { class: 'job-origin', title: startedBy(item) }, revealed(startedBy(item), { line: true }))),
      this.tools.el,
      this.out,
      this.note,
    );
  }

  sync(raw: ItemView): void {
    const j = (this.item = raw as JobView);
    if (j.rev === this.lastRev) return;
    this.lastRev = j.rev;
    if (j.status !== this.lastStatus) {
      this.lastStatus = j.status;
      this.el.dataset.status = j.status;
      this.chip.className = `status-chip status-${chipClass(j.status)}`;
      this.chip.textContent = '';
      this.chip.append(
        j.status === 'running' ? spinner() : icon(j.status === 'done' ? 'pass' : j.status === 'failed' ? 'error' : 'stop'),
        h('span', { text: STATUS_TEXT[j.status] }),
      );
      this.stop.hidden = j.status !== 'running';
    }
    setText(this.duration, j.seconds !== undefined ? formatElapsed(j.seconds * 1000) : '');
    this.tools.sync(j.tools ?? []);
    // The output is the job's own (outside text): shown as text, never as markup.
    const text = outputText(j.output);
    // Follows the latest line while the reader is at the bottom (as a terminal does).
    const atEnd = this.out.scrollTop + this.out.clientHeight >= this.out.scrollHeight - 4;
    updateRevealed(this.out, text);
    if (atEnd) this.out.scrollTop = this.out.scrollHeight;
    this.out.hidden = !text;
    this.note.textContent = '';
    if (j.status !== 'running' && j.message) this.note.append(revealed(j.message.split('\nThe end of its output:')[0]));
    this.note.hidden = !this.note.childNodes.length;
  }
}

export class JobNotesRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  constructor(item: JobNotesView) {
    this.el = h(
      'section',
      { class: 'card job-notes', 'aria-label': 'Told the model of background jobs' },
      h(
        'header',
        { class: 'card-head' },
        h('span', { class: 'card-icon', 'aria-hidden': 'true' }, icon('info')),
        h('span', { class: 'job-title', text: `The model was told: job${item.jobs.length === 1 ? '' : 's'} ${item.jobs.join(', ')} ended` }),
      ),
      h('pre', { class: 'job-output' }, revealed(item.text)),
    );
  }
  sync(): void {}
}

/** The job strip above the composer: one row per running job; hidden when none runs. */
export class JobStrip {
  readonly el = h('div', { class: 'job-strip', role: 'region', 'aria-label': 'Background jobs', hidden: true });
  /** Rows by job card key, updated in place (a Stop button replaced under the pointer would lose its click). */
  private readonly rows = new Map<string, { el: HTMLElement; last: HTMLElement; elapsed: HTMLElement; started?: number }>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly ctx: ViewContext) {}

  render(model: TranscriptModel): void {
    const jobs = runningJobs(model);
    const keep = new Set(jobs.map((j) => j.key));
    for (const [key, row] of this.rows)
      if (!keep.has(key)) {
        row.el.remove();
        this.rows.delete(key);
      }
    for (const j of jobs) {
      let row = this.rows.get(j.key);
      if (!row) {
        const last = h('pre', { class: 'job-last' });
        const elapsed = h('span', { class: 'job-elapsed' });
        const stop = textButton('Stop', () => this.ctx.post({ type: 'stopJob', sessionId: j.sessionId, job: j.job }), 'secondary', 'stop');
        stop.setAttribute('aria-label', `Stop background job ${j.job}`);
        const el = h(
          'div',
          { class: 'job-row', 'data-job': String(j.job), 'data-session': j.sessionId },
          h(
            'div',
            { class: 'job-row-head' },
            spinner(),
            h('span', { class: 'job-title', text: `Job ${j.job}` }),
            h('span', { class: 'job-origin', title: startedBy(j) }, revealed(startedBy(j), { line: true })),
            elapsed,
            h('span', { class: 'spacer' }),
            stop,
          ),
          last,
        );
        row = { el, last, elapsed };
        this.rows.set(j.key, row);
        this.el.append(el);
      }
      row.started = j.startedAt;
      const text = outputText(j.output).replace(/\n+$/, '').split('\n').slice(-STRIP_LINES).join('\n');
      updateRevealed(row.last, text);
      row.last.hidden = !text;
    }
    this.el.hidden = jobs.length === 0;
    this.tick();
    // The elapsed time moves once a second while a job runs.
    if (jobs.length && !this.timer) this.timer = setInterval(() => this.tick(), 1000);
    else if (!jobs.length && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private tick(): void {
    for (const row of this.rows.values())
      setText(row.elapsed, row.started ? formatElapsed(Math.max(0, Date.now() - row.started)).replace(/\.\d+ s$/, ' s') : '');
  }
}
