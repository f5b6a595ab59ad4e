/**
 * OAuth sign-in to a remote MCP server (core/tools/sources/mcp/auth.ts): a real OAuth-protected MCP
 * server on loopback (test/support/mcpOAuthServer.ts), the SDK's client auth driven by our provider,
 * our loopback redirect, and a "browser" that fetches the authorization URL.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { McpAuthHost, McpSignInPrompt } from '../../src/core/tools/sources/mcp/auth';
import { signedInMcpServers, signOutMcpServer } from '../../src/core/tools/sources/mcp/auth';
import { startLoopbackRedirect } from '../../src/core/tools/sources/mcp/authRedirect';
import { memorySecretStore } from '../../src/core/tools/sources/mcp/authStore';
import { fileSecretStore } from '../../src/cli/mcpAuth';
import { McpClientPool, serverKey, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { mcpServerSpec, validateMcpSource } from '../../src/core/tools/sources/mcp/source';
import { loadTools } from '../../src/core/tools/declarations';
import { browse, startOAuthMcpServer, type OAuthMcpServer } from '../support/mcpOAuthServer';

describe('MCP OAuth sign-in', () => {
  let server: OAuthMcpServer;
  let pools: McpClientPool[] = [];
  const pool = (auth: McpAuthHost) => {
    const p = new McpClientPool({ auth });
    pools.push(p);
    return p;
  };
  /** A host whose "user" consents and whose "browser" fetches the URL. */
  const host = (secrets = memorySecretStore(), extra: Partial<McpAuthHost> = {}) => {
    const prompts: McpSignInPrompt[] = [];
    const pages: string[] = [];
    const h: McpAuthHost = {
      secrets,
      authorize: async (p) => {
        prompts.push(p);
        pages.push((await browse(p.authorizationUrl)).page);
        return true;
      },
      ...extra,
    };
    return { host: h, prompts, pages, secrets };
  };

  beforeEach(async () => {
    server = await startOAuthMcpServer();
  });
  afterEach(async () => {
    await Promise.all(pools.map((p) => p.dispose()));
    pools = [];
    await server.close();
  });

  it('signs in through the loopback redirect (discovery, registration, PKCE S256, resource), stores the tokens, and calls the tool', async () => {
    const h = host();
    const spec: McpServerSpec = { kind: 'http', url: server.url };
    const result = await pool(h.host).callTool(spec, 'add', { a: 40, b: 2 });
    assert.deepEqual(result.structuredContent, { sum: 42 });
    assert.equal(h.prompts.length, 1);
    assert.equal(h.prompts[0].serverUrl, server.url);
    assert.match(h.prompts[0].label, /MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp/);
    const q = server.authorizeRequests[0];
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.equal(q.get('resource'), server.url);
    assert.match(q.get('redirect_uri') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    assert.ok((q.get('state') ?? '').length >= 20);
    assert.equal(server.registrations.length, 1);
    assert.deepEqual(server.registrations[0].redirect_uris, [q.get('redirect_uri')]);
    assert.deepEqual(server.grants, ['authorization_code']);
    assert.match(h.pages[0], /Signed in/);
    const signedIn = await signedInMcpServers(h.secrets);
    assert.equal(signedIn.length, 1);
    assert.equal(signedIn[0].serverUrl, server.url);
    assert.equal(signedIn[0].hasTokens, true);

    // A second pool (the next session) uses the stored tokens: no browser.
    const again = await pool(h.host).callTool(spec, 'add', { a: 1, b: 2 });
    assert.deepEqual(again.structuredContent, { sum: 3 });
    assert.equal(h.prompts.length, 1);
  });

  it('refreshes an expired access token without the browser, and signs in again when the refresh token is revoked', async () => {
    const h = host();
    const spec: McpServerSpec = { kind: 'http', url: server.url };
    const p = pool(h.host);
    await p.callTool(spec, 'add', { a: 1, b: 1 });
    server.expireAccessTokens();
    assert.deepEqual((await p.callTool(spec, 'add', { a: 2, b: 2 })).structuredContent, { sum: 4 });
    assert.deepEqual(server.grants, ['authorization_code', 'refresh_token']);
    assert.equal(h.prompts.length, 1);

    server.revokeAll();
    assert.deepEqual((await p.callTool(spec, 'add', { a: 3, b: 3 })).structuredContent, { sum: 6 });
    assert.equal(h.prompts.length, 2, 'a revoked grant needs the user again');
    assert.deepEqual(server.grants, ['authorization_code', 'refresh_token', 'authorization_code']);
  });

  describe('a 403 insufficient_scope (scope step-up)', () => {
    const SCOPE = 'tools files:write';
    /** The server refuses any signed-in request with 403 insufficient_scope until a sign-in asked for files:write (`always`: for ever). */
    const scoped = async (always: boolean) => {
      await server.close();
      const asked = () => server.authorizeRequests.some((q) => (q.get('scope') ?? '').split(' ').includes('files:write'));
      server = await startOAuthMcpServer({
        answer: (req, res) => {
          if (req.method !== 'POST' || !req.url?.startsWith('/mcp') || !req.headers.authorization || (asked() && !always)) return false;
          const challenge = `Bearer error="insufficient_scope", scope="${SCOPE}", resource_metadata="${server.origin}/.well-known/oauth-protected-resource/mcp"`;
          res.writeHead(403, { 'content-type': 'application/json', 'www-authenticate': challenge }).end('{"error":"insufficient_scope"}');
          return true;
        },
      });
    };

    it('signs in again asking for the scope the server named, and the call goes through', async () => {
      await scoped(false);
      const h = host();
      const result = await pool(h.host).callTool({ kind: 'http', url: server.url }, 'add', { a: 40, b: 2 });
      assert.deepEqual(result.structuredContent, { sum: 42 });
      assert.equal(h.prompts.length, 2, 'the first sign-in, then the step-up');
      assert.deepEqual((server.authorizeRequests[1].get('scope') ?? '').split(' ').sort(), ['files:write', 'tools']);
    });

    it('when the server still refuses, says the scope, that the step-up sign-in ran, and what to do (never "call the tool again")', async () => {
      await scoped(true);
      const h = host();
      const err = await pool(h.host)
        .callTool({ kind: 'http', url: server.url }, 'add', { a: 1, b: 2 })
        .then(
          () => assert.fail('the call went through'),
          (e: Error) => e.message,
        );
      assert.match(err, /needs the OAuth scope "tools files:write" for this \(HTTP 403 insufficient_scope\)/);
      assert.match(err, /CodeAct signed in again asking for it \(scope step-up\), and the server still refuses/);
      assert.match(err, /ask the server's administrator to grant it; sign out first[^]*codeact mcp sign-out http:/);
      assert.doesNotMatch(err, /Call the tool again|refused the sign-in/);
      assert.ok(h.prompts.length <= 2, `at most the sign-in and one step-up: ${h.prompts.length}`);
    });
  });

  it('refreshes an access token that expired (by expires_in) before sending it', async () => {
    const h = host();
    const spec: McpServerSpec = { kind: 'http', url: server.url };
    await pool(h.host).callTool(spec, 'add', { a: 1, b: 1 });
    // Two hours later (the tokens live an hour): the stored record says when they were saved.
    server.expireAccessTokens();
    for (const [k, v] of h.secrets.map) {
      const record = JSON.parse(v) as { savedAt?: number };
      if (record.savedAt) h.secrets.map.set(k, JSON.stringify({ ...record, savedAt: record.savedAt - 2 * 3600_000 }));
    }
    const before = server.unauthorized;
    assert.deepEqual((await pool(h.host).callTool(spec, 'add', { a: 2, b: 2 })).structuredContent, { sum: 4 });
    assert.deepEqual(server.grants, ['authorization_code', 'refresh_token']);
    assert.equal(server.unauthorized, before, 'no request went out with the expired token');
    assert.equal(h.prompts.length, 1);
  });

  it('never opens the browser for a background tool listing: it offers the sign-in, and "Sign in" runs it', async () => {
    const offers: Array<{ label: string; signIn: () => Promise<void> }> = [];
    const h = host(memorySecretStore(), { offerSignIn: (o) => offers.push(o) });
    const spec: McpServerSpec = { kind: 'http', url: server.url };
    const p = pool(h.host);
    await assert.rejects(p.listTools(spec), /could not use the MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp: it needs you to sign in\. Choose "Sign in"/);
    assert.equal(h.prompts.length, 0);
    assert.equal(server.authorizeRequests.length, 0);
    assert.equal(offers.length, 1);
    await offers[0].signIn();
    assert.equal(h.prompts.length, 1);
    assert.deepEqual(
      (await p.listTools(spec)).map((t) => t.name),
      ['add'],
    );
  });

  it('says so when the user declines, and opens nothing', async () => {
    let asked = 0;
    const p = pool({
      secrets: memorySecretStore(),
      authorize: async () => {
        asked++;
        return false;
      },
    });
    await assert.rejects(
      p.callTool({ kind: 'http', url: server.url }, 'add', { a: 1, b: 1 }),
      /could not sign in to the MCP server at .*: the .* needs you to sign in, and the sign-in was declined/,
    );
    assert.equal(asked, 1);
    assert.equal(server.grants.length, 0);
  });

  it('sign-out forgets the tokens and the registration: the next call signs in (and registers) again', async () => {
    const h = host();
    const spec: McpServerSpec = { kind: 'http', url: server.url };
    const p = pool(h.host);
    await p.callTool(spec, 'add', { a: 1, b: 1 });
    const [entry] = await signedInMcpServers(h.secrets);
    await signOutMcpServer(h.secrets, entry.key);
    await p.closeServer(server.url);
    assert.deepEqual(await signedInMcpServers(h.secrets), []);
    assert.deepEqual(
      [...h.secrets.map.keys()].filter((k) => k !== 'codeact.mcp.oauth.index'),
      [],
    );
    await p.callTool(spec, 'add', { a: 1, b: 1 });
    assert.equal(h.prompts.length, 2);
    assert.equal(server.registrations.length, 2);
  });

  it('opens only an HTTPS sign-in page (HTTP only on this machine): the address comes from the server', async () => {
    await server.close();
    server = await startOAuthMcpServer({ authorizationEndpoint: 'http://sign-in.example.com/authorize' });
    const h = host();
    await assert.rejects(
      pool(h.host).callTool({ kind: 'http', url: server.url }, 'add', { a: 1, b: 1 }),
      /could not sign in to the MCP server at .*: its authorization server's sign-in page \(http:\/\/sign-in\.example\.com\/authorize\) is not an HTTPS URL, so CodeAct does not open it\./,
    );
    assert.equal(h.prompts.length, 0);
  });

  it('uses a configured client id instead of registering', async () => {
    await server.close();
    server = await startOAuthMcpServer({ registration: false, preRegistered: { client_id: 'my-app', redirect_uris: ['loopback'] } });
    const h = host();
    const spec: McpServerSpec = { kind: 'http', url: server.url, oauth: { clientId: 'my-app' } };
    assert.deepEqual((await pool(h.host).callTool(spec, 'add', { a: 5, b: 5 })).structuredContent, { sum: 10 });
    assert.equal(server.authorizeRequests[0].get('client_id'), 'my-app');
    assert.equal(server.registrations.length, 0);
    assert.deepEqual(server.grants, ['authorization_code']);
  });

  it('the CLI store is a 0600 file in its config folder', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-auth-'));
    const file = path.join(dir, 'codeact', 'mcp-auth.json');
    const h = host(fileSecretStore(file) as ReturnType<typeof memorySecretStore>);
    await pool(h.host).callTool({ kind: 'http', url: server.url }, 'add', { a: 1, b: 1 });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
    assert.match(readFileSync(file, 'utf8'), /access_token/);
  });
});

