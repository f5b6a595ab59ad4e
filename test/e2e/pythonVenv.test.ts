/**
 * The project's Python environment, in a real VS Code (code-server) driven in headless
 * Chromium. The folder has a `.venv` made by Debian's `/usr/bin/python3 -m venv --system-site-packages`,
 * with a tiny package of the test's own written into its site-packages. Nothing names an interpreter (no
 * codeact.python.path, and the Python extension has selected none): the status bar says the .venv runs
 * code, and a chat turn's code (a loopback OpenAI-compatible model server) imports the venv's package
 * inside bubblewrap, with sys.prefix the venv and Debian's Pillow importable too. The Python extension then
 * selects another environment: its event moves the status bar, a toast says so, and the next turn runs
 * there. "CodeAct: Select Python Environment" then picks python3: the folder's setting is written and wins.
 *
 * The Python extension is a stand-in (test/fixtures/python-extension: ms-python.python cannot be
 * installed offline) publishing the part of its API CodeAct uses (@vscode/python-extension's
 * `environments`), its selection read from a file the test writes.
 *
 * Screenshots go to test-artifacts/e2e/ (80-…). Skips with one line when code-server or Chromium is missing.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { turn } from '../support/wire/turn';
import { waitUntil } from './support/procs';
import { useCodeServer } from './support/suite';
import { makeWorkspace } from './support/workspace';
import { ROOT } from './support/env';

const UI = 60_000;
const RUN = 120_000;
const MODEL = 'qwen2.5-coder:7b';
const VERSION = execFileSync('/usr/bin/python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();

/** What the turn's code reports: where Python runs from, the venv's package, the system's Pillow, and that the folder itself is not mounted. */
const CODE = `import sys, os, codeact_venv_probe, PIL
print("prefix=" + sys.prefix)
print("folder visible:", os.path.exists(FOLDER + "/orders.csv") or os.path.exists(FOLDER + "/tools"))
return codeact_venv_probe.MARK + " pil=" + str(PIL.__file__.startswith("/usr/lib/python3/dist-packages/"))`;

/** A venv made by Debian's python3, with a package of the test's own (`codeact_venv_probe`, MARK = mark). */
function makeVenv(dir: string, mark: string): void {
  execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', '--system-site-packages', dir]);
  const site = execFileSync(join(dir, 'bin', 'python'), ['-I', '-c', 'import site; print(site.getsitepackages()[0])'], { encoding: 'utf8' }).trim();
  mkdirSync(join(site, 'codeact_venv_probe'));
  writeFileSync(join(site, 'codeact_venv_probe', '__init__.py'), `MARK = ${JSON.stringify(mark)}\n`);
}

/** The stand-in Python extension, packaged (vsce) in a folder of its own. */
function packageStandIn(dir: string): string {
  const src = join(dir, 'python-extension');
  cpSync(join(ROOT, 'test', 'fixtures', 'python-extension'), src, { recursive: true });
  const out = join(dir, 'python-standin.vsix');
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '-o', out],
    { cwd: src, stdio: 'ignore', timeout: 120_000 },
  );
  return out;
}

