/**
 * Whether an OpenAI-compatible server's error is about `tools` (function calling), decided without
 * depending on the server's wording: Ollama, vLLM, llama.cpp, LM Studio, LiteLLM and the many proxies
 * in front of them each say it differently ("\"tools\" is not supported", "function calling not
 * available for this model", "Unsupported parameter: tool_choice", a `param: "tools"`…).
 *
 * Two answers:
 *   - `rejectsTools`: a 400, 422, 500 or 501 whose body mentions tools or functions at all. The agent
 *     switches to the text protocol at once.
 *   - `worthProbing`: a 400, 422 or 500 that says nothing about tools but is not clearly about something
 *     else (the model's name, the key, a quota, a content filter). The agent sends the same turn once
 *     without tools; only if that succeeds does it switch (see agent/textProtocol).
 */

/** Statuses with which servers reject `tools` (llama.cpp answers 500 "tools param requires --jinja flag"). */
const REJECTION_STATUSES: ReadonlySet<number> = new Set([400, 422, 500, 501]);
const PROBE_STATUSES: ReadonlySet<number> = new Set([400, 422, 500]);
/** Only the start of a body is read: the mention is near the top, and the regexes stay linear in a bounded input. */
const MAX_TEXT = 8000;

/**
 * A mention of tools or functions as a word: `tools`, `"tool_choice"`, `toolChoice`, `tool_calls`,
 * `function calling`, `functions`… but not `toolbox` or `functionality`.
 */
const MENTION = /(?<![a-z])(?:tool|function)(?:s|_?choice|_?calls?|_?call(?:ing)?|_?use)?(?![a-z])/;
/** Server hints that name the fix rather than the parameter. */
const HINT = /--jinja|enable-auto-tool-choice|tool-call-parser/;
/** A path into the conversation (`messages[3].tool_calls…`, `messages.2.content`): about the history, not the `tools` parameter. */
const HISTORY_PATH = /\bmessages?\s*(?:\[\s*\d{1,6}\s*\]|\.\d{1,6})[\w.[\]'"]{0,200}/g;
/** Errors clearly about something else: a probe without tools would fail the same way. */
const UNRELATED =
  /\bmodel\b[^.\n]{0,80}?(?:not found|does not exist|doesn't exist|unknown|no such|not loaded)|api[_ -]?key|unauthori[sz]ed|forbidden|quota|rate[_ -]?limit|content[_ -]?(?:filter|policy|management)|safety/;

function normalised(text: string): string {
  return text.slice(0, MAX_TEXT).toLowerCase();
}

/** True when the text mentions tools or functions (outside paths into the conversation). */
function mentionsTools(text: string): boolean {
  const t = normalised(text);
  return HINT.test(t) || MENTION.test(t.replace(HISTORY_PATH, ' '));
}

/** The error's text to read: the SDK's message and the error object as sent (its `param`, `code`, `type` too). */
export function errorText(detail: string, err: unknown): string {
  let body = '';
  const e = err && typeof err === 'object' ? (err as { error?: unknown }).error : undefined;
  if (e !== undefined && e !== null) {
    try {
      body = typeof e === 'string' ? e : (JSON.stringify(e) ?? '');
    } catch {}
  }
  return `${detail.slice(0, MAX_TEXT)} ${body.slice(0, MAX_TEXT)}`;
}

/** A rejection of `tools`: the agent switches to the text protocol. */
export function rejectsTools(status: number | undefined, text: string): boolean {
  return status !== undefined && REJECTION_STATUSES.has(status) && mentionsTools(text);
}

/** A rejection that may be about `tools` though it does not say so: worth one retry without tools. */
export function worthProbing(status: number | undefined, text: string): boolean {
  return status !== undefined && PROBE_STATUSES.has(status) && !UNRELATED.test(normalised(text));
}
