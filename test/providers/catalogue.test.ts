/**
 * The provider catalogue (src/common/providers.ts) is complete, and each row's facts are what the code
 * does: the hosted sandbox is the adapter's, a local server is the one whose key is optional and whose
 * base URL a trusted workspace may set, prices and context windows exist for exactly the others, and the
 * error messages speak of a local server by the fact, not by the name.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { findProvider, MODELS_AS_OF, PROVIDER_CATALOG, PROVIDER_IDS, PROVIDERS, type ProviderId } from '../../src/common/providers';
import { priceOf } from '../../src/common/prices';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { runtimeKindOf } from '../../src/common/providers';
import { createProvider } from '../../src/core/providers/factory';
import { providerEntry } from '../../src/core/providers/registry';
import { contextWindowOf, providerInfo as coreProviderInfo } from '../../src/core/providers/shared/catalog';
import { ProviderError, streamStalled, toProviderError } from '../../src/core/providers/shared/errors';

const resolve = (layers: Record<string, SettingLayers>) => resolveEngineConfig((k) => layers[k], { trusted: true });

describe('providers: the catalogue is complete and says what the code does', () => {
  it('has one row per provider, keyed by its id, in the pickers order, and core reads the same rows', () => {
    assert.deepEqual(Object.keys(PROVIDERS), [...PROVIDER_IDS]);
    assert.deepEqual(
      PROVIDER_CATALOG.map((p) => p.id),
      [...PROVIDER_IDS],
    );
    for (const id of PROVIDER_IDS) {
      assert.equal(PROVIDERS[id].id, id);
      assert.equal(findProvider(id), PROVIDERS[id]);
      assert.equal(coreProviderInfo(id), PROVIDERS[id]);
      assert.equal(providerEntry(id).label, PROVIDERS[id].label);
    }
    // Names from a transcript or the panel that are no provider have no row (not even Object's own keys).
    for (const name of ['nope', 'constructor', 'toString', '__proto__', undefined]) assert.equal(findProvider(name), undefined, String(name));
  });

  it("the hosted sandbox is the adapter's: hosted code runs there, and nowhere without one", async () => {
    for (const id of PROVIDER_IDS) {
      const { hostedSandbox } = PROVIDERS[id];
      const provider = await createProvider({ provider: id, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1', env: {} });
      assert.equal(provider.capabilities.hostedCode, hostedSandbox !== undefined, id);
      assert.equal(provider.capabilities.hostedRuntime, hostedSandbox, id);
      assert.equal(runtimeKindOf({ mode: 'hosted', provider: id, runtime: 'jupyter' }), hostedSandbox ?? 'local', id);
    }
  });

  it('a local server is the provider whose key is optional, whose base URL a trusted workspace may set, with a default server', async () => {
    for (const id of PROVIDER_IDS) {
      const p = PROVIDERS[id];
      assert.equal(p.needsKey, !p.localServer, id);
      assert.equal(p.firstParty, !p.localServer, id);
      assert.equal(p.defaultBaseURL !== undefined, p.localServer, id);
      assert.equal(p.keyOptional !== undefined, !p.needsKey, id);
      // The user's OpenAI key never goes to a server that is not OpenAI's.
      if (p.localServer) assert.ok(!p.keyEnv.includes('OPENAI_API_KEY'), id);
      // Without a key: a missing-key error for a provider that needs one, an adapter for one that does not.
      const made = await createProvider({ provider: id, env: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (p.needsKey) assert.ok(made instanceof ProviderError && made.code === 'auth', id);
      else assert.equal(made, undefined, id);
      // A trusted workspace's base URL is taken for a local server only (a first-party key stays with its provider).
      const r = resolve({ provider: { user: id }, baseURL: { workspace: 'http://127.0.0.1:8000/v1' } });
      assert.equal(r.config.baseURL, p.localServer ? 'http://127.0.0.1:8000/v1' : undefined, id);
    }
  });

  it('prices and context windows exist for every default model of a hosted provider, and for none of a local server', () => {
    for (const id of PROVIDER_IDS) {
      const p = PROVIDERS[id];
      assert.equal(p.prices !== undefined, !p.localServer, id);
      for (const model of p.defaultModels) {
        assert.equal(priceOf(id, model) !== undefined, !p.localServer, `${id} ${model}`);
        assert.equal(contextWindowOf(id, model) !== undefined, !p.localServer, `${id} ${model}`);
      }
    }
  });

  it("the model lists are dated, and the README's table shows each first-party list, in order, with the date", () => {
    assert.match(MODELS_AS_OF, /^20\d\d-\d\d-\d\d$/);
    const lines = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8').split('\n');
    const header = lines.find((l) => l.startsWith('| provider | key | models CodeAct lists'));
    assert.ok(header?.includes(`as of ${MODELS_AS_OF}`), header);
    for (const p of PROVIDER_CATALOG.filter((x) => x.firstParty)) {
      const row = lines.find((l) => l.startsWith(`| \`${p.id}\` `));
      assert.equal(row?.split('|')[3].trim(), p.defaultModels.map((m) => `\`${m}\``).join(', '), p.id);
    }
  });

  it('the error messages name a local server by its base URL, ask whether it runs and point at its model list', () => {
    const check = (id: ProviderId, err: unknown, local: RegExp, other: RegExp): void => {
      const e = toProviderError(err, { provider: id, errors: providerEntry(id).errors, baseURL: 'http://127.0.0.1:8000/v1', model: 'm' });
      assert.match(e.message, PROVIDERS[id].localServer ? local : other, `${id}: ${e.message}`);
    };
    for (const id of PROVIDER_IDS) {
      check(
        id,
        { status: 401, message: '401 bad key' },
        /^The server at http:\/\/127\.0\.0\.1:8000\/v1 rejected the API key/,
        /^[A-Z][\w-]+ rejected the API key/,
      );
      check(id, { status: 404, message: '404 no such model' }, /lists its models at http:\/\/127\.0\.0\.1:8000\/v1\/models/, /the codeact\.model setting/);
      check(id, new Error('connect ECONNREFUSED 127.0.0.1:8000'), /\(is the server running\?\)/, /the base URL, then try again/);
      const stalled = streamStalled({ provider: id, baseURL: 'http://127.0.0.1:8000/v1' }, { kind: 'first_byte', ms: 60_000 });
      assert.equal(/a local server may first load the model/.test(stalled.message), PROVIDERS[id].localServer, id);
    }
  });
});
