/**
 * A real OAuth-protected MCP server on loopback for the tests: the SDK's streamable HTTP server
 * (stateless, one tool "add") behind Bearer tokens, and a small OAuth 2.1 authorization server on
 * the same port: protected-resource metadata (RFC 9728), authorization-server metadata (RFC 8414),
 * dynamic client registration (RFC 7591), authorization code with PKCE S256 (checked), resource
 * indicators (checked), refresh tokens (rotated). `authorize` redirects at once (the "user" always
 * consents), so a test plays the browser by fetching the authorization URL.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Client {
  client_id: string;
  redirect_uris: string[];
  client_secret?: string;
}

export interface OAuthServerOptions {
  /** A client registered beforehand (then dynamic registration can be turned off); redirect URI "loopback": any 127.0.0.1 port. */
  preRegistered?: Client;
  /** Offer dynamic client registration (default true). */
  registration?: boolean;
  /** The authorization endpoint the metadata names (default: this server's /authorize). */
  authorizationEndpoint?: string;
  /** Lifetime of access tokens in seconds (default 3600). */
  expiresIn?: number;
  /** Answers a request itself instead of the server (a test's lie); returns true when it did. */
  answer?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export interface OAuthMcpServer {
  url: string;
  origin: string;
  /** Every grant the token endpoint gave, in order. */
  grants: Array<'authorization_code' | 'refresh_token'>;
  registrations: Client[];
  /** Query of every authorize request. */
  authorizeRequests: URLSearchParams[];
  /** MCP requests answered 401. */
  unauthorized: number;
  /** Makes every access token issued so far invalid (as if they expired); refresh tokens stay valid. */
  expireAccessTokens(): void;
  /** Makes every refresh token invalid too (the user revoked the grant). */
  revokeAll(): void;
  close(): Promise<void>;
}