describe('MCP sign-in loopback redirect', () => {
  it('answers only the redirect with the right state, then stops listening', async () => {
    const l = await startLoopbackRedirect({ port: 0, state: 'abc', label: 'MCP server at x' });
    assert.equal((await fetch(new URL('/other', l.redirectUrl))).status, 404);
    assert.equal((await fetch(`${l.redirectUrl}?state=wrong&code=evil`)).status, 400);
    assert.equal((await fetch(`${l.redirectUrl}?state=abc&code=good`)).status, 200);
    assert.equal(await l.code, 'good');
    await assert.rejects(fetch(`${l.redirectUrl}?state=abc&code=again`));
  });

  it('gives up after its wait with a message that says what to do', async () => {
    const l = await startLoopbackRedirect({ port: 0, state: 'abc', label: 'MCP server at x', timeoutMs: 200 });
    await assert.rejects(l.code, /the sign-in to the MCP server at x was not completed within 0 s\. Sign in again when you are ready/);
  });

  it('reports the error the authorization server sent back', async () => {
    const l = await startLoopbackRedirect({ port: 0, state: 's', label: 'MCP server at x' });
    const res = await fetch(`${l.redirectUrl}?state=s&error=access_denied&error_description=no%20thanks`);
    assert.equal(res.status, 400);
    await assert.rejects(l.code, /the authorization server said "access_denied: no thanks"/);
  });
});

