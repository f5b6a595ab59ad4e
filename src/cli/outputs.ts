/**
 * `--outputs DIR`: the images an execution showed (raster displays as .png/.jpg/.gif/.webp, SVG displays as
 * .svg, hosted sandboxes' data-URL images) and the files its code wrote are saved in DIR, under names that
 * are safe and stable (`exec-2-image-1.png`, `exec-2-out.csv`): never a path from the output as it is (no
 * `..`, no absolute path, no control character, bounded length), and never over an existing file (a
 * suffix is added: `exec-2-out-2.csv`). A file that could not be copied out of the sandbox (a `note`, or no
 * host path) is listed as not saved, with the reason.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parseDataUrl } from '../common/dataUrl';
import { displayImageOf } from '../common/displays';
import { extensionOf, isBinary, mimeInfo } from '../common/mimeTypes';
import type { CodeInterpreterCallItem, FileOutput } from '../common/events';
import { fileName, filesOf } from '../common/outputLabels';
import { forDisplay, forTerminal } from '../common/untrusted';
import { writeAll, writeFirstFree } from '../core/util/atomicFile';
import { UsageError } from './args';
import { runtimeInfo } from '../common/runtimes';

/** The help text of `--outputs` and of what `--json` prints for rich outputs (run and chat). */
export const OUTPUTS_HELP = `--outputs DIR: save the images the code showed (exec-N-image-K.png, .jpg, .svg…) and the files it wrote
  (exec-N-NAME) in DIR, created if missing; an existing file is never overwritten (a -2, -3… suffix is added).
  Without it, images and files are named in the output ("[image 640×480, PNG]", "[file out.csv, 1.2 KB]").
--json: one event a line, as they happen. Rich outputs are {"type":"codeact.output.display","item_id",
  "output":{"type":"display","data":{MIME type: content},"metadata"?,"result"?,"display_id"?,"summary"?},
  "update"?} (binary types in base64, in order with the codeact.output.delta text); the finished item's
  outputs hold the same {"type":"display",…} outputs and {"type":"file","filename","path"?,"mime_type","bytes",
  "note"?} for the files the code wrote ("path": a copy that lasts as long as the command; "note": why there
  is none), and {"type":"image","url"} for a hosted sandbox's images. With --json and --outputs, the lines
  that say where they were saved go to stderr.
--verbose: the runtime's log on stderr, the full detail behind a warning among it (for a missing sandbox: where
  it looked, and every fix).`;

/** Most outputs saved for one execution; the rest are listed as not saved. */
const MAX_SAVED_PER_EXECUTION = 1000;
/** Longest file name written (the `exec-N-` prefix and any suffix included). */
const MAX_NAME = 120;
/** Most suffixes tried for a free name. */
const MAX_SUFFIX = 1000;

/** `.png`: the extension of a type the catalogue knows (../common/mimeTypes), with its dot. */
function dotExtension(mime: string): string | undefined {
  const ext = extensionOf(mime);
  return ext ? `.${ext}` : undefined;
}

interface SavedOutput {
  kind: 'image' | 'file';
  /** The file's name in the folder. */
  name: string;
  bytes: number;
}

interface UnsavedOutput {
  kind: 'image' | 'file';
  /** What it was: the file's own name, or "image 2". */
  name: string;
  reason: string;
}

interface SaveReport {
  saved: SavedOutput[];
  unsaved: UnsavedOutput[];
}

/**
 * A file name made safe from an untrusted one (a path relative to the code's folder, or worse): its path
 * parts joined with `_` (`sub/out.csv` -> `sub_out.csv`; `.` and `..` dropped), letters, digits, `.`, `_`
 * and `-` only (anything else becomes `_`), no leading dot or dash, at most `max` characters with the
 * extension kept.
 */
export function safeFileName(name: string, max = 80): string {
  const joined = String(name)
    .slice(0, 1000)
    .split(/[\\/]/)
    .filter((p) => p && p !== '.' && p !== '..')
    .join('_');
  let clean = joined
    .replace(/[^\p{L}\p{N}._-]/gu, '_')
    .replace(/_+/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/^[._-]+/, '');
  if (!clean || clean === '_') clean = 'file';
  if (clean.length <= max) return clean;
  const dot = clean.lastIndexOf('.');
  const ext = dot > 0 && clean.length - dot <= 12 ? clean.slice(dot) : '';
  return clean.slice(0, max - ext.length) + ext;
}

