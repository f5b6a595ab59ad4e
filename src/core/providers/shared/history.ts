/**
 * The history going back to a provider: an earlier response of the same provider as its raw parts
 * (verbatim, in their original order), everything else item by item in a neutral form. Each adapter says
 * how to write each piece in its wire format; the walk is the same for all.
 */
import { DEFAULT_OUTPUT_CHARS, headTail, partNote } from '../../../common/outputBudget';
import { fenceFor, jsonData, quoteBlock, quoteInline, quoteName } from '../../../common/quoteData';
import type { AttachedImage, FunctionCallItem, FunctionCallOutputItem, OutputItem } from '../../../common/events';
import { modelSeesImages, providerInfo } from './catalog';
import { DEFAULT_IMAGE_BUDGET, type ConversationItem, type ImageBudget, type ProviderId, type TurnRequest } from './types';
import { base64Bytes, displayModelText, sizeLabel } from '../../../common/displays';
import { imageTypeName, isVision } from '../../../common/mimeTypes';
import { checkImagePixels, DEFAULT_MAX_IMAGE_PIXELS } from '../../../common/imageHeader';
import { runtimeInfo } from '../../../common/runtimes';

/**
 * A neutral text rendering of a hosted item another provider produced (for cross-provider history).
 * None for our own runtimes' code items: their result reaches the model as a function_call_output.
 */
export function foreignItemText(item: OutputItem): string | undefined {
  if (isLocalRuntimeItem(item)) return undefined;
  if (item.type === 'code_interpreter_call') {
    const all = item.outputs
      .map((o) =>
        o.type === 'logs'
          ? o.stream === 'stderr'
            ? `[stderr]\n${o.logs}`
            : o.logs
          : o.type === 'image'
            ? '[image]'
            : o.type === 'display'
              ? displayModelText(o)
              : `[file ${quoteInline(o.filename ?? o.file_id ?? '')}]`,
      )
      .join('\n');
    // Another provider's sandbox output, replayed as text: within the default output budget, as our own runs' results;
    // the code in a fence it cannot close, the output quoted as data (../../../common/quoteData).
    const out = headTail(all, DEFAULT_OUTPUT_CHARS, partNote('the output', 'run the code again to see it'));
    const fence = fenceFor(item.code);
    const exit = typeof item.exit_code === 'number' ? `, exit code ${item.exit_code}` : '';
    return `[Code I ran in the ${quoteName(item.runtime)} sandbox]\n${fence}\n${item.code}\n${fence}\n[Output${exit}]\n${quoteBlock(out)}`;
  }
  if (item.type === 'text_editor_call') {
    const res = item.error ? `error ${quoteName(item.error.code)}${item.error.message ? `: ${quoteInline(item.error.message)}` : ''}` : jsonData(item.result);
    return `[Text editor ${quoteName(item.command)} ${quoteInline(item.path ?? '')}] ${res}`;
  }
  return undefined;
}

/** True for code items run by our own runtimes: their result reaches the model as a function_call_output. */
export function isLocalRuntimeItem(item: OutputItem): boolean {
  return item.type === 'code_interpreter_call' && runtimeInfo(item.runtime)?.ours === true;
}

type HistorySegment = { kind: 'replay'; turn: string; parts: unknown[] } | { kind: 'item'; item: ConversationItem };

/**
 * Splits the history into segments: the replay parts of one response of `provider` (sorted by their
 * index, in the position of the response's first item) and everything else item by item.
 */
function segmentHistory(history: ConversationItem[], provider: ProviderId): HistorySegment[] {
  const out: HistorySegment[] = [];
  const byTurn = new Map<string, { kind: 'replay'; turn: string; parts: unknown[]; indexed: { index: number; data: unknown }[] }>();
  for (const item of history) {
    const r = item.replay;
    if (r && r.provider === provider && Array.isArray(r.parts) && r.parts.length > 0) {
      let seg = byTurn.get(r.turn);
      if (!seg) {
        seg = { kind: 'replay', turn: r.turn, parts: [], indexed: [] };
        byTurn.set(r.turn, seg);
        out.push(seg);
      }
      seg.indexed.push(...r.parts);
      continue;
    }
    out.push({ kind: 'item', item });
  }
  for (const seg of byTurn.values()) {
    const seen = new Set<number>();
    seg.parts = seg.indexed
      .slice()
      .sort((a, b) => a.index - b.index)
      .filter((p) => (seen.has(p.index) ? false : (seen.add(p.index), true)))
      .map((p) => p.data);
  }
  return out.map((s) => (s.kind === 'replay' ? { kind: 'replay', turn: s.turn, parts: s.parts } : s));
}

