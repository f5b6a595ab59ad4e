/** `codeact chat`: filled in by the providers work (issue 3). */
export async function chatCommand(_argv: string[]): Promise<number> {
  process.stderr.write('codeact chat is not available in this build yet.\n');
  return 2;
}