/** `stem.ext` split at the last dot (a name without one has no extension). */
function splitName(name: string): [string, string] {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
}

export class OutputSaver {
  private execution: number;

  /**
   * Saves into `dir` (created if missing). `firstExecution`: the number of the first execution saved (a
   * continued conversation goes on from its earlier executions, so names stay unique across it).
   */
  constructor(
    readonly dir: string,
    firstExecution = 1,
  ) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR') throw new UsageError(`--outputs ${dir} is not a folder.`);
      throw new UsageError(`--outputs ${dir}: cannot create the folder (${code ?? (e as Error).message}).`);
    }
    if (!statSync(dir).isDirectory()) throw new UsageError(`--outputs ${dir} is not a folder.`);
    this.execution = firstExecution;
  }

  /** Saves the images and files of one finished execution; the next call is the next execution. */
  save(item: CodeInterpreterCallItem): SaveReport {
    const n = this.execution++;
    const report: SaveReport = { saved: [], unsaved: [] };
    let images = 0;
    const full = () => report.saved.length >= MAX_SAVED_PER_EXECUTION;
    for (const o of item.outputs ?? []) {
      if (o.type !== 'display' && o.type !== 'image') continue;
      let image: { mime: string; bytes: Buffer } | { reason: string } | undefined;
      if (o.type === 'display') {
        const shown = displayImageOf(o);
        if (shown) image = { mime: shown.mime, bytes: Buffer.from(shown.data, isBinary(shown.mime) ? 'base64' : 'utf8') };
      } else {
        const url = parseDataUrl(o.url);
        if (!url) image = { reason: 'a remote URL, not downloaded' };
        else if (!mimeInfo(url.mime)?.image) image = { reason: `an unsupported type (${url.mime})` };
        else image = { mime: url.mime, bytes: Buffer.from(url.base64, 'base64') };
      }
      if (!image) continue;
      const label = `image ${++images}`;
      if ('reason' in image) report.unsaved.push({ kind: 'image', name: label, reason: image.reason });
      else if (full()) report.unsaved.push({ kind: 'image', name: label, reason: `over ${MAX_SAVED_PER_EXECUTION} outputs in one execution` });
      else {
        const bytes = image.bytes;
        const saved = this.claim(`exec-${n}-image-${images}${dotExtension(image.mime)}`, (fd) => writeAll(fd, bytes));
        if (typeof saved === 'string') report.saved.push({ kind: 'image', name: saved, bytes: bytes.length });
        else report.unsaved.push({ kind: 'image', name: label, reason: saved.reason });
      }
    }
    // Our runtimes give host paths; a hosted sandbox's path (if any) is inside its container, never read here.
    const hostPaths = runtimeInfo(item.runtime)?.hostPaths === true;
    let files = 0;
    for (const f of filesOf(item)) {
      files++;
      const inline = f.url ? parseDataUrl(f.url) : undefined;
      const name = f.filename || f.path || (f.file_id && !inline) ? fileName(f) : `file-${files}${inline ? (dotExtension(inline.mime) ?? '.bin') : ''}`;
      const why = inline ? undefined : notCopyable(f, hostPaths);
      if (why) report.unsaved.push({ kind: 'file', name, reason: why });
      else if (full()) report.unsaved.push({ kind: 'file', name, reason: `over ${MAX_SAVED_PER_EXECUTION} outputs in one execution` });
      else {
        const wanted = `exec-${n}-${safeFileName(name)}`;
        let result: { name: string; bytes: number } | { reason: string };
        if (inline) {
          const bytes = Buffer.from(inline.base64, 'base64');
          const saved = this.claim(wanted, (fd) => writeAll(fd, bytes));
          result = typeof saved === 'string' ? { name: saved, bytes: bytes.length } : saved;
        } else result = this.copy(f.path!, wanted);
        if ('name' in result) report.saved.push({ kind: 'file', name: result.name, bytes: result.bytes });
        else report.unsaved.push({ kind: 'file', name, reason: result.reason });
      }
    }
    return report;
  }

  /** Copies a host file (never through a symbolic link) to a free name in the folder. */
  private copy(source: string, wanted: string): { name: string; bytes: number } | { reason: string } {
    let src: number;
    try {
      src = openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return {
        reason:
          code === 'ELOOP' ? 'a symbolic link (not followed)' : code === 'ENOENT' ? 'it no longer exists' : `cannot read it (${code ?? (e as Error).message})`,
      };
    }
    try {
      if (!fstatSync(src).isFile()) return { reason: 'not a regular file' };
      let bytes = 0;
      const saved = this.claim(wanted, (fd) => {
        const buf = Buffer.allocUnsafe(1 << 20);
        for (;;) {
          const got = readSync(src, buf, 0, buf.length, null);
          if (got <= 0) break;
          writeAll(fd, buf.subarray(0, got));
          bytes += got;
        }
      });
      return typeof saved === 'string' ? { name: saved, bytes } : saved;
    } finally {
      closeSync(src);
    }
  }

  /** Creates the first free name of `wanted`, `wanted-2`, `wanted-3`… (never an existing file) and writes it. */
  private claim(wanted: string, write: (fd: number) => void): string | { reason: string } {
    const [stem, ext] = splitName(wanted.slice(0, MAX_NAME));
    const names = Array.from({ length: MAX_SUFFIX }, (_, i) => (i === 0 ? stem + ext : `${stem}-${i + 1}${ext}`));
    try {
      // Written once under a temporary name, then linked to the first free name only when whole (never over a file).
      return path.basename(
        writeFirstFree(
          names.map((n) => path.join(this.dir, n)),
          write,
          { mode: 0o644, exclusive: true },
        ),
      );
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return { reason: `${MAX_SUFFIX} files named like ${stem}${ext} exist already` };
      return { reason: `cannot write ${names[0]} (${code ?? (e as Error).message})` };
    }
  }
}

