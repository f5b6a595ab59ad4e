/**
 * One catalogue (core/providers/shared/catalog.ts): package.json's provider settings offer what the
 * catalogue lists, the adapters accept every value the settings offer, and the mode->runtime rule
 * names each provider's own sandbox.
 */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  ANTHROPIC_CODE_TOOL_VERSIONS,
  ANTHROPIC_CODE_TOOLS,
  DEFAULT_ANTHROPIC_CODE_TOOL,
  DEFAULT_OPENAI_CONTAINER_MEMORY,
  OPENAI_CONTAINER_MEMORY,
  PROVIDER_CATALOG,
  PROVIDER_IDS,
} from '../../src/core/providers/shared/catalog';
import { SETTINGS } from '../../src/core/config/keys';
import { runtimeKindOf } from '../../src/common/providers';
import { buildAnthropicRequest } from '../../src/core/providers/anthropic/anthropicRequest';
import { createProvider } from '../../src/core/providers/factory';

const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
const contributed: Record<string, { enum?: string[]; default?: unknown; markdownEnumDescriptions?: string[] }> = pkg.contributes.configuration.properties;

describe('providers: one catalogue', () => {
  it("package.json offers the catalogue's providers, each with a description", () => {
    const p = contributed['codeact.provider'];
    assert.deepEqual(p.enum, [...PROVIDER_IDS]);
    assert.ok(PROVIDER_IDS.includes(p.default as never), `default ${String(p.default)}`);
    assert.equal(p.markdownEnumDescriptions?.length, PROVIDER_IDS.length);
  });

  it('package.json offers every Anthropic code execution tool version the adapter knows, with its default', () => {
    const v = contributed['codeact.hosted.anthropicToolVersion'];
    assert.deepEqual(v.enum, [...ANTHROPIC_CODE_TOOL_VERSIONS]);
    assert.equal(v.default, DEFAULT_ANTHROPIC_CODE_TOOL);
    assert.deepEqual(SETTINGS['hosted.anthropicToolVersion'].enum, v.enum);
  });

  it('package.json offers the OpenAI container memory sizes, with their default', () => {
    const m = contributed['codeact.hosted.memoryLimit'];
    assert.deepEqual(m.enum, [...OPENAI_CONTAINER_MEMORY]);
    assert.equal(m.default, DEFAULT_OPENAI_CONTAINER_MEMORY);
  });

  it('the Anthropic adapter accepts every version the setting offers, with the beta it needs', () => {
    for (const version of contributed['codeact.hosted.anthropicToolVersion'].enum!) {
      const { body, betas } = buildAnthropicRequest({ model: 'claude-sonnet-4-6', history: [], tools: [], hosted: { enabled: true, toolVersion: version } });
      assert.deepEqual(
        (body.tools as Array<{ type: string }>).map((t) => t.type),
        [version],
      );
      const beta: string | undefined = ANTHROPIC_CODE_TOOLS[version as keyof typeof ANTHROPIC_CODE_TOOLS];
      assert.deepEqual(betas, beta ? [beta] : [], version);
    }
  });

  it("hosted code runs in the provider's own sandbox, the kind its adapter reports (an OpenAI-compatible server has none)", async () => {
    for (const { id } of PROVIDER_CATALOG) {
      const provider = await createProvider({ provider: id, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1', env: {} });
      assert.equal(runtimeKindOf({ mode: 'hosted', provider: id, runtime: 'jupyter' }), provider.capabilities.hostedRuntime ?? 'local', id);
      assert.equal(runtimeKindOf({ mode: 'toolCode', provider: id, runtime: 'jupyter' }), 'jupyter', id);
      assert.equal(runtimeKindOf({ mode: 'code', provider: id, runtime: 'local' }), 'local', id);
    }
  });
});
