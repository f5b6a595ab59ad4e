import * as assert from 'node:assert/strict';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { compileSchema, toJsonPath } from '../../src/core/gateway/schema';
import { managedTool } from '../support/managedTool';
import { REFUSALS } from '../../src/core/gateway/gateway';

const base = (over: Partial<ManagedTool>): ManagedTool => managedTool({ invoke: async () => 'ok', ...over });
const call = (gw: ToolGateway, name: string, args: unknown) =>
  gw.call({ itemId: 'i', callId: `c-${Math.random()}`, name, arguments: args }, new AbortController().signal);

describe('schema validation', () => {
  it('validates draft 2020-12 by default (prefixItems) and draft-07 when declared (items array)', () => {
    const v2020 = compileSchema({ type: 'array', prefixItems: [{ type: 'string' }], items: false });
    assert.deepEqual(v2020(['a']), []);
    assert.match(v2020(['a', 1]).join(), /\$ must NOT have more than 1 items/);
    const v7 = compileSchema({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'array', items: [{ type: 'string' }], additionalItems: false });
    assert.deepEqual(v7(['a']), []);
    assert.ok(v7(['a', 1]).length > 0);
  });

  it('points errors at the failing JSON path', () => {
    const v = compileSchema({
      type: 'object',
      properties: { lines: { type: 'array', items: { type: 'object', properties: { qty: { type: 'integer', minimum: 1 } }, required: ['sku'] } } },
      additionalProperties: false,
    });
    const errs = v({ lines: [{ sku: 'a', qty: 1 }, { qty: 0 }], extra: 1 });
    assert.ok(errs.includes('$.lines[1].qty must be >= 1'), errs.join(' | '));
    assert.ok(errs.includes('$.lines[1].sku is required'), errs.join(' | '));
    assert.ok(errs.includes('$.extra is not an allowed property'), errs.join(' | '));
    assert.equal(toJsonPath('/a b/0/~1x'), '$["a b"][0]["/x"]');
  });

  it('refuses external $ref, and accepts local ones', () => {
    assert.throws(
      () => compileSchema({ $ref: 'https://example.com/schema.json' }),
      /"\$ref": "https:\/\/example.com\/schema.json" is an external \$ref, which is not allowed/,
    );
    assert.throws(() => compileSchema({ properties: { a: { $ref: 'other.json#/x' } } }), /In properties\.a, "\$ref": "other\.json#\/x" is an external \$ref/);
    const v = compileSchema({ $defs: { pos: { type: 'integer', minimum: 0 } }, type: 'object', properties: { n: { $ref: '#/$defs/pos' } } });
    assert.match(v({ n: -1 }).join(), /\$\.n must be >= 0/);
  });

  it('reports an invalid schema clearly', () => {
    assert.throws(() => compileSchema({ type: 'nonsense' }), /"type": "nonsense" is not a JSON Schema type/);
    assert.throws(
      () => compileSchema({ $schema: 'http://json-schema.org/draft-04/schema#' }),
      /version CodeAct does not support\. Fix: use draft 2020-12 .* or draft-07/,
    );
  });
});

