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
