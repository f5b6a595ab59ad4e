/**
 * OAuth 2.1 sign-in to remote (streamable HTTP) MCP servers, as the MCP authorization spec asks. The
 * official SDK does the protocol (`auth()` in `@modelcontextprotocol/sdk/client/auth.js`, driven by the
 * streamable HTTP transport's `authProvider`): protected-resource metadata (RFC 9728, from the 401's
 * `WWW-Authenticate` or the well-known path), authorization-server metadata (RFC 8414 / OIDC), dynamic
 * client registration (RFC 7591), PKCE S256, the resource indicator (RFC 8707), refresh and scope
 * step-up. This module is the SDK's {@link OAuthClientProvider}: it keeps the registration and tokens
 * in the host's secret store (./authStore), redirects the browser to a loopback listener
 * (./authRedirect), and leaves opening the browser to the host, which asks the user first.
 *
 * The SDK's `redirectToAuthorization` only records the URL here; nothing opens until
 * {@link McpOAuthProvider.completeSignIn} runs, which the pool calls only for a request the user made
 * (a tool call, or "Sign in" on the host's offer), never for a background tool listing.
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { freeLoopbackPort, McpSignInError, REDIRECT_PATH, SIGN_IN_WAIT_MS, startLoopbackRedirect } from './authRedirect';
import { authRecordKey, McpAuthRecords, type McpAuthRecord, type McpSecretStore } from './authStore';
import type { McpOAuthConfig } from '../../../../common/tools';

export { McpSignInError } from './authRedirect';

/** A sign-in that failed or was declined; its message starts "could not ...". */
export class McpSignInProblem extends Error {}
/** A background request found a server that needs sign-in (the host was asked to offer it). */
export class McpSignInRequired extends McpSignInProblem {}

/** What a sign-in shows the user. */
export interface McpSignInPrompt {
  label: string;
  serverUrl: string;
  /** Where the browser goes (the authorization server's authorize endpoint, with PKCE and state). */
  authorizationUrl: URL;
}

/** What the host supplies for MCP sign-in (the extension: SecretStorage and `env.openExternal`; the CLI: a file, and it prints the URL). */
export interface McpAuthHost {
  /** Where registrations and tokens are kept. */
  secrets: McpSecretStore;
  /**
   * Opens the browser at the authorization URL, after asking the user when the host does that
   * (VS Code does). Resolves false when the user declines. Called only for a request the user made.
   */
  authorize(prompt: McpSignInPrompt): Promise<boolean>;
  /**
   * A background request (a tool listing) found a server that needs sign-in. When given, the host
   * offers it (a notification with "Sign in"; `signIn()` runs it) and the listing fails with a
   * "needs sign-in" error. When absent, background requests sign in like any other (the CLI: its
   * commands are the user's own acts).
   */
  offerSignIn?(offer: { label: string; serverUrl: string; signIn: () => Promise<void> }): void;
  /** How long a sign-in waits for the browser; default 5 minutes. */
  signInTimeoutMs?: number;
  /** `client_name` in dynamic client registration; default "CodeAct". */
  clientName?: string;
}

/** The server a provider signs in to (an HTTP server spec of ./pool). */
interface McpOAuthServer {
  url: string;
  oauth?: McpOAuthConfig;
}

