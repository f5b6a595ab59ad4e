/**
 * MCP sign-in in VS Code (src/vscode/mcpAuth.ts) through its seam (mcpAuth.apis.ts) with scripted
 * answers, against a real OAuth-protected MCP server and a real MCP client pool: the browser opens only
 * after the user says so, a listing only offers, "Copy Link", remote port forwarding, and sign-out.
 */
import * as assert from 'node:assert/strict';
import { memorySecretStore } from '../../src/core/tools/sources/mcp/authStore';
import { McpClientPool, type McpServerSpec } from '../../src/core/tools/sources/mcp/pool';
import { COPY_LINK, McpSignIn, SIGN_IN } from '../../src/vscode/mcpAuth';
import type { McpSignInApis } from '../../src/vscode/mcpAuth.apis';
import { browse, startOAuthMcpServer, type OAuthMcpServer } from '../support/mcpOAuthServer';

interface Recorded {
  info: string[];
  warnings: string[];
  errors: string[];
  opened: string[];
  clipboard: string[];
  external: string[];
}

function fakeApis(
  answers: {
    info?: (m: string) => Promise<string | undefined>;
    warning?: (m: string) => Promise<string | undefined>;
    pick?: (items: Array<{ label: string }>) => number[];
  },
  remoteName?: string,
) {
  const rec: Recorded = { info: [], warnings: [], errors: [], opened: [], clipboard: [], external: [] };
  let clipped!: (text: string) => void;
  const clipboard = new Promise<string>((r) => (clipped = r));
  const secrets = memorySecretStore();
  const apis: McpSignInApis = {
    secrets,
    appName: 'Test Code',
    remoteName,
    showInformationMessage: async (m) => {
      rec.info.push(m);
      return answers.info?.(m);
    },
    showWarningMessage: async (m) => {
      rec.warnings.push(m);
      return answers.warning?.(m);
    },
    showErrorMessage: async (m) => void rec.errors.push(m),
    withProgress: (_title, task) => task(),
    openExternal: async (url) => {
      rec.opened.push(url);
      await browse(new URL(url));
      return true;
    },
    asExternalUri: async (url) => {
      rec.external.push(url);
      return url;
    },
    writeClipboard: async (text) => {
      rec.clipboard.push(text);
      clipped(text);
    },
    pickMany: async (items) => (answers.pick ? answers.pick(items).map((i) => items[i]) : undefined),
  };
  return { apis, rec, secrets, clipboard };
}

const log = { info: () => {}, warn: () => {}, error: () => {}, show: () => {} };

