/**
 * What the panel keeps across reloads (VS Code's webview getState/setState): the transcript model, the
 * conversation, the draft, the input history, and where the transcript was scrolled to.
 */
import type { ConversationSummary, HostState } from '../common/protocol';
import type { TranscriptModel } from '../common/transcript';

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
  model: TranscriptModel;
  host?: HostState;
  draft: string;
  inputHistory: string[];
  conversations?: ConversationSummary[];
  scroll?: ScrollPosition;
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
