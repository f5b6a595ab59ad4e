/**
 * The MCP project's conformance suite (`@modelcontextprotocol/conformance`, on Node 22: test/support/
 * conformanceSuite.ts) against CodeAct's MCP server: the built CLI's `codeact mcp serve --http`, each server
 * scenario its own test.
 *
 * The suite cannot send a bearer token, and the server answers nothing without one: the suite talks to a small
 * loopback proxy of this test that adds the token and passes everything else on as it came (the Host's name
 * included, with the server's port, so the DNS-rebinding scenario reaches the server's own check). The suite has
 * no stdio mode for servers: the stdio transport is tested with the SDK's client (test/cli/mcpServe.test.ts).
 *
 * Scenarios that exercise the suite's reference server (its `test_*` tools, resources, prompts, logging,
 * completions) do not apply to CodeAct's server, which has its own four tools: they are listed with why, and not
 * run (two of them would pass only because the suite checks the shape of the "Unknown tool" answer).
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI, CLI_ENV } from '../support/cli';
import { ensureSuite, listedScenarios, plain, savedChecks, suite } from '../support/conformanceSuite';
import { waitFor } from '../support/wait';

/** The server scenarios of @modelcontextprotocol/conformance 0.1.16 that apply to CodeAct's server: each must pass. */
const APPLICABLE = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

const REFERENCE_TOOL = "it calls one of the suite's reference tools (test_*), which CodeAct's server does not have";
/** The rest of the suite's server scenarios, and why they do not apply. */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'CodeAct declares no logging capability (output arrives as progress and in the result)',
  'completion-complete': 'CodeAct declares no prompts or resource templates to complete',
  ...Object.fromEntries(
    [
      'tools-call-simple-text',
      'tools-call-image',
      'tools-call-audio',
      'tools-call-embedded-resource',
      'tools-call-mixed-content',
      'tools-call-with-logging',
      'tools-call-error',
      'tools-call-with-progress',
      'tools-call-sampling',
      'tools-call-elicitation',
      'json-schema-2020-12',
      'elicitation-sep1034-defaults',
      'elicitation-sep1330-enums',
    ].map((s) => [s, REFERENCE_TOOL]),
  ),
  'server-sse-polling': "it polls through the suite's reference tool test_reconnection",
  ...Object.fromEntries(
    ['resources-list', 'resources-read-text', 'resources-read-binary', 'resources-templates-read', 'resources-subscribe', 'resources-unsubscribe'].map((s) => [
      s,
      'CodeAct serves no MCP resources (files the code writes are listed in the result)',
    ]),
  ),
  ...Object.fromEntries(
    ['prompts-list', 'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource', 'prompts-get-with-image'].map((s) => [
      s,
      'CodeAct serves no MCP prompts',
    ]),
  ),
};

describe('MCP conformance suite: server scenarios against codeact mcp serve --http (Node 22)', function () {
  this.timeout(240_000);
  let ws = '';
  let out = '';
  let child: ChildProcess | undefined;
  let proxy: Server | undefined;
  let proxyUrl = '';

  before(async function () {
    if (!existsSync(CLI)) this.skip();
    await ensureSuite();
    ws = mkdtempSync(path.join(tmpdir(), 'codeact-mcp-conf-'));
    out = mkdtempSync(path.join(tmpdir(), 'codeact-mcp-conf-out-'));
    child = spawn(process.execPath, [CLI, 'mcp', 'serve', '--http', '--workspace', ws], { env: CLI_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    await waitFor(() => /Authorization: Bearer \S+\n/.test(err), { what: "the server's address and token on stderr", timeoutMs: 60_000 });
    const target = new URL(/Streamable HTTP\): (\S+)/.exec(err)![1]);
    const token = /Authorization: Bearer (\S+)/.exec(err)![1];
    proxy = createServer((req, res) => {
      const name = String(req.headers.host ?? '').replace(/:\d+$/, '');
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: `${name}:${target.port}`, authorization: `Bearer ${token}` },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy!.listen(0, '127.0.0.1', r));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  });

  after(async () => {
    proxy?.closeAllConnections();
    proxy?.close();
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    for (const d of [ws, out]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('lists the server scenarios this test knows (a new suite version adds tests here)', async () => {
    assert.deepEqual((await listedScenarios('Server')).sort(), [...APPLICABLE, ...Object.keys(NOT_APPLICABLE)].sort());
  });

  for (const scenario of APPLICABLE) {
    it(scenario, async () => {
      const dir = path.join(out, scenario);
      const { code, out: log } = await suite(['server', '--url', proxyUrl, '--scenario', scenario, '-o', dir], 120_000);
      const checks = savedChecks(dir);
      const failed = checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`);
      assert.ok(
        checks.length > 0 && failed.length === 0,
        `${scenario} (exit code ${code}): ${failed.join('\n')}\n--- suite output (tail) ---\n${plain(log).slice(-3000)}`,
      );
    });
  }
});