describe('mcp.oauth in a declaration', () => {
  it('is checked, with messages that say what to write', () => {
    const url = 'https://mcp.example.com/mcp';
    assert.equal(validateMcpSource({ url, tool: 't', oauth: { clientId: 'app', scope: 'read write' } }), undefined);
    assert.equal(validateMcpSource({ url, tool: 't', oauth: {} }), undefined);
    assert.equal(
      validateMcpSource({ command: ['x'], tool: 't', oauth: { clientId: 'a' } }),
      '"mcp.oauth" applies only to HTTP servers ("url"); a stdio server does not sign in',
    );
    assert.equal(validateMcpSource({ url, tool: 't', oauth: 'app' }), '"mcp.oauth" must be an object: {"clientId": "...", "scope": "..."}');
    assert.equal(validateMcpSource({ url, tool: 't', oauth: { client_id: 'a' } }), '"mcp.oauth" takes "clientId", "clientSecret" and "scope", not "client_id"');
    assert.equal(validateMcpSource({ url, tool: 't', oauth: { clientId: '' } }), '"mcp.oauth.clientId" must be a non-empty string');
    assert.equal(validateMcpSource({ url, tool: 't', oauth: { clientSecret: 's' } }), '"mcp.oauth.clientSecret" needs "mcp.oauth.clientId"');
  });

  it('reaches the server spec (a configured client is its own connection and its own stored sign-in)', () => {
    const spec = mcpServerSpec({ url: 'https://mcp.example.com/mcp', tool: 't', oauth: { clientId: 'app' } }, { workspace: '/tmp' });
    assert.deepEqual(spec, { kind: 'http', url: 'https://mcp.example.com/mcp', oauth: { clientId: 'app' } });
    assert.notEqual(serverKey(spec), serverKey({ kind: 'http', url: 'https://mcp.example.com/mcp' }));
    const { errors } = loadTools([{ name: 'x', mcp: { url: 'https://mcp.example.com/mcp', tool: 't', oauth: { scope: 3 } } }], {
      workspace: '/tmp',
      mcpPool: new McpClientPool(),
    });
    assert.match(errors[0].message, /"mcp\.oauth\.scope" must be a non-empty string/);
  });
});
