/**
 * `codeact trust [DIR]`, `codeact trust --revoke [DIR]`, `codeact trust --list`: which folders' settings
 * the CLI obeys (core/config/folderTrust.ts explains the model).
 */
import * as path from 'node:path';
import { listTrusted, revokeFolder, settingsHash, trustFolder } from '../core/config/folderTrust';
import { restrictedKeys } from '../core/config/keys';
import { codeactSetting, readWorkspaceSettings, settingsPath } from '../core/config/workspaceFile';
import { isCodeWorkspaceFile, readCodeWorkspace } from '../core/config/codeWorkspace';
import { forTerminal } from '../common/untrusted';
import { parse, UsageError } from './args';

const TRUST_USAGE = `Usage: codeact trust [DIR]            trust DIR (default: the current folder) with its settings as they are now
       codeact trust FILE.code-workspace   trust a workspace file's own settings, as they are now
       codeact trust --revoke [DIR]   stop trusting DIR
       codeact trust --list           the trusted folders`;

export async function trustCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: { revoke: { type: 'boolean' }, list: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(TRUST_USAGE + '\n');
    return 0;
  }
  if (positionals.length > 1) throw new UsageError('codeact trust takes at most one folder.');
  if (values.list) {
    // One folder whose settings file cannot be read (a FIFO, too large) does not hide the others.
    const current = (folder: string, sha: string) => {
      try {
        return settingsHash(folder) === sha;
      } catch {
        return false;
      }
    };
    const entries = listTrusted().map((e) => ({ ...e, current: current(e.folder, e.sha256) }));
    if (values.json) process.stdout.write(JSON.stringify(entries) + '\n');
    else if (!entries.length) process.stdout.write('No trusted folders.\n');
    else
      for (const e of entries)
        process.stdout.write(
          `${forTerminal(e.folder, { line: true })}  ${e.trustedAt.slice(0, 16).replace('T', ' ')}${e.current ? '' : '  (settings changed since: trust it again)'}\n`,
        );
    return 0;
  }
  const dir = path.resolve(positionals[0] ?? process.cwd());
  if (values.revoke) {
    const had = revokeFolder(dir);
    const shownDir = forTerminal(dir, { line: true });
    process.stdout.write(had ? `No longer trusted: ${shownDir}\n` : `${shownDir} was not trusted.\n`);
    return 0;
  }
  // A .code-workspace file is trusted for its own settings; each of its folders is trusted on its own.
  const file = isCodeWorkspaceFile(dir);
  const settings = file ? readCodeWorkspace(dir).settings : readWorkspaceSettings(dir);
  const entry = trustFolder(dir);
  const obeyed = restrictedKeys()
    .filter((k) => codeactSetting(settings, k.slice('codeact.'.length)) !== undefined)
    .sort();
  process.stdout.write(
    `Trusted: ${forTerminal(entry.folder, { line: true })}` +
      (obeyed.length
        ? `\nThe CLI now obeys its ${obeyed.join(', ')} (${forTerminal(file ? `the "settings" of ${dir}` : settingsPath(dir), { line: true })}).`
        : '') +
      (file ? `\nIts folders' own .vscode/settings.json count only in folders you trust (codeact trust FOLDER).` : '') +
      `\nIf the ${file ? 'workspace' : 'settings'} file changes, the CLI ignores those settings again until you trust the ${file ? 'file' : 'folder'} again.\n`,
  );
  return 0;
}