// ---- images: which ones a request carries ---------------------------------------------------------

/** Stand-in lines one item gets at most; the rest are counted in one line. */
const MAX_NOTE_LINES = 8;
/** Images of one item looked at, at most (a transcript is read from disk: bound it). */
const MAX_ITEM_IMAGES = 200;

interface HistoryImages {
  /** The model sees images (Provider.seesImages): the newest go with the request, older ones become text. */
  seesImages: boolean;
  /** Default DEFAULT_IMAGE_BUDGET. */
  budget?: ImageBudget;
  /** The largest image the provider takes, in base64 characters: a larger one is never attached. */
  maxImageBase64?: number;
}

interface ImagePlan {
  attached: AttachedImage[];
  /** Text for the images that do not go: appended to the item's text. */
  notes: string[];
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** An image a provider will take: a raster type and base64 data (a saved transcript may hold anything). */
function validImage(img: unknown): img is AttachedImage {
  const i = img as AttachedImage | undefined;
  return !!i && typeof i.data === 'string' && i.data.length > 0 && isVision(i.mime_type) && BASE64.test(i.data);
}

/** "640×480 " when the image says its size in whole pixels, else "". */
function sizeOf(img: AttachedImage): string {
  const ok = (n: unknown) => Number.isInteger(n) && (n as number) > 0;
  return ok(img.width) && ok(img.height) ? `${sizeLabel(img)} ` : '';
}

/** Where an image came from, for its stand-in ("execution 3"). */
function sourceOf(img: AttachedImage): string {
  return typeof img.source === 'string' && img.source ? img.source.slice(0, 80) : 'an earlier execution';
}

/** "640×480 PNG" (or "PNG" when the size is unknown). */
function imageLabel(img: AttachedImage): string {
  return `${sizeOf(img)}${imageTypeName(img.mime_type)}`;
}

function imagesOf(item: ConversationItem): AttachedImage[] {
  if (!(item.type === 'function_call_output' || (item.type === 'message' && item.role === 'user')) || !Array.isArray(item.images)) return [];
  return item.images.slice(0, MAX_ITEM_IMAGES).filter(validImage);
}

/** Why an image is left out when it is not the budget: too large for the provider, or its header over the pixel cap (the note). */
type LeftOut = Map<AttachedImage, 'too large' | { note: string }>;

function standIn(img: AttachedImage, why: LeftOut): string {
  const w = why.get(img);
  if (typeof w === 'object') return `[image from ${sourceOf(img)}, not attached] ${w.note}`;
  return `[image ${sizeOf(img)}from ${sourceOf(img)}, ${w === 'too large' ? 'too large to attach for this provider' : 'no longer attached'}]`;
}

function standIns(images: AttachedImage[], why: LeftOut): string[] {
  const lines = images.slice(0, MAX_NOTE_LINES).map((img) => standIn(img, why));
  const more = images.length - lines.length;
  if (more > 0) lines.push(`[${more} more image${more === 1 ? '' : 's'} from ${sourceOf(images[lines.length])}, not attached]`);
  return lines;
}

function notSeen(images: AttachedImage[]): string {
  const n = images.length;
  const labels = images.slice(0, MAX_NOTE_LINES).map(imageLabel).join(', ') + (n > MAX_NOTE_LINES ? ', …' : '');
  return `[${n} image${n === 1 ? ' was' : 's were'} shown to the user: ${labels}; this model cannot see images]`;
}

/**
 * Decides, once per request, which images go with it: for a model that sees images, the newest ones, as
 * long as both the count and the bytes (decoded) stay within the budget; every older one becomes a stand-in
 * text ("[image 640×480 from execution 3, no longer attached]"). A model that cannot see images gets one line
 * per item saying what the user was shown.
 */
function planImages(history: ConversationItem[], o: HistoryImages): Map<ConversationItem, ImagePlan> {
  const plans = new Map<ConversationItem, ImagePlan>();
  const budget = o.budget ?? DEFAULT_IMAGE_BUDGET;
  let count = 0;
  let bytes = 0;
  let open = o.seesImages && budget.maxImages > 0;
  const maxPixels = budget.maxPixels ?? DEFAULT_MAX_IMAGE_PIXELS;
  const why: LeftOut = new Map();
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history[i];
    const images = imagesOf(item);
    if (!images.length) continue;
    if (!o.seesImages) {
      plans.set(item, { attached: [], notes: [notSeen(images)] });
      continue;
    }
    const attached: AttachedImage[] = [];
    const dropped: AttachedImage[] = [];
    for (let j = images.length - 1; j >= 0; j--) {
      const img = images[j];
      const size = base64Bytes(img.data);
      if (o.maxImageBase64 !== undefined && img.data.length > o.maxImageBase64) {
        // Over what the provider takes at all: left out, without closing the budget to older images.
        why.set(img, 'too large');
        dropped.unshift(img);
        continue;
      }
      // Read from its header, never decoded: an image over the pixel cap (or with no size we read) is a note.
      const pixels = checkImagePixels(img.mime_type, img.data, maxPixels);
      if (!pixels.ok) {
        why.set(img, { note: pixels.note });
        dropped.unshift(img);
        continue;
      }
      if (open && count < budget.maxImages && bytes + size <= budget.maxBytes) {
        attached.unshift(img);
        count++;
        bytes += size;
      } else {
        // The newest images that fit: once one does not, every older one stays out too.
        open = false;
        dropped.unshift(img);
      }
    }
    plans.set(item, { attached, notes: standIns(dropped, why) });
  }
  return plans;
}

