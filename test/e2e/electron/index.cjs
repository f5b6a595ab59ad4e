// Entry point of the extension tests inside VS Code (`extensionTestsPath` of @vscode/test-electron):
// runs extension.suite.cjs with mocha in the extension host and reports failures to the launcher.
'use strict';
const path = require('node:path');

function run() {
  const mod = require('mocha');
  const Mocha = mod.Mocha || mod.default || mod;
  const mocha = new Mocha({ ui: 'bdd', timeout: 120000, color: true, reporter: 'spec' });
  mocha.addFile(path.join(__dirname, 'extension.suite.cjs'));
  return new Promise((resolve, reject) => {
    try {
      mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} extension test(s) failed inside VS Code.`)) : resolve()));
    } catch (err) {
      reject(err);
    }
  });
}

module.exports = { run };
