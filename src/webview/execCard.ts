/**
 * The execution card: status, runtime badges, the code as it streams (highlighted incrementally, following
 * its bottom while the model writes), the managed-tool timeline, live output (a virtualised pane), images,
 * files, the returned value and the error with its traceback.
 */
import type { ExecView, ItemView } from '../common/transcript';
import { countNewlines } from '../common/transcript';
import { formatElapsed } from '../common/format';
import { parseDataUrl } from '../common/dataUrl';
import { checkImagePixels } from '../common/imageHeader';
import { isRaster, rasterFormatList } from '../common/mimeTypes';
import { formatCount, h, setText, toggle, uid } from './dom';
import { IncrementalHighlighter } from './highlight';
import { icon, spinner } from './icons';
import { runtimeInfo } from '../common/runtimes';
import { renderJson } from './jsonTree';
import { revealed, revealedPlain } from './reveal';
import { FileChips } from './fileChips';
import { ChangesList } from './changesList';
import { RewindControls } from './rewindControls';
import type { RewoundMessage } from '../common/outputMessages';
import { OutputFlow } from './outputFlow';
import { OutputPane } from './outputPane';
import { StickToBottom } from './scrollAnchor';
import { iconButton, type ItemRenderer, type ViewContext } from './viewKit';
import { ElicitationCard } from './elicitationCard';
import { ToolCallList } from './toolCallRow';
import { detachButton, syncDetachButton } from './detachButton';

const STATUS_TEXT: Record<string, string> = { writing: 'Writing code', running: 'Running', done: 'Done', failed: 'Failed', stopped: 'Stopped' };

export class ExecRenderer implements ItemRenderer {
  readonly el: HTMLElement;
  private readonly statusChip: HTMLElement;
  private readonly badges: HTMLElement;
  private readonly durationEl: HTMLElement;
  private readonly codeWrap: HTMLElement;
  private readonly codeStick: StickToBottom;
  private readonly gutter: HTMLElement;
  private readonly codePre: HTMLElement;
  private readonly code: IncrementalHighlighter;
  private readonly tools = new ToolCallList('Tool calls made by the code');
  private readonly outputSection: HTMLElement;
  private readonly outputBanner: HTMLElement;
  private bannerText: HTMLElement | undefined;
  private readonly output: OutputFlow;
  private readonly files: FileChips;
  private readonly changes: ChangesList;
  private readonly extras: HTMLElement;
  /** Forms the code's tools' MCP servers asked for, in the order they came. */
  private readonly elicitBox = h('div', { class: 'elicitations' });
  private readonly elicitCards = new Map<string, ElicitationCard>();
  private lastRev = -1;
  private lineCount = 0;
  private codeFinished = false;
  private statusKey = '';
  private badgeKey = '';
  private images = 0;
  private valueShown = false;
  /** The error box shown, and which error it shows (a later end may replace it). */
  private errorShown?: { key: string; box: HTMLElement };
  private truncShown = false;
  private item: ExecView;
  private readonly detachBtn: HTMLButtonElement;
  private readonly rewind: RewindControls;

