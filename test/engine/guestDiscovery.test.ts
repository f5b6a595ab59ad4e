/**
 * src/core/runtime/guest/codeact_discovery.py with plain python3: `install(namespace, call_tool, catalog)` with
 * the catalogue the host builds for 300 tools, and a fake async `call_tool` that records its calls.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DESCRIBE_TOOL, SEARCH_TOOLS, TOOL_CATALOG } from '../../src/common/tools';
import { buildToolCatalog, signatureText } from '../../src/core/gateway/discovery/toolCatalog';
import { loadTools } from '../../src/core/tools/declarations';
import { manyManagedTools } from '../support/manyTools';

const GUEST = path.resolve(__dirname, '../../src/core/runtime/guest/codeact_discovery.py');

const DRIVER = String.raw`
import asyncio, importlib.util, inspect, json, sys
spec = importlib.util.spec_from_file_location("guest_discovery", sys.argv[1])
gd = importlib.util.module_from_spec(spec); spec.loader.exec_module(gd)
catalog = json.load(open(sys.argv[2]))
calls = []
async def call_tool(name, /, **arguments):
    calls.append([name, arguments])
    return {"called": name}
ns = {}
module = gd.install(ns, call_tool, json.dumps(catalog) if catalog.get("as_text") else catalog)
out = {}
async def main():
    import tools
    from tools import k8s_scale_deployment, get_ticket
    out["same_module"] = tools is module and sys.modules["tools"] is module
    out["is_coroutine_function"] = inspect.iscoroutinefunction(k8s_scale_deployment)
    out["signatures"] = {name: name + str(inspect.signature(getattr(tools, name))) for name in tools.__all__}
    out["doc"] = k8s_scale_deployment.__doc__
    out["result"] = await k8s_scale_deployment(deployment="web", replicas=3)
    out["get_ticket"] = await get_ticket(id="T-1", **{"max-lines": 5})
    errors = {}
    async def expect(label, coro_fn):
        try:
            await coro_fn()
            errors[label] = None
        except Exception as e:
            errors[label] = [type(e).__name__, str(e)]
    await expect("wrong_keyword", lambda: k8s_scale_deployment(deployment="web", replica=3))
    await expect("missing", lambda: k8s_scale_deployment(replicas=3))
    await expect("positional", lambda: k8s_scale_deployment("web", 3))
    await expect("odd_extra", lambda: get_ticket(id="T-1", **{"other-key": 1}))
    await expect("search_empty", lambda: ns["search_tools"]("  "))
    await expect("search_limit", lambda: ns["search_tools"]("x", limit=0))
    await expect("describe_type", lambda: ns["describe_tool"](3))
    out["errors"] = errors
    out["search"] = await ns["search_tools"]("scale a deployment", limit=3)
    out["describe"] = await ns["describe_tool"]("k8s_scale_deployment")
    try:
        tools.k8s_scale_deploymnt
    except AttributeError as e:
        out["missing_attr"] = str(e)
    try:
        from tools import nope_tool
    except ImportError as e:
        out["import_error"] = type(e).__name__
    out["calls"] = calls
asyncio.run(main())
print(json.dumps(out))
`;

describe('guest_discovery.py (plain python3)', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), 'codeact-guest-discovery-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function run(catalog: unknown): any {
    const file = path.join(dir, 'catalog.json');
    writeFileSync(file, JSON.stringify(catalog));
    const r = spawnSync('python3', ['-I', '-B', '-c', DRIVER, GUEST, file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout);
  }

  const odd = loadTools(
    [
      {
        name: 'get-ticket',
        description: 'Read one support ticket.',
        command: ['true'],
        inputSchema: {
          type: 'object',
          properties: { id: { type: 'string' }, 'max-lines': { type: 'integer' }, type: { type: ['string', 'null'] } },
          required: ['id'],
        },
      },
    ],
    { workspace: '/tmp' },
  ).tools;
  const tools = [...manyManagedTools(), ...odd];
  const catalog = buildToolCatalog(tools, { reserved: { search: SEARCH_TOOLS, describe: DESCRIBE_TOOL, catalog: TOOL_CATALOG } });

  it('builds a tools module of async functions whose Python signatures are the ones the host describes', () => {
    const out = run(catalog);
    assert.equal(out.same_module, true);
    assert.equal(out.is_coroutine_function, true);
    assert.equal(Object.keys(out.signatures).length, 301);
    for (const entry of catalog.tools) assert.equal(out.signatures[entry.py!], signatureText(entry.name, entry.params), entry.name);
    assert.equal(out.signatures.k8s_scale_deployment, "k8s_scale_deployment(*, deployment: str, replicas: int, namespace: str = 'default')");
    assert.equal(out.signatures.get_ticket, 'get_ticket(*, id: str, type: str | None = ..., **arguments)');
    assert.match(
      out.doc,
      /^Scale a deployment to a number of replicas\.\n\nArgs:\n    deployment \(str\): Deployment name\.\n    replicas \(int\): Desired replicas\.\n    namespace \(str, optional\): Namespace\. Default 'default' \(applied by the tool\)\.\nReturns:\n    \{ok: boolean, message: string\}/,
    );
  });

  it("sends only the arguments given, under the tool's real name; wrong keywords fail as TypeError before any call", () => {
    const out = run({ ...catalog, as_text: true });
    assert.deepEqual(out.result, { called: 'k8s_scale_deployment' });
    const sig = "Signature: k8s_scale_deployment(*, deployment: str, replicas: int, namespace: str = 'default')";
    assert.deepEqual(out.errors.wrong_keyword, [
      'TypeError',
      `k8s_scale_deployment() got an unexpected keyword argument 'replica' (did you mean 'replicas'?). ${sig}`,
    ]);
    assert.deepEqual(out.errors.missing, ['TypeError', `k8s_scale_deployment() missing a required argument: 'deployment'. ${sig}`]);
    assert.deepEqual(out.errors.positional, ['TypeError', `k8s_scale_deployment() takes keyword arguments only (2 positional arguments given). ${sig}`]);
    assert.equal(out.errors.odd_extra[0], 'TypeError');
    assert.match(out.errors.odd_extra[1], /get_ticket\(\) got an unexpected keyword argument 'other-key'/);
    assert.equal(out.errors.search_empty[0], 'TypeError');
    assert.equal(out.errors.search_limit[0], 'ValueError');
    assert.equal(out.errors.describe_type[0], 'TypeError');
    assert.match(out.missing_attr, /no tool 'k8s_scale_deploymnt'\. Did you mean k8s_scale_deployment/);
    assert.equal(out.import_error, 'ImportError');
    // Exactly four round trips: the two tool calls and the two discovery calls, nothing for the errors.
    assert.deepEqual(out.calls, [
      ['k8s_scale_deployment', { deployment: 'web', replicas: 3 }],
      ['get-ticket', { id: 'T-1', 'max-lines': 5 }],
      [SEARCH_TOOLS, { query: 'scale a deployment', limit: 3 }],
      [DESCRIBE_TOOL, { name: 'k8s_scale_deployment' }],
    ]);
  });
});
