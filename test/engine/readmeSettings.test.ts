/**
 * README's lists of settings say what keys.ts and package.json say: the restricted settings (a workspace's
 * value counts only when trusted: keys.ts `trust`, package.json's restrictedConfigurations) and the
 * resource-scoped ones (package.json's `scope`, which VS Code reads). A setting added to either list, or
 * taken out, fails here until README says so.
 */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LEGACY_KEYS, restrictedKeys, SETTINGS } from '../../src/core/config/keys';

const root = path.join(__dirname, '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const ALL_KEYS = [...Object.keys(SETTINGS), ...Object.keys(LEGACY_KEYS)].map((k) => `codeact.${k}`);

/** README's text from `start` to `end`. */
function passage(start: string, end: string): string {
  const from = readme.indexOf(start);
  assert.ok(from >= 0, `README has "${start}"`);
  const to = readme.indexOf(end, from);
  assert.ok(to > from, `README has "${end}" after "${start}"`);
  return readme.slice(from, to);
}

/**
 * The settings a passage names in backticks, as README writes them: `codeact.python.path` and `.preload`
 * (a sibling of the key before), `codeact.sandbox.*` (every setting under it).
 */
function named(text: string): string[] {
  const keys = new Set<string>();
  let parent = '';
  for (const [, token] of text.matchAll(/`((?:codeact)?\.[A-Za-z.*]+)`/g)) {
    const key = token.startsWith('.') ? parent + token : token;
    if (!key.startsWith('codeact.')) continue;
    parent = key.slice(0, key.lastIndexOf('.'));
    if (key.endsWith('.*')) {
      const under = ALL_KEYS.filter((k) => k.startsWith(key.slice(0, -1)));
      assert.ok(under.length, `${key} names no setting`);
      under.forEach((k) => keys.add(k));
    } else {
      assert.ok(ALL_KEYS.includes(key), `README names ${key}, which is not a setting`);
      keys.add(key);
    }
  }
  return [...keys].sort();
}

describe('README: the lists of settings', () => {
  it('the restricted settings are the ones keys.ts restricts (and package.json, which a test of its own checks)', () => {
    const text = passage("The restricted settings (VS Code's `restrictedConfigurations`)", 'Whatever\nthe trust');
    assert.deepEqual(named(text), restrictedKeys().sort());
  });

  it("the resource-scoped settings are package.json's", () => {
    const text = passage('So these are resource-scoped:', 'The provider, model');
    const scoped = Object.entries(pkg.contributes.configuration.properties as Record<string, { scope?: string }>)
      .filter(([, p]) => p.scope === 'resource')
      .map(([k]) => k)
      .sort();
    assert.deepEqual(named(text), scoped);
  });

  it('reads the lists as they are written (a sibling key, a wildcard)', () => {
    assert.deepEqual(named('`codeact.jupyter.serverURL` and `.kernelName`, `codeact.session.*`'), [
      'codeact.jupyter.kernelName',
      'codeact.jupyter.serverURL',
      'codeact.session.host',
      'codeact.session.hostIdleMinutes',
      'codeact.session.idleMinutes',
      'codeact.session.maxAlive',
      'codeact.session.policy',
    ]);
    assert.throws(() => named('`codeact.nothing`'), /not a setting/);
  });
});
