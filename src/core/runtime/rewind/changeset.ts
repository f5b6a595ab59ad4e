/**
 * What an execution changed in the files (issue 35): the diff of the manifests the file store took
 * before and after it, as the FileChange list the card and the model read.
 */
import type { FileChange, FileVersion } from '../../../common/rewind';
import { entryOf, type FileEntry, type Manifest } from './fileStore';

function version(e: FileEntry): FileVersion {
  return { digest: e.digest, mode: e.mode & 0o7777, size: e.size };
}

/** Whether the bytes differ: by digest when both were kept, else by the stat key's content fields. */
function contentDiffers(b: FileEntry, a: FileEntry): boolean {
  if (b.digest !== null && a.digest !== null) return b.digest !== a.digest;
  if (b.digest !== a.digest) return true;
  return b.size !== a.size || b.ino !== a.ino || b.mtimeNs !== a.mtimeNs;
}

function notRestorable(b: FileEntry): string {
  return b.why ?? 'its earlier content was not kept';
}

/**
 * The changes from `before` to `after`, sorted by path: created, changed (bytes), mode (permissions
 * only), deleted; a deletion and a creation with the same kept digest are one `renamed` (`from` the old
 * path). A change whose earlier bytes were not kept carries `notRestorable` (the reason). When `after` is
 * incomplete, a path it lacks may simply not have been reached, so it is not reported as deleted; when `before`
 * is, a path it lacks is not reported as created.
 */
export function diffManifests(before: Manifest, after: Manifest): FileChange[] {
  const out: FileChange[] = [];
  const deleted: FileChange[] = [];
  const created: FileChange[] = [];
  for (const [p, b] of Object.entries(before.files)) {
    const a = entryOf(after.files, p);
    if (!a) {
      if (!after.incomplete) deleted.push({ path: p, kind: 'deleted', before: version(b) });
      continue;
    }
    const kind = contentDiffers(b, a) ? 'changed' : (b.mode & 0o7777) !== (a.mode & 0o7777) ? 'mode' : null;
    if (kind) out.push({ path: p, kind, before: version(b), after: version(a) });
  }
  // When the scan before stopped early, a path it lacks may simply not have been reached: not reported as created
  // (a revert would remove a file the run never made).
  if (!before.incomplete)
    for (const [p, a] of Object.entries(after.files)) if (!entryOf(before.files, p)) created.push({ path: p, kind: 'created', after: version(a) });

  // Renames: each deletion pairs with the first unpaired creation of the same kept content.
  // (Linear: each digest's creations in order, and the next one not yet paired.)
  const byDigest = new Map<string, { list: FileChange[]; next: number }>();
  for (const c of created.sort(byPath)) {
    const d = c.after!.digest;
    if (d === null) continue;
    const slot = byDigest.get(d);
    if (slot) slot.list.push(c);
    else byDigest.set(d, { list: [c], next: 0 });
  }
  const paired = new Set<FileChange>();
  for (const del of deleted.sort(byPath)) {
    const d = del.before!.digest;
    const slot = d !== null ? byDigest.get(d) : undefined;
    const match = slot && slot.next < slot.list.length ? slot.list[slot.next++] : undefined;
    if (match) {
      paired.add(match);
      out.push({ path: match.path, kind: 'renamed', from: del.path, before: del.before, after: match.after });
    } else out.push(del);
  }
  for (const c of created) if (!paired.has(c)) out.push(c);

  for (const c of out) {
    const b = entryOf(before.files, c.from ?? c.path);
    if (c.kind !== 'created' && b && b.digest === null) c.notRestorable = notRestorable(b);
  }
  return out.sort(byPath);
}

function byPath(a: FileChange, b: FileChange): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
