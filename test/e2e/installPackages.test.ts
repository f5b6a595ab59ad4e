/**
 * install_packages end to end in a real VS Code (code-server 4.139 = VS Code 1.139, the current release) driven
 * in headless Chromium. The folder has a `.venv` made in the test (Debian's python3 -m venv
 * --system-site-packages) and codeact.python.installArgs points pip at a folder with one wheel made in the test
 * (`--no-index --find-links DIR`: offline). A scripted model (a loopback OpenAI-compatible server) runs code that
 * calls install_packages; the approval card lists the spec and the command line, the person clicks Install, pip's
 * output streams into the execution's card, and the next code of the same conversation imports the package. Before
 * that, the model's first import failed, and its result told it of install_packages.
 *
 * Screenshots: test-artifacts/e2e/95-…. Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { turn } from '../support/wire/turn';
import { makeVenv, makeWheel } from '../support/wheels';
import { artifactPath } from './support/env';
import { useCodeServer } from './support/suite';

const UI = 60_000;
const MODEL = 'qwen2.5-coder:7b';
const SPEC = 'codeact-demo-pkg==1.0';

describe('e2e: install_packages, approved in the panel, then imported', function () {
  this.timeout(900_000);
  // Not under /tmp: the sandbox gives the guest a /tmp of its own, which would hide the folder's .venv.
  let folder = '';
  let wheels = '';
  let venvPython = '';
  const e2e = useCodeServer({
    name: 'install-packages',
    wire: ['openai-compatible', 'openai'],
    workspace: () => {
      const parent = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'codeact-e2e-install-'));
      folder = join(parent, 'project');
      wheels = join(parent, 'wheels');
      mkdirSync(folder, { recursive: true });
      makeWheel(wheels, 'codeact-demo-pkg', '1.0', 'VALUE = 42');
      venvPython = makeVenv(join(folder, '.venv'));
      return { folder, dispose: () => rmSync(parent, { recursive: true, force: true }) };
    },
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 120,
      'codeact.python.path': venvPython,
      'codeact.python.installArgs': ['--no-index', '--find-links', wheels],
    }),
    minWaitMs: UI,
  });

  it('the card lists the spec and the command; Install runs pip into the .venv; the next code imports the package', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    e2e.wire.push(
      turn().call('execute_tool_code', { code: 'import codeact_demo_pkg' }),
      turn().call('execute_tool_code', { code: `r = await install_packages(["${SPEC}"])\nprint(r["message"])` }),
      turn().call('execute_tool_code', { code: 'import codeact_demo_pkg\nreturn codeact_demo_pkg.VALUE' }),
      turn().text('Installed **codeact-demo-pkg**; its VALUE is 42.'),
    );
    await e2e.panel.send('Install codeact-demo-pkg 1.0 and tell me its VALUE');
    const pending = await e2e.panel.waitForApproval(180_000);
    // The card by its id: once answered it is no longer the pending one.
    // The model was told of install_packages, and the ModuleNotFoundError's result said to use it.
    assert.match(e2e.wire.turns[0].rawBody, /await install_packages\(\[\\"name\\", \\"other>=2\\"\]\)/);
    const toolResult = (JSON.parse(e2e.wire.turns[1].rawBody) as { messages: Array<{ role: string; content: string }> }).messages.find(
      (m) => m.role === 'tool',
    );
    assert.match(
      (JSON.parse(toolResult?.content ?? '{}') as { hint?: string }).hint ?? '',
      /^The module "codeact_demo_pkg" is not installed in this session's Python\. If the task needs it, run `await install_packages\(\["codeact_demo_pkg"\]\)`/,
    );
    const card = (await e2e.panel.frame()).locator(`section.card.approval[data-approval-id="${await pending.getAttribute('data-approval-id')}"]`);
    const text = await card.innerText();
    assert.match(text, /Install a package\?/);
    assert.match(
      text,
      new RegExp(
        `The code asks to install this package with pip into\\s+Python 3\\.\\d+\\.\\d+, virtual environment ${folder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\.venv`,
      ),
    );
    assert.match(text, new RegExp(SPEC.replace(/[.=]/g, '\\$&')));
    assert.ok(
      text.includes(`${venvPython} -m pip install --disable-pip-version-check --no-input --progress-bar off --no-index --find-links ${wheels} -- ${SPEC}`),
      `the card shows the command line:\n${text}`,
    );
    assert.deepEqual(await card.getByRole('button').allInnerTexts(), ['Install', 'Deny'], 'only Install or Deny: no "for this session" for an install');
    await e2e.panel.scrollTo('section.card.approval', 'last');
    await card.screenshot({ path: artifactPath('95-install-approval-card') });
    await e2e.panel.sidebar.screenshot({ path: artifactPath('95b-install-approval-panel') });

    await card.getByRole('button', { name: 'Install', exact: true }).click();
    assert.equal(await e2e.panel.waitForTurn(-1, ['completed'], 240_000), 'completed', await e2e.panel.text());
    const f = await e2e.panel.frame();
    const execs = f.locator('section.card.exec');
    assert.equal(await execs.count(), 3);
    assert.match(await execs.nth(0).innerText(), /ModuleNotFoundError/);
    const first = await execs.nth(1).innerText();
    assert.match(first, /Successfully installed codeact-demo-pkg-1\.0/, `pip's output is in the card:\n${first}`);
    assert.match(first, /Installed codeact-demo-pkg==1\.0 into Python/);
    const second = await execs.nth(2).innerText();
    assert.match(second, /\b42\b/, `the next code imported the package:\n${second}`);
    assert.match(await card.innerText(), /Allowed once/);
    // The model read the import's value back.
    assert.match(e2e.wire.turns.slice(-1)[0]?.rawBody ?? '', /\\"value\\":42/);
    await e2e.panel.scrollTo(`section.card.exec[data-item-id="${await execs.nth(1).getAttribute('data-item-id')}"]`);
    await e2e.panel.sidebar.screenshot({ path: artifactPath('96-install-output-in-the-card') });
    await e2e.panel.scrollTo('section.card.exec', 'last');
    await e2e.panel.sidebar.screenshot({ path: artifactPath('96b-install-then-import') });
  });
});