describe("e2e: the folder's .venv runs the code, sandboxed, and the status bar says so", function () {
  this.timeout(600_000);
  let folder = '';
  const scratch = mkdtempSync(join(tmpdir(), 'codeact-e2e-pyext-'));
  /** The stand-in Python extension's selected interpreter (none yet). */
  const selection = join(scratch, 'selected-python.txt');
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const e2e = useCodeServer({
    name: 'python-venv',
    wire: ['openai-compatible', 'ollama'],
    moreVsix: () => [packageStandIn(scratch)],
    env: { CODEACT_STANDIN_PYTHON_FILE: selection },
    workspace: () => {
      const ws = makeWorkspace();
      folder = ws.folder;
      makeVenv(join(ws.folder, '.venv'), 'from-the-venv-42');
      // Another environment, outside the folder, for the Python extension to select.
      makeVenv(join(dirname(ws.folder), 'other-env'), 'from-the-other-env');
      return ws;
    },
    settings: (url) => ({
      'codeact.provider': 'openai-compatible',
      'codeact.baseURL': url,
      'codeact.model': MODEL,
      'codeact.timeoutSeconds': 90,
      // Fails loudly (never falls back) when bubblewrap cannot run.
      'codeact.sandbox.kind': 'bubblewrap',
    }),
    minWaitMs: UI,
  });

  it('the status bar names the .venv, with its path and why it was chosen', async () => {
    await e2e.wb.runCommand('CodeAct: Open Chat');
    await e2e.panel.frame(UI);
    const status = e2e.wb.page.locator('.part.statusbar .statusbar-item', { hasText: `.venv ${VERSION}` });
    await status.first().waitFor({ state: 'visible', timeout: UI });
    await status.first().hover();
    const hover = e2e.wb.page.locator('.monaco-hover, .workbench-hover', { hasText: 'CodeAct runs Python with' }).first();
    await hover.waitFor({ state: 'visible', timeout: UI });
    // MarkdownString.appendText writes spaces as &nbsp;.
    const tip = (await hover.innerText()).replace(/\u00a0/g, ' ');
    assert.ok(tip.includes(join(folder, '.venv', 'bin', 'python')), tip);
    assert.match(tip, /the folder's \.venv/);
    await e2e.wb.screenshot('80-python-venv-status-bar');
    await e2e.wb.page.mouse.move(10, 10);
  });

  it("a chat turn's code imports the venv's package inside bubblewrap, with sys.prefix the venv", async () => {
    e2e.wire.push(turn().call('execute_tool_code', { code: `FOLDER = ${JSON.stringify(folder)}\n${CODE}` }), turn().text('The venv package answered.'));
    await e2e.panel.send('Which Python runs your code?');
    assert.equal(await e2e.panel.waitForTurn(0, ['completed'], RUN), 'completed', await e2e.panel.text());
    const tool = (e2e.wire.turns.at(-1)!.body.messages as { role: string; content?: string }[]).find((m) => m.role === 'tool');
    const result = tool?.content ?? '';
    assert.ok(result.includes(`prefix=${join(folder, '.venv')}`), result);
    assert.match(result, /from-the-venv-42 pil=True/);
    assert.match(result, /folder visible: False/, 'the code ran in the sandbox (the folder is not mounted), yet the venv is');
    const card = await (await e2e.panel.lastTurnExecCards()).first().innerText();
    assert.match(card, /bubblewrap/, card);
  });

  it("the Python extension's selected environment comes before the .venv: its change moves the status bar and the next session", async () => {
    const other = join(dirname(folder), 'other-env');
    writeFileSync(selection, `${join(other, 'bin', 'python')}\n`);
    await e2e.wb.page
      .locator('.part.statusbar .statusbar-item', { hasText: `other-env ${VERSION}` })
      .first()
      .waitFor({ state: 'visible', timeout: UI });
    await e2e.wb.waitForNotification(/code now runs with other-env .*the Python extension's selected environment/, UI);
    e2e.wire.push(
      turn().call('execute_tool_code', { code: 'import sys, codeact_venv_probe\nprint("prefix=" + sys.prefix)\nreturn codeact_venv_probe.MARK' }),
      turn().text('Now the other env.'),
    );
    await e2e.panel.send("And with the Python extension's environment?");
    assert.equal(await e2e.panel.waitForTurn(1, ['completed'], RUN), 'completed', await e2e.panel.text());
    const tool = (e2e.wire.turns.at(-1)!.body.messages as { role: string; content?: string }[]).filter((m) => m.role === 'tool').at(-1);
    assert.ok((tool?.content ?? '').includes(`prefix=${other}`), tool?.content);
    assert.match(tool?.content ?? '', /from-the-other-env/);
    await e2e.wb.clearNotifications();
  });

  it('"Select Python Environment" writes the folder\'s setting; the status bar, a toast and the next session follow it', async () => {
    await e2e.wb.runCommand('CodeAct: Select Python Environment');
    const list = e2e.wb.page.locator('.quick-input-widget .monaco-list-row');
    await list.filter({ hasText: 'Enter path' }).first().waitFor({ state: 'visible', timeout: UI });
    const rows = await list.allInnerTexts();
    assert.ok(
      rows.some((r) => r.includes(`.venv`) && r.includes(join(folder, '.venv', 'bin', 'python'))),
      rows.join('\n'),
    );
    assert.ok(
      rows.some((r) => r.includes('Enter path')),
      rows.join('\n'),
    );
    assert.ok(
      rows.some((r) => r.includes(join(dirname(folder), 'other-env', 'bin', 'python')) && r.includes('Python extension')),
      rows.join('\n'),
    );
    await e2e.wb.screenshot('81-python-select');
    assert.ok(await e2e.wb.answerQuickPick('CodeAct: Select Python Environment', 'python3 on PATH'));
    await waitUntil(
      async () => /"codeact\.python\.path":\s*"python3"/.test(readFileSync(join(folder, '.vscode', 'settings.json'), 'utf8')),
      UI,
      () => "codeact.python.path was not written to the folder's settings",
    );
    await e2e.wb.page
      .locator('.part.statusbar .statusbar-item', { hasText: /^\s*python3\s*$/ })
      .first()
      .waitFor({ state: 'visible', timeout: UI });
    await e2e.wb.waitForNotification(/code now runs with python3/, UI);
    e2e.wire.push(turn().call('execute_tool_code', { code: 'import sys\nprint("prefix=" + sys.prefix)' }), turn().text('Now python3.'));
    await e2e.panel.send('And now?');
    assert.equal(await e2e.panel.waitForTurn(2, ['completed'], RUN), 'completed', await e2e.panel.text());
    const tool = (e2e.wire.turns.at(-1)!.body.messages as { role: string; content?: string }[]).filter((m) => m.role === 'tool').at(-1);
    assert.match(tool?.content ?? '', /prefix=/);
    assert.ok(!/\.venv|other-env/.test(tool?.content ?? ''), tool?.content);
  });
});
