/**
 * Expired hosted containers: a conversation whose OpenAI code_interpreter container or
 * Anthropic code execution container has expired goes on in a new container instead of failing on every
 * later turn. Real SDK clients (openai, @anthropic-ai/sdk) against the loopback wire servers, through the
 * chat turn both hosts share, with the conversation saved and reopened from disk as `--continue` does.
 *
 * The providers' refusals are modelled on what they document and what was measured (no recorded fixture has
 * them): OpenAI answers HTTP 400 `{"error":{"message":"Container is expired.","type":"invalid_request_error"}}`
 * (404 "Container not found." for an id it no longer knows); Anthropic an `invalid_request_error` naming the
 * container, or, inside a response, a code execution result with `error_code: "container_expired"`.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TranscriptStore, type Conversation } from '../../src/core/agent/transcriptStore';
import { providerConfigFrom } from '../../src/core/config/engine';
import { resolveEngineConfig, type SettingLayers } from '../../src/core/config/resolve';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { createProvider } from '../../src/core/providers/factory';
import {
  EXPIRED_CONTAINER_MESSAGE,
  MAX_EXPIRED_CONTAINERS,
  isExpiredContainerError,
  recoverExpiredContainers,
} from '../../src/core/providers/shared/expiredContainer';
import type { Provider, TurnRequest } from '../../src/core/providers/shared/types';
import { ProviderError } from '../../src/core/providers/shared/errors';
import { noSessions, type Runtime } from '../../src/core/runtime/types';
import { runChatTurn } from '../../src/core/turn/turns';
import { DEFAULT_MODELS, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { fault, turn } from '../support/wire/turn';

type Json = Record<string, any>;

/** Hosted mode runs no local code: a runtime that is never asked to. */
const noRuntime = {
  kind: 'local',
  sessions: { ...noSessions, persist: true },
  execute: async () => {
    throw new Error('hosted mode must not run code locally');
  },
  dispose: async () => {},
} as unknown as Runtime;

const CASES = [
  {
    provider: 'openai' as const,
    old: 'cntr_68c2e6f3old0000000000000000000',
    fresh: 'cntr_68c2e6f3new1111111111111111111',
    expired: (_id: string) => fault.status(400, { message: 'Container is expired.', code: 'invalid_request_error' }),
    notFound: (id: string) => fault.status(404, { message: `Container with id '${id}' not found.`, code: 'not_found' }),
    /** The container the request names (undefined: none, a new one). */
    named: (body: Json): string | undefined => {
      const c = body.tools?.find((t: Json) => t.type === 'code_interpreter')?.container;
      return typeof c === 'string' ? c : undefined;
    },
    newContainer: (body: Json) => assert.equal(body.tools.find((t: Json) => t.type === 'code_interpreter').container.type, 'auto'),
  },
  {
    provider: 'anthropic' as const,
    old: 'container_011CaNRFAbjdPf4rmBarZzqQ',
    fresh: 'container_011CbNEWcontainer99999999',
    expired: (id: string) => fault.status(400, { message: `container: Container ${id} has expired.`, code: 'invalid_request_error' }),
    notFound: (id: string) => fault.status(404, { message: `container: Container ${id} not found.`, code: 'not_found_error' }),
    named: (body: Json): string | undefined => (typeof body.container === 'string' ? body.container : undefined),
    newContainer: (body: Json) => assert.equal(body.container, undefined),
  },
];

