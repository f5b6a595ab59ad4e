import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { deadExports } from '../../scripts/deadExports';

describe('dead-export check (scripts/deadExports.ts)', function () {
  this.timeout(120_000);

  it('reports an export nothing imports, and follows imports, re-exports, import types and import()', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-dead-'));
    const write = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    };
    write(
      'tsconfig.json',
      JSON.stringify({ compilerOptions: { strict: true, module: 'ESNext', moduleResolution: 'Bundler', noEmit: true }, include: ['src', 'test'] }),
    );
    write(
      'src/lib.ts',
      [
        'export function used(): number { return 1; }',
        'export function dead(): number { return 2; }',
        'export function onlyLocal(): number { return 3; }',
        'export const viaReexport = 4;',
        'export interface ViaImportType { a: number }',
        'export const total = onlyLocal();',
      ].join('\n'),
    );
    write('src/barrel.ts', "export { viaReexport } from './lib';\nexport { total as unusedAlias } from './lib';\n");
    write('src/lazy.ts', 'export const loadedLazily = 5;\n');
    write(
      'src/main.ts',
      "import { used } from './lib';\nimport { viaReexport } from './barrel';\nexport async function run(): Promise<number> { const { loadedLazily } = await import('./lazy'); return used() + viaReexport + loadedLazily; }\n",
    );
    write('test/lib.test.ts', "import { run } from '../src/main';\nexport type T = import('../src/lib').ViaImportType;\nvoid run();\n");
    const found = deadExports({ root: dir }).map((d) => `${d.file}: ${d.name}`);
    // `total` is used only through an alias nobody imports: the alias is the finding (and total, once it is gone).
    assert.deepEqual(found.sort(), ['src/barrel.ts: unusedAlias', 'src/lib.ts: dead', 'src/lib.ts: onlyLocal'].sort());
  });
});
