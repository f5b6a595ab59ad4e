/**
 * The one configuration resolver: keys.ts says what package.json says; the extension's reader and the
 * CLI's give the same resolved configuration for the same settings; and the policy (trust, a first-party
 * base URL only from the user, approvals only stricter from a workspace, bad values ignored) holds.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { restrictedKeys, SETTINGS } from '../../src/core/config/keys';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { cliSettingsReader, readSettingsFile } from '../../src/core/config/workspaceFile';
import { vscodeReader } from '../../src/vscode/settingsReader';
import { PROVIDER_IDS } from '../../src/core/providers/registry';
import { DEFAULT_JUPYTER_SETTINGS } from '../../src/core/runtime/types';
import { DEFAULT_SESSIONS } from '../../src/core/runtime/local/sessionPool';

const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
const contributed: Record<string, any> = pkg.contributes.configuration.properties;

/** A stand-in for vscode.WorkspaceConfiguration.inspect over plain layers. */
function fakeConfiguration(user: Record<string, unknown>, workspace: Record<string, unknown>, folder: Record<string, unknown> = {}) {
  return {
    inspect: (key: string) =>
      ({ key, globalValue: user[`codeact.${key}`], workspaceValue: workspace[`codeact.${key}`], workspaceFolderValue: folder[`codeact.${key}`] }) as any,
  };
}

describe('configuration: keys.ts and package.json', () => {
  it('declare the same settings, types, defaults and allowed values', () => {
    const fromKeys = Object.keys(SETTINGS)
      .map((k) => `codeact.${k}`)
      .sort();
    assert.deepEqual(Object.keys(contributed).sort(), fromKeys);
    for (const [key, spec] of Object.entries(SETTINGS)) {
      const c = contributed[`codeact.${key}`];
      assert.equal(c.type, spec.type, `codeact.${key}: type`);
      assert.deepEqual(c.default, spec.default, `codeact.${key}: default`);
      assert.deepEqual(c.enum, 'enum' in spec ? spec.enum : undefined, `codeact.${key}: enum`);
    }
  });

  it("the defaults of codeact.session.* and codeact.jupyter.* are the runtimes' own (what a runtime built without the setting does)", () => {
    assert.deepEqual(DEFAULT_SESSIONS, {
      policy: SETTINGS['session.policy'].default,
      idleMs: SETTINGS['session.idleMinutes'].default * 60_000,
      maxAlive: SETTINGS['session.maxAlive'].default,
    });
    assert.deepEqual(DEFAULT_JUPYTER_SETTINGS, {
      kernelName: SETTINGS['jupyter.kernelName'].default,
      sessionPolicy: SETTINGS['jupyter.sessionPolicy'].default,
    });
  });

  it('are each resolved under the one policy, and read by their key (a setting keys.ts adds needs nothing in resolve.ts)', () => {
    const defaults = resolveEngineConfig(() => undefined, { trusted: true });
    assert.deepEqual(Object.keys(defaults.origins).sort(), Object.keys(SETTINGS).sort());
    assert.ok(Object.values(defaults.origins).every((o) => o === 'default'));
    assert.deepEqual(Object.keys(defaults.config.settings).sort(), Object.keys(SETTINGS).sort());
    for (const [key, spec] of Object.entries(SETTINGS)) assert.deepEqual(defaults.config.settings[key as keyof typeof SETTINGS], spec.default, key);
    // A value from a layer, and one the policy refuses, under the key as under the field.
    const { config, ignored } = resolveEngineConfig(
      (k) => ({ 'session.maxAlive': { user: 9 }, 'sandbox.kind': { folder: 'none' }, 'plots.highDPI': { user: 'yes' } })[k],
      { trusted: false },
    );
    assert.equal(config.settings['session.maxAlive'], 9);
    assert.equal(config.sessionMaxAlive, 9);
    assert.equal(config.settings['sandbox.kind'], 'auto');
    assert.equal(config.settings['plots.highDPI'], false);
    assert.deepEqual(ignored.map((i) => i.key).sort(), ['codeact.plots.highDPI', 'codeact.sandbox.kind']);
  });

  it('restrict in untrusted workspaces exactly the settings the policy guards', () => {
    assert.deepEqual([...pkg.capabilities.untrustedWorkspaces.restrictedConfigurations].sort(), restrictedKeys().sort());
  });
});

