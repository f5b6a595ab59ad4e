/**
 * No input can stall the host. Schemas (from settings and from MCP servers) and
 * arguments (from generated code) are hostile here; each attack must end with a clear answer, never a stall.
 * The bounds are proven by counted work, never by the clock (a busy CI machine must not decide an outcome):
 * the validation units charged (unitsSpent), the reads of the arguments' properties (getters that count),
 * and the caps named in the answers. The event-loop lag of each attack is measured and printed
 * (see ./lag.ts) as a figure to compare, not asserted.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { compileSchema, MAX_ERRORS } from '../../src/core/gateway/schema';
import { BudgetExceeded, charge, metered, unitsSpent, VALIDATION_BUDGET } from '../../src/core/gateway/budget';
import type { JsonSchema } from '../../src/common/tools';
import { processesWithCmdline } from '../../src/core/util/processTree';
import { loadTools, loadToolsAsync } from '../../src/core/tools/declarations';
import { McpClientPool, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { withLag } from './lag';
import { REFUSALS } from '../../src/core/gateway/gateway';

const hostile = path.resolve(__dirname, '../fixtures/mcp/hostile.mjs');
const tag = `--tag=codeact-stall-test-${process.pid}-${Date.now()}`;

let n = 0;
const call = (gw: ToolGateway, name: string, args: unknown) =>
  gw.call({ itemId: 'item', callId: `call-${++n}`, name, arguments: args }, new AbortController().signal);

/** An object whose properties count their reads (in `reads.n`). */
function countedObject(props: Record<string, unknown>, reads: { n: number }): Record<string, unknown> {
  const o = {};
  for (const [k, value] of Object.entries(props)) Object.defineProperty(o, k, { enumerable: true, get: () => (reads.n++, value) });
  return o;
}

