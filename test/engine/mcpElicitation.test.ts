/**
 * An MCP server's `elicitation/create` (form mode) is shown to the person and answered,
 * the answer checked against the requested schema first; the wait pauses the call's timeout and the run's
 * clock; and each request has its own abort signal: stopping a call cancels that request only, never
 * `initialize`, never a call already answered. Against a real MCP server on stdio (the SDK's server side,
 * test/fixtures/mcp/elicitServer.mjs), which logs every message it receives.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ElicitationAnswer, ElicitationPrompt } from '../../src/common/elicitation';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { McpClientPool, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { createMcpTool } from '../../src/core/tools/sources/mcp/source';
import { ELICITATION_LIMITS } from '../../src/core/tools/sources/mcp/elicitation';
import { sleep, waitFor } from '../support/wait';

const fixture = path.resolve(__dirname, '../fixtures/mcp/elicitServer.mjs');

interface Logged {
  method?: string;
  id?: number;
  params?: { requestId?: number; name?: string };
  result?: unknown;
  event?: string;
}

describe('MCP elicitation and per-request cancellation, against a real MCP server', function () {
  this.timeout(60_000);
  let dir: string;
  let logFile: string;
  let pool: McpClientPool;
  const spec = (env: Record<string, string> = {}): McpServerSpec => ({
    kind: 'stdio',
    argv: [process.execPath, fixture],
    cwd: dir,
    env: { MCP_LOG: logFile, ...env },
  });
  const logged = (): Logged[] =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Logged);
  const cancelled = () => logged().filter((m) => m.method === 'notifications/cancelled');
  const idOf = (tool: string) => logged().find((m) => m.method === 'tools/call' && m.params?.name === tool)?.id;
  /** Waits (generously) until the server has logged what `pred` looks for. */
  const until = (pred: (log: Logged[]) => boolean, what: string) =>
    waitFor(() => pred(logged()), { what: `the server to log ${what}`, timeoutMs: 30_000, everyMs: 50 });
  const text = (r: unknown) => JSON.parse((r as { content: { text: string }[] }).content[0].text);

  beforeEach(() => {
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'codeact-elicit-')));
    logFile = path.join(dir, 'server.log');
    pool = new McpClientPool({ connectTimeoutMs: 20_000 });
  });
  afterEach(async () => {
    await pool.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('elicitation', () => {
    it('declares form elicitation, shows the form (fields, required, defaults, choices) and sends valid values back', async () => {
      const prompts: ElicitationPrompt[] = [];
      const content = { name: 'Ada Lovelace', email: 'ada@example.com', age: 36, urgent: true, team: 'eng', site: 'ber', due: '2026-12-24' };
      const r = await pool.callTool(spec(), 'ask', { form: 'profile' }, { elicit: async (p) => (prompts.push(p), { action: 'accept', content }) });
      assert.deepEqual(text(r), { action: 'accept', content });
      const init = logged().find((m) => m.method === 'initialize') as { params: { capabilities: unknown } };
      assert.deepEqual(init.params.capabilities, { elicitation: { form: {} } }, 'form mode only');
      assert.equal(prompts.length, 1);
      const f = Object.fromEntries(prompts[0].fields.map((x) => [x.key, x]));
      assert.equal(prompts[0].message, 'Who should the report go to?');
      assert.match(prompts[0].server, /elicitServer\.mjs/);
      assert.deepEqual([f.name.kind, f.name.required, f.name.title, f.name.description], ['string', true, 'Name', 'Full name']);
      assert.deepEqual([f.email.format, f.email.required], ['email', true]);
      assert.deepEqual([f.age.kind, f.age.minimum, f.age.maximum, f.age.required], ['integer', 18, 130, false]);
      assert.deepEqual([f.urgent.kind, f.urgent.default], ['boolean', false]);
      assert.deepEqual(f.team.options, [
        { value: 'eng', label: 'Engineering' },
        { value: 'ops', label: 'Operations' },
      ]);
      assert.deepEqual(
        f.site.options,
        [
          { value: 'ber', label: 'Berlin' },
          { value: 'nyc', label: 'New York' },
        ],
        'legacy enumNames',
      );
      assert.equal(f.due.format, 'date');
    });

    it('an invalid answer is shown again field by field and never sent; the corrected one is', async () => {
      const prompts: ElicitationPrompt[] = [];
      const answers: ElicitationAnswer[] = [
        { action: 'accept', content: { email: 'not-an-email', age: 500, team: 'sales', due: 'tomorrow' } },
        { action: 'accept', content: { name: 'Ada', email: 'ada@example.com', age: 40 } },
      ];
      const r = await pool.callTool(spec(), 'ask', { form: 'profile' }, { elicit: async (p) => (prompts.push(p), answers.shift()!) });
      assert.deepEqual(text(r), { action: 'accept', content: { name: 'Ada', email: 'ada@example.com', age: 40 } });
      assert.equal(prompts.length, 2, 'asked again once');
      const again = prompts[1];
      assert.equal(again.id, prompts[0].id, 'the same form, shown again');
      assert.deepEqual(Object.keys(again.problems!).sort(), ['age', 'due', 'email', 'name', 'team']);
      assert.equal(again.problems!.name, 'is required');
      assert.match(again.problems!.email, /format "email"/);
      assert.match(again.problems!.age, /<= 130/);
      assert.match(again.problems!.team, /const|one of/);
      assert.match(again.problems!.due, /format "date"/);
      assert.deepEqual(again.values, { email: 'not-an-email', age: 500, team: 'sales', due: 'tomorrow' }, 'the form is filled in with what was typed');
      const responses = logged().filter((m) => m.result !== undefined && JSON.stringify(m.result).includes('"action"'));
      assert.equal(responses.length, 1, 'one answer went to the server');
      assert.ok(!JSON.stringify(logged()).includes('not-an-email'), 'the invalid values never reached the server');
    });

    it('decline and cancel go back as such; without an elicitor the request is declined', async () => {
      assert.deepEqual(text(await pool.callTool(spec(), 'ask', { form: 'profile' }, { elicit: async () => ({ action: 'decline' }) })), { action: 'decline' });
      assert.deepEqual(text(await pool.callTool(spec(), 'ask', { form: 'profile' }, { elicit: async () => ({ action: 'cancel' }) })), { action: 'cancel' });
      assert.deepEqual(text(await pool.callTool(spec(), 'ask', { form: 'profile' })), { action: 'decline' });
    });

    it("the server's text is bounded, its characters kept for each host's sanitiser (the panel draws them as boxes); a form with too many fields is refused without asking", async () => {
      let prompt: ElicitationPrompt | undefined;
      await pool.callTool(spec(), 'ask', { form: 'tricky' }, { elicit: async (p) => ((prompt = p), { action: 'decline' }) });
      assert.ok(prompt!.message.length <= ELICITATION_LIMITS.maxMessageChars + 20, `${prompt!.message.length} characters`);
      assert.equal(prompt!.messageClipped, true);
      assert.match(prompt!.message, /^Pay \u202eattention\u202c x/);
      assert.equal(prompt!.fields[0].title, 'O\u200bk');
      let asked = false;
      const r = await pool.callTool(spec(), 'ask', { form: 'huge' }, { elicit: async () => ((asked = true), { action: 'decline' }) });
      assert.equal(asked, false);
      assert.match(text(r).error, /41 fields, more than 40/);
    });

    it("the call's timeout does not run while the form is open (a 300 ms timeout, a form open for 1.5 s)", async () => {
      const short = new McpClientPool({ connectTimeoutMs: 20_000, callTimeoutMs: 300 });
      try {
        const r = await short.callTool(
          spec(),
          'ask',
          { form: 'profile' },
          {
            elicit: async () => {
              await sleep(1500);
              return { action: 'accept', content: { name: 'Ada', email: 'ada@example.com' } };
            },
          },
        );
        assert.deepEqual(text(r), { action: 'accept', content: { name: 'Ada', email: 'ada@example.com' } });
        // ...and it still counts otherwise: a call that waits for nothing times out.
        await assert.rejects(short.callTool(spec(), 'hold', {}), /timed out after 0.3 s/);
      } finally {
        await short.dispose();
      }
    });

    it("the run's timeout does not run while the form is open: Python calls the tool through the gateway (1 s timeout, form open 2.5 s)", async function () {
      this.timeout(120_000);
      const tool = createMcpTool(
        { name: 'ask', mcp: { command: [process.execPath, fixture], tool: 'ask', env: ['MCP_LOG'] } },
        {
          pool,
          workspace: dir,
          hostEnv: { MCP_LOG: logFile },
        },
      );
      const asked: ElicitationPrompt[] = [];
      const gateway = new ToolGateway([tool], {
        elicitor: async (p) => {
          asked.push(p);
          await sleep(2500);
          return { action: 'accept', content: { name: 'Ada', email: 'ada@example.com' } };
        },
      });
      const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
      try {
        // Started before the run, so that the server's start-up is not what the 1 s measures.
        await pool.listTools(tool.mcp.spec);
        await runtime.execute({ code: 'return 1', timeoutMs: 60_000 });
        const item = await runtime.execute(
          { code: 'r = await call_tool("ask", form="profile")\nreturn r', timeoutMs: 1000, itemId: 'ci_e1' },
          { onToolCall: gateway.handler },
        );
        assert.equal(item.status, 'completed', JSON.stringify(item.error));
        assert.match(JSON.stringify(item.value), /ada@example\.com/);
        assert.deepEqual([asked[0].tool, asked[0].itemId, typeof asked[0].callId], ['ask', 'ci_e1', 'string'], 'attributed to the call');
        assert.ok(gateway.records[0].duration_ms < 2000, `the call's duration leaves the form out (${gateway.records[0].duration_ms} ms)`);
      } finally {
        await runtime.dispose();
      }
    });

    it('stopping the call while the form is open closes the form (its signal aborts) and cancels that call', async () => {
      const stop = new AbortController();
      let formSignal: AbortSignal | undefined;
      const p = pool.callTool(
        spec(),
        'ask',
        { form: 'profile' },
        {
          signal: stop.signal,
          elicit: (prompt) =>
            new Promise<ElicitationAnswer>((resolve) => {
              formSignal = prompt.signal;
              prompt.signal.addEventListener('abort', () => resolve({ action: 'cancel' }));
              stop.abort();
            }),
        },
      );
      await assert.rejects(p, /was stopped/);
      assert.equal(formSignal?.aborted, true);
      await until((l) => l.some((m) => m.method === 'notifications/cancelled'), 'a cancellation');
      assert.deepEqual(
        cancelled().map((m) => m.params?.requestId),
        [idOf('ask')],
      );
    });
  });

  describe('each request has its own abort signal', () => {
    it('stopping one call cancels that request only; the other call on the same connection completes', async () => {
      const stopA = new AbortController();
      const a = pool.callTool(spec(), 'hold', {}, { signal: stopA.signal });
      a.catch(() => {});
      await until((l) => l.some((m) => m.method === 'tools/call' && m.params?.name === 'hold'), 'the held call');
      const b = pool.callTool(spec(), 'echo', { text: 'still here' });
      stopA.abort();
      await assert.rejects(a, /was stopped/);
      assert.equal((await b).content![0].text, 'still here');
      await until((l) => l.some((m) => m.method === 'notifications/cancelled'), 'the cancellation');
      assert.deepEqual(
        cancelled().map((m) => m.params?.requestId),
        [idOf('hold')],
      );
    });

    it('a signal aborted after its call was answered cancels nothing (the run stopping later, one signal for many calls)', async () => {
      const run = new AbortController();
      await pool.callTool(spec(), 'echo', { text: 'one' }, { signal: run.signal });
      await pool.callTool(spec(), 'echo', { text: 'two' }, { signal: run.signal });
      run.abort();
      // A call after the abort: the server reads its messages in order, so anything sent before it is logged first.
      await pool.callTool(spec(), 'echo', { text: 'sync' });
      assert.deepEqual(cancelled(), [], 'no notifications/cancelled for answered calls');
    });

    it('closing the pool after the handshake never cancels initialize', async () => {
      await pool.callTool(spec(), 'echo', { text: 'hi' });
      await pool.dispose();
      await until((l) => l.some((m) => m.event === 'stdin-end'), 'its stdin closing');
      assert.deepEqual(cancelled(), []);
    });

    it('closing the pool during the handshake closes the connection without cancelling initialize', async () => {
      const p = pool.callTool(spec({ MCP_HOLD_INIT: '1' }), 'echo', { text: 'hi' });
      p.catch(() => {});
      await until((l) => l.some((m) => m.method === 'initialize'), 'the initialize request');
      await pool.dispose();
      await assert.rejects(p, /closed while it started/);
      await until((l) => l.some((m) => m.event === 'stdin-end'), 'its stdin closing');
      assert.deepEqual(cancelled(), []);
    });

    it('a handshake past its deadline fails saying so, without cancelling initialize', async () => {
      // The deadline may fire before a busy machine has even started the server: a long close grace lets
      // it start, read what was sent (initialize, then the end of its stdin) and log both, whatever the load.
      const quick = new McpClientPool({ connectTimeoutMs: 300, closeGraceMs: 45_000 });
      try {
        await assert.rejects(quick.callTool(spec({ MCP_HOLD_INIT: '1' }), 'echo', { text: 'hi' }), /did not complete the MCP handshake within 0.3 s/);
        await until((l) => l.some((m) => m.event === 'stdin-end'), 'its stdin closing');
        assert.ok(
          logged().some((m) => m.method === 'initialize'),
          'the server read the initialize request',
        );
        assert.deepEqual(cancelled(), []);
      } finally {
        await quick.dispose();
      }
    });
  });
});
