// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

/** Layers point one way: common <- core <- vscode / cli, and webview <- common. */
const layerRules = [
  {
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['vscode'], message: 'src/common must not import vscode (layer rule, see docs/architecture).' },
          { group: ['node:*', 'fs', 'path', 'child_process', 'os', 'net', 'http', 'https', 'crypto'], message: 'src/common is pure: no Node built-ins.' },
          { group: ['**/core/**', '../core/*', '**/vscode/**', '../vscode/*', '**/webview/**', '../webview/*'], message: 'src/common imports nothing but itself.' },
        ],
      }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['vscode'], message: 'src/core must never import vscode: declare an interface in core and implement it in src/vscode.' },
          { group: ['**/vscode/**', '../vscode/*', '../../vscode/*', '**/webview/**', '**/extension', '**/cli'], message: 'src/core may import only common, Node built-ins and SDKs.' },
        ],
      }],
    },
  },
  {
    files: ['src/webview/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['vscode', 'node:*', '**/core/**', '../core/*', '**/vscode/**', '../vscode/*'], message: 'src/webview runs in the browser and may import only common.' },
        ],
      }],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['vscode', '**/vscode/**', '../vscode/*'], message: 'The CLI runs without VS Code.' }],
      }],
    },
  },
];

/**
 * Zones inside src/core (see docs/architecture.md, "Zones"). Each zone lists what it may import from the
 * rest of core; `common` is always allowed except in util. Every folder of core must be a zone:
 * test/structure.test.ts checks that no file sits outside one.
 */
export const CORE_ZONES = {
  util: [],
  providers: ['util'],
  runtime: ['util'],
  gateway: ['util', 'runtime/types.ts'],
  tools: ['util', 'gateway', 'runtime/types.ts'],
  config: ['util', 'providers', 'runtime', 'gateway', 'tools'],
  agent: ['util', 'providers', 'runtime', 'gateway', 'tools', 'config'],
  turn: ['util', 'providers', 'runtime', 'gateway', 'tools', 'config', 'agent'],
};

function coreZones() {
  const zones = [];
  for (const [zone, allowed] of Object.entries(CORE_ZONES)) {
    const message = `core/${zone} may import only ${allowed.length ? allowed.map((a) => 'core/' + a).join(', ') + (zone === 'util' ? '' : ' and common') : 'Node and SDKs'} (zones: docs/architecture.md).`;
    for (const other of Object.keys(CORE_ZONES)) {
      if (other === zone || allowed.includes(other)) continue;
      const except = allowed.filter((a) => a.startsWith(other + '/')).map((a) => './' + a.slice(other.length + 1));
      zones.push({ target: `./src/core/${zone}`, from: `./src/core/${other}`, except, message });
    }
    if (zone === 'util') zones.push({ target: './src/core/util', from: './src/common', message });
  }
  return zones;
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'out/**', '.vscode-test/**', 'test-artifacts/**', 'coverage/**', 'examples/**', 'test/fixtures/**', 'media/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', __dirname: 'readonly', require: 'readonly', module: 'writable', performance: 'readonly', fetch: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', setImmediate: 'readonly', window: 'readonly', document: 'readonly', requestAnimationFrame: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      // ANSI escapes and exact whitespace are part of what this project parses and asserts.
      'no-control-regex': 'off',
      'no-regex-spaces': 'off',
    },
  },
  {
    files: ['**/*.cjs', '**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  ...layerRules,
  // No import cycles anywhere in src (test/structure.test.ts also counts type-only imports), and the zones inside core.
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js', '.py'] } }, 'import-x/extensions': ['.ts'] },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: coreZones() }],
    },
  },
);

