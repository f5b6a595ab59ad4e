/**
 * The MCP project's conformance suite (`@modelcontextprotocol/conformance`, a devDependency) against
 * CodeAct's MCP client: every client scenario, auth included. The suite plays the server (and the
 * authorization server) and runs our client once per scenario (test/mcp/conformanceClient.ts, bundled
 * once with esbuild so each run starts fast; it goes through loadToolsAsync, the MCP client pool and
 * the OAuth provider like the extension does).
 *
 * The suite runs on Node 22 (test/support/conformanceSuite.ts).
 *
 * Each scenario is its own test. A scenario passes when no check failed and the client neither crashed
 * nor hung (the suite's own verdict also fails on a warning, a SHOULD: warnings are listed instead;
 * auth/basic-cimd has one, since CodeAct has no client ID metadata document at an HTTPS URL (SEP-991)
 * and registers dynamically instead). Known failures are listed with their reason below: a listed scenario that
 * starts to pass fails the test too, so the list stays true.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureSuite, listedScenarios, plain, savedChecks, suite } from '../support/conformanceSuite';

/** The client scenarios of @modelcontextprotocol/conformance 0.1.16 (`conformance list`); a test checks the list is still the suite's. */
const SCENARIOS = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/basic-cimd',
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  'auth/pre-registration',
  'auth/2025-03-26-oauth-metadata-backcompat',
  'auth/2025-03-26-oauth-endpoint-fallback',
  'auth/resource-mismatch',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  'auth/client-credentials-jwt',
  'auth/client-credentials-basic',
  'auth/cross-app-access-complete-flow',
];

/** Scenarios CodeAct does not pass, and why. */
const EXPECTED_FAILURES: Record<string, string> = {
  'auth/client-credentials-jwt':
    'client credentials with private_key_jwt (an auth extension for machine clients, no user): CodeAct signs users in with the authorization code flow only',
  'auth/client-credentials-basic':
    'client credentials with a client secret (an auth extension for machine clients, no user): CodeAct signs users in with the authorization code flow only',
  'auth/cross-app-access-complete-flow': 'enterprise cross-app access (SEP-990: ID token -> ID-JAG -> access token, an auth extension): not implemented',
};

/** Checks whose status is not asserted, and why. */
const IGNORED_CHECKS: Record<string, string> = {
  'client-sse-retry-timing':
    "it measures the reconnect delay in milliseconds (500 ms asked, a warning past 700 ms, a failure past 1 s): on a busy 2-core CI machine that is load, not behaviour; the scenario's reconnect and Last-Event-ID checks are asserted",
};

interface Outcome {
  passed: boolean;
  seconds: number;
  warnings: string[];
  summary: string;
  failures: string[];
  log: string;
}

describe('MCP conformance suite: client scenarios (@modelcontextprotocol/conformance on Node 22)', function () {
  this.timeout(240_000);
  let client = '';
  let outDir = '';
  const outcomes = new Map<string, Promise<Outcome>>();

  before(async function () {
    await ensureSuite();
    outDir = mkdtempSync(path.join(tmpdir(), 'codeact-conformance-'));
    client = path.join(outDir, 'client.cjs');
    const esbuild = await import('esbuild');
    await esbuild.build({
      entryPoints: [path.join(__dirname, 'conformanceClient.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile: client,
      logLevel: 'warning',
    });
    // Three at a time: each run is two processes that mostly wait on each other.
    const queue = [...SCENARIOS];
    const running = new Map<string, (o: Outcome) => void>();
    for (const s of SCENARIOS) outcomes.set(s, new Promise<Outcome>((r) => running.set(s, r)));
    const worker = async () => {
      for (let s = queue.shift(); s; s = queue.shift()) running.get(s)!(await runScenario(s));
    };
    void Promise.all([worker(), worker(), worker()]);
  });

  async function runScenario(scenario: string): Promise<Outcome> {
    const dir = path.join(outDir, scenario.replace(/\//g, '_'));
    const started = Date.now();
    const { code, out } = await suite(
      ['client', '--command', `${JSON.stringify(process.execPath)} ${JSON.stringify(client)}`, '--scenario', scenario, '--timeout', '60000', '-o', dir],
      120_000,
    );
    const log = plain(out);
    const checks = savedChecks(dir);
    const counted = checks.filter((c) => !(c.id in IGNORED_CHECKS));
    const describe = (c: (typeof checks)[number]) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`;
    const failures = counted.filter((c) => c.status === 'FAILURE').map(describe);
    const warnings = counted.filter((c) => c.status === 'WARNING').map(describe);
    const summary = /Passed: \d+\/\d+[^\n]*/.exec(log)?.[0] ?? `no summary (exit code ${code})`;
    // The suite's own verdict counts warnings (SHOULDs) as failures: here they are listed, and a
    // scenario fails on a failed check, a client that crashed or hung (unless the scenario expects it), or no checks.
    const clientBroke = /CLIENT EXITED WITH ERROR|Client timed out/.test(log);
    const passed = counted.length > 0 && failures.length === 0 && (code === 0 || !clientBroke);
    return { passed, seconds: (Date.now() - started) / 1000, summary, failures, warnings, log };
  }

  const table: string[] = [];
  after(() => {
    if (table.length) console.log(`\n    conformance client scenarios:\n${table.map((l) => `      ${l}`).join('\n')}\n`);
  });

  it('lists the client scenarios this test knows (a new suite version adds tests here)', async () => {
    const listed = await listedScenarios('Client');
    assert.deepEqual(listed, SCENARIOS);
  });

  for (const scenario of SCENARIOS) {
    const expected = EXPECTED_FAILURES[scenario];
    it(`${scenario}${expected ? ' (expected to fail)' : ''}`, async () => {
      const o = await outcomes.get(scenario)!;
      table.push(
        `${o.passed ? 'pass' : 'FAIL'}  ${scenario}  ${o.summary}  ${o.seconds.toFixed(1)} s${expected ? `  (expected: ${expected.split(':')[0]})` : ''}${o.warnings.length ? `\n        ${o.warnings.join('\n        ')}` : ''}`,
      );
      if (expected) {
        assert.ok(!o.passed, `${scenario} now passes: remove it from EXPECTED_FAILURES (it was listed because ${expected}).`);
        return;
      }
      assert.ok(o.passed, `${scenario} failed: ${o.summary}\n${o.failures.join('\n')}\n--- suite output (tail) ---\n${o.log.slice(-4000)}`);
    });
  }
});
