import * as assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DECLARATION_PROBLEMS, loadTools } from '../../src/core/tools/declarations';
import { formatDeclarationProblem } from '../../src/common/tools';
import { readWorkspaceSettings, codeactSetting } from '../../src/core/config/workspaceFile';
import { executeToolCodeSpec } from '../../src/core/tools/modelTools';

const signal = () => new AbortController().signal;

describe('managed tool declarations', () => {
  it('reports every invalid declaration with its index, and keeps the valid ones', () => {
    const { tools, errors } = loadTools(
      [
        { name: 'ok', command: ['true'] },
        { name: 'ok', command: ['true'] },
        { name: '9bad name', command: ['true'] },
        { name: 'nosource' },
        { name: 'two', command: ['true'], http: { url: 'https://x', allowedHosts: ['x'] } },
        { name: 'badschema', command: ['true'], inputSchema: { type: 'wat' } },
        { name: 'extref', command: ['true'], inputSchema: { $ref: 'https://evil.example/s.json' } },
        { name: 'badhttp', http: { url: 'ftp://x' } },
        'not an object',
        { command: ['true'] },
        { name: 'emptyargv', command: [] },
        { name: 'fine2', http: { url: 'https://api.example.com/items/{id}', allowedHosts: ['api.example.com'] } },
      ],
      { workspace: '/tmp' },
    );
    assert.deepEqual(
      tools.map((t) => t.name),
      ['ok', 'fine2'],
    );
    const byIndex = new Map(errors.map((e) => [e.index, e.message]));
    assert.deepEqual([...byIndex.keys()], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(byIndex.get(1), formatDeclarationProblem(DECLARATION_PROBLEMS.declaredTwice('"ok"', 0)));
    assert.equal(byIndex.get(2), formatDeclarationProblem(DECLARATION_PROBLEMS.invalidName('"9bad name"')));
    assert.ok(byIndex.get(3)!.includes(formatDeclarationProblem(DECLARATION_PROBLEMS.noSource)), byIndex.get(3));
    assert.ok(byIndex.get(4)!.includes(formatDeclarationProblem(DECLARATION_PROBLEMS.twoSources(['command', 'http']))), byIndex.get(4));
    assert.match(byIndex.get(5)!, /In inputSchema, "type": "wat" is not a JSON Schema type/);
    assert.match(byIndex.get(6)!, /external \$ref/);
    assert.match(byIndex.get(7)!, /http\.url.*http\.allowedHosts/s);
    assert.match(byIndex.get(8)!, /"not an object" is not an object/);
    assert.match(byIndex.get(9)!, /"name" is missing\. Fix: give the tool a name/);
    assert.match(byIndex.get(10)!, /non-empty argv/);
  });

  it('reads codeact.tools from a JSONC settings file and explains a syntax error with its position', () => {
    const ws = mkdtempSync(path.join(tmpdir(), 'codeact-ws-'));
    try {
      mkdirSync(path.join(ws, '.vscode'));
      writeFileSync(path.join(ws, '.vscode', 'settings.json'), '{\n  // comment\n  "codeact.tools": [{"name": "a", "command": ["true"],},],\n}');
      assert.equal((codeactSetting(readWorkspaceSettings(ws), 'tools') as unknown[]).length, 1);
      writeFileSync(path.join(ws, '.vscode', 'settings.json'), '{\n  "codeact.tools": [\n    {"name": "a" "command": []}\n]}');
      assert.throws(() => readWorkspaceSettings(ws), /settings\.json:3:18: CommaExpected\. Fix the JSON/);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it('describes execute_tool_code with every tool, sorted, with its schemas', () => {
    const { tools } = loadTools(
      [
        { name: 'zeta', description: 'Last.', command: ['true'], inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
        { name: 'alpha', description: 'First.', command: ['true'], outputSchema: { type: 'number' } },
      ],
      { workspace: '/tmp' },
    );
    const spec = executeToolCodeSpec(tools);
    assert.equal(spec.name, 'execute_tool_code');
    assert.ok(spec.description.indexOf('- alpha: First.') < spec.description.indexOf('- zeta: Last.'));
    assert.match(spec.description, /await call_tool\(name, \*\*arguments\)/);
    assert.match(spec.description, /input schema: \{"type":"object","properties":\{"q":\{"type":"string"\}\}\}/);
    assert.match(spec.description, /output schema: \{"type":"number"\}/);
  });
});

describe('command tools', () => {
  let ws: string;
  before(() => {
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-cmd-'));
    writeFileSync(
      path.join(ws, 'tool.py'),
      [
        'import json, os, sys',
        'args = json.load(sys.stdin)',
        'mode = args.get("mode")',
        'if mode == "fail":',
        '    print("line one\\nthe widget is broken", file=sys.stderr); sys.exit(3)',
        'if mode == "env":',
        '    print(json.dumps(sorted(os.environ)))',
        'elif mode == "cwd":',
        '    print(json.dumps(os.getcwd()))',
        'elif mode == "garbage":',
        '    print("not json")',
        'elif mode == "sleep":',
        '    import time; time.sleep(30)',
        'elif mode == "flood":',
        '    sys.stdout.write("x" * 100000)',
        'else:',
        '    print(json.dumps({"echo": args}))',
      ].join('\n'),
    );
  });
  after(() => rmSync(ws, { recursive: true, force: true }));

  const make = (extra: Record<string, unknown> = {}) =>
    loadTools([{ name: 'py', command: { argv: ['python3', 'tool.py'], ...extra } }], {
      workspace: ws,
      hostEnv: { ...process.env, MY_TOKEN: 'abc', OTHER_SECRET: 'zzz' },
    }).tools[0];

  it('sends JSON arguments on stdin and reads one JSON value, running in the workspace folder', async () => {
    assert.deepEqual(await make().invoke({ a: [1, 'é'] }, { signal: signal(), callId: '1' }), { echo: { a: [1, 'é'] } });
    assert.equal(await make().invoke({ mode: 'cwd' }, { signal: signal(), callId: '1' }), ws);
  });

  it('carries the stderr tail of a failing tool into the error', async () => {
    await assert.rejects(
      make().invoke({ mode: 'fail' }, { signal: signal(), callId: '1' }),
      /Tool "py" failed \(exit code 3\):\nline one\nthe widget is broken/,
    );
  });

  it('gives a minimal environment plus only the listed variables', async () => {
    const env = (await make({ env: ['MY_TOKEN'] }).invoke({ mode: 'env' }, { signal: signal(), callId: '1' })) as string[];
    assert.ok(env.includes('MY_TOKEN'));
    assert.ok(!env.includes('OTHER_SECRET'));
  });

  it('explains output that is not JSON, a timeout, an output cap and a missing program', async () => {
    await assert.rejects(make().invoke({ mode: 'garbage' }, { signal: signal(), callId: '1' }), /must print one JSON value on stdout, but printed: "not json"/);
    await assert.rejects(make({ timeoutMs: 500 }).invoke({ mode: 'sleep' }, { signal: signal(), callId: '1' }), /timed out after 0\.5 s/);
    await assert.rejects(make({ maxOutputBytes: 1000 }).invoke({ mode: 'flood' }, { signal: signal(), callId: '1' }), /more than 1,000 bytes/);
    const missing = loadTools([{ name: 'm', command: ['no-such-program-xyz'] }], { workspace: ws }).tools[0];
    await assert.rejects(missing.invoke({}, { signal: signal(), callId: '1' }), /could not start "no-such-program-xyz": command not found/);
  });
});

describe('http tools', () => {
  let server: Server;
  let port: number;
  const seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        if (req.url!.startsWith('/redirect-out')) return res.writeHead(302, { location: 'http://evil.localtest:1/steal' }).end();
        if (req.url!.startsWith('/redirect-in')) return res.writeHead(302, { location: '/items/moved' }).end();
        if (req.url!.startsWith('/fail')) return res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream is down for maintenance');
        if (req.url!.startsWith('/big')) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('x'.repeat(5000)));
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, url: req.url, body: body ? JSON.parse(body) : null }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  const make = (http: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
    loadTools([{ name: 'h', http: { allowedHosts: ['127.0.0.1'], ...http } }], { workspace: '/tmp', hostEnv: env }).tools[0];

  it('substitutes URL-encoded parameters, sends the rest as query (GET) or JSON body (POST), and resolves env headers on the host', async () => {
    const get = make({ url: `http://127.0.0.1:${port}/items/{id}`, headers: { authorization: 'Bearer ${env:API_TOKEN}' } }, { API_TOKEN: 'tok-123' });
    const r = (await get.invoke({ id: 'a b/c', limit: 5 }, { signal: signal(), callId: '1' })) as { url: string };
    assert.equal(r.url, '/items/a%20b%2Fc?limit=5');
    assert.equal(seen.at(-1)!.headers.authorization, 'Bearer tok-123');
    const post = make({ url: `http://127.0.0.1:${port}/orders`, method: 'POST' });
    const p = (await post.invoke({ sku: 'X', qty: 2 }, { signal: signal(), callId: '1' })) as { body: unknown };
    assert.deepEqual(p.body, { sku: 'X', qty: 2 });
  });

  it('refuses "." and ".." as URL parameters, so a template path cannot be climbed out of', async () => {
    const tool = make({ url: `http://127.0.0.1:${port}/api/tickets/{id}/comments`, headers: { authorization: 'Bearer secret' } });
    const before = seen.length;
    await assert.rejects(tool.invoke({ id: '..' }, { signal: signal(), callId: '1' }), /the argument "id" may not be "\.\." in the URL/);
    await assert.rejects(tool.invoke({ id: '.' }, { signal: signal(), callId: '1' }), /may not be "\."/);
    assert.equal(seen.length, before, 'no request was sent');
    const ok = (await tool.invoke({ id: 'a/../b' }, { signal: signal(), callId: '1' })) as { url: string };
    assert.equal(ok.url, '/api/tickets/a%2F..%2Fb/comments');
  });

  it('enforces allowedHosts on the request and on every redirect', async () => {
    await assert.rejects(
      make({ url: 'http://localhost:1/x' }).invoke({}, { signal: signal(), callId: '1' }),
      /goes to localhost:1, which is not in allowedHosts \(127\.0\.0\.1\)/,
    );
    await assert.rejects(
      make({ url: `http://127.0.0.1:${port}/redirect-out` }).invoke({}, { signal: signal(), callId: '1' }),
      /a redirect went to evil\.localtest:1/,
    );
    const moved = (await make({ url: `http://127.0.0.1:${port}/redirect-in` }).invoke({}, { signal: signal(), callId: '1' })) as { url: string };
    assert.equal(moved.url, '/items/moved');
  });

  it('reports non-2xx with the status and a snippet, caps the response size, and names a missing env variable', async () => {
    await assert.rejects(
      make({ url: `http://127.0.0.1:${port}/fail` }).invoke({}, { signal: signal(), callId: '1' }),
      /HTTP 503 Service Unavailable: upstream is down for maintenance/,
    );
    await assert.rejects(
      make({ url: `http://127.0.0.1:${port}/big`, maxResponseBytes: 1000 }).invoke({}, { signal: signal(), callId: '1' }),
      /127\.0\.0\.1:\d+ sent more than 1,000 bytes, the tool's maxResponseBytes/,
    );
    await assert.rejects(
      make({ url: `http://127.0.0.1:${port}/x`, headers: { 'x-key': '${env:NOPE_NOT_SET}' } }).invoke({}, { signal: signal(), callId: '1' }),
      /needs the environment variable NOPE_NOT_SET/,
    );
  });
});
