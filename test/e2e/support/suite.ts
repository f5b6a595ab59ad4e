/**
 * The lifecycle most e2e suites share: a packaged extension in code-server on a copy of examples/orders
 * (or a workspace of the suite's own), a loopback model server when the suite needs one, headless Chromium
 * on the trusted folder, the chat panel; everything stopped after the suite, and a screenshot of the
 * workbench when a test fails.
 */
import type { Browser } from 'playwright-core';
import { startServerFor } from '../../support/wire/harness';
import type { WireServer } from '../../support/wire/server';
import { ChatPanel } from './chatPanel';
import { CodeServer, packageExtension } from './codeServer';
import { Editor } from './editor';
import { skipUnlessE2E, type Release } from './env';
import { Workbench, launchChromium } from './workbench';
import { makeWorkspace, type Workspace } from './workspace';

/** What `before` fills in: the workspace, code-server, the workbench in Chromium, its chat panel and editor. */
export interface CodeServerSuite {
  ws: Workspace;
  cs: CodeServer;
  wb: Workbench;
  panel: ChatPanel;
  editor: Editor;
}

/** A suite with a model server: the loopback wire server the settings name. */
export interface ModelCodeServerSuite extends CodeServerSuite {
  wire: WireServer;
}

/** A server the suite starts in front of its model server (a throttle, say). */
export interface ModelProxy {
  /** The base URL the settings name in place of the model server's. */
  url: string;
  close(): Promise<void>;
}

/** The options every suite has. */
export interface CodeServerSuiteOptions {
  /** Names code-server's folder, and the failure screenshots unless `failureName` does. */
  name: string;
  /** Names the failure screenshots (`failed-<failureName>-<test>`); `name` by default. */
  failureName?: string;
  /** The workbench's `minWaitMs` (UI conditions get at least this long). */
  minWaitMs: number;
  /** Makes the workspace to open; a copy of examples/orders (`makeWorkspace()`) by default. */
  workspace?: () => Workspace;
  /** Environment for code-server (and so the extension host) on top of the test's. */
  env?: Record<string, string>;
  /** More extensions (.vsix files) to install beside CodeAct. */
  moreVsix?: () => string[];
  /** Runs after the workbench is open and trusted and the panel is made, still in `before`. */
  setup?: (suite: CodeServerSuite) => Promise<void>;
  /** Runs after a failed test's screenshot: more to print about the failure. */
  onFailure?: (suite: CodeServerSuite) => Promise<void>;
  /** Which code-server release; DEFAULT_RELEASE (the current one) by default. */
  release?: Release;
}

/** A suite without a model server: the user settings, if any, are fixed. */
export interface NoModelSuiteOptions extends CodeServerSuiteOptions {
  /** The user settings (on top of code-server's base settings); none by default. */
  settings?: Record<string, unknown>;
}

/** A suite with a model server, started with `startServerFor(...wire)`. */
export interface ModelSuiteOptions extends CodeServerSuiteOptions {
  wire: Parameters<typeof startServerFor>;
  /** Starts a server in front of the model server; it closes after code-server, before the model server. */
  proxy?: (wire: WireServer) => Promise<ModelProxy>;
  /** The user settings, given the URL of the model server (or of the proxy in front of it). */
  settings: (modelUrl: string) => Record<string, unknown>;
}

/**
 * Registers before/after/afterEach on the calling `describe`; the returned object is filled in by
 * `before`. With `wire`, a model server is started before code-server and `settings` is built from its URL.
 */
export function useCodeServer(options: ModelSuiteOptions): ModelCodeServerSuite;
export function useCodeServer(options: NoModelSuiteOptions): CodeServerSuite;
export function useCodeServer(options: ModelSuiteOptions | NoModelSuiteOptions): CodeServerSuite {
  const suite = {} as Partial<ModelCodeServerSuite> & CodeServerSuite;
  let proxy: ModelProxy | undefined;
  let browser: Browser | undefined;
  before(async function () {
    skipUnlessE2E(this, options.release);
    this.timeout(300_000);
    const vsix = await packageExtension();
    suite.ws = (options.workspace ?? makeWorkspace)();
    let settings: Record<string, unknown> | undefined;
    if ('wire' in options) {
      suite.wire = await startServerFor(...options.wire);
      proxy = await options.proxy?.(suite.wire);
      settings = options.settings((proxy ?? suite.wire).url);
    } else {
      settings = options.settings;
    }
    suite.cs = await CodeServer.start({
      vsix,
      moreVsix: options.moreVsix?.(),
      workspace: suite.ws.folder,
      settings,
      env: options.env,
      name: options.name,
      release: options.release,
    });
    browser = await launchChromium();
    suite.wb = await Workbench.open(browser, suite.cs.folderUrl);
    suite.wb.minWaitMs = options.minWaitMs;
    await suite.wb.trustFolder();
    suite.panel = new ChatPanel(suite.wb);
    suite.editor = new Editor(suite.wb);
    await options.setup?.(suite);
  });
  after(async () => {
    await browser?.close().catch(() => undefined);
    await suite.cs?.stop();
    await proxy?.close();
    await suite.wire?.close();
    suite.ws?.dispose();
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && suite.wb) {
      const path = await suite.wb
        .screenshot(`failed-${options.failureName ?? options.name}-${this.currentTest.title.replace(/\W+/g, '-').slice(0, 50)}`)
        .catch(() => '');
      console.log(`      screenshot of the failure: ${path}`);
      await options.onFailure?.(suite);
    }
  });
  return suite;
}
