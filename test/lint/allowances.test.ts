import * as assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';

const root = path.resolve(__dirname, '../..');

describe('lint allowances (eslint.config.mjs ALLOWANCES)', function () {
  this.timeout(300_000);

  it('lists only files that still break their rule, so the lists only shrink', async () => {
    const { ALLOWANCES } = (await import(pathToFileURL(path.join(root, 'eslint.config.mjs')).href)) as { ALLOWANCES: Record<string, string[]> };
    const entries = Object.entries(ALLOWANCES);
    const files = [...new Set(entries.flatMap(([, list]) => list))];
    const gone = files.filter((f) => !existsSync(path.join(root, f)));
    assert.deepEqual(gone, [], 'allowed files that no longer exist: take them off the list');
    // The listed rules on, everywhere: what each listed file reports.
    const eslint = new ESLint({ cwd: root, overrideConfig: { files: ['**/*.ts'], rules: Object.fromEntries(entries.map(([rule]) => [rule, 'error'])) } });
    const broken = new Set<string>();
    for (const r of await eslint.lintFiles(files)) {
      for (const m of r.messages) if (m.ruleId) broken.add(`${m.ruleId} ${path.relative(root, r.filePath)}`);
    }
    const unneeded = entries.flatMap(([rule, list]) => list.filter((f) => !broken.has(`${rule} ${f}`)).map((f) => `${rule}: ${f}`));
    assert.deepEqual(unneeded, [], 'these files no longer break the rule: take them off ALLOWANCES');
  });

  it('the type-aware rules fire', async () => {
    const eslint = new ESLint({ cwd: root });
    const text = [
      "type Kind = 'a' | 'b';",
      'export function f(k: Kind, p: () => Promise<void>): number {',
      '  p();',
      '  switch (k) {',
      "    case 'a':",
      '      return 1;',
      '  }',
      '  return 0;',
      '}',
      'export const x: any = 1;',
    ].join('\n');
    // An existing file's path, so the project service knows it; the text is ours.
    const [r] = await eslint.lintText(text, { filePath: path.join(root, 'src/core/util/ids.ts') });
    const rules = new Set(r.messages.map((m) => m.ruleId));
    for (const rule of ['@typescript-eslint/no-floating-promises', '@typescript-eslint/switch-exhaustiveness-check', '@typescript-eslint/no-explicit-any']) {
      assert.ok(rules.has(rule), `${rule}: ${JSON.stringify(r.messages)}`);
    }
  });

  it("codeact/no-kind-comparison fires on a kind's name compared outside its owner, never in the owner nor on other strings", async () => {
    const eslint = new ESLint({ cwd: root });
    const rule = 'codeact/no-kind-comparison';
    const body = [
      "type Where = 'local' | 'hosted';",
      'export function f(k: RuntimeKind, m: CodeMode, s: string, w: Where, o?: RuntimeKind): number {',
      "  if (k === 'jupyter') return 1;",
      '  switch (m) {',
      "    case 'hosted':",
      '      return 2;',
      '    default:',
      '  }',
      "  if (o !== 'local' && o !== 'jupyter') return 3;",
      "  if (s === 'jupyter' || w === 'local' || 'hosted' === w) return 4;",
      '  return 0;',
      '}',
    ];
    /** The lines the rule reports in `head` + body, linted as `filePath`. */
    const reported = async (filePath: string, head: string) => {
      const [r] = await eslint.lintText(`${head}\n${body.join('\n')}\n`, { filePath: path.join(root, filePath) });
      assert.deepEqual(
        r.messages.filter((m) => m.fatal),
        [],
      );
      const first = head.split('\n').length + 1;
      return r.messages.filter((m) => m.ruleId === rule).map((m) => m.line - first + 1);
    };
    // Outside the owner: the kind compared, switched on, and narrowed (o after its first comparison); never a
    // plain string nor another union that shares a name ('local' of Where).
    assert.deepEqual(await reported('src/cli/print.ts', "import type { CodeMode, RuntimeKind } from '../common/runtimes';"), [3, 5, 9, 9]);
    // The owning module compares its own kinds (the text is the module's own, with the same code added).
    assert.deepEqual(await reported('src/common/runtimes.ts', readFileSync(path.join(root, 'src/common/runtimes.ts'), 'utf8')), []);
  });

  it('codeact/no-kind-comparison covers every kind of KIND_OWNERS: a name compared outside its owners is reported, in each owner it is not', async () => {
    const { KIND_OWNERS } = (await import(pathToFileURL(path.join(root, 'eslint.config.mjs')).href)) as { KIND_OWNERS: Record<string, string[]> };
    /** A name of each kind (a new kind in KIND_OWNERS needs one here). */
    const names: Record<string, string> = {
      RuntimeKind: 'jupyter',
      ConfiguredRuntime: 'local',
      CodeMode: 'hosted',
      ProviderId: 'openai-compatible',
      ToolSourceKind: 'lmTool',
      Mime: 'image/png',
      McpServerKind: 'stdio',
    };
    assert.deepEqual(Object.keys(names).sort(), Object.keys(KIND_OWNERS).sort(), 'a name for each configured kind');
    const eslint = new ESLint({ cwd: root });
    /** The kinds the rule reports in `text` + a comparison of `kind`'s name, linted as `filePath`. */
    const reported = async (filePath: string, kind: string, text = '') => {
      let from = path.relative(path.dirname(filePath), KIND_OWNERS[kind][0]).replace(/\.ts$/, '');
      if (!from.startsWith('.')) from = `./${from}`;
      const probe = [
        `import type { ${kind} as KindProbe } from '${from}';`,
        `export function kindProbe(k: KindProbe): boolean {`,
        `  return k === '${names[kind]}';`,
        '}',
      ].join('\n');
      const [r] = await eslint.lintText(`${text}\n${probe}\n`, { filePath: path.join(root, filePath) });
      assert.deepEqual(
        r.messages.filter((m) => m.fatal),
        [],
      );
      return r.messages.filter((m) => m.ruleId === 'codeact/no-kind-comparison').map((m) => m.message);
    };
    for (const [kind, owners] of Object.entries(KIND_OWNERS)) {
      const outside = await reported('src/cli/print.ts', kind);
      assert.equal(outside.length, 1, `${kind} compared in src/cli/print.ts: ${JSON.stringify(outside)}`);
      assert.ok(outside[0].startsWith(`'${names[kind]}' is a ${kind}: compare its names only in ${owners.join(', ')};`), outside[0]);
      // Each owner compares the kind's names (its own text, with the comparison added).
      for (const owner of owners) assert.deepEqual(await reported(owner, kind, readFileSync(path.join(root, owner), 'utf8')), [], `${kind} in ${owner}`);
    }
  });
});
