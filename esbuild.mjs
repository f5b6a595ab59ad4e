// Bundles the extension (Node, `vscode` external), the CLI (Node) and the webview (browser). The Python
// guest library (src/core/runtime/guest/*.py) is embedded as text.
import * as esbuild from 'esbuild';
import { existsSync, chmodSync, readFileSync } from 'node:fs';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
  legalComments: 'none',
};

const node = {
  ...common,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Optional native helpers some dependencies probe for; never needed here.
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
  // jsonc-parser's UMD build hides its requires from the bundler; its ESM build bundles cleanly.
  mainFields: ['module', 'main'],
  loader: { '.py': 'text' },
  // --version and the MCP client's version come from package.json.
  define: { __CODEACT_VERSION__: JSON.stringify(pkg.version) },
};

const builds = [
  { ...node, entryPoints: { extension: 'src/extension.ts' }, outdir: 'dist' },
  { ...node, entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' } },
  // The session host (core/sessionHost), started detached by the CLI and the extension.
  { ...node, entryPoints: { sessionHost: 'src/core/sessionHost/main.ts' }, outdir: 'dist' },
  // The engine as it ships, for `npm run bench` (not packaged).
  { ...node, entryPoints: { 'bench-engine': 'bench/engine.ts' }, outdir: 'dist', sourcemap: false },
  {
    ...common,
    entryPoints: { webview: 'src/webview/main.ts' },
    outdir: 'dist',
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    loader: { '.css': 'css' },
  },
].filter((b) => Object.values(b.entryPoints).every((p) => existsSync(p)));

function copyAssets() {
  if (existsSync('dist/cli.js')) chmodSync('dist/cli.js', 0o755);
}

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.watch()));
  copyAssets();
  console.log('[watch] build finished, watching for changes…');
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  copyAssets();
}
