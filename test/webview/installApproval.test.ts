/**
 * The approval card of install_packages in the real panel bundle in headless Chromium:
 * every spec as a line of its own, the environment, the .venv made first for a system Python, the exact
 * command line, and only Install or Deny (an install is never allowed "for the session").
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { InstallRequestInfo } from '../../src/common/events';
import type { TranscriptEvent } from '../../src/common/transcript';
import { PanelPage } from './support/browser';
import { ev, hostState } from './support/fixtures';
import { usePanelBrowser } from './support/panelBrowser';

const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

function installApproval(approval_id: string, install: InstallRequestInfo): TranscriptEvent {
  return { type: 'codeact.approval.requested', approval_id, item_id: 'ci_1', kind: 'install', name: 'install_packages', install };
}

describe('install_packages approval card in headless Chromium', function () {
  this.timeout(120_000);
  const ui = usePanelBrowser({ artifacts: ARTIFACTS });

  it('a system Python: the card says a .venv is made first, lists each spec, shows the command; "Create .venv and install" posts allow_once', async () => {
    const p = await PanelPage.open(ui.browser, ui.dark.url, { width: 420, height: 900 });
    await p.send({ type: 'init', protocol: 1, state: hostState() });
    await p.sendEvents([
      ev.turn('t1', 'Plot it with seaborn'),
      ev.codeStart('ci_1', 'local'),
      ev.code('ci_1', 'await install_packages(["seaborn>=0.13", "pyarrow"])\n'),
      ev.interpreting('ci_1'),
      installApproval('ap_i', {
        packages: ['seaborn>=0.13', 'pyarrow'],
        python: '/home/me/proj/.venv/bin/python',
        environment: 'a new virtual environment /home/me/proj/.venv (from Python 3.11.2, externally-managed system Python /usr)',
        create_venv: '/home/me/proj/.venv',
        refused: "/usr/bin/python3 is an externally-managed Python (PEP 668: its owner, such as the OS's package manager, installs its packages)",
        tool: 'pip',
        install_args: [],
      }),
    ]);
    const card = p.page.locator('[data-approval-id="ap_i"]');
    assert.equal(await card.locator('.approval-title').innerText(), 'Install 2 packages?');
    assert.deepEqual(await card.locator('.install-specs li').allInnerTexts(), ['seaborn>=0.13', 'pyarrow']);
    assert.match(
      await card.locator('.approval-warning').innerText(),
      /^\/usr\/bin\/python3 is an externally-managed Python \(PEP 668[^)]*\), so nothing is installed into it\. Installing first makes a virtual environment for this folder, \/home\/me\/proj\/\.venv \(python -m venv --system-site-packages\), and installs there\. The session restarts with it at your next message, and its variables are lost then\.$/,
    );
    assert.equal(
      (await card.locator('.install-command').innerText()).replace(/\s+/g, ' ').trim(),
      '/home/me/proj/.venv/bin/python -m pip install --disable-pip-version-check --no-input --progress-bar off -- seaborn>=0.13 pyarrow',
    );
    assert.deepEqual(await card.locator('.approval-actions button').allInnerTexts(), ['Create .venv and install', 'Deny']);
    assert.equal(await p.page.locator('.card.exec[data-item-id="ci_1"]').getAttribute('data-status'), 'waiting');
    await p.settle();
    await card.screenshot({ path: join(ARTIFACTS, 'webview-install-approval-venv.png') });
    await card.getByRole('button', { name: 'Create .venv and install' }).click();
    const posted = (await p.posted()).filter((m) => m.type === 'approval');
    assert.deepEqual(posted.pop(), { type: 'approval', approvalId: 'ap_i', decision: 'allow_once' });
    await p.sendEvents([ev.approved('ap_i', 'allow_once')]);
    assert.match(await card.locator('.approval-outcome').innerText(), /Allowed once/);
    assert.deepEqual(p.errors, []);
    assert.deepEqual(await p.cspViolations(), []);
    await p.page.close();
  });
});
