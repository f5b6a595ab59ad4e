/**
 * Where CodeAct keeps large private folders of a workspace's files (the rewind stores, review mode's staged
 * writes): the user's cache folder (`$XDG_CACHE_HOME/codeact/<kind>/<host>`, else `~/.cache/…`), made 0700,
 * not the temporary folder (often a tmpfs in memory, and these may hold gigabytes); the temporary folder when
 * the cache folder cannot be made.
 */
import { chmodSync, mkdirSync, realpathSync } from 'node:fs';
import { homedir, hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { isUnder } from '../../util/paths';

export function cacheFolder(kind: 'rewind' | 'stage', workspace: string): string {
  const cache = process.env.XDG_CACHE_HOME && path.isAbsolute(process.env.XDG_CACHE_HOME) ? process.env.XDG_CACHE_HOME : path.join(homedir(), '.cache');
  // A folder per machine: a home folder shared over NFS holds other machines' folders, which this one's sweep
  // (by pid and start time) must not take for dead ones.
  const root = path.join(
    cache,
    'codeact',
    kind,
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 64) || 'host',
  );
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    chmodSync(root, 0o700);
    // Never inside the workspace (a home folder opened as one, a cache folder linked into it): the code could
    // write the copies, and scans would copy them.
    return isUnder(realpathSync(root), realpathSync(workspace)) ? tmpdir() : root;
  } catch {
    return tmpdir();
  }
}