/** The image options of a request to `provider`: whether its model sees images (./catalog), and the budget. */
export function requestImages(req: TurnRequest, provider: ProviderId, compatibleVisionModels?: readonly string[]): HistoryImages {
  return {
    seesImages: modelSeesImages(provider, req.model, compatibleVisionModels),
    budget: req.images,
    maxImageBase64: providerInfo(provider).maxImageBase64,
  };
}

/** `data:image/png;base64,…` */
export function imageDataUrl(img: AttachedImage): string {
  return `data:${img.mime_type};base64,${img.data}`;
}

function withNotes(text: string, notes: string[]): string {
  return notes.length ? `${text}${text ? '\n' : ''}${notes.join('\n')}` : text;
}

/** How an adapter writes each piece of the history. */
interface HistoryWriter {
  /** The raw parts of one earlier response of `provider`, to send back verbatim (absent: no replay). */
  replay?: { provider: ProviderId; write(parts: unknown[]): void };
  /** A user message; `images` (the text protocol's observations) only for a model that sees them, within the budget. */
  user(text: string, images?: AttachedImage[]): void;
  /** The text of an earlier assistant message (thinking left out). */
  assistant(text: string): void;
  /** The neutral text of another provider's hosted item; default: as assistant text. */
  foreign?(text: string): void;
  call(item: FunctionCallItem): void;
  /**
   * A function result. Its `images` are the ones this request carries (absent: none), to send in the
   * provider's own shape; `output` already says in text what happened to the others.
   */
  output(item: FunctionCallOutputItem): void;
}

/**
 * Walks the history in order, handing each piece to the adapter's writer. The images of the history are
 * planned first, for the whole request (planImages): absent `images`, the model is taken not to see them.
 */
export function writeHistory(history: ConversationItem[], w: HistoryWriter, images: HistoryImages = { seesImages: false }): void {
  const plans = planImages(history, images);
  const segments: HistorySegment[] = w.replay ? segmentHistory(history, w.replay.provider) : history.map((item) => ({ kind: 'item', item }));
  for (const seg of segments) {
    if (seg.kind === 'replay') {
      w.replay?.write(seg.parts);
      continue;
    }
    const item = seg.item;
    switch (item.type) {
      case 'message':
        if (item.role === 'user') {
          const plan = plans.get(item);
          if (plan) w.user(withNotes(item.text, plan.notes), plan.attached.length ? plan.attached : undefined);
          else w.user(item.text);
        } else if (!item.thinking && item.text) w.assistant(item.text);
        break;
      case 'function_call':
        w.call(item);
        break;
      case 'function_call_output': {
        const plan = plans.get(item);
        const { images: _all, replay: _replay, ...rest } = item;
        w.output(plan ? { ...rest, output: withNotes(item.output, plan.notes), ...(plan.attached.length ? { images: plan.attached } : {}) } : rest);
        break;
      }
      default: {
        const t = foreignItemText(item);
        if (t) (w.foreign ?? w.assistant)(t);
      }
    }
  }
}
