/**
 * What the panel keeps across reloads (VS Code's webview getState/setState): the transcript model, the
 * conversation, the draft, the input history, and where the transcript was scrolled to.
 */
import type { DisplayOutput } from '../common/events';
import type { ConversationSummary, HostState } from '../common/protocol';
import type { DisplayView, TranscriptModel } from '../common/transcript';

/** The transcript's scroll position: at the bottom (following it), or a turn and how far into it. */
export interface ScrollPosition {
  stuck: boolean;
  /** The turn at the top of the view, and how many px of it were above the view. */
  turnId?: string;
  offset?: number;
}

export interface PanelState {
  v: 1;
  conversationId?: string;
  title?: string;
  seq: number;
  /** The host numbering `seq` is from (`ResetMessage.epoch`). */
  epoch?: string;
  model: TranscriptModel;
  host?: HostState;
  draft: string;
  inputHistory: string[];
  conversations?: ConversationSummary[];
  scroll?: ScrollPosition;
  /** The model was saved without the data of its larger displays: the page asks the host for the whole transcript. */
  partial?: boolean;
}

/** Display data kept in the saved state at most; past it, the larger displays are saved as their plain text. */
const STATE_DISPLAY_BUDGET = 2 * 1024 * 1024;
/** A display this large (in characters of data) is the first to go. */
const LARGE_DISPLAY = 16 * 1024;

function dataChars(d: DisplayOutput): number {
  let n = 0;
  for (const v of Object.values(d.data)) n += typeof v === 'string' ? v.length : 256;
  return n;
}

/**
 * The model to save: the model itself while its displays hold at most `STATE_DISPLAY_BUDGET` characters of data,
 * else a copy whose large displays keep only their plain text (the page state is serialised whole on every save,
 * and VS Code keeps it; plots and tables come back with the host's transcript).
 */
export function modelForState(model: TranscriptModel): { model: TranscriptModel; partial: boolean } {
  let total = 0;
  for (const item of Object.values(model.items)) {
    if (item.kind !== 'exec' || !item.displays) continue;
    for (const d of item.displays) total += dataChars(d.output);
  }
  if (total <= STATE_DISPLAY_BUDGET) return { model, partial: false };
  const items = { ...model.items };
  for (const [key, item] of Object.entries(items)) {
    if (item.kind !== 'exec' || !item.displays?.some((d) => dataChars(d.output) > LARGE_DISPLAY)) continue;
    const displays: DisplayView[] = item.displays.map((d) => {
      if (dataChars(d.output) <= LARGE_DISPLAY) return d;
      const plain = d.output.data['text/plain'];
      return {
        ...d,
        output: {
          type: 'display',
          data: { 'text/plain': typeof plain === 'string' ? plain.slice(0, 2000) : 'Output not saved with the panel; it comes back with the conversation.' },
        },
      };
    });
    items[key] = { ...item, displays };
  }
  return { model: { ...model, items }, partial: true };
}

/** A saved state the page can use, or undefined. */
export function validState(saved: PanelState | undefined): PanelState | undefined {
  if (!saved || saved.v !== 1 || !saved.model || !Array.isArray(saved.model.turns)) return undefined;
  if (!saved.model.aliases) saved.model.aliases = {};
  return saved;
}

/** The turn at the top of `scroller`'s view and how far it is scrolled past (layout reads: off the frame path). */
export function measurePosition(scroller: HTMLElement, transcript: HTMLElement): ScrollPosition {
  const top = scroller.getBoundingClientRect().top;
  const turns = transcript.children;
  let lo = 0;
  let hi = turns.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (turns[mid].getBoundingClientRect().bottom > top) hi = mid;
    else lo = mid + 1;
  }
  const el = turns[lo] as HTMLElement | undefined;
  if (!el?.dataset.turnId) return { stuck: true };
  return { stuck: false, turnId: el.dataset.turnId, offset: Math.round(top - el.getBoundingClientRect().top) };
}
