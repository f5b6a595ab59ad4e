/**
 * OAuth scope step-up: a server's 403 `insufficient_scope` names the scope a request needs (MCP
 * authorization, RFC 6750). The SDK's own step-up calls `auth()` with that scope, which renews the grant
 * with the refresh token when there is one; a renewal keeps the scopes granted before, so the server
 * refused again and CodeAct said "refused the sign-in… call the tool again", which changed nothing.
 * Here the first 403 of a challenge drops the tokens, so the step-up is a sign-in that asks for the scope
 * (the browser, for a request the user made), and a refusal says what is true: the scope needed, and
 * whether a sign-in asking for it ran.
 */
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpOAuthProvider } from './auth';
import { isHttpServer, type McpServerSpec } from './serverSpec';

interface Need {
  scope: string;
  /** The challenge (WWW-Authenticate) it came with: the same one again after a step-up is a refusal. */
  header: string;
  /** A sign-in asking for the scope completed. */
  signedIn: boolean;
}

/** The scopes the servers of one pool asked for, by server key. */
export class ScopeStepUps {
  private readonly needs = new Map<string, Need>();

  /** `inner`, seeing each 403 `insufficient_scope` of the server `key`: a new challenge drops the tokens of `auth()` first. */
  fetch(key: string, inner: FetchLike, auth: () => McpOAuthProvider | undefined): FetchLike {
    return async (url, init) => {
      const res = await inner(url, init);
      const provider = auth();
      if (res.status !== 403 || !provider) return res;
      const { error, scope } = extractWWWAuthenticateParams(res);
      const header = res.headers.get('www-authenticate') ?? '';
      if (error === 'insufficient_scope' && this.needs.get(key)?.header !== header) {
        this.needs.set(key, { scope: scope ?? '', header, signedIn: false });
        await provider.invalidateCredentials('tokens');
      }
      return res;
    };
  }

  /** A scope the server `key` asked for and no sign-in has asked for yet. */
  pending(key: string): boolean {
    const n = this.needs.get(key);
    return !!n && !n.signedIn;
  }

  /** The scope a sign-in to `key` asks for as well (the one the server said it needs). */
  scope(key: string): string | undefined {
    return this.needs.get(key)?.scope || undefined;
  }

  /** A sign-in to `key` completed (after a 403, it asked for the scope). */
  signedIn(key: string): void {
    const n = this.needs.get(key);
    if (n) n.signedIn = true;
  }

  /** What to say of a failure `e` of the server `conn`: for a 403 after it named a missing scope; undefined otherwise. */
  refusal(e: unknown, conn: { key: string; label: string; spec: McpServerSpec }): string | undefined {
    const n = this.needs.get(conn.key);
    if (!n || !(e instanceof StreamableHTTPError && e.code === 403) || !isHttpServer(conn.spec)) return undefined;
    const { label, spec } = conn;
    const scope = n.scope ? `the OAuth scope "${n.scope}"` : 'an OAuth scope it did not name';
    if (!n.signedIn) {
      return `the ${label} needs ${scope} for this (HTTP 403 insufficient_scope), which the current sign-in does not grant. Call the tool again to sign in asking for it (CodeAct opens the sign-in page), or choose "Sign in" when CodeAct offers it.`;
    }
    return (
      `the ${label} needs ${scope} for this (HTTP 403 insufficient_scope). CodeAct signed in again asking for it (scope step-up), and the server still refuses: the sign-in did not grant it. ` +
      `Sign in with an account that may use it, or ask the server's administrator to grant it; sign out first ("CodeAct: Sign Out of MCP Server…", or codeact mcp sign-out ${spec.url}).`
    );
  }
}
