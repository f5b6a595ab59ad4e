/**
 * **CodeAct: Review Staged Changes…** (review mode, codeact.sandbox.reviewWrites): everything the code has staged in
 * the workspace, across its runs and their cards, in one quick pick: Keep All, Revert All, or one file (Diff, Keep,
 * Revert). Keep and Revert ask first, listing the files, as the cards' buttons do. Revert here gives the code's view
 * the workspace's version back (`staged.discard`), whichever run wrote it. The cards that list a settled file then
 * show it kept or reverted (`settled`: the panels mark the rows).
 */
import * as vscode from 'vscode';
import { CHANGE_KIND_WORDS, changePaths, describeChange, settledRows, type FileChange, type FilesChanged, type SettledRows } from '../common/rewind';
import { forDisplay } from '../common/untrusted';
import type { Runtime } from '../core/runtime/types';
import { stagedDiff } from './panelOutputs.apis';
import { listOf } from './panelOutputs';

/** Files settled from here: what each card that lists them should show. */
export interface StagedSettled {
  verb: 'keep' | 'revert';
  done: SettledRows;
}

const shownPath = (c: FileChange) => forDisplay(c.kind === 'renamed' && c.from ? `${c.from} → ${c.path}` : c.path, { line: true });

type ReviewItem = vscode.QuickPickItem & { act?: 'keep' | 'revert'; change?: FileChange };

/** The quick pick, over the staged changes of the runtimes that have review mode on (the folders' runtimes). */
export async function reviewStagedChanges(runtimes: readonly Runtime[], log: (line: string) => void, settled: (e: StagedSettled) => void): Promise<void> {
  const found: Array<{ runtime: Runtime; list: FilesChanged }> = [];
  for (const runtime of runtimes) {
    if (!runtime.staged) continue;
    try {
      const list = await runtime.staged.list();
      if (list.changes.length) found.push({ runtime, list });
    } catch (e) {
      log(`review: the staged changes could not be listed: ${(e as Error).message}`);
      void vscode.window.showWarningMessage(`CodeAct: the staged changes could not be listed: ${forDisplay((e as Error).message, { line: true })}`);
      return;
    }
  }
  if (!found.length) {
    void vscode.window.showInformationMessage(
      runtimes.some((r) => r.staged)
        ? 'CodeAct: nothing is staged. Every change the code made is kept or reverted.'
        : 'CodeAct: nothing is staged. Review mode (codeact.sandbox.reviewWrites, with the workspace mounted readwrite) is off, or no code has run yet.',
    );
    return;
  }
  // Usually one folder; with several, the first that has staged changes (each is reviewed in turn, run again).
  const { runtime, list } = found[0];
  const n = list.changes.length;
  const files = (k: number) => `${k} file${k === 1 ? '' : 's'}`;
  const items: ReviewItem[] = [
    { label: '$(check-all) Keep All in the Workspace', description: files(n), act: 'keep' },
    { label: '$(discard) Revert All', description: "the code's view gets the workspace's files back", act: 'revert' },
    { label: 'Staged files', kind: vscode.QuickPickItemKind.Separator },
    ...list.changes.map((c) => ({ label: shownPath(c), description: CHANGE_KIND_WORDS[c.kind], change: c })),
  ];
  const pick = await vscode.window.showQuickPick(items, {
    title: `CodeAct: Review Staged Changes (${files(n)} not in the workspace yet)`,
    placeHolder: 'Keep or revert all of them, or pick a file',
  });
  if (!pick) return;
  let chosen = list.changes;
  let act = pick.act;
  if (pick.change) {
    const c = pick.change;
    chosen = [c];
    const what = await vscode.window.showQuickPick(
      [
        { label: '$(diff) Diff', description: "the workspace's version ↔ the code's", act: 'diff' as const },
        { label: '$(check) Keep in the Workspace', act: 'keep' as const },
        { label: '$(discard) Revert', description: "the code's view gets the workspace's version back", act: 'revert' as const },
      ],
      { title: `CodeAct: ${describeChange(c, (p) => forDisplay(p, { line: true }))}` },
    );
    if (!what) return;
    if (what.act === 'diff') {
      const real = list.workspace ?? '';
      const before = c.kind === 'created' ? undefined : `${real}/${c.from ?? c.path}`;
      const after = c.kind === 'deleted' ? undefined : `${list.root}/${c.path}`;
      await stagedDiff(before, after, c.path, `${forDisplay(c.path.split('/').pop() ?? c.path, { line: true })} (workspace ↔ staged)`);
      return;
    }
    act = what.act;
  }
  if (!act) return;
  const name = chosen.length === 1 ? shownPath(chosen[0]) : files(chosen.length);
  const ok =
    (await vscode.window.showWarningMessage(
      act === 'keep' ? `Keep ${name} in the workspace?` : `Revert ${name}?`,
      {
        modal: true,
        detail: `${listOf(chosen)}\n\n${
          act === 'keep'
            ? "The workspace gets these files as the code's view has them now; files the code deleted are removed."
            : "The code's view gets the workspace's version of these files back; what the code wrote to them is lost."
        }`,
      },
      act === 'keep' ? 'Keep' : 'Revert',
    )) !== undefined;
  if (!ok) return;
  const staged = runtime.staged!;
  const done = settledRows(chosen, await (act === 'keep' ? staged.keep(changePaths(chosen)) : staged.discard(changePaths(chosen))));
  settled({ verb: act, done });
  const did = act === 'keep' ? 'Kept' : 'Reverted';
  const where = act === 'keep' ? ' in the workspace' : '';
  if (done.failed.length)
    void vscode.window.showWarningMessage(
      `CodeAct: ${did} ${files(done.reverted.length)}${where}; ${files(done.failed.length)} could not be: ${done.failed
        .slice(0, 3)
        .map((f) => `${forDisplay(f.path, { line: true })} (${forDisplay(f.why, { line: true })})`)
        .join('; ')}${done.failed.length > 3 ? '; …' : ''}`,
    );
  else void vscode.window.showInformationMessage(`CodeAct: ${did} ${files(done.reverted.length)}${where}.`);
}