for (const c of CASES) {
  describe(`expired hosted container: ${c.provider}`, function () {
    this.timeout(60_000);
    let server: WireServer;
    let dir: string;
    let store: TranscriptStore;
    beforeEach(async () => {
      server = await startServerFor(c.provider);
      dir = mkdtempSync(path.join(tmpdir(), 'codeact-expired-'));
      store = new TranscriptStore(dir);
    });
    afterEach(async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const chat = (conversation: Conversation, prompt: string) => {
      const layers: Record<string, SettingLayers> = {
        provider: { user: c.provider },
        model: { user: DEFAULT_MODELS[c.provider] },
        baseURL: { user: server.url },
        mode: { user: 'hosted' },
      };
      const config = resolveEngineConfig((k) => layers[k], { trusted: true }).config;
      return runChatTurn({
        conversation,
        prompt,
        source: 'cli',
        config,
        provider: () => createProvider(providerConfigFrom(config, 'test-key-wire')),
        runtime: noRuntime,
        gateway: new ToolGateway([]),
        agent: { retry: { baseDelayMs: 1, maxDelayMs: 1 } },
      });
    };

    /** Turn 1 runs code in the old container; the conversation is reopened from disk, as `--continue` does. */
    async function conversationInOldContainer(): Promise<Conversation> {
      const convo = store.create({ title: 'analysis' });
      server.push(turn().code({ code: 'df = load()\nprint(len(df))', stdout: '42\n' }).text('42 rows.').with({ container: c.old }));
      const first = await chat(convo, 'load the data');
      assert.equal(first.result?.status, 'completed', JSON.stringify(first.error));
      assert.equal(convo.meta.containerId, c.old);
      const reopened = store.open(convo.id);
      assert.equal(reopened.meta.containerId, c.old);
      return reopened;
    }

    it('a turn whose container expired goes on in a new one, says so, and later turns and the saved conversation use the new one', async () => {
      const convo = await conversationInOldContainer();
      server.push(
        c.expired(c.old),
        turn().code({ code: 'df = load()\nprint(df.mean())', stdout: '3.5\n' }).text('The mean is 3.5.').with({ container: c.fresh }),
      );
      const second = await chat(convo, 'the mean?');
      assert.equal(second.result?.status, 'completed', JSON.stringify(second.error));
      assert.equal(second.result?.text, 'The mean is 3.5.');

      // The refused request named the old container, the retry names none and carries no trace of it.
      assert.equal(server.turns.length, 3);
      assert.equal(c.named(server.turns[1].body), c.old);
      c.newContainer(server.turns[2].body);
      assert.ok(!server.turns[2].rawBody.includes(c.old), `the retry still names ${c.old}`);
      // The earlier turn still reaches the model, as text: the code and what it printed.
      assert.match(server.turns[2].rawBody, /df = load\(\)/);
      assert.match(server.turns[2].rawBody, /42 rows\./);

      // Said once, in the events the transcript, --json and the panel get.
      const notices = convo.events.filter((e) => e.type === 'codeact.retry');
      assert.equal(notices.length, 1);
      assert.equal((notices[0] as { message: string }).message, EXPIRED_CONTAINER_MESSAGE);
      assert.ok(!convo.events.some((e) => e.type === 'error'), 'the turn reported an error');

      // The saved conversation records the new container (and remembers the expired one).
      assert.equal(convo.meta.containerId, c.fresh);
      const reopened = store.open(convo.id);
      assert.equal(reopened.meta.containerId, c.fresh);
      assert.deepEqual(reopened.meta.expiredContainers, [c.old]);
      assert.equal(reopened.history.filter((i) => i.type === 'message' && i.role === 'user').length, 2);

      // The next turn reuses the new container, never the old one, in one request.
      server.push(turn().text('Still here.'));
      const third = await chat(reopened, 'thanks');
      assert.equal(third.result?.status, 'completed', JSON.stringify(third.error));
      assert.equal(server.turns.length, 4);
      assert.equal(c.named(server.turns[3].body), c.fresh);
      assert.ok(!server.turns[3].rawBody.includes(c.old), `turn 3 names ${c.old} again`);
      assert.equal(store.open(convo.id).meta.containerId, c.fresh);
    });

    it('a container the provider no longer knows (404) is handled the same way', async () => {
      const convo = await conversationInOldContainer();
      server.push(c.notFound(c.old), turn().text('Done.').with({ container: c.fresh }));
      const second = await chat(convo, 'again');
      assert.equal(second.result?.status, 'completed', JSON.stringify(second.error));
      assert.equal(server.turns.length, 3);
      c.newContainer(server.turns[2].body);
      assert.ok(!server.turns[2].rawBody.includes(c.old));
      assert.ok(!store.open(convo.id).meta.containerId?.includes(c.old));
    });

    it('retries once at most: a new container refused too ends the turn with the error, and the old id is gone from the meta', async () => {
      const convo = await conversationInOldContainer();
      server.push(c.expired(c.old), c.expired('the new one'));
      const second = await chat(convo, 'the mean?');
      assert.equal(second.result?.status, 'failed');
      assert.equal(server.turns.length, 3, 'one retry, no more');
      assert.match(
        second.error?.message ?? '',
        /^The code container of this conversation expired, and the request in a new container was refused too \(HTTP 400: .*\)\. Send the message again/,
      );
      assert.equal(convo.events.filter((e) => e.type === 'codeact.retry').length, 1);
      // The next turn starts in a new container instead of naming the expired one again.
      const reopened = store.open(convo.id);
      assert.equal(reopened.meta.containerId ?? null, null);
      server.push(turn().text('Back.').with({ container: c.fresh }));
      const third = await chat(reopened, 'try again');
      assert.equal(third.result?.status, 'completed', JSON.stringify(third.error));
      assert.equal(server.turns.length, 4);
      c.newContainer(server.turns[3].body);
      assert.ok(!server.turns[3].rawBody.includes(c.old));
    });

    it('other refusals are not taken for an expired container: no retry', async () => {
      const convo = await conversationInOldContainer();
      server.push(fault.status(400, { message: 'Invalid value for max_output_tokens.' }));
      const second = await chat(convo, 'again');
      assert.equal(second.result?.status, 'failed');
      assert.equal(server.turns.length, 2);
      assert.equal(convo.events.filter((e) => e.type === 'codeact.retry').length, 0);
      assert.equal(store.open(convo.id).meta.containerId, c.old);
    });
  });
}

describe('expired hosted container: Anthropic container_expired inside a response', function () {
  this.timeout(60_000);
  it('the code result says the container expired: the next turn starts a new container', async () => {
    const server = await startServerFor('anthropic');
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-expired-'));
    try {
      const store = new TranscriptStore(dir);
      const layers: Record<string, SettingLayers> = {
        provider: { user: 'anthropic' },
        model: { user: DEFAULT_MODELS.anthropic },
        baseURL: { user: server.url },
        mode: { user: 'hosted' },
      };
      const config = resolveEngineConfig((k) => layers[k], { trusted: true }).config;
      const chat = (conversation: Conversation, prompt: string) =>
        runChatTurn({
          conversation,
          prompt,
          source: 'cli',
          config,
          provider: () => createProvider(providerConfigFrom(config, 'test-key-wire')),
          runtime: noRuntime,
          gateway: new ToolGateway([]),
        });
      const old = 'container_011CaNRFAbjdPf4rmBarZzqQ';
      const convo = store.create({ title: 'x' });
      server.push(turn().code({ code: 'x = 1' }).text('ok').with({ container: old }));
      assert.equal((await chat(convo, 'one')).result?.status, 'completed');
      // The API took the request but the container was gone: the code result is a container_expired error.
      server.push(turn().code({ code: 'print(x)', toolError: 'container_expired' }).text('The container expired.').with({ container: old }));
      const second = await chat(store.open(convo.id), 'two');
      assert.equal(second.result?.status, 'completed');
      assert.equal(server.turns[1].body.container, old);
      const after = store.open(convo.id);
      assert.equal(after.meta.containerId ?? null, null);
      assert.ok(after.events.some((e) => e.type === 'codeact.retry' && e.message === EXPIRED_CONTAINER_MESSAGE));
      server.push(turn().text('fresh').with({ container: 'container_011CbNEWcontainer99999999' }));
      assert.equal((await chat(after, 'three')).result?.status, 'completed');
      assert.equal(server.turns[2].body.container, undefined);
      assert.ok(!server.turns[2].rawBody.includes(old));
      assert.equal(store.open(convo.id).meta.containerId, 'container_011CbNEWcontainer99999999');
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('isExpiredContainerError', () => {
  const err = (provider: 'openai' | 'anthropic' | 'gemini', status: number, detail: string) =>
    new ProviderError({ code: 'bad_request', provider, status, message: 'x', detail });
  it("knows the providers' expired-container refusals and nothing else", () => {
    assert.ok(isExpiredContainerError(err('openai', 400, 'Container is expired.')));
    assert.ok(isExpiredContainerError(err('openai', 404, "Container with id 'cntr_1' not found.")));
    assert.ok(isExpiredContainerError(err('anthropic', 400, 'container: Container container_01 has expired.')));
    assert.ok(!isExpiredContainerError(err('openai', 404, 'The model `gpt-nope` does not exist or you do not have access to it.')));
    assert.ok(!isExpiredContainerError(err('openai', 500, 'Container is expired.')));
    assert.ok(!isExpiredContainerError(err('gemini', 400, 'Container is expired.')));
    assert.ok(!isExpiredContainerError(new Error('Container is expired.')));
  });
});

describe('recoverExpiredContainers: what the saved conversation says is untrusted', () => {
  it('a broken expiredContainers value in the meta is ignored, and the list stays bounded', async () => {
    const seen: TurnRequest[] = [];
    const inner = {
      id: 'openai',
      capabilities: { functionTools: true, hostedCode: true },
      streamTurn: async (r: TurnRequest) => (seen.push(r), { items: [], functionCalls: [], responseId: 'r', stopReason: 'end_turn', files: [] }),
    } as unknown as Provider;
    const broken = recoverExpiredContainers(inner, 'cntr_x' as unknown as string[]);
    assert.deepEqual(broken.expired, []);
    const many = recoverExpiredContainers(inner, Array.from({ length: 50 }, (_, i) => `cntr_${i}`).concat([42 as unknown as string, 'y'.repeat(5000)]));
    assert.equal(many.expired.length, MAX_EXPIRED_CONTAINERS);
    assert.equal(many.expired.at(-1), 'cntr_49');
    await many.provider.streamTurn({ model: 'm', history: [], tools: [], hosted: { enabled: true, containerId: 'cntr_49' } }, () => {});
    assert.equal(seen[0].hosted?.containerId, null);
    assert.equal(many.containerAfter('cntr_49'), null);
    assert.equal(many.containerAfter('cntr_new'), 'cntr_new');
  });
});
