/**
 * What the `execute_tool_code` language-model tool's confirmation shows (./lmTool): all of the code, its invisible and
 * bidirectional characters as `<U+XXXX>`, in a fence nothing in it can close, so the person approves exactly what runs.
 * Code too long to read in a dialog does not run at all (it is not cut short for the reading).
 */
import { revealInvisible } from '../common/invisibleChars';
import { fenceFor } from '../common/quoteData';

/** The longest code the confirmation shows; longer code is refused (as the MCP and ACP doors refuse it). */
export const MAX_REVIEW_CHARS = 100_000;

/** Why `code` cannot be confirmed (too long to read), or undefined. */
export function tooLongToReview(code: string): string | undefined {
  if (code.length <= MAX_REVIEW_CHARS) return undefined;
  return `This code is ${code.length.toLocaleString('en-US')} characters, too long to read in a confirmation (at most ${MAX_REVIEW_CHARS.toLocaleString('en-US')}), so it did not run. Send it in shorter steps.`;
}

/** The confirmation's Markdown: the tools the code may call (names as code), then the code, all of it. */
export function confirmationMarkdown(code: string, tools: readonly string[]): string {
  const names = tools.length ? tools.map((t) => `\`${revealInvisible(t).replace(/`/g, '')}\``).join(', ') : 'none declared';
  const refused = tooLongToReview(code);
  if (refused) return refused;
  const shown = revealInvisible(code);
  const fence = fenceFor(shown);
  return `Run this Python with the workspace's managed tools (${names})?\n\n${fence}python\n${shown}\n${fence}\n`;
}