  constructor(
    item: ExecView,
    private readonly ctx: ViewContext,
  ) {
    this.item = item;
    const titleId = uid('exec');
    this.statusChip = h('span', { class: 'status-chip', id: titleId });
    this.badges = h('span', { class: 'badges' });
    this.durationEl = h('span', { class: 'duration' });
    const actions = h(
      'div',
      { class: 'card-actions', role: 'toolbar', 'aria-label': 'Code actions' },
      iconButton('copy', 'Copy code', () => this.ctx.post({ type: 'copy', text: this.item.code })),
      iconButton('insert', 'Insert into editor', () => this.ctx.post({ type: 'insertCode', code: this.item.code })),
      iconButton('debugRerun', 'Run again with tools', () => this.ctx.post({ type: 'runCode', code: this.item.code, itemId: this.item.id })),
    );
    actions.prepend((this.detachBtn = detachButton(ctx, () => this.item)));
    this.rewind = new RewindControls(ctx, () => this.item);
    actions.append(this.rewind.button);
    const head = h(
      'header',
      { class: 'card-head' },
      h('span', { class: 'card-icon', 'aria-hidden': 'true' }, icon('code')),
      this.statusChip,
      this.badges,
      h('span', { class: 'spacer' }),
      this.durationEl,
      actions,
    );

    this.gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
    const codeEl = h('code', { class: 'hljs language-python' });
    this.codePre = h('pre', { class: 'code', tabindex: '0', 'aria-label': 'Python code' }, codeEl);
    this.code = new IncrementalHighlighter(codeEl);
    this.codeWrap = h('div', { class: 'code-block' }, h('div', { class: 'code-rows' }, this.gutter, this.codePre));
    // Follows the code's last line while the model writes it; a finished card shows its code from the top.
    this.codeStick = new StickToBottom(this.codeWrap, { slack: 12 });
    if (item.status !== 'writing') this.codeStick.setActive(false);

    this.output = new OutputFlow(ctx);
    this.outputBanner = h('div', { class: 'output-banner', hidden: true });
    this.outputSection = h(
      'div',
      { class: 'section output-section', hidden: true },
      h(
        'div',
        { class: 'section-label' },
        icon('terminal'),
        h('span', { text: 'Output' }),
        h('span', { class: 'spacer' }),
        iconButton('copy', 'Copy output', () => this.ctx.post({ type: 'copy', text: this.output.text() }), 'section-action'),
      ),
      this.outputBanner,
      this.output.el,
    );
    this.files = new FileChips({ post: (m) => this.ctx.post(m), itemId: () => this.item.id });
    this.changes = new ChangesList({ post: (m) => this.ctx.post(m), itemId: () => this.item.id });
    this.extras = h('div', { class: 'extras' }, this.files.el, this.changes.el, this.rewind.note);
    this.el = h(
      'section',
      { class: 'card exec', 'data-item-id': item.id, 'aria-labelledby': titleId },
      head,
      this.codeWrap,
      this.tools.el,
      this.elicitBox,
      this.outputSection,
      this.extras,
    );
  }

  sync(raw: ItemView): void {
    const x = raw as ExecView;
    this.item = x;
    if (x.rev === this.lastRev) return;
    this.lastRev = x.rev;
    this.syncHead(x);
    this.syncCode(x);
    this.syncTools(x);
    for (const e of x.elicitations ?? []) {
      let card = this.elicitCards.get(e.id);
      if (!card) {
        this.elicitCards.set(e.id, (card = new ElicitationCard(e, this.ctx)));
        this.elicitBox.append(card.el);
      }
      card.sync(e, x.status === 'writing' || x.status === 'running');
    }
    this.syncOutput(x);
    this.syncExtras(x);
  }

