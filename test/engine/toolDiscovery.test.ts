/**
 * Tool discovery, host side: the BM25 search over a realistic 300-tool catalogue, the signature
 * catalogue, the reserved discovery calls behind the gateway, and the short listing of
 * `execute_tool_code` above the inline limit.
 */
import * as assert from 'node:assert/strict';
import { ToolGateway } from '../../src/core/gateway/gateway';
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { DECLARATION_PROBLEMS, loadTools } from '../../src/core/tools/declarations';
import { DESCRIBE_TOOL, formatDeclarationProblem, isDiscoveryCall, SEARCH_TOOLS, TOOL_CATALOG } from '../../src/common/tools';
import { ToolDiscovery } from '../../src/core/gateway/discovery/toolDiscovery';
import { ToolDispatcher } from '../../src/core/runtime/toolDispatcher';
import type { CodeActEvent } from '../../src/common/events';
import { COMPACT_TOKEN_BUDGET, estimateTextTokens, executeToolCodeSpec, inlineToolLines, listsSchemasInline } from '../../src/core/tools/modelTools';
import { buildToolCatalog, oneLine, signatureText, toolParams } from '../../src/core/gateway/discovery/toolCatalog';
import { splitWords, stem, tokenize, ToolSearchIndex } from '../../src/core/gateway/discovery/toolSearch';
import { manyManagedTools, SEARCH_CASES } from '../support/manyTools';

const RESERVED = { search: SEARCH_TOOLS, describe: DESCRIBE_TOOL, catalog: TOOL_CATALOG };

describe('tool search (BM25)', () => {
  const tools = manyManagedTools();
  const discovery = new ToolDiscovery(tools);

  it('splits snake_case, kebab-case and camelCase names into words, and stems them lightly', () => {
    assert.deepEqual(splitWords('github_mergePullRequest-v2 getS3Object HTTPServer'), [
      'github',
      'merge',
      'pull',
      'request',
      'v2',
      'get',
      's3',
      'object',
      'http',
      'server',
    ]);
    assert.deepEqual(['orders', 'listing', 'created', 'replies', 'status', 'boxes'].map(stem), ['order', 'list', 'create', 'reply', 'status', 'box']);
    assert.deepEqual(tokenize('Find the invoices for a customer'), ['find', 'invoice', 'customer']);
  });

  it(`ranks the right tool first for ${SEARCH_CASES.length} everyday queries over a 300-tool catalogue`, () => {
    assert.equal(tools.length, 300);
    const misses = SEARCH_CASES.map(([query, want]) => ({ query, want, got: discovery.search({ query, limit: 3 }).map((h) => h.name) })).filter(
      (r) => r.got[0] !== r.want,
    );
    assert.deepEqual(misses, []);
  });

  it('answers with name, one-line description, signature, result summary and source, best first', () => {
    const [hit, second] = discovery.search({ query: 'scale deployment replicas', limit: 2 });
    assert.deepEqual(Object.keys(hit).sort(), ['description', 'group', 'name', 'returns', 'score', 'signature']);
    assert.equal(hit.name, 'k8s_scale_deployment');
    assert.equal(hit.signature, "k8s_scale_deployment(*, deployment: str, replicas: int, namespace: str = 'default')");
    assert.equal(hit.returns, '{ok: boolean, message: string}');
    assert.ok(hit.score > second.score);
  });

  it('is bounded: limit 1..50, long queries cut, nothing for words no tool has', () => {
    assert.equal(discovery.search({ query: 'list create update delete', limit: 50 }).length, 50);
    assert.equal(discovery.search({ query: 'list create update delete', limit: 5 }).length, 5);
    assert.throws(() => discovery.search({ query: 'list', limit: 51 }), /limit must be an integer from 1 to 50/);
    assert.throws(() => discovery.search({ query: '  ' }), /query must be a non-empty string/);
    assert.throws(() => discovery.search({ query: 'x', top: 3 }), /unexpected argument\(s\) "top"; it takes query, limit/);
    assert.deepEqual(discovery.search({ query: 'zzzqqq xylophone' }), []);
    const long = `${'slack '.repeat(5000)} restart pod`;
    assert.ok(
      discovery.search({ query: long }).every((h) => h.name.startsWith('slack_')),
      'only the first 500 characters count',
    );
    const index = new ToolSearchIndex([{ name: 'a_b', description: 'x'.repeat(1_000_000) }]);
    assert.equal(index.search('a b')[0].name, 'a_b');
  });

  it('describe_tool returns the full schemas; unknown names get suggestions', () => {
    const d = discovery.describe({ name: 'stripe_refund_invoice' });
    assert.deepEqual(d.input_schema, tools.find((t) => t.name === 'stripe_refund_invoice')!.inputSchema);
    assert.ok(d.output_schema);
    assert.equal(d.signature, 'stripe_refund_invoice(*, invoice_id: str, amount: int = ...)');
    assert.throws(() => discovery.describe({ name: 'stripe_refund' }), /No managed tool is named "stripe_refund"\. Closest: stripe_refund_invoice/);
  });
});

