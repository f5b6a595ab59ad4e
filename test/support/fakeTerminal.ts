/** A terminal for the CLI's questions in a test: input that says it is a TTY, and what a person reads of the output. */
import { PassThrough } from 'node:stream';
import { TerminalQuestions } from '../../src/cli/terminalQuestions';

export function fakeTerminal() {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  const output = new PassThrough();
  let shown = '';
  output.on('data', (c: Buffer) => (shown += c.toString()));
  // What a person reads: readline's cursor moves left out.
  return { questions: new TerminalQuestions({ input, output }), input, shown: () => shown.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '') };
}
