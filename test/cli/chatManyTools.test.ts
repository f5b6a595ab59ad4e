/**
 * `codeact chat` in a workspace that declares 300 tools of a real stdio MCP server (schemas from its
 * tools/list): the first request lists names only, within budget; the code (in the real local guest)
 * finds a tool, imports it from the generated `tools` module, trips over a wrong keyword without a round
 * trip, and calls the tool on the MCP server. The guest library installs discovery when the code names it.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import { COMPACT_TOKEN_BUDGET, estimateTextTokens } from '../../src/core/tools/modelTools';
import { manyTools } from '../fixtures/mcp/manyToolsCatalog.mjs';
import { ROOT, runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const CODE = [
  'hits = await search_tools("roll back a deployment to the previous revision", limit=3)',
  'from tools import k8s_rollback_deployment',
  'try:',
  '    await k8s_rollback_deployment(deploymnt="web")',
  'except TypeError as e:',
  '    err = str(e)',
  'done = await k8s_rollback_deployment(deployment="web")',
  'return {"hits": [h["name"] for h in hits], "err": err, "done": done}',
].join('\n');

describe('codeact chat with 300 MCP tools', function () {
  this.timeout(90_000);
  let dir: string;
  let storage: string;
  let server: WireServer;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-300-'));
    storage = path.join(dir, 'conversations');
    mkdirSync(path.join(dir, '.vscode'));
    const command = [process.execPath, path.join(ROOT, 'test/fixtures/mcp/manyTools.mjs')];
    const tools = manyTools().map((t) => ({ name: t.name, mcp: { command, tool: t.name } }));
    writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': tools }, null, 1));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async () => (server = await startServerFor('openai-compatible', 'openai')));
  afterEach(() => server.close());

  it('lists names only, and the code finds, imports and calls a tool on the MCP server', async () => {
    server.push(turn().call('execute_tool_code', { code: CODE }), turn().text('Rolled web back.'));
    const r = await runCli([
      'chat',
      'Roll back web.',
      '--provider',
      'openai-compatible',
      '--model',
      'm',
      '--base-url',
      server.url,
      '--workspace',
      dir,
      '--storage',
      storage,
      '--json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const description: string = server.turns[0].body.tools[0].function.description;
    // The listing's budget, plus the fixed prose around it (~700 tokens, and ~130 for the background jobs paragraph).
    assert.ok(estimateTextTokens(description) <= COMPACT_TOKEN_BUDGET + 830, `${estimateTextTokens(description)} tokens`);
    assert.match(description, /MCP server ".*manyTools\.mjs" \(300\):\n- accounting_approve_expense: Approve a submitted expense/);
    assert.match(description, /await search_tools\("what you need", limit=10\)/);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeActEvent);
    const exec = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call') as { item: CodeInterpreterCallItem };
    assert.equal(exec.item.status, 'completed', JSON.stringify(exec.item.error));
    const value = exec.item.value as { hits: string[]; err: string; done: unknown };
    assert.equal(value.hits[0], 'k8s_rollback_deployment');
    assert.equal(
      value.err,
      "k8s_rollback_deployment() got an unexpected keyword argument 'deploymnt' (did you mean 'deployment'?). Signature: k8s_rollback_deployment(*, deployment: str, namespace: str = 'default', revision: int = ...)",
    );
    assert.deepEqual(value.done, { ok: true, message: 'k8s_rollback_deployment done' });
    const calls = events.filter((e) => e.type === 'codeact.tool_call.completed') as Extract<CodeActEvent, { type: 'codeact.tool_call.completed' }>[];
    assert.deepEqual(
      calls.map((e) => [e.name, e.kind ?? 'tool', e.error ?? null]),
      [
        ['codeact.search_tools', 'discovery', null],
        ['k8s_rollback_deployment', 'tool', null],
      ],
    );
  });
});