  private syncHead(x: ExecView): void {
    const key = `${x.status}|${x.awaiting}`;
    if (key !== this.statusKey) {
      this.statusKey = key;
      const waiting = x.awaiting > 0 && (x.status === 'writing' || x.status === 'running');
      const status = waiting ? 'waiting' : x.status;
      this.el.dataset.status = status;
      this.statusChip.className = `status-chip status-${status}`;
      this.statusChip.textContent = '';
      const running = x.status === 'writing' || x.status === 'running';
      this.statusChip.append(
        waiting ? icon('shield') : running ? spinner() : icon(x.status === 'done' ? 'pass' : x.status === 'failed' ? 'error' : 'stop'),
        h('span', { text: waiting ? 'Waiting for approval' : STATUS_TEXT[x.status] }),
      );
      if (x.status === 'done' || x.status === 'failed')
        this.ctx.announce(x.status === 'done' ? 'Code finished' : `Code failed${x.error ? `: ${revealedPlain(x.error.type, { line: true })}` : ''}`);
    }
    syncDetachButton(this.detachBtn, x);
    this.rewind.sync(x);
    const badgeKey = `${x.runtime}|${x.sandbox?.kind}|${x.sandbox?.network}|${x.tool}|${x.containerId}|${x.notebook?.uri}`;
    if (badgeKey !== this.badgeKey) {
      this.badgeKey = badgeKey;
      this.badges.textContent = '';
      if (x.runtime) {
        const known = runtimeInfo(x.runtime);
        const b = h(
          'span',
          { class: `badge runtime runtime-${x.runtime}`, title: `Runtime: ${known?.label ?? revealedPlain(x.runtime, { line: true })}` },
          icon(known?.icon ?? 'terminal'),
          // From the transcript (a saved conversation may say anything): markers as boxes.
          h('span', null, revealed(x.runtime, { line: true })),
        );
        this.badges.append(b);
      }
      if (x.sandbox) {
        const sb = x.sandbox;
        const title = `Sandbox: ${revealedPlain(sb.kind, { line: true })}${sb.network === false ? ', no network' : sb.network ? ', network allowed' : ''}`;
        this.badges.append(
          h(
            'span',
            { class: `badge sandbox sandbox-${sb.kind}`, title },
            icon(sb.kind === 'none' ? 'warning' : 'box'),
            h('span', null, sb.kind === 'none' ? 'no sandbox' : revealed(sb.kind, { line: true })),
          ),
        );
      }
      if (x.tool) this.badges.append(h('span', { class: 'badge subtool', title: 'Provider tool' }, revealed(x.tool, { line: true })));
      // The provider's container id and the notebook's file name are outside text.
      if (x.containerId)
        this.badges.append(
          h(
            'span',
            { class: 'badge container', title: `Container ${revealedPlain(x.containerId, { line: true })}` },
            revealed(shortId(x.containerId), { line: true }),
          ),
        );
      // It ran as a cell of an open notebook: the badge shows that cell.
      const nb = x.notebook;
      if (nb) {
        const open = () => this.ctx.post({ type: 'notebook.reveal', uri: nb.uri, itemId: this.item.id });
        this.badges.append(
          h(
            'button',
            {
              class: 'badge notebook-cell',
              type: 'button',
              title: `Show this cell in ${revealedPlain(nb.name, { line: true })}`,
              'aria-label': `Show the cell in ${revealedPlain(nb.name, { line: true })}`,
              onclick: open,
            },
            icon('notebook'),
            h('span', null, 'cell in ', revealed(nb.name, { line: true })),
          ),
        );
      }
    }
    setText(this.durationEl, x.durationMs !== undefined ? formatElapsed(x.durationMs) : '');
  }

  private syncCode(x: ExecView): void {
    toggle(this.codeWrap, 'empty', !x.code);
    const grew = x.code !== this.code.value;
    if (grew) {
      this.code.update(x.code);
      this.codeFinished = false;
    }
    if (x.codeDone && !this.codeFinished) {
      this.code.finish();
      this.codeFinished = true;
    }
    const lines = Math.max(1, countNewlines(x.code) + (x.code.endsWith('\n') ? 0 : 1));
    if (lines !== this.lineCount) {
      if (lines < this.lineCount) {
        this.gutter.textContent = '';
        this.lineCount = 0;
      }
      const frag = document.createDocumentFragment();
      for (let i = this.lineCount + 1; i <= lines; i++) frag.append(h('span', { text: String(i) }));
      this.gutter.append(frag);
      this.lineCount = lines;
    }
    if (x.status !== 'writing') this.codeStick.setActive(false);
    if (x.error?.line && !this.errorShown) {
      const ln = this.gutter.children[x.error.line - 1];
      if (ln) {
        ln.classList.add('error-line');
        ln.setAttribute('title', `${x.error.type} raised here`);
      }
    }
  }

  private syncTools(x: ExecView): void {
    this.tools.sync(x.tools);
  }

  private syncOutput(x: ExecView): void {
    if (this.output.isEmpty(x)) return;
    this.outputSection.hidden = false;
    this.output.sync(x);
    const hidden = this.output.hiddenLines(x);
    const showBanner = hidden > 0 || x.truncated;
    this.outputBanner.hidden = !showBanner;
    if (showBanner) {
      const msg = x.truncated
        ? 'The runtime cut this output at its size limit.'
        : `${formatCount(hidden)} earlier ${hidden === 1 ? 'line' : 'lines'} not shown.`;
      if (!this.bannerText) {
        this.bannerText = h('span');
        const open = h(
          'button',
          { class: 'link-button', type: 'button', onclick: () => this.ctx.post({ type: 'openFullOutput', itemId: this.item.id }) },
          icon('external'),
          h('span', { text: 'Open full output' }),
        );
        this.outputBanner.append(icon('info'), this.bannerText, open);
      }
      setText(this.bannerText, msg);
    }
    this.output.first.el.dataset.totalLines = String(x.output.totalLines);
  }

