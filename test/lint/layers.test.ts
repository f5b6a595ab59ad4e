import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';

const root = path.resolve(__dirname, '../..');

describe('layer rule (eslint)', function () {
  this.timeout(120_000);
  let eslint: ESLint;
  before(async () => {
    const { UNTYPED } = (await import(pathToFileURL(path.join(root, 'eslint.config.mjs')).href)) as { UNTYPED: Linter.Config };
    eslint = new ESLint({ cwd: root, ignore: false, overrideConfig: UNTYPED });
  });
  const lint = async (file: string, text: string) => (await eslint.lintText(text, { filePath: path.join(root, file) }))[0].messages;

  it('forbids importing vscode from src/core and src/common', async () => {
    for (const file of ['src/core/runtime/fake.ts', 'src/common/fake.ts']) {
      const messages = await lint(file, "import * as vscode from 'vscode';\nexport const x = vscode;\n");
      assert.ok(
        messages.some((m) => m.ruleId === 'no-restricted-imports' && /must not import vscode|must never import vscode/.test(m.message)),
        `${file}: ${JSON.stringify(messages)}`,
      );
    }
  });

  it('forbids core importing the vscode layer, and common importing Node', async () => {
    assert.ok(
      (await lint('src/core/x.ts', "import { a } from '../vscode/commands';\nexport const y = a;\n")).some((m) => m.ruleId === 'no-restricted-imports'),
    );
    assert.ok(
      (await lint('src/common/x.ts', "import { readFileSync } from 'node:fs';\nexport const y = readFileSync;\n")).some(
        (m) => m.ruleId === 'no-restricted-imports',
      ),
    );
    assert.ok(
      (await lint('src/webview/x.ts', "import { LocalRuntime } from '../core/runtime/local/localRuntime';\nexport const y = LocalRuntime;\n")).some(
        (m) => m.ruleId === 'no-restricted-imports',
      ),
    );
  });

  it('allows vscode in src/vscode', async () => {
    const messages = await lint('src/vscode/fake.ts', "import * as vscode from 'vscode';\nexport const x = vscode;\n");
    assert.deepEqual(
      messages.filter((m) => m.ruleId === 'no-restricted-imports'),
      [],
    );
  });
});
