import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { PROVIDER_IDS, apiKeyFromEnv, createProvider } from '../../src/core/providers/factory';

const ROOT = path.resolve(__dirname, '../..');

describe('providers: factory', () => {
  it('loading the providers module loads no SDK (they load lazily, on createProvider)', () => {
    const script = `
      require('./src/core/providers/factory.ts');
      const loaded = (n) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + n + '/'));
      process.stdout.write(JSON.stringify([loaded('openai'), loaded('@anthropic-ai/sdk'), loaded('@google/genai')]));`;
    const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), [false, false, false]);
  });

  it('creates each provider with its capabilities', async () => {
    const caps: Record<string, [boolean, boolean]> = {};
    for (const id of PROVIDER_IDS) {
      const p = await createProvider({ provider: id, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1', env: {} });
      assert.equal(p.id, id);
      caps[id] = [p.capabilities.functionTools, p.capabilities.hostedCode];
    }
    assert.deepEqual(caps, { openai: [true, true], 'openai-compatible': [true, false], anthropic: [true, true], gemini: [true, true] });
  });

  it('reads keys from the environment in order', () => {
    assert.equal(apiKeyFromEnv('gemini', { GOOGLE_API_KEY: 'b', GEMINI_API_KEY: 'a' }), 'a');
    assert.equal(apiKeyFromEnv('gemini', { GOOGLE_API_KEY: 'b' }), 'b');
    assert.equal(apiKeyFromEnv('anthropic', { ANTHROPIC_API_KEY: '  x ' }), 'x');
    assert.equal(apiKeyFromEnv('openai', {}), undefined);
  });
});