describe('configuration: one resolver for both hosts', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-config-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const cases: Array<{ name: string; user: Record<string, unknown>; workspace: Record<string, unknown>; trusted: boolean }> = [
    {
      name: 'a trusted workspace',
      user: { 'codeact.provider': 'anthropic', 'codeact.approval.default': 'ask', 'codeact.baseURL': 'https://proxy.example/v1' },
      workspace: {
        'codeact.model': 'claude-x',
        'codeact.sandbox.kind': 'none',
        'codeact.tools': [{ name: 'a', command: { argv: ['true'] } }],
        'codeact.approval.default': 'auto',
        'codeact.baseURL': 'http://evil.example',
      },
      trusted: true,
    },
    {
      name: 'an untrusted workspace',
      user: { 'codeact.provider': 'openai-compatible', 'codeact.timeoutSeconds': 30 },
      workspace: {
        'codeact.baseURL': 'http://127.0.0.1:1/v1',
        'codeact.python.path': '/tmp/evil',
        'codeact.session.maxAlive': 2,
        'codeact.runtime': 'jupyter',
        'codeact.mode': 'bogus',
      },
      trusted: false,
    },
    {
      name: 'the old codeact.baseUrl key, in user and workspace settings',
      user: { 'codeact.provider': 'openai', 'codeact.baseUrl': 'https://proxy.example/v1' },
      workspace: { 'codeact.baseUrl': 'http://evil.example/v1' },
      trusted: true,
    },
    {
      name: "the old codeact.jupyter.url key: the user's counts, an untrusted workspace's does not",
      user: { 'codeact.runtime': 'jupyter', 'codeact.jupyter.url': 'http://127.0.0.1:8888/' },
      workspace: { 'codeact.jupyter.url': 'http://attacker.example:8888/' },
      trusted: false,
    },
    {
      name: 'the old codeact.python key',
      user: { 'codeact.python': '/usr/bin/python3' },
      workspace: { 'codeact.approval.reviewCode': true },
      trusted: true,
    },
  ];

  for (const c of cases) {
    it(`gives the extension and the CLI the same configuration: ${c.name}`, () => {
      const fromVscode = resolveEngineConfig(vscodeReader(fakeConfiguration(c.user, c.workspace)), { trusted: c.trusted });
      mkdirSync(path.join(dir, c.name), { recursive: true });
      const userFile = path.join(dir, c.name, 'user.json');
      const wsFile = path.join(dir, c.name, 'settings.json');
      writeFileSync(userFile, `// the user's CLI settings\n${JSON.stringify(c.user, null, 2)}\n`);
      writeFileSync(wsFile, `{\n  // JSONC, as VS Code writes it\n${JSON.stringify(c.workspace, null, 2).slice(1)}`);
      const cliReader = cliSettingsReader({}, readSettingsFile(wsFile), readSettingsFile(userFile));
      // The CLI sees the folder's file as the "folder" layer; VS Code as "workspace": same policy for both.
      const fromCli = resolveEngineConfig(cliReader, { trusted: c.trusted });
      assert.deepEqual(fromCli.config, fromVscode.config);
      assert.deepEqual(
        fromCli.ignored.map((i) => [i.key, i.reason]),
        fromVscode.ignored.map((i) => [i.key, i.reason]),
      );
    });
  }

  const resolve = (layers: Record<string, SettingLayers>, trusted = true) => resolveEngineConfig((k) => layers[k], { trusted });

  it('takes a first-party base URL only from the user or a flag, trusted or not', () => {
    const r = resolve({ provider: { user: 'openai' }, baseURL: { workspace: 'http://attacker.example/v1' } });
    assert.equal(r.config.baseURL, undefined);
    assert.match(r.ignored[0].reason, /cannot send your openai API key to a server of its choosing/);
    assert.equal(resolve({ provider: { user: 'gemini' }, baseURL: { user: 'https://mine.example' } }).config.baseURL, 'https://mine.example');
    assert.equal(
      resolve({ provider: { flag: 'anthropic' }, baseURL: { flag: 'http://127.0.0.1:9/', workspace: 'http://x' } }).config.baseURL,
      'http://127.0.0.1:9/',
    );
    // An OpenAI-compatible server's URL may come from a trusted workspace, not an untrusted one.
    assert.equal(
      resolve({ provider: { workspace: 'openai-compatible' }, baseURL: { workspace: 'http://127.0.0.1:11434/v1' } }).config.baseURL,
      'http://127.0.0.1:11434/v1',
    );
    assert.equal(
      resolve({ provider: { workspace: 'openai-compatible' }, baseURL: { workspace: 'http://127.0.0.1:11434/v1' } }, false).config.baseURL,
      undefined,
    );
  });

  it('still reads the old codeact.jupyter.url, under the same policy; the new key wins where both are set', () => {
    const old = resolve({ runtime: { user: 'jupyter' }, 'jupyter.url': { user: 'http://127.0.0.1:8888/' } });
    assert.equal(old.config.jupyterServerURL, 'http://127.0.0.1:8888/');
    assert.equal(old.origins['jupyter.serverURL'], 'user');
    const untrusted = resolve({ 'jupyter.url': { workspace: 'http://attacker.example/' } }, false);
    assert.equal(untrusted.config.jupyterServerURL, undefined);
    assert.deepEqual(
      untrusted.ignored.map((i) => `${i.key}: ${i.reason}`),
      ['codeact.jupyter.url: the folder is not trusted'],
    );
    assert.equal(
      resolve({ 'jupyter.serverURL': { workspace: 'http://new.example/' }, 'jupyter.url': { workspace: 'http://old.example/' } }).config.jupyterServerURL,
      'http://new.example/',
    );
  });

  it("still reads the old codeact.baseUrl, under the same policy, in both hosts' readers", () => {
    // The user's old key is used, for a first-party provider too.
    const mine = resolve({ provider: { user: 'openai' }, baseUrl: { user: 'https://mine.example/v1' } });
    assert.equal(mine.config.baseURL, 'https://mine.example/v1');
    assert.equal(mine.origins.baseURL, 'user');
    assert.deepEqual(mine.ignored, []);
    // A workspace's (VS Code) or folder's (CLI) old key is refused for a first-party provider, trusted or
    // not, like the new key, and the refusal names the key the workspace wrote.
    for (const origin of ['workspace', 'folder'] as const) {
      for (const trusted of [true, false]) {
        const r = resolve({ provider: { user: 'anthropic' }, baseUrl: { [origin]: 'http://attacker.example/v1', user: 'https://mine.example/v1' } }, trusted);
        assert.equal(r.config.baseURL, 'https://mine.example/v1', `${origin}, trusted: ${trusted}`);
        assert.equal(r.ignored.length, 1);
        assert.equal(r.ignored[0].key, 'codeact.baseUrl');
        assert.equal(r.ignored[0].origin, origin);
        assert.match(r.ignored[0].reason, trusted ? /cannot send your anthropic API key to a server of its choosing/ : /the folder is not trusted/);
      }
    }
    // An OpenAI-compatible server's URL from the old key: a trusted workspace's counts, an untrusted one's does not.
    assert.equal(
      resolve({ provider: { user: 'openai-compatible' }, baseUrl: { workspace: 'http://127.0.0.1:11434/v1' } }).config.baseURL,
      'http://127.0.0.1:11434/v1',
    );
    const untrusted = resolve({ provider: { user: 'openai-compatible' }, baseUrl: { workspace: 'http://127.0.0.1:11434/v1' } }, false);
    assert.equal(untrusted.config.baseURL, undefined);
    assert.deepEqual(
      untrusted.ignored.map((i) => `${i.key}: ${i.reason}`),
      ['codeact.baseUrl: the folder is not trusted'],
    );
    // The new key wins over the old one in the same place; a workspace's old key never beats the user's new one for a first-party provider.
    assert.equal(resolve({ baseURL: { user: 'https://new.example' }, baseUrl: { user: 'https://old.example' } }).config.baseURL, 'https://new.example');
    assert.equal(
      resolve({ provider: { user: 'gemini' }, baseURL: { user: 'https://new.example' }, baseUrl: { workspace: 'http://attacker.example' } }).config.baseURL,
      'https://new.example',
    );

    // The same through the extension's reader (VS Code's inspect) and the CLI's (its settings files).
    const user = { 'codeact.provider': 'openai', 'codeact.baseUrl': 'https://mine.example/v1' };
    const ws = { 'codeact.baseUrl': 'http://attacker.example/v1' };
    const fromVscode = resolveEngineConfig(vscodeReader(fakeConfiguration(user, ws)), { trusted: true });
    const fromCli = resolveEngineConfig(cliSettingsReader({}, ws, user), { trusted: true });
    for (const r of [fromVscode, fromCli]) {
      assert.equal(r.config.baseURL, 'https://mine.example/v1');
      assert.deepEqual(
        r.ignored.map((i) => i.key),
        ['codeact.baseUrl'],
      );
    }
  });

  it("lets a workspace make approvals stricter, never looser, and keeps alwaysAllow the user's", () => {
    assert.equal(resolve({ 'approval.default': { workspace: 'deny' } }).config.defaultApproval, 'deny');
    const looser = resolve({ 'approval.default': { user: 'ask', workspace: 'auto' } });
    assert.equal(looser.config.defaultApproval, 'ask');
    assert.match(looser.ignored[0].reason, /stricter than your own setting, never looser/);
    assert.equal(resolve({ 'approval.reviewCode': { user: true, workspace: false } }).config.reviewCode, true);
    assert.deepEqual(resolve({ 'approval.alwaysAllow': { workspace: ['rm_rf'], user: ['search'] } }).config.alwaysAllow, ['search']);
  });

  it('lets a trusted workspace turn review mode on, never off when yours has it on, and an untrusted one neither', () => {
    assert.equal(resolve({ 'sandbox.reviewWrites': { workspace: true } }).config.reviewWrites, true);
    const off = resolve({ 'sandbox.reviewWrites': { user: true, workspace: false } });
    assert.equal(off.config.reviewWrites, true);
    assert.match(off.ignored[0].reason, /may turn review mode on, never off when your own setting has it on/);
    assert.equal(resolve({ 'sandbox.reviewWrites': { workspace: true } }, false).config.reviewWrites, false);
    assert.equal(resolve({}).config.reviewWrites, false);
  });

  it("ignores an untrusted workspace's restricted settings and keeps the rest", () => {
    const r = resolve({ 'sandbox.kind': { workspace: 'none', user: 'bubblewrap' }, tools: { workspace: [{ name: 'x' }] }, model: { workspace: 'm' } }, false);
    assert.equal(r.config.sandbox, 'bubblewrap');
    assert.deepEqual(r.config.tools, []);
    assert.equal(r.config.model, 'm');
    assert.deepEqual(r.ignored.map((i) => `${i.key}: ${i.reason}`).sort(), [
      'codeact.sandbox.kind: the folder is not trusted',
      'codeact.tools: the folder is not trusted',
    ]);
  });

  it('ignores a value of the wrong type or out of range, naming the rule', () => {
    const r = resolve({
      mode: { workspace: 'turbo' },
      'session.maxAlive': { user: 0 },
      timeoutSeconds: { user: '30' },
      'python.preload': { user: ['numpy', 'os; rm -rf /'] },
    });
    assert.equal(r.config.mode, 'toolCode');
    assert.equal(r.config.sessionMaxAlive, 4);
    assert.equal(r.config.timeoutMs, 120_000);
    assert.deepEqual(r.config.preload, []);
    assert.deepEqual(r.ignored.map((i) => `${i.key}: ${i.reason}`).sort(), [
      'codeact.mode: must be one of "toolCode", "hosted", "code", not "turbo"',
      'codeact.python.preload: must list module names such as "numpy" or "pandas"',
      'codeact.session.maxAlive: must be at least 1',
      'codeact.timeoutSeconds: must be a number, not string',
    ]);
  });
});

describe('configuration: the provider registry is the one list', () => {
  it('codeact.provider allows exactly the registered providers', () => {
    assert.deepEqual([...SETTINGS.provider.enum].sort(), [...PROVIDER_IDS].sort());
  });
});
