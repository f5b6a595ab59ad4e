/**
 * The panel's output actions on the host (src/vscode/panelOutputs.ts), through the fake seam, with real files
 * on disk: an image opened (written to a temporary file, VS Code's image preview for SVG) and saved (the
 * workspace folder and its name suggested); a file the code wrote opened, saved as a copy, its path copied;
 * a file gone with its session; a path the execution did not list; bad image data refused; no image over
 * the pixel cap opened full size.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import type { ImageMessage, LocalFileMessage } from '../../src/common/outputMessages';
import { parseWebviewMessage } from '../../src/common/protocolCheck';
import { FileGoneError, IMAGE_PREVIEW, PanelOutputs } from '../../src/vscode/panelOutputs';
import type { PanelOutputsApis, SaveDialogOptions } from '../../src/vscode/panelOutputs.apis';
import { pngDeclaring } from '../support/png';
import { pngBytes } from '../webview/support/png';

class FakeOutputsApis implements PanelOutputsApis {
  readonly dialogs: SaveDialogOptions[] = [];
  readonly opened: Array<[string, string | undefined]> = [];
  readonly clipboard: string[] = [];
  /** What the save dialog answers: a path, or undefined (cancelled). */
  answer: ((o: SaveDialogOptions) => string | undefined) | undefined;
  constructor(readonly folder: string | undefined) {}
  async showSaveDialog(o: SaveDialogOptions): Promise<string | undefined> {
    this.dialogs.push(o);
    return this.answer?.(o);
  }
  async openFile(path: string, viewType?: string): Promise<void> {
    this.opened.push([path, viewType]);
  }
  async writeClipboard(text: string): Promise<void> {
    this.clipboard.push(text);
  }
  workspaceFolder(): string | undefined {
    return this.folder;
  }
  readonly confirms: string[] = [];
  /** What the confirmation answers. */
  confirmAnswer = true;
  async confirm(message: string): Promise<boolean> {
    this.confirms.push(message);
    return this.confirmAnswer;
  }
  /** The choice dialogs: their message, detail and buttons. */
  readonly choices: Array<[string, string, readonly string[]]> = [];
  /** What the choice dialog answers (undefined: cancelled). */
  choice: string | undefined;
  async choose(message: string, detail: string, actions: readonly string[]): Promise<string | undefined> {
    this.choices.push([message, detail, actions]);
    return this.choice;
  }
  readonly diffs: Array<[string, string | undefined, string | undefined]> = [];
  async diff(itemId: string, before: string | undefined, after: string | undefined): Promise<void> {
    this.diffs.push([itemId, before, after]);
  }
}