/** The validation units an attack was charged (counted, see budget.ts), with its answer and its logged lag. */
async function charged<T>(label: string, attack: () => Promise<T>) {
  const before = unitsSpent();
  const r = await withLag(label, attack);
  return { ...r, units: unitsSpent() - before };
}

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
    /** RE2 (linear in the input) refuses what only a backtracking engine can run: proof that patterns run on it. */
    const LINEAR_ENGINE = /cannot be used: .*Patterns run on a linear-time engine \(RE2 syntax\)/;

    it('an evil pattern (^(a+)+$) against "aaaa…!" is answered at once, not after minutes: it runs on RE2, charged by its length', async () => {
      // Checked first: on a backtracking engine the call below would never return.
      assert.throws(() => compileSchema({ type: 'string', pattern: '^(a+)\\1$' }), LINEAR_ENGINE);
      const gw = settingsTool({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
      const r = await charged('^(a+)+$ against 20,000 "a" and "!"', () => call(gw, 'victim', { s: 'a'.repeat(20_000) + '!' }));
      assert.ok(String(r.error).includes(`${REFUSALS.invalidArguments('victim')} $.s must match pattern "^(a+)+$"`), String(r.error));
      // Each test of the pattern is charged (length + 1) × program size, the NFA's worst case: linear, within the budget.
      assert.ok(r.units >= 20_001 && r.units <= VALIDATION_BUDGET * 1.25, `the check was charged ${r.units} units`);
    });

    it('a string too long to check against its pattern within the budget is refused, not checked', async () => {
      const gw = settingsTool({ type: 'object', properties: { s: { type: 'string', pattern: '^[ab]*a[ab]{200}b{10}$' } } });
      const r = await charged('a 1 MB string against a 217-instruction pattern', () => call(gw, 'victim', { s: 'ab'.repeat(500_000) }));
      assert.match(
        String(r.error),
        /arguments for "victim" are too costly to check against its input schema: the check would take more than the validation budget/,
      );
      // Refused before the pattern ran: its cost (1,000,001 characters × 217 instructions) was never charged.
      assert.ok(r.units < VALIDATION_BUDGET, `${r.units} units were charged: the pattern ran before the refusal`);
    });

    it('patternProperties and propertyNames use the same engine', async () => {
      assert.throws(() => compileSchema({ type: 'object', patternProperties: { '^(a)\\1$': {} } }), LINEAR_ENGINE);
      assert.throws(() => compileSchema({ type: 'object', propertyNames: { pattern: '^(?=b)' } }), LINEAR_ENGINE);
      const gw = settingsTool({ type: 'object', patternProperties: { '^(a+)+$': { type: 'number' } }, propertyNames: { pattern: '^(b|b)+$' } });
      const key = 'a'.repeat(5_000) + '!';
      const r = await charged('evil patternProperties and propertyNames', () => call(gw, 'victim', { [key]: 'x' }));
      assert.match(String(r.error), /must match pattern "\^\(b\|b\)\+\$"/);
      assert.ok(r.units >= 5_002 && r.units <= VALIDATION_BUDGET * 1.25, `the check was charged ${r.units} units`);
    });
  });

  describe('arguments are capped before validation, and the error names the cap', () => {
    const gw = () => settingsTool({ $defs: { n: { type: 'object', properties: { a: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' });
    /**
     * Counted: the reads of the arguments' properties (every object counts them) and the validation units.
     * The cap check stops at the cap: a few hundred reads at most (the record's short preview included),
     * and no validation at all; without the cap, the walk or the validation reads all 100,000.
     */
    const READS_BOUND = 300;

    it('depth: 100,000 nested objects', async () => {
      const reads = { n: 0 };
      let deep: Record<string, unknown> = {};
      for (let i = 0; i < 100_000; i++) deep = countedObject({ a: deep }, reads);
      const tool = gw();
      const r = await charged('100,000 levels of nesting', () => call(tool, 'victim', deep));
      assert.match(String(r.error), /Arguments for "victim" are refused before validation: nesting deeper than 64 levels \(the depth cap\)/);
      assert.ok(reads.n <= READS_BOUND, `the arguments were read ${reads.n} times`);
      assert.equal(r.units, 0, 'the arguments were validated');
    });

    it('key count: 100,000 keys', async () => {
      const reads = { n: 0 };
      const wide: Record<string, number> = {};
      for (let i = 0; i < 100_000; i++) wide[`k${i}`] = i;
      const tool = settingsTool({ type: 'object', additionalProperties: { type: 'string', pattern: '^[a-z]+$' } });
      const args = countedObject(wide, reads);
      const r = await charged('100,000 keys', () => call(tool, 'victim', args));
      assert.match(String(r.error), /refused before validation: more than 20,000 keys and array items in total \(the key-count cap\)/);
      assert.ok(reads.n <= READS_BOUND, `the arguments were read ${reads.n} times`);
      assert.equal(r.units, 0, 'the arguments were validated');
    });

    it('size: a 4 MiB string', async () => {
      const tool = gw();
      const r = await charged('a 4 MiB argument', () => call(tool, 'victim', { a: {}, blob: 'x'.repeat(4 * 1024 * 1024) }));
      assert.match(String(r.error), /refused before validation: larger than 1 MiB as JSON \(the size cap\)/);
      assert.equal(r.units, 0, 'the arguments were validated');
    });
  });

  describe('validation work is bounded whatever the schema', () => {
    it('a huge error list is cut to the first few, without quadratic work (counted)', async () => {
      const v = compileSchema({ type: 'array', items: { type: 'string' } });
      const values = Array.from({ length: 100_000 }, (_, i) => i);
      const before = unitsSpent();
      const r = await withLag('100,000 failing items', async () => v(values));
      const units = unitsSpent() - before;
      const lines = r.value!;
      assert.ok(lines.length <= MAX_ERRORS + 1, `${lines.length} lines`);
      assert.equal(lines[0], '$[0] must be string');
      // The first error, then the others within a quarter of the budget: never more, whatever the machine's load.
      assert.ok(units <= VALIDATION_BUDGET * 1.25 + 10_000, `listing the errors was charged ${units} units`);
    });

    it('a schema whose $refs double the work at every level is cut off (counted)', async () => {
      const defs: Record<string, unknown> = { d40: { type: 'number' } };
      for (let i = 0; i < 40; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      const gw = settingsTool({ type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs });
      const before = unitsSpent();
      const r = await withLag('2^40 subschema evaluations', () => call(gw, 'victim', { x: 1 }));
      const units = unitsSpent() - before;
      assert.match(String(r.error), /too costly to check against its input schema/);
      assert.ok(units <= VALIDATION_BUDGET + 10_000, `2^40 evaluations were charged ${units} units before the refusal`);
    });

    /**
     * Counted, not timed: the units a validation is charged (unitsSpent) and the reads of the values' properties
     * (getters that count). On a busy machine the clock varies; these do not.
     */
    function counting(schema: JsonSchema) {
      const v = compileSchema(schema);
      let reads = 0;
      /** An object whose properties count their reads. */
      const counted = (props: Record<string, unknown>): Record<string, unknown> => {
        const o = {};
        for (const [k, value] of Object.entries(props)) Object.defineProperty(o, k, { enumerable: true, get: () => (reads++, value) });
        return o;
      };
      const cost = (value: unknown) => {
        reads = 0;
        const before = unitsSpent();
        let problems: string[] | Error;
        try {
          problems = v(value);
        } catch (e) {
          problems = e as Error;
        }
        return { problems, units: unitsSpent() - before, reads };
      };
      return { counted, cost };
    }

    it('uniqueItems, enum and a quadratic format cost what they look at, not the square of it: counted units and reads, linear in the input', async () => {
      const { counted, cost } = counting({
        type: 'object',
        properties: {
          list: { type: 'array', uniqueItems: true },
          picks: { type: 'array', items: { enum: Array.from({ length: 300 }, (_, i) => ({ id: i, tag: 'x' })) } },
          links: { type: 'array', items: { type: 'string', format: 'url' } },
        },
      });
      // uniqueItems: twice the items cost twice the units and twice the reads (pairwise comparison: four times),
      // each item is read a few times (pairwise: once per other item), and 9,000 objects fit the budget by count.
      const list = (n: number) => ({ list: Array.from({ length: n }, (_, i) => counted({ id: i })) });
      const u1 = cost(list(4_500));
      const u2 = cost(list(9_000));
      assert.deepEqual(u2.problems, []);
      assert.ok(u2.units < VALIDATION_BUDGET, `uniqueItems over 9,000 objects was charged ${u2.units} units, over the budget`);
      assert.ok(u2.units <= 2.1 * u1.units, `units: ${u1.units} for 4,500 items, ${u2.units} for 9,000: not linear`);
      assert.ok(u2.reads <= 2.1 * u1.reads && u2.reads <= 2 * 9_000, `reads: ${u1.reads} for 4,500 items, ${u2.reads} for 9,000`);
      const gw = settingsTool({ type: 'object', properties: { list: { type: 'array', uniqueItems: true } } });
      const dup = await call(gw, 'victim', { list: [...Array.from({ length: 9_000 }, (_, i) => ({ id: i })), { id: 5 }] }).catch((e: Error) => e);
      assert.match(String(dup), /\$\.list must NOT have duplicate items \(items ## 5 and 9000 are identical\)/);

      // enum of 300 objects: each item is looked up once (hashed), not compared with all 300 values.
      const picks = (n: number) => ({ picks: Array.from({ length: n }, (_, i) => counted({ tag: 'x', id: i % 300 })) });
      const e1 = cost(picks(3_000));
      const e2 = cost(picks(6_000));
      assert.deepEqual(e2.problems, []);
      assert.ok(e2.units < VALIDATION_BUDGET, `enum over 6,000 items was charged ${e2.units} units, over the budget`);
      assert.ok(e2.units <= 2.1 * e1.units, `units: ${e1.units} for 3,000 items, ${e2.units} for 6,000: not linear`);
      assert.ok(e2.reads <= 2.1 * e1.reads && e2.reads <= 2 * 2 * 6_000, `reads: ${e1.reads} for 3,000 items, ${e2.reads} for 6,000`);

      // format "url" (a quadratic regex): charged as quadratic, so 15,000 colons are refused by count before the regex runs.
      const f = cost({ links: Array.from({ length: 50 }, () => 'http://' + ':'.repeat(15_000) + '!') });
      assert.ok(f.problems instanceof BudgetExceeded, String(f.problems));
      assert.ok(f.units <= VALIDATION_BUDGET, `${f.units} units were charged before the refusal`);
    });

    it("a subschema's size is charged at every evaluation, so the count decides, not the machine's load", () => {
      // 700 properties checked for each of the items: ajv's code tests every one of them every time.
      const props: Record<string, unknown> = {};
      for (let i = 0; i < 700; i++) props[`p${i}`] = { type: 'string' };
      const { cost } = counting({ type: 'array', items: { type: 'object', properties: props } });
      const small = cost(Array.from({ length: 2_000 }, () => ({})));
      assert.deepEqual(small.problems, []);
      assert.ok(small.units >= 2_000 * 700 && small.units <= 2_000 * 800, `2,000 items against 700 properties were charged ${small.units} units`);
      // 19,000 items (under the key-count cap): 13 million property checks, over the budget by count, on any machine.
      const large = cost(Array.from({ length: 19_000 }, () => ({})));
      assert.ok(large.problems instanceof BudgetExceeded, `19,000 items against 700 properties were accepted (${large.units} units)`);
    });

    it('a check whose steps cost more than they are charged still stops at its net of CPU and wall time', () => {
      // Steps charged 1 unit each against an endless budget: only the net (30 ms here, of both the
      // process's CPU time and the wall time) can stop it.
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
      assert.ok(failed.error!.includes(REFUSALS.unknownTool('nope')), failed.error);
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
      // Counted: the answer names the page count it stopped at (the lag is printed, not asserted).
      const r = await withLag('tools/list paginating forever', () => pool.listTools(spec('--paginate-forever')));
      assert.match(String(r.error), /has more than 50 pages of tools \(tools\/list kept returning a nextCursor\); CodeAct stops listing there/);
    });

    it('a slow server that paginates forever: listing stops at its deadline', async () => {
      const slow = new McpClientPool({ listLimits: { timeoutMs: 1_000, maxPages: 10_000 } });
      try {
        // 10,000 pages 50 ms apart would take minutes: the answer that names the 1 s deadline is the proof.
        await assert.rejects(
          slow.listTools(spec('--paginate-forever', '--page-delay=50')),
          /listing the tools of the MCP server .* took longer than 1 s, the deadline for all its pages/,
        );
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
    });

    it('a server that lists 20,000 tools in one page, under the message caps: refused before any tool is parsed', async () => {
      const r = await withLag('one page of 20,000 tools (about 1 MB)', () => pool.listTools(spec('--tools=20000')));
      assert.match(String(r.error), /lists more than 1,000 tools, CodeAct's limit for one server/);
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
      const r1 = await charged('the server\'s inputSchema against 20,000 "a" and "!"', () => call(gw, 'evil', { s: 'a'.repeat(20_000) + '!' }));
      assert.match(String(r1.error), /\$\.s must match pattern "\^\(a\+\)\+\$"/);
      // Counted: charged for what it looked at (RE2, linear), within the budget.
      assert.ok(r1.units >= 20_001 && r1.units <= VALIDATION_BUDGET * 1.25, `the input check was charged ${r1.units} units`);
      // The server answers with structuredContent that the SDK checks against the evil outputSchema.
      const r2 = await charged('the server\'s outputSchema against its own 50,000 "a" and "!"', () => call(gw, 'evil', {}));
      assert.match(String(r2.error), /Tool "evil" failed: .*(output schema|too costly|validation budget)/);
      // Refused within the budget (the NFA's worst case for 50,001 characters is over it: refused before it runs).
      assert.ok(r2.units <= VALIDATION_BUDGET * 1.25, `the output check was charged ${r2.units} units`);
    });
  });
});