describe('signature catalogue', () => {
  it('lists parameters with name, required, JSON type, default, description and enum; required first', () => {
    const [tool] = loadTools(
      [
        {
          name: 'get-ticket',
          description: 'Read one support ticket. It has many fields.',
          command: ['true'],
          inputSchema: {
            type: 'object',
            properties: {
              verbose: { type: 'boolean', default: false },
              id: { $ref: '#/$defs/id' },
              'max-lines': { type: 'integer' },
              status: { enum: ['open', 'closed', null] },
              type: { type: ['string', 'null'], description: 'Kind.' },
            },
            required: ['id'],
            $defs: { id: { type: 'string', description: 'Ticket id.' } },
          },
          outputSchema: { type: 'object', properties: { id: { type: 'string' }, lines: { type: 'array', items: { type: 'string' } } } },
        },
      ],
      { workspace: '/tmp' },
    ).tools;
    const params = toolParams(tool)!;
    assert.deepEqual(
      params.map((p) => p.name),
      ['id', 'verbose', 'max-lines', 'status', 'type'],
    );
    assert.deepEqual(params[0], { name: 'id', required: true, type: 'string', description: 'Ticket id.' });
    assert.deepEqual(params[1], { name: 'verbose', required: false, type: 'boolean', default: false });
    assert.deepEqual(params[3], { name: 'status', required: false, type: ['string', 'null'], enum: ['open', 'closed', null] });
    // `max-lines` is no Python name: the function takes **arguments for it. `type` is a valid name.
    assert.equal(
      signatureText(tool.name, params),
      'get_ticket(*, id: str, verbose: bool = False, status: str | None = ..., type: str | None = ..., **arguments)',
    );
    const catalog = buildToolCatalog([tool], { reserved: RESERVED });
    assert.deepEqual(catalog.tools[0], {
      name: 'get-ticket',
      py: 'get_ticket',
      group: 'command tools',
      description: 'Read one support ticket.',
      params,
      extra: true,
      returns: '{id: string, lines: array of string}',
    });
  });

  it('stays under its size bound: 300 tools fit in full; a small bound drops detail, never the tools it can keep', () => {
    const tools = manyManagedTools();
    const full = buildToolCatalog(tools, { reserved: RESERVED });
    assert.equal(full.truncated, false);
    assert.equal(full.tools.length, 300);
    assert.ok(JSON.stringify(full).length < 256 * 1024);
    const small = buildToolCatalog(tools, { reserved: RESERVED, maxBytes: 60_000 });
    assert.ok(Buffer.byteLength(JSON.stringify(small)) <= 60_000);
    assert.equal(small.truncated, true);
    assert.equal(small.tools.length, 300, 'names and Python names are kept');
    assert.ok(small.tools.every((t) => t.params === null || t.params.every((p) => p.description === undefined)));
    const tiny = buildToolCatalog(tools, { reserved: RESERVED, maxBytes: 2000 });
    assert.ok(Buffer.byteLength(JSON.stringify(tiny)) <= 2000);
  });

  it('one-line descriptions: the first sentence, cut at a word', () => {
    assert.equal(oneLine('Search the product catalog. Every keyword must match.'), 'Search the product catalog.');
    assert.equal(oneLine('Attach a photo or PDF receipt to an expense in the books', 30), 'Attach a photo or PDF receipt…');
    assert.equal(oneLine(undefined), '');
  });
});