describe('panel output actions on the host (fake seams, real files)', () => {
  let root = '';
  let workspace = '';
  let session = '';
  let csv = '';
  let apis: FakeOutputsApis;
  let outputs: PanelOutputs;
  const item = (): CodeInterpreterCallItem => ({
    type: 'code_interpreter_call',
    id: 'x1',
    status: 'completed',
    code: 'df.to_csv("out.csv")',
    runtime: 'local',
    outputs: [
      { type: 'logs', logs: 'saved\n' },
      { type: 'file', filename: 'out.csv', path: csv, mime_type: 'text/csv', bytes: 12 },
    ],
  });

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'codeact-outputs-'));
    workspace = join(root, 'workspace');
    session = join(root, 'session');
    mkdirSync(workspace);
    mkdirSync(session);
    csv = join(session, 'out.csv');
    writeFileSync(csv, 'a,b\n1,2\n3,4\n');
    apis = new FakeOutputsApis(workspace);
    const it = item();
    outputs = new PanelOutputs({ apis, execution: (id) => (id === 'x1' ? it : undefined), tempRoot: join(root, 'tmp-images') });
  });

  afterEach(async () => {
    await outputs.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  const image = (mime: ImageMessage['mime'], data: string, name = 'plot-3.png'): ImageMessage =>
    parseWebviewMessage({ type: 'image.open', mime, data, name }) as ImageMessage;
  const fileMsg = (type: LocalFileMessage['type'], path = csv, itemId = 'x1'): LocalFileMessage =>
    parseWebviewMessage({ type, itemId, path }) as LocalFileMessage;

  it('opens an image full size: a temporary file with its bytes, shown by VS Code (the image preview for SVG)', async () => {
    const png = pngBytes(64, 48);
    const file = await outputs.openImage(image('image/png', png.toString('base64')));
    assert.ok(file.endsWith('/plot-3.png'), file);
    assert.deepEqual(readFileSync(file), png);
    assert.deepEqual(apis.opened, [[file, undefined]]);
    // The same image again: the same file (one tab).
    assert.equal(await outputs.openImage(image('image/png', png.toString('base64'))), file);

    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
    const svgFile = await outputs.openImage(image('image/svg+xml', svg, 'plot-4.svg'));
    assert.equal(readFileSync(svgFile, 'utf8'), svg);
    assert.deepEqual(apis.opened[2], [svgFile, IMAGE_PREVIEW]);
    await outputs.dispose();
    assert.equal(existsSync(file), false, 'the temporary images go when the extension stops');
  });

  it('saves an image where the user says, suggesting the workspace folder and its name; cancelling writes nothing', async () => {
    const png = pngBytes(32, 32);
    const msg = { ...image('image/png', png.toString('base64')), type: 'image.save' as const };
    apis.answer = (o) => o.defaultPath;
    const target = await outputs.saveImage(msg);
    assert.equal(target, join(workspace, 'plot-3.png'));
    assert.deepEqual(readFileSync(target!), png);
    assert.deepEqual(apis.dialogs[0].filters, { 'PNG image': ['png'] });
    apis.answer = undefined;
    rmSync(target!);
    assert.equal(await outputs.saveImage(msg), undefined);
    assert.equal(existsSync(join(workspace, 'plot-3.png')), false);
  });

  it('refuses image data that is not what its type says, or names that leave the folder', async () => {
    await assert.rejects(outputs.openImage(image('image/png', Buffer.from('GIF89a not a png').toString('base64'))), /not a PNG image/);
    await assert.rejects(outputs.openImage(image('image/svg+xml', '<html><script>1</script></html>', 'x.svg')), /not a SVG image/);
    assert.equal(parseWebviewMessage({ type: 'image.open', mime: 'image/png', data: 'not base64!', name: 'a.png' }), undefined);
    assert.equal(parseWebviewMessage({ type: 'image.open', mime: 'text/html', data: 'PGI+', name: 'a.png' }), undefined);
    const sneaky = parseWebviewMessage({
      type: 'image.open',
      mime: 'image/png',
      data: pngBytes(2, 2).toString('base64'),
      name: '../../etc/evil.png',
    }) as ImageMessage;
    assert.equal(sneaky.name, 'image.png', 'a name with a path is replaced');
    const file = await outputs.openImage(sneaky);
    assert.ok(file.startsWith(join(root, 'tmp-images')), file);
    assert.deepEqual(apis.opened.length, 1);
  });

  it('opens no image full size whose header declares more than the pixel cap: the note says why, nothing is written or opened', async () => {
    const bomb = pngDeclaring(40000, 40000).toString('base64');
    await assert.rejects(
      outputs.openImage(image('image/png', bomb)),
      /a PNG image of 40,000×40,000 pixels \(1,600 megapixels\) was not shown: the limit is 40 megapixels per image \(codeact\.outputs\.maxImageMegapixels\)/,
    );
    const low = new PanelOutputs({ apis, execution: () => undefined, tempRoot: join(root, 'tmp-low'), maxImagePixels: () => 1000 });
    await assert.rejects(low.openImage(image('image/png', pngBytes(64, 48).toString('base64'))), /64×48 pixels .* the limit is 0\.001 megapixels/);
    assert.deepEqual(apis.opened, []);
    assert.equal(existsSync(join(root, 'tmp-images')) || existsSync(join(root, 'tmp-low')), false, 'no temporary file was written');
  });

  it('opens, saves a copy of, and copies the path of a file the execution wrote', async () => {
    await outputs.openFile(fileMsg('file.open'));
    assert.deepEqual(apis.opened, [[csv, undefined]]);
    apis.answer = (o) => o.defaultPath;
    const target = await outputs.saveFile(fileMsg('file.save'));
    assert.equal(target, join(workspace, 'out.csv'));
    assert.equal(apis.dialogs[0].title, 'Save out.csv to the Workspace');
    assert.equal(readFileSync(target!, 'utf8'), 'a,b\n1,2\n3,4\n');
    await outputs.copyPath(fileMsg('file.copyPath'));
    assert.deepEqual(apis.clipboard, [csv]);
  });

  it('a file whose session ended is gone: a clear error, nothing opened or written', async () => {
    rmSync(session, { recursive: true });
    for (const type of ['file.open', 'file.save', 'file.copyPath'] as const) {
      await assert.rejects(
        (async () => {
          if (type === 'file.open') await outputs.openFile(fileMsg(type));
          else if (type === 'file.save') await outputs.saveFile(fileMsg(type));
          else await outputs.copyPath(fileMsg(type));
        })(),
        (e: unknown) => e instanceof FileGoneError && e.path === csv && /out\.csv is no longer available: the session that wrote it has ended/.test(e.message),
      );
    }
    assert.deepEqual([apis.opened, apis.dialogs, apis.clipboard], [[], [], []]);
  });

  it('acts only on files the execution lists: another path, another execution, a relative path', async () => {
    const other = join(root, 'secret.txt');
    writeFileSync(other, 'secret');
    await assert.rejects(outputs.openFile(fileMsg('file.open', other)), /not one this execution wrote/);
    await assert.rejects(outputs.saveFile(fileMsg('file.save', csv, 'x2')), /not one this execution wrote/);
    await assert.rejects(outputs.copyPath(fileMsg('file.copyPath', 'out.csv')), /not one this execution wrote/);
    assert.equal(parseWebviewMessage({ type: 'file.open', itemId: 'x1' }), undefined);
    assert.deepEqual([apis.opened, apis.dialogs, apis.clipboard], [[], [], []]);
  });
});

