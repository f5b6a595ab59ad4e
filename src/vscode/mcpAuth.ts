/**
 * MCP sign-in in VS Code (core/tools/sources/mcp/auth.ts does the OAuth): registrations and tokens in
 * SecretStorage, the browser through `env.openExternal` after the user says so, the loopback redirect
 * forwarded in remote windows (`env.asExternalUri`), and "CodeAct: Sign Out of MCP Server…".
 *
 * A sign-in is the user's act. A tool call that needs one asks first ("Sign in" on a notification);
 * a tool listing (when a run starts) only offers it, and the tool is unavailable for that run; after
 * signing in, the next run lists the server's tools again.
 */
import { signedInMcpServers, signOutMcpServer, type McpAuthHost, type McpSignInPrompt } from '../core/tools/sources/mcp/auth';
import { configureDefaultMcpAuth, defaultMcpPool, type McpClientPool } from '../core/tools/sources/mcp/pool';
import type { McpSignInApis } from './mcpAuth.apis';
import type { Log } from './controller.apis';
import { forDisplay } from '../common/untrusted';

export const SIGN_IN = 'Sign in';
export const COPY_LINK = 'Copy Link';

export class McpSignIn {
  /** Servers whose sign-in the user already chose (on an offer): the browser opens without asking again. */
  private readonly consented = new Set<string>();
  /** Servers with an offer on screen: one at a time. */
  private readonly offered = new Set<string>();

  constructor(
    private readonly apis: McpSignInApis,
    private readonly log: Log,
    private readonly pool: () => McpClientPool = defaultMcpPool,
  ) {}

  host(): McpAuthHost {
    return {
      secrets: this.apis.secrets,
      clientName: `CodeAct (${this.apis.appName})`,
      authorize: (p) => this.authorize(p),
      offerSignIn: ({ label: raw, serverUrl, signIn }) => {
        const label = forDisplay(raw, { line: true });
        if (this.offered.has(serverUrl)) return;
        this.offered.add(serverUrl);
        void this.apis.showWarningMessage(`CodeAct: the ${label} needs you to sign in before its tools can be used.`, SIGN_IN).then(async (a) => {
          this.offered.delete(serverUrl);
          if (a !== SIGN_IN) return;
          this.consented.add(serverUrl);
          try {
            await this.apis.withProgress(`CodeAct: signing in to the ${label} in your browser…`, () => signIn());
            void this.apis.showInformationMessage(`CodeAct: signed in to the ${label}. Its tools are available from the next run.`);
          } catch (e) {
            this.log.warn(`MCP sign-in: ${(e as Error).message}`);
            void this.apis.showErrorMessage(`CodeAct: ${forDisplay((e as Error).message)}`);
          } finally {
            this.consented.delete(serverUrl);
          }
        });
      },
    };
  }

  private async authorize({ label, serverUrl, authorizationUrl }: McpSignInPrompt): Promise<boolean> {
    let choice: string | undefined = SIGN_IN;
    if (!this.consented.delete(serverUrl)) {
      choice = await this.apis.showInformationMessage(
        `CodeAct: the ${forDisplay(label, { line: true })} needs you to sign in. Open the sign-in page in your browser?`,
        SIGN_IN,
        COPY_LINK,
      );
    }
    if (choice !== SIGN_IN && choice !== COPY_LINK) return false;
    // In a remote window the loopback listener is on the remote machine: forward its port.
    const redirect = authorizationUrl.searchParams.get('redirect_uri');
    if (redirect && this.apis.remoteName) {
      const external = await this.apis.asExternalUri(redirect);
      if (new URL(external).host !== new URL(redirect).host)
        this.log.warn(`MCP sign-in: the redirect ${redirect} is forwarded as ${external}; the sign-in may not come back.`);
    }
    this.log.info(`MCP sign-in: opening ${authorizationUrl.origin}${authorizationUrl.pathname} for the ${label}`);
    if (choice === COPY_LINK) {
      await this.apis.writeClipboard(authorizationUrl.href);
      void this.apis.showInformationMessage('CodeAct: the sign-in link is on the clipboard. Open it in a browser; CodeAct waits up to 5 minutes.');
      return true;
    }
    return this.apis.openExternal(authorizationUrl.href);
  }

  /** "CodeAct: Sign Out of MCP Server…": a quick pick of the servers signed in; forgets tokens and registration. */
  async signOut(): Promise<void> {
    const servers = await signedInMcpServers(this.apis.secrets);
    if (!servers.length) {
      void this.apis.showInformationMessage('CodeAct: you are not signed in to any MCP server.');
      return;
    }
    const picks = await this.apis.pickMany(
      servers.map((s) => ({ label: s.serverUrl, description: s.hasTokens ? 'signed in' : 'registered, not signed in', key: s.key, url: s.serverUrl })),
      { title: 'CodeAct: Sign Out of MCP Server', placeHolder: 'Forget the tokens and the client registration of…' },
    );
    if (!picks?.length) return;
    for (const p of picks) {
      await signOutMcpServer(this.apis.secrets, p.key);
      await this.pool().closeServer(p.url);
    }
    void this.apis.showInformationMessage(
      `CodeAct: signed out of ${picks.length === 1 ? forDisplay(picks[0].url, { line: true }) : `${picks.length} MCP servers`}. The next use signs in again.`,
    );
  }
}

/** Gives the process's MCP pool VS Code's sign-in; returns it for the sign-out command. */
export function registerMcpSignIn(apis: McpSignInApis, log: Log): McpSignIn {
  const signIn = new McpSignIn(apis, log);
  configureDefaultMcpAuth(signIn.host());
  return signIn;
}