describe('vscode MCP sign-in (fake seam, real OAuth server)', () => {
  let server: OAuthMcpServer;
  let pools: McpClientPool[] = [];
  let spec: McpServerSpec;
  const setup = (apis: McpSignInApis) => {
    const pool = new McpClientPool();
    const signIn = new McpSignIn(apis, log, () => pool);
    pool.setAuth(signIn.host());
    pools.push(pool);
    return { signIn, pool };
  };
  beforeEach(async () => {
    server = await startOAuthMcpServer();
    spec = { kind: 'http', url: server.url };
  });
  afterEach(async () => {
    await Promise.all(pools.map((p) => p.dispose()));
    pools = [];
    await server.close();
  });

  it('a tool listing only offers the sign-in; the browser opens when the user chooses "Sign in", without asking twice', async () => {
    let choose!: (a: string | undefined) => void;
    const offered = new Promise<string | undefined>((r) => (choose = r));
    let signedIn!: () => void;
    const done = new Promise<void>((r) => (signedIn = r));
    const { apis, rec } = fakeApis({
      warning: () => offered,
      info: async (m) => {
        if (/signed in to/.test(m)) signedIn();
        return undefined;
      },
    });
    const { pool } = setup(apis);
    await assert.rejects(pool.listTools(spec), /needs you to sign in/);
    // A second listing while the offer is on screen does not stack another one.
    await assert.rejects(pool.listTools(spec), /needs you to sign in/);
    assert.equal(rec.warnings.length, 1);
    assert.match(rec.warnings[0], /^CodeAct: the MCP server at http:\/\/127\.0\.0\.1:\d+\/mcp needs you to sign in before its tools can be used\.$/);
    assert.deepEqual(rec.opened, []);
    assert.equal(server.authorizeRequests.length, 0);
    choose(SIGN_IN);
    await done;
    assert.equal(rec.opened.length, 1);
    assert.match(rec.opened[0], new RegExp(`^${server.origin}/authorize\\?`));
    assert.equal(rec.info.filter((m) => /Open the sign-in page/.test(m)).length, 0, 'the offer was the question');
    assert.match(rec.info.at(-1)!, /signed in to the MCP server at .*\. Its tools are available from the next run\./);
    assert.deepEqual(
      (await pool.listTools(spec)).map((t) => t.name),
      ['add'],
    );
  });

  it('a tool call asks before opening the browser; dismissing opens nothing and says what happened', async () => {
    const { apis, rec } = fakeApis({ info: async () => undefined });
    const { pool } = setup(apis);
    await assert.rejects(pool.callTool(spec, 'add', { a: 1, b: 2 }), /could not sign in to the MCP server at .*: .*the sign-in was declined/);
    assert.equal(rec.info.length, 1);
    assert.match(rec.info[0], /needs you to sign in\. Open the sign-in page in your browser\?/);
    assert.deepEqual(rec.opened, []);
    assert.equal(server.authorizeRequests.length, 0);
  });

  it('"Copy Link" puts the link on the clipboard, and the sign-in completes when it is opened', async () => {
    const { apis, rec, clipboard } = fakeApis({ info: async (m) => (/Open the sign-in page/.test(m) ? COPY_LINK : undefined) });
    const { pool } = setup(apis);
    const call = pool.callTool(spec, 'add', { a: 2, b: 3 });
    // The user opens the copied link in a browser of their choice.
    const link = await clipboard;
    assert.deepEqual(rec.opened, []);
    await browse(new URL(link));
    assert.deepEqual((await call).structuredContent, { sum: 5 });
    assert.ok(rec.info.some((m) => /the sign-in link is on the clipboard\. Open it in a browser; CodeAct waits up to 5 minutes\./.test(m)));
  });

  it('forwards the loopback redirect in a remote window', async () => {
    const { apis, rec } = fakeApis({ info: async () => SIGN_IN }, 'ssh-remote');
    const { pool } = setup(apis);
    await pool.callTool(spec, 'add', { a: 1, b: 1 });
    assert.equal(rec.external.length, 1);
    assert.match(rec.external[0], /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  });

  it('"Sign Out of MCP Server…" lists the servers signed in and forgets the one picked: the next call asks again', async () => {
    const picks: Array<Array<{ label: string }>> = [];
    const { apis, rec, secrets } = fakeApis({
      info: async (m) => (/Open the sign-in page/.test(m) ? SIGN_IN : undefined),
      pick: (items) => {
        picks.push(items);
        return [0];
      },
    });
    const { pool, signIn } = setup(apis);
    await signIn.signOut();
    assert.match(rec.info.at(-1)!, /not signed in to any MCP server/);
    await pool.callTool(spec, 'add', { a: 1, b: 1 });
    await signIn.signOut();
    assert.deepEqual(
      picks[0].map((p) => p.label),
      [server.url],
    );
    assert.match(rec.info.at(-1)!, new RegExp(`signed out of ${server.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\. The next use signs in again\\.`));
    assert.deepEqual(
      [...secrets.map.keys()].filter((k) => k !== 'codeact.mcp.oauth.index'),
      [],
    );
    const asked = rec.info.filter((m) => /Open the sign-in page/.test(m)).length;
    await pool.callTool(spec, 'add', { a: 1, b: 1 });
    assert.equal(rec.info.filter((m) => /Open the sign-in page/.test(m)).length, asked + 1);
    assert.equal(server.registrations.length, 2);
  });
});
