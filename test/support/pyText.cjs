// Loads `import x from './file.py'` as the file's text, as esbuild's text loader does in the bundle.
// Registered by .mocharc.json (tests) and by the bench and soak scripts, which run the TypeScript sources.
const fs = require('node:fs');
require.extensions['.py'] = (module, filename) => {
  module.exports = { __esModule: true, default: fs.readFileSync(filename, 'utf8') };
};
