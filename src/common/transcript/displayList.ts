/**
 * An execution's rich outputs in the view model: each display where it stands in the text, updates
 * (`update_display_data`) in place, at most `MAX_DISPLAYS` kept and the rest counted.
 */
import type { CodeOutput, DisplayOutput } from '../events';
import { MAX_DISPLAYS, type ExecView } from './model';

/** A display the panel can use: an object with a `data` object (anything else is dropped). */
function usable(out: unknown): out is DisplayOutput {
  if (!out || typeof out !== 'object') return false;
  const data = (out as { data?: unknown }).data;
  return !!data && typeof data === 'object' && !Array.isArray(data);
}

/**
 * Adds a display after the first `at` characters of the execution's output. With `update`, it replaces every
 * display of the execution with the same `display_id` where it stands (as Jupyter does); an update of an
 * unknown id changes nothing. Returns whether the view changed.
 */
export function addDisplay(exec: ExecView, out: unknown, update: boolean, at: number): boolean {
  if (!usable(out)) return false;
  const displays = (exec.displays ??= []);
  const id = typeof out.display_id === 'string' && out.display_id ? out.display_id : undefined;
  if (update) {
    if (!id) return false;
    let hit = false;
    for (const d of displays) {
      if (d.output.display_id !== id) continue;
      d.output = out;
      d.rev++;
      hit = true;
    }
    return hit;
  }
  if (displays.length >= MAX_DISPLAYS) {
    exec.displaysDropped = (exec.displaysDropped ?? 0) + 1;
    return true;
  }
  displays.push({ at: Math.max(0, at), output: out, rev: 0 });
  return true;
}

/**
 * The displays of a finished item, when none came live (a reloaded transcript, a runtime that reports them
 * at the end): each after the text its item lists before it. `outputs` is in the order things happened
 * (text, display, text…): a display stands after the text listed before it (capped at the text the card has).
 */
export function takeItemDisplays(exec: ExecView, outputs: readonly CodeOutput[]): void {
  if (exec.displaysKnown) return;
  exec.displaysKnown = true;
  let text = 0;
  for (const o of outputs) {
    if (o.type === 'logs') text += typeof o.logs === 'string' ? o.logs.length : 0;
    else if (o.type === 'display') addDisplay(exec, o, false, Math.min(text, exec.output.totalChars));
  }
}
