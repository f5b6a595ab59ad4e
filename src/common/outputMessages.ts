/**
 * The panel's messages about an execution's rich outputs (part of the protocol, ./protocol): an image opened
 * full size or saved, a file the code wrote opened, saved to the workspace or its path copied, and the host
 * saying a file is gone. The host checks them here before acting: the image's type, that raster data is
 * base64, sizes, a file name without a path.
 */

import { extensionOf, isBinary, isPanelImage, type PanelImageMime } from './mimeTypes';

/** Image types an image message may carry (raster as base64, SVG as its text): the ones the panel draws. */
export type ImageMime = PanelImageMime;
/** Characters of image data a message may carry (a display is capped at a few MB by the host). */
const MAX_IMAGE_CHARS = 48 * 1024 * 1024;
/** A default file name the page may suggest: `plot-3.png`. */
const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** An image output: open it full size in an editor tab (`image.open`) or save it where the user says (`image.save`). */
export interface ImageMessage {
  type: 'image.open' | 'image.save';
  mime: ImageMime;
  /** Base64 for raster types, the SVG text for SVG. */
  data: string;
  /** The default file name, for example `plot-3.png`. */
  name: string;
}

/**
 * A file the code wrote, listed on an execution with a host path: open it, save a copy where the user says
 * (the workspace folder by default), or copy its path. The host acts only on files the execution lists.
 */
export interface LocalFileMessage {
  type: 'file.open' | 'file.save' | 'file.copyPath';
  itemId: string;
  path: string;
}

/** Host -> page: a file of an execution is gone (its session ended); its chip says so. */
export interface FileMissingMessage {
  type: 'file.missing';
  itemId: string;
  path: string;
  message: string;
}

/**
 * A workspace file an execution's code changed (its card's "N files changed"): show what it changed in VS Code's
 * diff editor (`changes.diff`), or put the files back as they were before it ran (`changes.revert`: `paths`, or
 * all of them). The host acts only on paths the execution's changeset lists.
 */
export type ChangeMessage =
  | { type: 'changes.diff'; itemId: string; path: string }
  | { type: 'changes.revert'; itemId: string; paths?: string[] }
  /** Review mode: put staged changes of the execution (`paths`, or all) into the workspace. */
  | { type: 'changes.keep'; itemId: string; paths?: string[] };

/** Host -> page: what a revert put back (`reverted`) and what it could not; the card marks its rows. `kept`: a Keep's (review mode). */
export interface ChangesRevertedMessage {
  type: 'changes.reverted';
  itemId: string;
  reverted: string[];
  failed: { path: string; why: string }[];
  kept?: boolean;
}

/**
 * "Rewind to here" on an execution's card (issue 35): the session's Python state and the workspace files go back to
 * before it (`exec.rewind`); `redo`: instead, the point a rewind from this card returned (back to the state before it).
 */
export interface RewindMessage {
  type: 'exec.rewind';
  itemId: string;
  redo?: string;
}

/**
 * "Rewind to here" on a turn's message: the conversation goes back to before the turn, and the code (where its
 * runtime keeps checkpoints) to before the turn's first execution; the person chooses which (`turn.rewind`).
 */
export interface TurnRewindMessage {
  type: 'turn.rewind';
  turnId: string;
}

/** Host -> page: what a rewind from a card did, said on that card; `redo`: the point its Redo button names. */
export interface RewoundMessage {
  type: 'exec.rewound';
  itemId: string;
  /** A redo was done (not a rewind). */
  redone: boolean;
  /** One line per part: the Python state, the files. */
  lines: string[];
  redo?: string;
}

/** Paths one revert message may name. */
const MAX_REVERT_PATHS = 10_000;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const isPath = (p: unknown): p is string => typeof p === 'string' && p.length > 0 && p.length <= 4096;

/** Checks an output message from the page (`m.type` is one of theirs); undefined when it is malformed. */
export function parseOutputMessage(
  m: Record<string, unknown>,
): ImageMessage | LocalFileMessage | ChangeMessage | RewindMessage | TurnRewindMessage | undefined {
  switch (m.type) {
    case 'image.open':
    case 'image.save': {
      const { mime, data } = m;
      if (typeof mime !== 'string' || !isPanelImage(mime)) return undefined;
      if (typeof data !== 'string' || !data || data.length > MAX_IMAGE_CHARS) return undefined;
      if (isBinary(mime) && !BASE64.test(data)) return undefined;
      const name = typeof m.name === 'string' && IMAGE_NAME.test(m.name) ? m.name : `image.${extensionOf(mime)}`;
      return { type: m.type, mime, data, name };
    }
    case 'file.open':
    case 'file.save':
    case 'file.copyPath': {
      const { itemId, path } = m;
      if (typeof itemId !== 'string' || !itemId || itemId.length > 512) return undefined;
      if (typeof path !== 'string' || !path || path.length > 4096) return undefined;
      return { type: m.type, itemId, path };
    }
    case 'changes.diff':
    case 'changes.revert':
    case 'changes.keep': {
      const { itemId } = m;
      if (typeof itemId !== 'string' || !itemId || itemId.length > 512) return undefined;
      if (m.type === 'changes.diff') return isPath(m.path) ? { type: 'changes.diff', itemId, path: m.path } : undefined;
      if (m.paths === undefined) return { type: m.type, itemId };
      return Array.isArray(m.paths) && m.paths.length <= MAX_REVERT_PATHS && m.paths.every(isPath) ? { type: m.type, itemId, paths: m.paths } : undefined;
    }
    case 'exec.rewind': {
      const { itemId, redo } = m;
      if (typeof itemId !== 'string' || !itemId || itemId.length > 512) return undefined;
      if (redo === undefined) return { type: 'exec.rewind', itemId };
      return typeof redo === 'string' && redo && redo.length <= 256 ? { type: 'exec.rewind', itemId, redo } : undefined;
    }
    case 'turn.rewind':
      return typeof m.turnId === 'string' && m.turnId && m.turnId.length <= 512 ? { type: 'turn.rewind', turnId: m.turnId } : undefined;
    default:
      return undefined;
  }
}