  /** A revert (or, `kept`, a keep in review mode) of the execution's workspace changes ended. */
  changesReverted(reverted: readonly string[], failed: readonly { path: string; why: string }[], kept = false): void {
    this.changes.markReverted(reverted, failed, kept);
  }

  /** A rewind (or redo) from this card was done. */
  rewound(m: RewoundMessage): void {
    this.rewind.rewound(m);
  }

  /** The host found one of the execution's files gone. */
  fileMissing(path: string, message: string): void {
    this.files.markMissing(path, message);
  }

  private syncExtras(x: ExecView): void {
    if (x.images.length > this.images) {
      for (let i = this.images; i < x.images.length; i++) {
        this.files.el.before(hostedImage(x.images[i], i + 1, this.ctx.maxImagePixels()));
      }
      this.images = x.images.length;
    }
    this.files.sync(x.files);
    this.changes.sync(x.changes);
    // A returned None says nothing (a notebook shows nothing for it either); the model still gets it.
    if (x.hasValue && x.value !== null && !this.valueShown) {
      this.valueShown = true;
      this.extras.append(
        h(
          'div',
          { class: 'section result-section' },
          h('div', { class: 'section-label' }, icon('braces'), h('span', { text: 'Result' })),
          renderJson(x.value, { expandDepth: 1 }),
        ),
      );
    }
    // A later end replaces an earlier one (a run a reload let go of, then watched to its end): its error box goes.
    if (this.errorShown && this.errorShown.key !== errorKey(x.error)) {
      this.errorShown.box.remove();
      for (const ln of Array.from(this.gutter.children)) ln.classList.remove('error-line');
      this.errorShown = undefined;
    }
    if (x.error && !this.errorShown) {
      const e = x.error;
      const box = h(
        'div',
        { class: 'exec-error', role: 'group', 'aria-label': 'Error' },
        h(
          'div',
          { class: 'error-title' },
          icon('error'),
          h(
            'span',
            null,
            h('span', { class: 'error-type' }, revealed(e.type, { line: true })),
            h('span', { class: 'error-message' }, revealed(e.message ? `: ${e.message}` : '')),
          ),
        ),
      );
      if (e.line) box.append(h('div', { class: 'error-line-ref', text: `at line ${e.line} of the code` }));
      if (e.traceback) {
        const tb = new OutputPane(400, 64 * 1024);
        tb.el.classList.add('traceback');
        tb.write('stdout', e.traceback);
        box.append(h('details', { class: 'traceback-details', open: true }, h('summary', null, h('span', { text: 'Traceback' })), tb.el));
      }
      this.extras.append(box);
      this.errorShown = { key: errorKey(e), box };
      if (e.line) {
        const ln = this.gutter.children[e.line - 1];
        ln?.classList.add('error-line');
      }
    }
    if (x.truncated && !this.truncShown && x.output.totalChars === 0) {
      this.truncShown = true;
    }
  }
}

/** Which error a card shows (none: ''). */
function errorKey(e: ExecView['error']): string {
  return e ? `${e.type}\n${e.line ?? ''}\n${e.message ?? ''}` : '';
}

function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

/**
 * An image of a hosted sandbox: only a data URL of a raster type whose header is within the pixel cap
 * becomes an `<img>`; anything else (over the cap, no size we read, another kind of URL) is a note.
 */
function hostedImage(url: string, n: number, maxPixels: number): HTMLElement {
  const parsed = parseDataUrl(url);
  const raster = parsed && isRaster(parsed.mime) ? parsed : undefined;
  const check = raster ? checkImagePixels(raster.mime, raster.base64, maxPixels) : undefined;
  if (!check?.ok) {
    const note =
      check?.note ?? `[codeact: image ${n} was not shown: it is not a ${rasterFormatList()} data URL, so its size cannot be read before it decodes.]`;
    return h('div', { class: 'display-note exec-image-note', text: note });
  }
  return h('figure', { class: 'exec-image' }, h('img', { src: url, alt: `Image ${n} produced by the code`, loading: 'lazy' }));
}