describe("an execution's workspace changes on the host: Diff's earlier text, Revert after the person confirms", () => {
  let root = '';
  let apis: FakeOutputsApis;
  const reverts: Array<[string, readonly string[] | undefined]> = [];
  const digest = 'a'.repeat(64);
  const item = (): CodeInterpreterCallItem => ({
    type: 'code_interpreter_call',
    id: 'x1',
    status: 'completed',
    code: '…',
    runtime: 'local',
    outputs: [],
    session: { id: 's1', execution: 2 },
    changes: {
      root: join(root, 'ws'),
      store: join(root, 'store'),
      changes: [
        { path: 'a.txt', kind: 'changed', before: { digest, mode: 0o644, size: 6 }, after: { digest: 'b'.repeat(64), mode: 0o644, size: 3 } },
        { path: 'big.bin', kind: 'changed', notRestorable: 'larger than the 100 MB limit' },
        { path: 'new.csv', kind: 'renamed', from: 'old.csv', before: { digest, mode: 0o644, size: 6 }, after: { digest, mode: 0o644, size: 6 } },
      ],
    },
  });
  let outputs: PanelOutputs;
  const rewinds: string[] = [];

  beforeEach(() => {
    rewinds.length = 0;
    root = mkdtempSync(join(tmpdir(), 'codeact-changes-host-'));
    mkdirSync(join(root, 'store', 'blobs', 'aa'), { recursive: true });
    writeFileSync(join(root, 'store', 'blobs', 'aa', digest), 'before');
    mkdirSync(join(root, 'ws'));
    writeFileSync(join(root, 'ws', 'new.csv'), 'now');
    apis = new FakeOutputsApis(undefined);
    reverts.length = 0;
    const it = item();
    outputs = new PanelOutputs({
      apis,
      // x0: the first execution of x1's turn.
      execution: (id) => (id === 'x1' ? it : id === 'x0' ? { ...it, id: 'x0', session: { id: 's1', execution: 1 } } : undefined),
      runtimeOf: (sessionId) =>
        sessionId === 's1'
          ? {
              revertChanges: async (id, paths) => (reverts.push([id, paths]), { written: [], removed: [], failed: [] }),
              rewind: async (point) => (rewinds.push(point), { python: { restored: true as const }, files: { written: [], removed: [], failed: [] } }),
            }
          : undefined,
    });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('reads the earlier text from the store for the diff, and says so when it was not kept', async () => {
    assert.equal(await outputs.beforeText('x1', 'a.txt'), 'before');
    assert.match(await outputs.beforeText('x1', 'big.bin'), /not kept: larger than the 100 MB limit/);
    await assert.rejects(outputs.beforeText('x1', '../../etc/passwd'), /not one this execution changed/);
    await outputs.diffChange({ itemId: 'x1', path: 'new.csv' });
    assert.deepEqual(apis.diffs, [['x1', 'old.csv', join(root, 'ws', 'new.csv')]]);
    // The file now replaced by a link (the code's, after the run): the diff's right side is empty, the link not followed.
    rmSync(join(root, 'ws', 'new.csv'));
    symlinkSync('/etc/passwd', join(root, 'ws', 'new.csv'));
    await outputs.diffChange({ itemId: 'x1', path: 'new.csv' });
    assert.deepEqual(apis.diffs[1], ['x1', 'old.csv', undefined]);
  });

  it('reverts only listed files, a rename by both its names, and nothing when the person cancels', async () => {
    apis.confirmAnswer = false;
    assert.equal(await outputs.revertChanges({ itemId: 'x1', paths: ['new.csv'] }), undefined);
    assert.deepEqual(reverts, []);
    apis.confirmAnswer = true;
    await outputs.revertChanges({ itemId: 'x1', paths: ['new.csv'] });
    assert.deepEqual(reverts, [['x1', ['old.csv', 'new.csv']]]);
    assert.match(apis.confirms[1], /^Revert old\.csv to before this execution\?$/);
    await assert.rejects(outputs.revertChanges({ itemId: 'x1', paths: ['/etc/passwd'] }), /not ones this execution changed/);
    assert.equal(reverts.length, 1);
    // Revert All leaves out what cannot be reverted.
    await outputs.revertChanges({ itemId: 'x1' });
    assert.deepEqual(reverts[1], ['x1', ['a.txt', 'old.csv', 'new.csv']]);
    await assert.rejects(outputs.revertChanges({ itemId: 'x1', paths: ['big.bin'] }), /cannot be reverted: larger than the 100 MB limit/);
  });

  it('Rewind to here offers code and conversation, code only, conversation only; does only what was chosen; a cancel does nothing', async () => {
    const turn = { turn: 3, prompt: 'Drop the columns\nand save', branchTitle: 'Orders (before rewind)' };
    assert.equal(await outputs.rewind({ itemId: 'x1' }, turn), undefined, 'cancelled');
    const [message, detail, actions] = apis.choices[0];
    assert.equal(message, 'Rewind to before this execution?');
    assert.deepEqual(actions, ['Code and Conversation', 'Code Only', 'Conversation Only']);
    assert.match(detail, /^Code: the Python session's variables, imports and open figures go back/);
    assert.match(
      detail,
      /Conversation: it goes back to before your message "Drop the columns\u21b5?.*and save" \(turn 3\); that turn and the ones after it are kept in History as "Orders \(before rewind\)"/,
    );
    assert.match(detail, /Not undone: calls to managed tools/);
    assert.deepEqual(rewinds, []);

    apis.choice = 'Conversation Only';
    assert.deepEqual(await outputs.rewind({ itemId: 'x1' }, turn), { conversation: true, redone: false, lines: [] });
    assert.deepEqual(rewinds, [], 'the code is left as it is');
    apis.choice = 'Code Only';
    const code = await outputs.rewind({ itemId: 'x1' }, turn);
    assert.equal(code?.conversation, false);
    assert.match(code!.note!, /before execution 2/);
    apis.choice = 'Code and Conversation';
    assert.equal((await outputs.rewind({ itemId: 'x1' }, turn))?.conversation, true);
    assert.deepEqual(rewinds, ['x1', 'x1']);
    // With the conversation, the code goes back to where the conversation does: the turn's first execution.
    const both = await outputs.rewind({ itemId: 'x1' }, { ...turn, firstExecution: 'x0' });
    assert.deepEqual(rewinds.at(-1), 'x0');
    assert.match(both!.note!, /before execution 1\./);
    assert.match(apis.choices.at(-1)![1], /With the conversation, the code goes back to before the turn's first execution \(execution 1\)\./);
    apis.choice = 'Code Only';
    await outputs.rewind({ itemId: 'x1' }, { ...turn, firstExecution: 'x0' });
    assert.deepEqual(rewinds.at(-1), 'x1', 'the code alone goes back to before this execution');
    // Things moved while the person chose: nothing is done.
    await assert.rejects(
      outputs.rewind({ itemId: 'x1' }, turn, () => {
        throw new Error('a turn started');
      }),
      /a turn started/,
    );
    assert.equal(rewinds.length, 4);
  });

  it('without checkpoints only the conversation is offered, saying why the code cannot be; with neither, it says so', async () => {
    {
      const fresh = new PanelOutputs({
        apis,
        execution: () => item(),
        runtimeOf: () => ({ revertChanges: async () => ({ written: [], removed: [], failed: [] }) }),
      });
      apis.choice = 'Code Only';
      assert.equal(await fresh.rewind({ itemId: 'x1' }, { turn: 1, prompt: 'p', branchTitle: 'b' }), undefined, 'a button not offered is no answer');
      const [, detail, actions] = apis.choices.at(-1)!;
      assert.deepEqual(actions, ['Conversation Only']);
      assert.match(detail, /^The code cannot be rewound: The runtime that ran this execution keeps no checkpoints/);
      await assert.rejects(fresh.rewind({ itemId: 'x1' }), /keeps no checkpoints/);
      // A Run with Tools turn: its label is "the run", and nothing goes to the chat box.
      await fresh.rewind({ itemId: 'x1' }, { turn: 1, prompt: 'orders.py, lines 3-20', source: 'run_with_tools', branchTitle: 'b', fromTurn: true });
      assert.equal(apis.choices.at(-1)![0], 'Rewind to before this run?');
      assert.match(
        apis.choices.at(-1)![1],
        /before the run "orders\.py, lines 3-20" \(turn 1\); that turn and the ones after it are kept in History as "b"\.\n/,
      );
    }
  });
});
