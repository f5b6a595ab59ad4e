/**
 * The conversation in text form, for a model that answers with fenced Python blocks instead of
 * function calls (./textProtocol). The history is stored exactly as with function calling (a
 * `function_call` of `execute_tool_code` with the code, then its `function_call_output`); only the
 * request is rewritten: the call becomes the assistant's ```python block, the output an
 * "Observation:" user message. Thinking items and provider replay data are left out (replayed
 * blocks could carry tool calls the request no longer declares).
 */
import type { AttachedImage, MessageItem } from '../../common/events';
import { foreignItemText, isLocalRuntimeItem } from '../providers/shared/history';
import type { ConversationItem } from '../providers/shared/types';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE } from '../tools/modelTools';
import { headTail, omittedText } from '../../common/outputBudget';

const CODE_TOOLS = new Set([EXECUTE_TOOL_CODE, EXECUTE_CODE]);

/** The model's own call arguments, shortened in the assistant's turn (they are not an observation). */
function cap(text: string, max: number): string {
  return headTail(text, max, (o) => `…[${omittedText(o)} left out]…`);
}

/** The fenced block the model wrote (or would have written) for a code call. */
function codeBlockText(code: string): string {
  // A longer fence when the code itself contains a line of three backticks.
  const fence = /^ {0,3}```/m.test(code) ? '````' : '```';
  return `${fence}python\n${code.replace(/\n+$/, '')}\n${fence}`;
}

function callText(name: string, args: string | undefined): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args ?? '{}');
  } catch {
    parsed = undefined;
  }
  const code = (parsed as { code?: unknown } | undefined)?.code;
  if (CODE_TOOLS.has(name) && typeof code === 'string') return codeBlockText(code);
  return `[I called ${name} with ${cap(args ?? '{}', 2000)}]`;
}

interface Summary {
  status?: string;
  value?: unknown;
  /** The value is the cut text of its JSON (see executionSummary). */
  value_truncated?: boolean;
  stdout?: string;
  stderr?: string;
  error?: string | { type?: string; message?: string; traceback?: string };
  images?: number;
  execution?: number;
  displays?: unknown[];
  files?: unknown[];
}

/** The displays and files of a summary, as observation lines (the summary is within the output budget already). */
function outputLines(s: Summary): string[] {
  const lines: string[] = [];
  const displays = Array.isArray(s.displays) ? s.displays.filter((d): d is string => typeof d === 'string') : [];
  if (displays.length) {
    lines.push(`Shown to the user${typeof s.execution === 'number' ? ` (execution ${s.execution})` : ''}:`);
    for (const d of displays) lines.push(`- ${d.replace(/\n/g, '\n  ')}`);
  }
  const files = Array.isArray(s.files) ? s.files : [];
  if (files.length) {
    const named = files.map((f) => {
      if (typeof f === 'string') return f;
      const { name, bytes, note } = (f ?? {}) as { name?: unknown; bytes?: unknown; note?: unknown };
      return `${String(name ?? 'file')}${typeof bytes === 'number' ? ` (${bytes.toLocaleString('en-US')} bytes)` : ''}${typeof note === 'string' ? ` [${note}]` : ''}`;
    });
    lines.push(`Files given to the user: ${named.join(', ')}`);
  }
  return lines;
}

/**
 * The observation message for a code run, from its `function_call_output` (the JSON summary the agent
 * loop stores, see `executionSummary`). Its text is the summary's, cut nowhere else: the output budget
 * was applied once, when the summary was made, so both protocols send the same text and the same count.
 */
export function observationText(output: string, name = EXECUTE_TOOL_CODE): string {
  let s: Summary | undefined;
  try {
    const parsed = JSON.parse(output);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) s = parsed as Summary;
  } catch {}
  if (!CODE_TOOLS.has(name) || !s) return `Observation${CODE_TOOLS.has(name) ? '' : ` (${name})`}:\n${output}`;
  const lines: string[] = [];
  const err = typeof s.error === 'string' ? { type: 'Error', message: s.error } : s.error;
  if (err) lines.push(`Observation: the code failed with ${err.type ?? 'Error'}: ${err.message ?? ''}`);
  else lines.push(`Observation: the code ran (${s.status ?? 'completed'}).`);
  if (s.stdout) lines.push('Printed output:', s.stdout);
  if (s.stderr) lines.push('Printed to stderr:', s.stderr);
  if (!err && 'value' in s) lines.push(`Returned value: ${s.value_truncated && typeof s.value === 'string' ? s.value : JSON.stringify(s.value ?? null)}`);
  lines.push(...outputLines(s));
  if (s.images) lines.push(`(${s.images} image${s.images === 1 ? '' : 's'} shown to the user.)`);
  if (err?.traceback) lines.push('Traceback:', err.traceback);
  if (err) lines.push('Fix the code and try again (do not repeat a failing call unchanged), or answer without a code block if it cannot be done.');
  else if (!s.stdout && s.value === null && !s.displays?.length) lines.push('(Nothing was printed or returned: print() or return what you need to see.)');
  return lines.join('\n');
}

/**
 * The history as plain user/assistant messages: code calls as ```python blocks, their outputs as
 * observations (with the images of the execution, which the provider sends to a model that sees them),
 * consecutive messages of one role merged.
 */
export function toTextHistory(history: ConversationItem[]): ConversationItem[] {
  const out: (MessageItem & { images?: AttachedImage[] })[] = [];
  const names = new Map<string, string>();
  const push = (role: 'user' | 'assistant', text: string, id: string, images?: AttachedImage[]): void => {
    if (!text.trim()) return;
    const last = out[out.length - 1];
    const more = images?.length ? images : undefined;
    if (last && last.role === role) {
      last.text += `\n\n${text}`;
      if (more) last.images = [...(last.images ?? []), ...more];
    } else out.push({ type: 'message', id, role, text, ...(more ? { images: more } : {}) });
  };
  for (const item of history) {
    switch (item.type) {
      case 'message':
        if (!item.thinking) push(item.role, item.text, item.id);
        break;
      case 'function_call':
        names.set(item.id ?? item.call_id, item.name);
        push('assistant', callText(item.name, item.arguments), item.id ?? item.call_id);
        break;
      case 'function_call_output':
        push(
          'user',
          observationText(item.output, item.name ?? names.get(item.item_id ?? item.call_id) ?? EXECUTE_TOOL_CODE),
          item.id ?? `obs_${item.call_id}`,
          item.images,
        );
        break;
      default: {
        if (isLocalRuntimeItem(item)) break;
        const t = foreignItemText(item);
        if (t) push('assistant', t, item.id);
      }
    }
  }
  return out;
}
