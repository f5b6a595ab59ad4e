/**
 * The extension's approval of install_packages through the fake seams: the card's event
 * carries every spec and the command's parts; with the panel hidden, a modal dialog shows the same in full;
 * only Install (or "Create .venv and Install") allows it, and nothing is remembered for the session.
 */
import * as assert from 'node:assert/strict';
import type { TranscriptEvent } from '../../src/common/transcript';
import type { InstallApproval } from '../../src/core/runtime/install/installer';
import { Approvals } from '../../src/vscode/approvals';
import { FakeApprovalsApis, FakeLog } from './fakes';

function install(extra: Partial<InstallApproval> = {}): InstallApproval {
  return {
    packages: ['pandas>=2', 'pyarrow'],
    python: '/w/.venv/bin/python',
    environment: 'Python 3.11.2, virtual environment /w/.venv',
    tool: 'pip',
    installArgs: ['--no-index'],
    itemId: 'exec_1',
    signal: new AbortController().signal,
    ...extra,
  };
}

function setup(panel = false) {
  const apis = new FakeApprovalsApis();
  const events: TranscriptEvent[] = [];
  const approvals = new Approvals({ apis, emit: (e) => events.push(e), log: new FakeLog(), panelVisible: () => panel });
  return { apis, events, approvals };
}

describe('vscode approvals of install_packages (fake seams)', () => {
  it('the dialog (panel hidden) lists every spec and the exact command; Install allows it, once', async () => {
    const { apis, events, approvals } = setup();
    apis.answers = ['Install', undefined as unknown as string];
    assert.equal(await approvals.approveInstall(install()), 'allowed');
    assert.equal(apis.dialogs[0].message, 'CodeAct: install 2 packages?');
    assert.deepEqual(apis.dialogs[0].items, ['Install']);
    assert.equal(
      apis.dialogs[0].detail,
      'Into: Python 3.11.2, virtual environment /w/.venv\nPackages:\n  pandas>=2\n  pyarrow\n\nRuns on this machine, outside the sandbox, with network access:\n' +
        '  /w/.venv/bin/python -m pip install --disable-pip-version-check --no-input --progress-bar off --no-index -- pandas>=2 pyarrow',
    );
    const asked = events.find((e) => e.type === 'codeact.approval.requested') as { kind: string; install: { packages: string[]; install_args: string[] } };
    assert.equal(asked.kind, 'install');
    assert.deepEqual(asked.install.packages, ['pandas>=2', 'pyarrow']);
    assert.deepEqual(asked.install.install_args, ['--no-index']);
    // Dismissed: denied; and the first "Install" was not remembered.
    assert.equal(await approvals.approveInstall(install()), 'denied');
    assert.equal(apis.dialogs.length, 2);
  });

  it('a system Python: the dialog says the .venv comes first, and its button says so', async () => {
    const { apis, approvals } = setup();
    apis.answers = ['Create .venv and Install'];
    assert.equal(await approvals.approveInstall(install({ createVenv: '/w/.venv', refused: '/usr/bin/python3 is a system Python' })), 'allowed');
    assert.deepEqual(apis.dialogs[0].items, ['Create .venv and Install']);
    assert.match(
      apis.dialogs[0].detail!,
      /^\/usr\/bin\/python3 is a system Python, so nothing is installed into it\. Installing first makes a virtual environment for this folder, \/w\/\.venv/,
    );
  });

  it("on the card (panel visible): the panel's answer decides; the run ending first leaves it unanswered", async () => {
    const { events, approvals } = setup(true);
    const pending = approvals.approveInstall(install());
    const id = (events[0] as { approval_id: string }).approval_id;
    approvals.resolve(id, 'allow_once');
    assert.equal(await pending, 'allowed');
    const stop = new AbortController();
    const waiting = approvals.approveInstall(install({ signal: stop.signal }));
    stop.abort();
    assert.deepEqual(await waiting, { unanswered: 'no answer: the run ended' });
  });
});