describe('reserved discovery calls behind the gateway', () => {
  function askTool(invoked: string[]): ManagedTool {
    return {
      name: 'wire_money',
      description: 'Wire money to an account.',
      approval: 'ask',
      expose: 'code',
      source: 'test',
      inputSchema: { type: 'object', properties: { iban: { type: 'string' }, amount: { type: 'number' } }, required: ['iban', 'amount'] },
      invoke: async () => (invoked.push('wire_money'), { ok: true }),
    };
  }

  it('routes codeact.* names to discovery: no approval, no tool runs, no call record', async () => {
    const invoked: string[] = [];
    const approvals: string[] = [];
    const gw = new ToolGateway([askTool(invoked)], { approver: async (r) => (approvals.push(r.tool.name), 'denied') });
    const signal = new AbortController().signal;
    const hits = (await gw.handler({ itemId: 'x', callId: '1', name: SEARCH_TOOLS, arguments: { query: 'send money' } }, signal)) as { name: string }[];
    assert.equal(hits[0].name, 'wire_money');
    const d = (await gw.handler({ itemId: 'x', callId: '2', name: DESCRIBE_TOOL, arguments: { name: 'wire_money' } }, signal)) as { approval: string };
    assert.equal(d.approval, 'ask');
    const catalog = (await gw.handler({ itemId: 'x', callId: '3', name: TOOL_CATALOG, arguments: {} }, signal)) as { tools: { name: string }[] };
    assert.deepEqual(
      catalog.tools.map((t) => t.name),
      ['wire_money'],
    );
    assert.deepEqual(invoked, []);
    assert.deepEqual(approvals, []);
    assert.equal(gw.records.length, 0);
    await assert.rejects(
      gw.handler({ itemId: 'x', callId: '4', name: 'codeact.run_anything', arguments: {} }, signal),
      /"codeact.run_anything" is a reserved name, not a tool/,
    );
    // An ordinary call still goes through approval.
    await assert.rejects(gw.handler({ itemId: 'x', callId: '5', name: 'wire_money', arguments: { iban: 'X', amount: 1 } }, signal), /denied/);
    assert.deepEqual(approvals, ['wire_money']);
  });

  it('no declared tool can take a reserved name', () => {
    const set = loadTools([{ name: 'codeact.search_tools', command: ['true'] }], { workspace: '/tmp' });
    assert.equal(set.tools.length, 0);
    assert.equal(set.errors[0].message, formatDeclarationProblem(DECLARATION_PROBLEMS.invalidName('"codeact.search_tools"')));
    assert.equal(isDiscoveryCall('search_tools'), false);
    assert.equal(isDiscoveryCall(SEARCH_TOOLS), true);
  });

  it('tags discovery tool-call events with kind: "discovery", and leaves the others alone', async () => {
    const events: CodeActEvent[] = [];
    const dispatcher = new ToolDispatcher({
      itemId: 'e',
      emit: (e) => events.push(e),
      handler: async () => 1,
      enabled: true,
      maxConcurrent: 2,
      maxTotal: 2,
      signal: new AbortController().signal,
    });
    await dispatcher.dispatch(SEARCH_TOOLS, {});
    await dispatcher.dispatch('wire_money', {});
    assert.deepEqual(
      events.filter((e) => e.type === 'codeact.tool_call.started'),
      [
        { type: 'codeact.tool_call.started', item_id: 'e', call_id: 'e:1', name: SEARCH_TOOLS, arguments: {}, kind: 'discovery' },
        { type: 'codeact.tool_call.started', item_id: 'e', call_id: 'e:2', name: 'wire_money', arguments: {} },
      ],
    );
    const completed = events.filter((e) => e.type === 'codeact.tool_call.completed');
    assert.deepEqual(
      completed.map((e) => [e.name, 'kind' in e ? e.kind : 'untagged']),
      [
        [SEARCH_TOOLS, 'discovery'],
        ['wire_money', 'untagged'],
      ],
    );
  });
});

describe('execute_tool_code above the inline limit', () => {
  const tools = manyManagedTools();

  it('lists 300 tools by name and one line, says how to discover them, and stays within 10% of the inline listing', () => {
    const spec = executeToolCodeSpec(tools);
    const inline = executeToolCodeSpec(tools.slice(0, 0)).description + inlineToolLines(tools).join('\n');
    assert.match(spec.description, /await search_tools\("what you need", limit=10\)/);
    assert.match(spec.description, /await describe_tool\("name"\)/);
    assert.match(spec.description, /from tools import name/);
    assert.match(spec.description, /test tools \(300\):\n- accounting_approve_expense: Approve a submitted expense/);
    for (const t of tools) assert.ok(spec.description.includes(`- ${t.name}`), t.name);
    assert.ok(!spec.description.includes('input schema:'));
    assert.ok(estimateTextTokens(spec.description) <= COMPACT_TOKEN_BUDGET + 700);
    assert.ok(spec.description.length <= inline.length * 0.1, `${spec.description.length} > 10% of ${inline.length}`);
  });

  it('keeps the schemas inline up to the limit (default 20) and within the token budget; the limit is a setting', () => {
    assert.equal(listsSchemasInline(tools.slice(0, 20)), true);
    assert.equal(listsSchemasInline(tools.slice(0, 21)), false);
    assert.equal(listsSchemasInline(tools.slice(0, 5), 3), false);
    assert.match(executeToolCodeSpec(tools.slice(0, 20)).description, /Managed tools \(20\):[\s\S]*input schema:/);
    // 20 tools with huge schemas go over the token budget: short listing even under the limit.
    const big = tools.slice(0, 20).map((t) => ({ ...t, description: `${t.description} ${'Detail. '.repeat(200)}` }));
    assert.equal(listsSchemasInline(big), false);
    const few = tools.slice(0, 8);
    assert.match(executeToolCodeSpec(few, { inlineLimit: 8 }).description, /Managed tools \(8\):[\s\S]*input schema:/);
    assert.match(executeToolCodeSpec(few, { inlineLimit: 7 }).description, /Managed tools: 8, too many to describe here/);
  });
});
