/**
 * Python lint of the guest (`npm run lint`): Debian's flake8 with pyflakes' checks (F) and imports that
 * are not at the top (E402; the guest sets sys.path first). Every `# noqa` must name its codes, and each
 * code must be one flake8 reports on that line without the marker: a marker nothing needs fails too.
 * Usage: `tsx scripts/pyLint.ts [file.py ...]` (default: src/core/runtime/guest/*.py).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

const SELECT = 'F,E402';
const root = path.resolve(__dirname, '..');

function flake8(files: string[], extra: string[]): { path: string; row: number; code: string; text: string }[] {
  const r = spawnSync('flake8', [`--select=${SELECT}`, '--format=%(path)s\t%(row)d\t%(code)s\t%(text)s', ...extra, ...files], { encoding: 'utf8' });
  if (r.error) throw new Error(`flake8 did not start (${r.error.message}): install Debian's flake8 (apt-get install flake8)`);
  if (r.status !== 0 && r.status !== 1) throw new Error(`flake8 exited ${r.status}: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [file, row, code, text] = line.split('\t');
      return { path: path.resolve(file), row: Number(row), code, text };
    });
}

/** The findings, as `file:line: message` lines; empty when the files are clean. */
export function pyLint(files: string[]): string[] {
  const abs = files.map((f) => path.resolve(f));
  const out = flake8(abs, []).map((f) => `${path.relative(root, f.path)}:${f.row}: ${f.code} ${f.text}`);
  const unmarked = new Map<string, Set<string>>();
  for (const f of flake8(abs, ['--disable-noqa'])) {
    const key = `${f.path}:${f.row}`;
    if (!unmarked.has(key)) unmarked.set(key, new Set());
    unmarked.get(key)!.add(f.code);
  }
  for (const file of abs) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const m = /#\s*noqa\b(?::\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?/i.exec(line);
        if (!m) return;
        const where = `${path.relative(root, file)}:${i + 1}`;
        if (!m[1]) return void out.push(`${where}: a bare "# noqa": name the codes it silences (# noqa: F401)`);
        const flagged = unmarked.get(`${file}:${i + 1}`) ?? new Set<string>();
        for (const code of m[1].split(',').map((c) => c.trim().toUpperCase())) {
          if (!flagged.has(code)) out.push(`${where}: "# noqa: ${code}" silences nothing (flake8 --select=${SELECT} does not report ${code} here): remove it`);
        }
      });
  }
  return out;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const guest = path.join(root, 'src/core/runtime/guest');
  const files = args.length
    ? args
    : readdirSync(guest)
        .filter((f) => f.endsWith('.py'))
        .map((f) => path.join(guest, f));
  const findings = pyLint(files);
  for (const f of findings) console.error(f);
  if (findings.length) {
    console.error(`python lint: ${findings.length} finding(s)`);
    process.exit(1);
  }
}
