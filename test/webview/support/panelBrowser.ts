/**
 * The browser setup the panel's Chromium tests share: in `before`, the bundle built into a temporary
 * folder, a page server per theme and one headless Chromium; in `after`, all of it closed and removed.
 * Without Chromium the suite skips with one line.
 */
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { buildBundle, chromiumAvailable, cleanup, launch, startServer, CHROMIUM, THEMES, type BundleOptions, type PanelServer } from './browser';

export interface PanelBrowser {
  readonly browser: Browser;
  /** The page server with the Dark Modern theme. */
  readonly dark: PanelServer;
  /** The page server with the Light Modern theme (only with `light: true`). */
  readonly light: PanelServer;
  /** The folder of the built bundle, for a server of the test's own. */
  readonly bundle: string;
}

export interface PanelBrowserOptions {
  /** Also start a Light Modern server. */
  light?: boolean;
  bundle?: BundleOptions;
  /** A folder the tests write screenshots to, made in `before`. */
  artifacts?: string;
}

/** Call inside a `describe`: registers its before/after hooks and returns what they set up. */
export function usePanelBrowser(options: PanelBrowserOptions = {}): PanelBrowser {
  let bundle = '';
  let dark: PanelServer | undefined;
  let light: PanelServer | undefined;
  let browser: Browser | undefined;
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`usePanelBrowser: no ${what} (used before its before hook ran, or without light: true)`);
    return value;
  };
  before(async function () {
    if (!chromiumAvailable()) {
      console.log(`      skipping the browser tests: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CODEACT_CHROMIUM)`);
      this.skip();
    }
    bundle = await buildBundle(options.bundle);
    dark = await startServer(bundle);
    if (options.light) light = await startServer(bundle, THEMES.light.css, THEMES.light.kind);
    browser = await launch();
    if (options.artifacts) mkdirSync(options.artifacts, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await dark?.close();
    await light?.close();
    if (bundle) cleanup(bundle);
  });
  return {
    get browser() {
      return ready(browser, 'browser');
    },
    get dark() {
      return ready(dark, 'dark server');
    },
    get light() {
      return ready(light, 'light server');
    },
    get bundle() {
      return ready(bundle || undefined, 'bundle');
    },
  };
}
