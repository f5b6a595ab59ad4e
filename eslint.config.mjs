// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import codeact from './scripts/eslint/noKindComparison.mjs';

/** Layers point one way: common <- core <- vscode / cli, and webview <- common. */
const layerRules = [
  {
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['vscode'], message: 'src/common must not import vscode (layer rule, see docs/architecture).' },
            { group: ['node:*', 'fs', 'path', 'child_process', 'os', 'net', 'http', 'https', 'crypto'], message: 'src/common is pure: no Node built-ins.' },
            {
              group: ['**/core/**', '../core/*', '**/vscode/**', '../vscode/*', '**/webview/**', '../webview/*'],
              message: 'src/common imports nothing but itself.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['vscode'], message: 'src/core must never import vscode: declare an interface in core and implement it in src/vscode.' },
            {
              group: ['**/vscode/**', '../vscode/*', '../../vscode/*', '**/webview/**', '**/extension', '**/cli'],
              message: 'src/core may import only common, Node built-ins and SDKs.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/webview/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['vscode', 'node:*', '**/core/**', '../core/*', '**/vscode/**', '../vscode/*'],
              message: 'src/webview runs in the browser and may import only common.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['vscode', '**/vscode/**', '../vscode/*'], message: 'The CLI runs without VS Code.' }],
        },
      ],
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
  sessionHost: ['util', 'runtime'],
  mcpServer: ['util', 'providers', 'runtime', 'gateway', 'tools', 'agent', 'turn'],
  acpAgent: ['util', 'providers', 'runtime', 'gateway', 'tools', 'config', 'agent', 'turn'],
};

/**
 * Files that still break a rule, per rule. The lists only shrink: test/lint/allowances.test.ts fails when a
 * listed file no longer breaks its rule. Take a file off when you touch it (most are rooms being restructured).
 */
export const ALLOWANCES = {
  '@typescript-eslint/no-explicit-any': [
    'test/agent/contextCompaction.test.ts',
    'test/agent/outputBudget.test.ts',
    'test/agent/vision.test.ts',
    'test/common/contextUsage.test.ts',
    'test/common/notebook.test.ts',
    'test/common/notebookJupyter.test.ts',
    'test/common/notebookRoundTrip.test.ts',
    'test/e2e/notebookKernel.test.ts',
    'test/e2e/panel.test.ts',
    'test/engine/config.test.ts',
    'test/engine/guestDiscovery.test.ts',
    'test/engine/guestDisplay.test.ts',
    'test/providers/anthropic.test.ts',
    'test/providers/conformance.test.ts',
    'test/providers/expiredContainer.test.ts',
    'test/providers/gemini.test.ts',
    'test/providers/openaiCompatible.test.ts',
    'test/providers/openaiResponses.test.ts',
    'test/providers/vision.test.ts',
    'test/security/guestIsolation.test.ts',
    'test/security/seccomp.test.ts',
    'test/security/zygoteSocket.test.ts',
    'test/support/guestHarness.ts',
    'test/support/kernelHarness.ts',
    'test/support/manyTools.ts',
    'test/support/textWire.ts',
    'test/support/wire/anthropic.ts',
    'test/support/wire/gemini.ts',
    'test/support/wire/harness.ts',
    'test/support/wire/openaiChat.ts',
    'test/support/wire/openaiResponses.ts',
    'test/support/wire/server.ts',
  ],
  '@typescript-eslint/switch-exhaustiveness-check': [],
  '@typescript-eslint/no-floating-promises': [],
  'codeact/no-kind-comparison': [],
};

/**
 * The kinds whose names only their owners compare (`codeact/no-kind-comparison`): a type alias -> the files
 * that own it, the first one declaring it. Elsewhere code reads a fact of the kind's catalogue.
 */
export const KIND_OWNERS = {
  RuntimeKind: ['src/common/runtimes.ts'],
  ConfiguredRuntime: ['src/common/runtimes.ts'],
  CodeMode: ['src/common/runtimes.ts'],
  ProviderId: ['src/common/providers.ts', 'src/core/providers/shared/catalog.ts', 'src/core/providers/registry.ts'],
  ToolSourceKind: ['src/common/tools.ts', 'src/core/tools/toolSources.ts'],
  Mime: ['src/common/mimeTypes.ts'],
  McpServerKind: ['src/core/tools/sources/mcp/serverSpec.ts'],
};

/** The rules that need type information (the project service builds a program per tsconfig). */
const TYPED_RULES = {
  '@typescript-eslint/no-floating-promises': 'error',
  '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
  'codeact/no-kind-comparison': ['error', { root: import.meta.dirname, kinds: KIND_OWNERS }],
};

/** For the lint tests that lint made-up files the programs do not hold: the same config without type information. */
export const UNTYPED = {
  files: ['**/*.ts'],
  languageOptions: { parserOptions: { projectService: false } },
  rules: Object.fromEntries(Object.keys(TYPED_RULES).map((rule) => [rule, 'off'])),
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
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        __dirname: 'readonly',
        require: 'readonly',
        module: 'writable',
        performance: 'readonly',
        fetch: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        setImmediate: 'readonly',
        window: 'readonly',
        document: 'readonly',
        requestAnimationFrame: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
      // ANSI escapes and exact whitespace are part of what this project parses and asserts.
      'no-control-regex': 'off',
      'no-regex-spaces': 'off',
    },
  },
  {
    files: ['**/*.ts'],
    // The globals src/common may use are declared for tsconfig.common.json alone (the others have DOM or Node).
    ignores: ['src/types/common/**'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { codeact },
    rules: TYPED_RULES,
  },
  // Tests and scripts may name kinds (what they check is the code's behaviour, not its structure).
  { files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'], rules: { 'codeact/no-kind-comparison': 'off' } },
  {
    files: ['**/*.cjs', '**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  ...Object.entries(ALLOWANCES)
    .filter(([, files]) => files.length)
    .map(([rule, files]) => ({ files, rules: { [rule]: 'off' } })),
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
