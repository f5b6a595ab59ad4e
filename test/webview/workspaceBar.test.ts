/**
 * The panel's workspace bar in headless Chromium, on the built bundle: the folder the chat's turns
 * run in with a picker of the workspace's folders (only with two or more), a folder gone from the workspace,
 * and the Python environment with "Change" (posting `python.select`, which the host turns into
 * "CodeAct: Select Python Environment"). The code-server test (test/e2e/multiRoot.test.ts) drives the
 * folder half in a real VS Code; the Python half is filled in by the host only where the interpreter is known.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseWebviewMessage } from '../../src/common/protocolCheck';
import { PanelPage } from './support/browser';
import { hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');
const FOLDERS = [
  { name: 'alpha', path: '/work/alpha' },
  { name: 'beta', path: '/work/beta' },
];
const PYTHON = { label: 'Python 3.12.3 (.venv)', path: '/work/alpha/.venv/bin/python', source: 'venv' };

describe('workspace bar in headless Chromium', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ artifacts: ARTIFACTS });

  it('shows the folder and the Python environment; picking a folder and "Change" post to the host', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 300, height: 600 });
    await p.send({ type: 'init', protocol: 1, state: hostState({ workspace: { folders: FOLDERS, folder: FOLDERS[0] }, python: PYTHON }) });
    const bar = p.page.locator('.workspace-bar');
    await bar.waitFor({ state: 'visible' });
    assert.match((await bar.innerText()).replace(/\s+/g, ' '), /^Folder alpha beta Python 3\.12\.3 \(\.venv\) Change$/);
    assert.equal(await bar.locator('select').inputValue(), '/work/alpha');
    assert.equal(await bar.locator('.python-row .workspace-name').getAttribute('title'), '/work/alpha/.venv/bin/python (venv)');
    await bar.screenshot({ path: join(ARTIFACTS, '97-workspace-bar-python.png') });
    await p.clearPosted();
    await bar.locator('select').selectOption({ label: 'beta' });
    await bar.getByRole('button', { name: 'Change' }).click();
    assert.deepEqual(
      (await p.posted()).filter((m) => m.type === 'workspace.folder' || m.type === 'python.select'),
      [{ type: 'workspace.folder', path: '/work/beta' }, { type: 'python.select' }],
    );

    // A running turn keeps its folder: the picker waits.
    await p.send({ type: 'state', state: { busy: true } });
    assert.equal(await bar.locator('select').isDisabled(), true);
    await p.send({ type: 'state', state: { busy: false } });

    // The conversation's folder left the workspace.
    await p.send({ type: 'state', state: { workspace: { folders: [FOLDERS[0]], folder: { ...FOLDERS[1], gone: true } } } });
    assert.equal(await bar.getAttribute('data-state'), 'gone');
    assert.match(await bar.innerText(), /beta is not open in this window\./);
    assert.deepEqual(await bar.locator('select option:not([disabled])').allInnerTexts(), ['alpha']);
    assert.equal(await bar.locator('select').inputValue(), '', 'nothing picked yet: "Continue in…"');

    // One folder: only the interpreter; neither: no bar.
    await p.send({ type: 'state', state: { workspace: null } });
    assert.equal(await bar.locator('select').count(), 0);
    assert.match(await bar.innerText(), /Python 3\.12\.3/);
    await p.send({ type: 'state', state: { python: { ...PYTHON, label: '.venv (3.12.3)' } } });
    assert.match((await bar.innerText()).replace(/\s+/g, ' '), /^Python \.venv \(3\.12\.3\) Change$/, 'a label without "Python" gets it');
    await p.send({ type: 'state', state: { python: undefined } });
    await p.page.waitForFunction(() => (document.querySelector('.workspace-bar') as HTMLElement).hidden);
  });

  it("the host accepts the bar's messages, checked", () => {
    assert.deepEqual(parseWebviewMessage({ type: 'workspace.folder', path: '/work/beta', x: 1 }), { type: 'workspace.folder', path: '/work/beta' });
    assert.equal(parseWebviewMessage({ type: 'workspace.folder', path: 3 }), undefined);
    assert.equal(parseWebviewMessage({ type: 'workspace.folder', path: 'x'.repeat(5000) }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'python.select', extra: true }), { type: 'python.select' });
  });
});