describe('tool gateway', () => {
  it('rejects unknown tools, naming the tool and the allowed names', async () => {
    const gw = new ToolGateway([base({ name: 'b' }), base({ name: 'a' })]);
    await assert.rejects(call(gw, 'zzz', {}), { message: `${REFUSALS.unknownTool('zzz')} ${REFUSALS.allowedTools(['a', 'b'])}` });
    assert.equal(gw.records[0].ok, false);
  });

  it("a background job's call: the approver and a form the tool asks for are told which job asks; the code's own call names none", async () => {
    const jobs: Array<[string, number | undefined]> = [];
    const gw = new ToolGateway(
      [
        base({
          name: 'ask_form',
          approval: 'ask',
          invoke: async (_a, o) => o.elicit?.({ id: 'f1', server: 'srv', message: 'Who?', fields: [], signal: o.signal, check: () => ({}) }, true),
        }),
      ],
      {
        approver: async (r) => (jobs.push(['approval', r.job]), 'allowed'),
        elicitor: async (p) => (jobs.push(['form', p.job]), { action: 'decline' }),
      },
    );
    const signal = new AbortController().signal;
    assert.deepEqual(await gw.handler({ itemId: 'i', callId: 'i:job3.1', name: 'ask_form', arguments: {}, job: 3 }, signal), { action: 'decline' });
    await gw.handler({ itemId: 'i', callId: 'i:1', name: 'ask_form', arguments: {} }, signal);
    assert.deepEqual(jobs, [
      ['approval', 3],
      ['form', 3],
      ['approval', undefined],
      ['form', undefined],
    ]);
  });

  it('records name, argument preview and size, duration, ok and result size of each call', async () => {
    const gw = new ToolGateway([base({ name: 'echo', invoke: async (a) => a })]);
    assert.deepEqual(await call(gw, 'echo', { x: 1 }), { x: 1 });
    const r = gw.records[0];
    assert.equal(r.name, 'echo');
    assert.equal(r.arguments_preview, '{"x":1}');
    assert.equal(r.output_preview, '{"x":1}');
    assert.ok(r.argument_bytes > 0);
    assert.equal(r.ok, true);
    assert.equal(r.result_bytes, Buffer.byteLength('{"x":1}'));
    assert.ok(r.duration_ms >= 0);
  });

  it('keeps two different patterns apart (compiled patterns are shared by their text)', () => {
    const v = compileSchema({ type: 'object', properties: { a: { type: 'string', pattern: '^a+$' }, b: { type: 'string', pattern: '^b+$' } } });
    assert.deepEqual(v({ a: 'aaa', b: 'bbb' }), []);
    assert.deepEqual(v({ a: 'bbb', b: 'aaa' }), ['$.a must match pattern "^a+$"', '$.b must match pattern "^b+$"']);
  });

  it('refuses a pattern the linear-time engine cannot run, saying what to change', () => {
    assert.throws(
      () => compileSchema({ type: 'string', pattern: '^(?=a)a$' }),
      /pattern "\^\(\?=a\)a\$" cannot be used.*lookahead, lookbehind and backreferences are not available/,
    );
  });

  it('checks enum and uniqueItems by value, whatever the key order', () => {
    const v = compileSchema({ type: 'array', uniqueItems: true, items: { enum: [{ a: 1, b: [1, 2] }, 'x', 2] } });
    assert.deepEqual(v([{ b: [1, 2], a: 1 }, 'x', 2.0]), []);
    assert.match(
      v([
        { a: 1, b: [1, 2] },
        { b: [1, 2], a: 1 },
      ]).join(),
      /must NOT have duplicate items \(items ## 0 and 1 are identical\)/,
    );
    assert.match(v(['y']).join(), /\$\[0\] must be one of \[\{"a":1,"b":\[1,2\]\},"x",2\]/);
  });

  it('applies approval policies: deny always wins, ask needs an approver, auto runs', async () => {
    let ran = 0;
    const invoke = async () => ++ran;
    const gw = new ToolGateway([base({ name: 'd', approval: 'deny', invoke }), base({ name: 'q', approval: 'ask', invoke })], { policyOverride: () => 'auto' });
    await assert.rejects(call(gw, 'd', {}), (e: Error) => e.message.startsWith(REFUSALS.deniedByPolicy('d')));
    assert.equal(await call(gw, 'q', {}), 1, 'the session override turned ask into auto for q');
    const asked: string[] = [];
    const gw2 = new ToolGateway([base({ name: 'q', approval: 'ask', invoke })], { approver: async (r) => (asked.push(r.tool.name), 'denied') });
    await assert.rejects(call(gw2, 'q', {}), { message: REFUSALS.userDenied('q') });
    assert.deepEqual(asked, ['q']);
    const gw3 = new ToolGateway([base({ name: 'q', approval: 'ask', invoke })]);
    await assert.rejects(call(gw3, 'q', {}), { message: REFUSALS.nobodyCanApprove('q') });
  });

  it('refuses arguments that are not an object', async () => {
    const gw = new ToolGateway([base({ name: 'a' })]);
    await assert.rejects(call(gw, 'a', [1, 2]), { message: REFUSALS.notKeywordArguments('a') });
  });
});
