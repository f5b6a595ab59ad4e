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
import { clip } from '../../common/format';
import { fenceFor, jsonData, quoteBlock, quoteInline, quoteName } from '../../common/quoteData';

const CODE_TOOLS = new Set([EXECUTE_TOOL_CODE, EXECUTE_CODE]);

/** The fenced block the model wrote (or would have written) for a code call. */
function codeBlockText(code: string): string {
  // Longer than any run of backticks in the code: nothing in it closes the block.
  const fence = fenceFor(code);
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
  // One line whatever the arguments hold: their JSON again (escaped), or the text as a string.
  return `[I called ${quoteName(name)} with ${clip(parsed !== undefined ? jsonData(parsed) : quoteInline(args ?? ''), 2000)}]`;
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
  /** What the code changed in the workspace, one line each (see executionSummary). */
  workspace_changes?: unknown[];
}

/** The lines at the margin of an observation (ours; what the code wrote is quoted below them). The tests compare against these. */
export const OBSERVATION = {
  failed: (type: string) => `Observation: the code failed with ${type}:`,
  ran: (status: string) => `Observation: the code ran (${status}).`,
  printed: 'Printed output:',
  printedToStderr: 'Printed to stderr:',
  returned: (json: string) => `Returned value: ${json}`,
  shown: (execution?: number) => `Shown to the user${execution !== undefined ? ` (execution ${execution})` : ''}:`,
  filesGiven: 'Files given to the user: ',
  workspaceChanged: 'Workspace files the code changed:',
  fixIt: 'Fix the code and try again (do not repeat a failing call unchanged), or answer without a code block if it cannot be done.',
  nothing: '(Nothing was printed or returned: print() or return what you need to see.)',
};

/** The displays and files of a summary, as observation lines (the summary is within the output budget already); their text quoted as data. */
function outputLines(s: Summary): string[] {
  const lines: string[] = [];
  const displays = Array.isArray(s.displays) ? s.displays.filter((d): d is string => typeof d === 'string') : [];
  if (displays.length) {
    lines.push(OBSERVATION.shown(typeof s.execution === 'number' ? s.execution : undefined));
    displays.forEach((d, i) => lines.push(`Display ${i + 1}:`, quoteBlock(d)));
  }
  const files = Array.isArray(s.files) ? s.files : [];
  if (files.length) {
    const named = files.map((f) => {
      if (typeof f === 'string') return quoteInline(f);
      const { name, bytes, note } = (f ?? {}) as { name?: unknown; bytes?: unknown; note?: unknown };
      return `${quoteInline(name ?? 'file')}${typeof bytes === 'number' ? ` (${bytes.toLocaleString('en-US')} bytes)` : ''}${typeof note === 'string' ? ` (note: ${quoteInline(note)})` : ''}`;
    });
    lines.push(`${OBSERVATION.filesGiven}${named.join(', ')}`);
  }
  const changes = Array.isArray(s.workspace_changes) ? s.workspace_changes.filter((c): c is string => typeof c === 'string') : [];
  if (changes.length) lines.push(OBSERVATION.workspaceChanged, quoteBlock(changes.join('\n')));
  return lines;
}

/**
 * The observation message for a code run, from its `function_call_output` (the JSON summary the agent
 * loop stores, see `executionSummary`). Its text is the summary's, cut nowhere else: the output budget
 * was applied once, when the summary was made, so both protocols send the same text and the same count.
 * The lines at the margin are ours; what the code printed, returned or raised is quoted as data below
 * them (../../common/quoteData), so it cannot write an "Observation:" or a "User:" line of its own.
 */
export function observationText(output: string, name = EXECUTE_TOOL_CODE): string {
  let s: Summary | undefined;
  try {
    const parsed = JSON.parse(output);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) s = parsed as Summary;
  } catch {}
  if (!CODE_TOOLS.has(name) || !s) return `Observation${CODE_TOOLS.has(name) ? '' : ` (${quoteName(name)})`}:\n${quoteBlock(output)}`;
  const lines: string[] = [];
  const err = typeof s.error === 'string' ? { type: 'Error', message: s.error } : s.error;
  if (err) lines.push(OBSERVATION.failed(quoteName(err.type ?? 'Error')), quoteBlock(String(err.message ?? '')));
  else lines.push(OBSERVATION.ran(quoteName(s.status ?? 'completed')));
  if (typeof s.stdout === 'string' && s.stdout) lines.push(OBSERVATION.printed, quoteBlock(s.stdout));
  if (typeof s.stderr === 'string' && s.stderr) lines.push(OBSERVATION.printedToStderr, quoteBlock(s.stderr));
  if (!err && 'value' in s) {
    if (s.value_truncated && typeof s.value === 'string') lines.push('Returned value (its JSON, cut):', quoteBlock(s.value));
    else lines.push(OBSERVATION.returned(jsonData(s.value ?? null)));
  }
  lines.push(...outputLines(s));
  if (typeof s.images === 'number' && s.images) lines.push(`(${s.images} image${s.images === 1 ? '' : 's'} shown to the user.)`);
  if (typeof err?.traceback === 'string' && err.traceback) lines.push('Traceback:', quoteBlock(err.traceback));
  if (err) lines.push(OBSERVATION.fixIt);
  else if (!s.stdout && s.value === null && !s.displays?.length) lines.push(OBSERVATION.nothing);
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
