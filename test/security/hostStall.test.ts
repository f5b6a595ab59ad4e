/**
 * No input can stall the host. Schemas (from settings and from MCP servers) and
 * arguments (from generated code) are hostile here; each attack runs while the event-loop lag is
 * measured (see ./lag.ts), and must end with a clear answer, never a stall.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { compileSchema, MAX_ERRORS } from '../../src/core/gateway/schema';
import { BudgetExceeded, charge, metered } from '../../src/core/gateway/budget';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { loadTools, loadToolsAsync } from '../../src/core/tools/declarations';
import { McpClientPool, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { LAG_BOUND_MS, withLag } from './lag';

const hostile = path.resolve(__dirname, '../fixtures/mcp/hostile.mjs');
const tag = `--tag=codeact-stall-test-${process.pid}-${Date.now()}`;

let n = 0;
const call = (gw: ToolGateway, name: string, args: unknown) =>
  gw.call({ itemId: 'item', callId: `call-${++n}`, name, arguments: args }, new AbortController().signal);

describe('security: the host cannot be stalled', function () {
  this.timeout(60_000);
  let ws: string;
  before(() => (ws = mkdtempSync(path.join(tmpdir(), 'codeact-stall-'))));
  after(() => rmSync(ws, { recursive: true, force: true }));

  /** A gateway over one `command` tool declared as in settings.json, with the given input schema. */
  function settingsTool(inputSchema: unknown): ToolGateway {
    const set = loadTools([{ name: 'victim', command: ['python3', '-c', 'import sys; print(sys.stdin.read())'], inputSchema }], { workspace: ws });
    assert.deepEqual(set.errors, []);
    return new ToolGateway(set.tools);
  }

  describe('JSON Schema patterns run in linear time', () => {
    it('an evil pattern (^(a+)+$) against "aaaa…!" is answered at once, not after minutes', async () => {
      const gw = settingsTool({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
      const r = await withLag('^(a+)+$ against 20,000 "a" and "!"', () => call(gw, 'victim', { s: 'a'.repeat(20_000) + '!' }));
      assert.match(String(r.error), /Invalid arguments for "victim": \$\.s must match pattern "\^\(a\+\)\+\$"/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('a string too long to check against its pattern within the budget is refused, not checked', async () => {
      const gw = settingsTool({ type: 'object', properties: { s: { type: 'string', pattern: '^[ab]*a[ab]{200}b{10}$' } } });
      const r = await withLag('a 1 MB string against a 217-instruction pattern', () => call(gw, 'victim', { s: 'ab'.repeat(500_000) }));
      assert.match(
        String(r.error),
        /arguments for "victim" are too costly to check against its input schema: the check would take more than the validation budget/,
      );
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('patternProperties and propertyNames use the same engine', async () => {
      const gw = settingsTool({ type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } }, propertyNames: { pattern: '^(b|b)+$' } });
      const key = 'a'.repeat(5_000) + '!';
      const r = await withLag('evil patternProperties and propertyNames', () => call(gw, 'victim', { [key]: 'x' }));
      assert.match(String(r.error), /must match pattern "\^\(b\|b\)\+\$"/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });
  });

  describe('arguments are capped before validation, and the error names the cap', () => {
    const gw = () => settingsTool({ $defs: { n: { type: 'object', properties: { a: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' });

    it('depth: 100,000 nested objects', async () => {
      let deep: Record<string, unknown> = {};
      for (let i = 0; i < 100_000; i++) deep = { a: deep };
      const r = await withLag('100,000 levels of nesting', () => call(gw(), 'victim', deep));
      assert.match(String(r.error), /Arguments for "victim" are refused before validation: nesting deeper than 64 levels \(the depth cap\)/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('key count: 100,000 keys', async () => {
      const wide: Record<string, number> = {};
      for (let i = 0; i < 100_000; i++) wide[`k${i}`] = i;
      const tool = settingsTool({ type: 'object', additionalProperties: { type: 'string', pattern: '^[a-z]+$' } });
      const r = await withLag('100,000 keys', () => call(tool, 'victim', wide));
      assert.match(String(r.error), /refused before validation: more than 20,000 keys and array items in total \(the key-count cap\)/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('size: a 4 MiB string', async () => {
      const r = await withLag('a 4 MiB argument', () => call(gw(), 'victim', { a: {}, blob: 'x'.repeat(4 * 1024 * 1024) }));
      assert.match(String(r.error), /refused before validation: larger than 1 MiB as JSON \(the size cap\)/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });
  });

  describe('validation work is bounded whatever the schema', () => {
    it('a huge error list is cut to the first few, without quadratic work', async () => {
      const v = compileSchema({ type: 'array', items: { type: 'string' } });
      const values = Array.from({ length: 100_000 }, (_, i) => i);
      const r = await withLag('100,000 failing items', async () => v(values));
      const lines = r.value!;
      assert.ok(lines.length <= MAX_ERRORS + 1, `${lines.length} lines`);
      assert.equal(lines[0], '$[0] must be string');
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('a schema whose $refs double the work at every level is cut off', async () => {
      const defs: Record<string, unknown> = { d40: { type: 'number' } };
      for (let i = 0; i < 40; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      const gw = settingsTool({ type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs });
      const r = await withLag('2^40 subschema evaluations', () => call(gw, 'victim', { x: 1 }));
      assert.match(String(r.error), /too costly to check against its input schema/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('uniqueItems, enum and a quadratic format cost what they look at, not the square of it', async () => {
      const gw = settingsTool({
        type: 'object',
        properties: {
          list: { type: 'array', uniqueItems: true },
          picks: { type: 'array', items: { enum: Array.from({ length: 300 }, (_, i) => ({ id: i, tag: 'x' })) } },
          links: { type: 'array', items: { type: 'string', format: 'url' } },
        },
      });
      // Under the key-count cap, so these are validated, not refused before validation.
      const list = Array.from({ length: 9_000 }, (_, i) => ({ id: i }));
      const r1 = await withLag('uniqueItems over 9,000 objects', () => call(gw, 'victim', { list }));
      assert.equal(r1.error, undefined, String(r1.error));
      assert.ok(r1.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r1.lagMs} ms`);
      const dup = await call(gw, 'victim', { list: [...list, { id: 5 }] }).catch((e: Error) => e);
      assert.match(String(dup), /\$\.list must NOT have duplicate items \(items ## 5 and 9000 are identical\)/);
      const picks = Array.from({ length: 6_000 }, (_, i) => ({ tag: 'x', id: i % 300 }));
      const r2 = await withLag('enum of 300 objects over 6,000 items', () => call(gw, 'victim', { picks }));
      assert.equal(r2.error, undefined, String(r2.error));
      assert.ok(r2.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r2.lagMs} ms`);
      const links = Array.from({ length: 50 }, () => 'http://' + ':'.repeat(15_000) + '!');
      const r3 = await withLag('format "url" over 50 strings of 15,000 colons', () => call(gw, 'victim', { links }));
      assert.match(String(r3.error), /must match format "url"|too costly to check/);
      assert.ok(r3.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r3.lagMs} ms`);
    });

    it('a check whose steps cost more than they are charged still stops at its CPU deadline', () => {
      // Steps charged 1 unit each against an endless budget: only the deadline (30 ms of this thread's
      // time, the smaller of the process's CPU time and the wall time) can stop it.
      let steps = 0;
      const started = Date.now();
      assert.throws(
        () =>
          metered(Number.MAX_SAFE_INTEGER, 30, () => {
            while (Date.now() - started < 20_000) {
              charge(1);
              steps++;
            }
          }),
        (e: unknown) => e instanceof BudgetExceeded,
      );
      assert.ok(steps > 0 && Date.now() - started < 20_000, 'the loop was stopped by the deadline, not by its own end');
    });

    it('a schema too large to compile quickly is refused before compiling', () => {
      const props: Record<string, unknown> = {};
      for (let i = 0; i < 2_000; i++) props[`p${i}`] = { type: 'string' };
      assert.throws(() => compileSchema({ type: 'object', properties: props }), /the schema is refused before compiling: more than 1,500 keys/i);
      const patterns: Record<string, unknown> = {};
      for (let i = 0; i < 100; i++) patterns[`p${i}`] = { type: 'string', pattern: `^x${i}$` };
      assert.throws(() => compileSchema({ type: 'object', properties: patterns }), /it has 100 patterns, more than 64/);
    });
  });

  describe('call records are bounded summaries', () => {
    it('keep name, sizes, timing, outcome and a short preview; memory stays flat over thousands of calls', async () => {
      const echo: ManagedTool = {
        name: 'echo',
        description: '',
        inputSchema: { type: 'object' },
        approval: 'auto',
        expose: 'code',
        source: 'test',
        invoke: async (args) => args,
      };
      const gw = new ToolGateway([echo]);
      const blob = 'y'.repeat(50_000);
      for (let i = 0; i < 3_000; i++) await call(gw, 'echo', { i, blob });
      await call(gw, 'nope', { blob }).catch(() => {});
      assert.ok(gw.records.length <= 200, `${gw.records.length} records kept`);
      const kept = JSON.stringify(gw.records).length;
      assert.ok(kept < 200 * 1_000, `the records hold ${kept} characters`);
      const last = gw.records.at(-2)!;
      assert.equal(last.name, 'echo');
      assert.equal(last.ok, true);
      assert.ok(last.argument_bytes > 50_000 && last.result_bytes > 50_000);
      assert.ok(last.arguments_preview.length <= 200 && last.arguments_preview.startsWith('{"i":2999,"blob":"yyy'), last.arguments_preview);
      const failed = gw.records.at(-1)!;
      assert.equal(failed.ok, false);
      assert.equal(failed.code, 'unknown_tool');
      assert.match(failed.error!, /Unknown tool "nope"/);
    });
  });

  describe('an MCP server cannot stall the host', () => {
    let pool: McpClientPool;
    beforeEach(() => (pool = new McpClientPool({ connectTimeoutMs: 20_000 })));
    afterEach(async () => {
      await pool.dispose();
      assert.deepEqual(processesWithCmdline(tag), [], 'a hostile server is still running');
    });
    const spec = (...flags: string[]): McpServerSpec => ({
      kind: 'stdio',
      argv: [process.execPath, hostile, tag, ...flags],
      cwd: ws,
      env: { PATH: process.env.PATH ?? '' },
    });

    it('a server that paginates forever: listing stops at the page limit', async () => {
      const r = await withLag('tools/list paginating forever', () => pool.listTools(spec('--paginate-forever')));
      assert.match(String(r.error), /has more than 50 pages of tools \(tools\/list kept returning a nextCursor\); CodeAct stops listing there/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('a slow server that paginates forever: listing stops at its deadline', async () => {
      const slow = new McpClientPool({ listLimits: { timeoutMs: 1_000, maxPages: 10_000 } });
      try {
        const t0 = Date.now();
        await assert.rejects(
          slow.listTools(spec('--paginate-forever', '--page-delay=50')),
          /listing the tools of the MCP server .* took longer than 1 s, the deadline for all its pages/,
        );
        assert.ok(Date.now() - t0 < 10_000);
      } finally {
        await slow.dispose();
      }
    });

    it('a server that lists a million tools in one page: refused, and the host keeps running', async () => {
      const r = await withLag('one page of 1,000,000 tools', () => pool.listTools(spec('--tools=1000000')));
      assert.match(
        String(r.error),
        /the connection to the MCP server .* was dropped: it sent a message over CodeAct's limits: a message (has more than 50,000 objects and arrays|is longer than 4 MiB)/,
      );
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('a server that lists 20,000 tools in one page, under the message caps: refused before any tool is parsed', async () => {
      const r = await withLag('one page of 20,000 tools (about 1 MB)', () => pool.listTools(spec('--tools=20000')));
      assert.match(String(r.error), /lists more than 1,000 tools, CodeAct's limit for one server/);
      assert.ok(r.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r.lagMs} ms`);
    });

    it('a server whose pages add up to too many tools: refused at the tool limit', async () => {
      await assert.rejects(pool.listTools(spec('--pages=5', '--page-size=400')), /lists more than 1,000 tools/);
    });

    it("an MCP server's evil patterns, in inputSchema and outputSchema, run in linear time", async () => {
      const set = await loadToolsAsync(
        [{ name: 'evil', mcp: { command: spec('--evil-schema').kind === 'stdio' ? [process.execPath, hostile, tag, '--evil-schema'] : [], tool: 'evil' } }],
        {
          workspace: ws,
          mcpPool: pool,
        },
      );
      assert.deepEqual(set.errors, []);
      const gw = new ToolGateway(set.tools);
      const r1 = await withLag('the server\'s inputSchema against 20,000 "a" and "!"', () => call(gw, 'evil', { s: 'a'.repeat(20_000) + '!' }));
      assert.match(String(r1.error), /\$\.s must match pattern "\^\(a\+\)\+\$"/);
      assert.ok(r1.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r1.lagMs} ms`);
      // The server answers with structuredContent that the SDK checks against the evil outputSchema.
      const r2 = await withLag('the server\'s outputSchema against its own 50,000 "a" and "!"', () => call(gw, 'evil', {}));
      assert.match(String(r2.error), /Tool "evil" failed: .*(output schema|too costly|validation budget)/);
      assert.ok(r2.lagMs < LAG_BOUND_MS, `the event loop stalled for ${r2.lagMs} ms`);
    });
  });
});