function loopbackPort(uri: unknown): number | undefined {
  if (typeof uri !== 'string') return undefined;
  try {
    const u = new URL(uri);
    const port = Number(u.port);
    return u.protocol === 'http:' && u.hostname === '127.0.0.1' && u.pathname === REDIRECT_PATH && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

function isSignInPage(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** The SDK's OAuth client provider for one server: storage, loopback redirect, and the user's sign-in. */
export class McpOAuthProvider implements OAuthClientProvider {
  private verifier?: string;
  private pendingState?: string;
  private pendingUrl?: URL;

  private constructor(
    private readonly host: McpAuthHost,
    private readonly records: McpAuthRecords,
    readonly key: string,
    readonly spec: McpOAuthServer,
    readonly label: string,
    private port: number,
    private record: McpAuthRecord,
  ) {}

  /** The provider of `spec`'s server, with what the store has for it. */
  static async open(host: McpAuthHost, spec: McpOAuthServer, label: string): Promise<McpOAuthProvider> {
    const records = new McpAuthRecords(host.secrets);
    const key = authRecordKey(spec.url, spec.oauth?.clientId);
    const record = (await records.get(key)) ?? { serverUrl: spec.url, label };
    // A dynamic registration names its redirect URI: keep its port, so the registration stays valid.
    const port = loopbackPort((record.client as { redirect_uris?: unknown[] } | undefined)?.redirect_uris?.[0]) ?? (await freeLoopbackPort());
    return new McpOAuthProvider(host, records, key, spec, label, port, record);
  }

  /** True when the access token has expired (by its `expires_in`, a little early: a tenth of its lifetime, at most a minute) and a refresh token can renew it. */
  get expired(): boolean {
    const t = this.record.tokens;
    if (!t?.refresh_token || typeof t.expires_in !== 'number' || typeof this.record.savedAt !== 'number') return false;
    const lifetime = t.expires_in * 1000;
    return Date.now() >= this.record.savedAt + lifetime - Math.min(60_000, lifetime / 10);
  }

  /** True when the SDK asked for a browser sign-in (an authorization URL is waiting). */
  get needsSignIn(): boolean {
    return this.pendingUrl !== undefined;
  }

  get redirectUrl(): string {
    return `http://127.0.0.1:${this.port}${REDIRECT_PATH}`;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.host.clientName ?? 'CodeAct',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(this.spec.oauth?.scope ? { scope: this.spec.oauth.scope } : {}),
    };
  }

  state(): string {
    this.pendingState = randomBytes(24).toString('base64url');
    return this.pendingState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const c = this.spec.oauth;
    if (c?.clientId) return { client_id: c.clientId, ...(c.clientSecret ? { client_secret: c.clientSecret } : {}) };
    return this.record.client;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    if (this.spec.oauth?.clientId) return; // the configured client is the one used
    this.record.client = info;
    await this.save();
  }

  tokens(): OAuthTokens | undefined {
    return this.record.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.record.tokens = tokens;
    this.record.savedAt = Date.now();
    await this.save();
  }

  /** A scope the server said a request needs (a 403 insufficient_scope, ./scopeStepUp): every sign-in asks for it too. */
  wantScope?: () => string | undefined;

  redirectToAuthorization(url: URL): void {
    const want = this.wantScope?.();
    if (want) {
      const asked = new Set((url.searchParams.get('scope') ?? '').split(' ').filter(Boolean));
      for (const s of want.split(' ').filter(Boolean)) asked.add(s);
      url.searchParams.set('scope', [...asked].join(' '));
    }
    // Opening waits for completeSignIn: the user's act, never the SDK's.
    this.pendingUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new McpSignInError(`the sign-in to the ${this.label} has no PKCE verifier (it was not started here). Sign in again.`);
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'client') this.record.client = undefined;
    if (scope === 'all' || scope === 'tokens') this.record.tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope !== 'verifier' && scope !== 'discovery') await this.save();
  }

  /**
   * The user's part of a sign-in the SDK started: listens on the loopback redirect, lets the host open
   * the browser (it asks first), and waits (bounded) for the code. Returns the code for `finishAuth`.
   */
  async completeSignIn(signal?: AbortSignal): Promise<string> {
    const authorizationUrl = this.pendingUrl;
    const state = this.pendingState;
    this.pendingUrl = undefined;
    if (!authorizationUrl || !state) throw new McpSignInError(`the ${this.label} needs sign-in, but no sign-in was started. Try again.`);
    // The address comes from the server's metadata: only a web page is opened, over HTTPS unless it is on this machine.
    if (!isSignInPage(authorizationUrl)) {
      throw new McpSignInError(
        `its authorization server's sign-in page (${authorizationUrl.protocol}//${authorizationUrl.host}${authorizationUrl.pathname}) is not an HTTPS URL, so CodeAct does not open it.`,
      );
    }
    let listener;
    try {
      listener = await startLoopbackRedirect({ port: this.port, state, label: this.label, timeoutMs: this.host.signInTimeoutMs ?? SIGN_IN_WAIT_MS, signal });
    } catch (e) {
      // The port of the registration is taken: next time, a new port and a new registration.
      if (!this.spec.oauth?.clientId) {
        this.port = await freeLoopbackPort();
        await this.invalidateCredentials('client');
      }
      throw e;
    }
    try {
      const opened = await Promise.race([
        this.host.authorize({ label: this.label, serverUrl: this.spec.url, authorizationUrl }),
        listener.code.then(() => true),
      ]);
      if (!opened)
        throw new McpSignInError(
          `the ${this.label} needs you to sign in, and the sign-in was declined. Sign in when CodeAct asks again, or remove the tool from codeact.tools.`,
        );
      return await listener.code;
    } finally {
      listener.close();
    }
  }

  private async save(): Promise<void> {
    this.record.label = this.label;
    if (!this.record.client && !this.record.tokens) await this.records.delete(this.key);
    else await this.records.set(this.key, this.record);
  }
}

/** The servers signed in (or registered) in `secrets`, for "Sign Out of MCP Server…". */
export async function signedInMcpServers(secrets: McpSecretStore): Promise<Array<{ key: string; label: string; serverUrl: string; hasTokens: boolean }>> {
  const list = await new McpAuthRecords(secrets).list();
  return list.map(({ key, record }) => ({ key, label: record.label, serverUrl: record.serverUrl, hasTokens: !!record.tokens }));
}

/** Forgets a server's tokens and client registration (sign-out). */
export async function signOutMcpServer(secrets: McpSecretStore, key: string): Promise<void> {
  await new McpAuthRecords(secrets).delete(key);
}