/** Why a file output cannot be copied: the runtime's note, or where it is when there is no host path. */
function notCopyable(f: FileOutput, hostPaths: boolean): string | undefined {
  const note = f.note;
  if (note) return note;
  if (f.path && hostPaths) return undefined;
  if (f.file_id || f.container_id) return "it is in the provider's container (not downloaded)";
  return 'no copy on this machine';
}

/** Most names listed in the "saved …" line. */
const MAX_LISTED = 20;

/**
 * What the person reads about a save: "saved 2 images and 1 file to out: exec-1-image-1.png, …", and a line
 * per output that was not saved, with the reason. No lines when the execution had nothing to save.
 */
export function saveReportLines(report: SaveReport, dirLabel: string): string[] {
  const lines: string[] = [];
  const { saved, unsaved } = report;
  if (saved.length) {
    const images = saved.filter((s) => s.kind === 'image').length;
    const files = saved.length - images;
    const what = [images ? `${images} image${images === 1 ? '' : 's'}` : '', files ? `${files} file${files === 1 ? '' : 's'}` : '']
      .filter(Boolean)
      .join(' and ');
    const names = saved
      .slice(0, MAX_LISTED)
      .map((s) => forDisplay(s.name, { line: true }))
      .join(', ');
    const more = saved.length > MAX_LISTED ? `, and ${saved.length - MAX_LISTED} more` : '';
    lines.push(`saved ${what} to ${dirLabel}: ${names}${more}`);
  }
  for (const u of unsaved.slice(0, MAX_LISTED)) lines.push(`not saved: ${forDisplay(u.name, { line: true })} (${forDisplay(u.reason, { line: true })})`);
  if (unsaved.length > MAX_LISTED) lines.push(`not saved: ${unsaved.length - MAX_LISTED} more`);
  return lines;
}

/** `--outputs DIR` as given, or undefined; an empty value is a usage error. */
export function outputSaverFrom(dir: string | undefined, firstExecution = 1): OutputSaver | undefined {
  if (dir === undefined) return undefined;
  if (!dir.trim()) throw new UsageError('--outputs needs a folder.');
  return new OutputSaver(dir, firstExecution);
}

/** Saves an execution's outputs and says where they went (on stderr with --json, whose stdout is events only). */
export function saveAndReport(saver: OutputSaver, item: CodeInterpreterCallItem, json: boolean): SaveReport {
  const report = saver.save(item);
  const lines = saveReportLines(report, saver.dir);
  if (lines.length) (json ? process.stderr : process.stdout).write(lines.map((l) => forTerminal(l) + '\n').join(''));
  return report;
}