export async function startOAuthMcpServer(options: OAuthServerOptions = {}): Promise<OAuthMcpServer> {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { z } = await import('zod');
  const clients = new Map<string, Client>();
  if (options.preRegistered) clients.set(options.preRegistered.client_id, options.preRegistered);
  const codes = new Map<string, { clientId: string; challenge: string; redirectUri: string; resource: string }>();
  const access = new Set<string>();
  const refresh = new Map<string, string>(); // token -> client id
  let origin = '';
  let mcpUrl = '';
  const state: OAuthMcpServer = {
    url: '',
    origin: '',
    grants: [],
    registrations: [],
    authorizeRequests: [],
    unauthorized: 0,
    expireAccessTokens: () => access.clear(),
    revokeAll: () => {
      access.clear();
      refresh.clear();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body));
  };
  const issue = (clientId: string) => {
    const token = randomBytes(16).toString('hex');
    const rt = randomBytes(16).toString('hex');
    access.add(token);
    refresh.set(rt, clientId);
    return { access_token: token, token_type: 'Bearer', expires_in: options.expiresIn ?? 3600, refresh_token: rt, scope: 'tools' };
  };
  const body = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (options.answer?.(req, res)) return;
    const u = new URL(req.url ?? '/', origin);
    if (req.method === 'GET' && u.pathname === '/.well-known/oauth-protected-resource/mcp') {
      return json(res, 200, { resource: mcpUrl, authorization_servers: [origin], scopes_supported: ['tools'], bearer_methods_supported: ['header'] });
    }
    if (req.method === 'GET' && u.pathname === '/.well-known/oauth-authorization-server') {
      return json(res, 200, {
        issuer: origin,
        authorization_endpoint: options.authorizationEndpoint ?? `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        ...(options.registration === false ? {} : { registration_endpoint: `${origin}/register` }),
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
      });
    }
    if (req.method === 'POST' && u.pathname === '/register' && options.registration !== false) {
      const meta = JSON.parse(await body(req)) as { redirect_uris?: string[] };
      const client: Client = { ...meta, client_id: `client-${state.registrations.length + 1}`, redirect_uris: meta.redirect_uris ?? [] };
      clients.set(client.client_id, client);
      state.registrations.push(client);
      return json(res, 201, { ...client, client_id_issued_at: Math.floor(Date.now() / 1000), token_endpoint_auth_method: 'none' });
    }
    if (req.method === 'GET' && u.pathname === '/authorize') {
      const q = u.searchParams;
      state.authorizeRequests.push(q);
      const client = clients.get(q.get('client_id') ?? '');
      const redirectUri = q.get('redirect_uri') ?? '';
      // "loopback" in a pre-registered client's redirect URIs: any loopback port (RFC 8252 §7.3).
      const loopback = client?.redirect_uris.includes('loopback') && /^http:\/\/127\.0\.0\.1:\d+\/callback$/.test(redirectUri);
      if (!client || (!loopback && !client.redirect_uris.includes(redirectUri)))
        return json(res, 400, { error: 'invalid_request', error_description: 'unknown client or redirect_uri' });
      const back = new URL(redirectUri);
      if (q.get('state')) back.searchParams.set('state', q.get('state')!);
      if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge') || q.get('resource') !== mcpUrl) {
        back.searchParams.set('error', 'invalid_request');
        back.searchParams.set('error_description', 'PKCE S256 and the resource indicator are required');
      } else {
        const code = randomBytes(16).toString('hex');
        codes.set(code, { clientId: client.client_id, challenge: q.get('code_challenge')!, redirectUri, resource: q.get('resource')! });
        back.searchParams.set('code', code);
      }
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (req.method === 'POST' && u.pathname === '/token') {
      const p = new URLSearchParams(await body(req));
      const client = clients.get(p.get('client_id') ?? '');
      if (!client || (client.client_secret && p.get('client_secret') !== client.client_secret)) return json(res, 401, { error: 'invalid_client' });
      if (p.get('grant_type') === 'authorization_code') {
        const c = codes.get(p.get('code') ?? '');
        codes.delete(p.get('code') ?? '');
        const verifier = p.get('code_verifier') ?? '';
        const ok =
          c &&
          c.clientId === client.client_id &&
          c.redirectUri === p.get('redirect_uri') &&
          c.resource === p.get('resource') &&
          createHash('sha256').update(verifier).digest('base64url') === c.challenge;
        if (!ok) return json(res, 400, { error: 'invalid_grant', error_description: 'bad code, verifier, redirect_uri or resource' });
        state.grants.push('authorization_code');
        return json(res, 200, issue(client.client_id));
      }
      if (p.get('grant_type') === 'refresh_token') {
        const rt = p.get('refresh_token') ?? '';
        if (refresh.get(rt) !== client.client_id) return json(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked' });
        refresh.delete(rt);
        state.grants.push('refresh_token');
        return json(res, 200, issue(client.client_id));
      }
      return json(res, 400, { error: 'unsupported_grant_type' });
    }
    if (u.pathname === '/mcp') {
      const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !access.has(token)) {
        state.unauthorized++;
        await body(req);
        const err = token ? ', error="invalid_token"' : '';
        return json(
          res,
          401,
          { error: 'invalid_token' },
          { 'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"${err}` },
        );
      }
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const mcp = new McpServer({ name: 'oauth-test', version: '1.0.0' });
      mcp.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
        content: [{ type: 'text', text: String(a + b) }],
        structuredContent: { sum: a + b },
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, JSON.parse(await body(req)));
      return;
    }
    json(res, 404, { error: 'not_found' });
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) json(res, 500, { error: 'server_error', error_description: String(e) });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mcpUrl = `${origin}/mcp`;
  state.origin = origin;
  state.url = mcpUrl;
  return state;
}

/** Plays the browser: follows the authorization URL to its redirect and delivers that to the loopback listener. */
export async function browse(authorizationUrl: URL): Promise<{ status: number; location: string; page: string }> {
  const first = await fetch(authorizationUrl, { redirect: 'manual' });
  const location = first.headers.get('location');
  if (!location) throw new Error(`the authorization server did not redirect (${first.status}: ${await first.text()})`);
  const back = await fetch(location);
  return { status: back.status, location, page: await back.text() };
}
