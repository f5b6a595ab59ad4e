/** What `fn` writes on stdout and stderr (the writes of this process are captured meanwhile): for the CLI's printers. */
export function captureOutput(fn: () => void): { stdout: string; stderr: string } {
  const got = { stdout: '', stderr: '' };
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => ((got.stdout += s), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => ((got.stderr += s), true)) as typeof process.stderr.write;
  try {
    fn();
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
  return got;
}
