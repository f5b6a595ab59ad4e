import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as ts from 'typescript';

const root = path.resolve(__dirname, '../..');

/** The names a made-up file in `dir` cannot find under the config's options (its lib and types). */
function missingNames(config: string, dir: string, text: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(root, config), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  assert.ok(parsed, config);
  const probe = path.join(root, dir, 'tsconfigProbe.ts');
  const host = ts.createCompilerHost(parsed.options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (path.resolve(name) === probe ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === probe || fileExists(name);
  // The config's own declarations (src/common's shared globals) and the probe.
  const program = ts.createProgram({ rootNames: [...parsed.fileNames.filter((f) => f.endsWith('.d.ts')), probe], options: parsed.options, host });
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(probe))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    .map((m) => /Cannot find name '(\w+)'/.exec(m)?.[1] ?? m)
    .sort();
}

describe('tsconfigs per target', function () {
  this.timeout(120_000);
  const text = 'export const a = document.title;\nexport const b = process.pid;\nexport const c = setTimeout(() => undefined, 1);\n';

  it('the hosts (tsconfig.node.json) have Node and no DOM', () => {
    assert.deepEqual(missingNames('tsconfig.node.json', 'src/core', text), ['document']);
  });

  it('the webview (tsconfig.webview.json) has the DOM and no Node', () => {
    assert.deepEqual(missingNames('tsconfig.webview.json', 'src/webview', text), ['process']);
  });

  it('src/common (tsconfig.common.json) has only the globals both define', () => {
    assert.deepEqual(missingNames('tsconfig.common.json', 'src/common', text), ['document', 'process']);
  });
});
