/**
 * Short labels for what an execution showed and wrote, as the CLI and the editor's inline result say them:
 * "2 images, 1 file", "out.csv, 1.2 KB". Pure functions over plain data (no Node, no DOM).
 */
import { imageCount } from './displays';
import { clip } from './format';
import type { CodeInterpreterCallItem, FileOutput } from './events';

/** 812 -> "812 bytes", 1234 -> "1.2 KB", 5_300_000 -> "5.1 MB": an approximate size, for people. */
export function approxBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '';
  if (n < 1024) return `${Math.round(n)} byte${Math.round(n) === 1 ? '' : 's'}`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(1)} GB`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The files an execution wrote, in order. */
export function filesOf(item: CodeInterpreterCallItem): FileOutput[] {
  return (item.outputs ?? []).filter((o): o is FileOutput => o.type === 'file');
}

/** "1 image", "3 images, 2 files", "1 file"; '' when the execution showed no image and wrote no file. */
export function outputCountsLabel(item: CodeInterpreterCallItem): string {
  const images = imageCount(item);
  const files = filesOf(item).length;
  return [images ? plural(images, 'image') : '', files ? plural(files, 'file') : ''].filter(Boolean).join(', ');
}

/** Longest file name shown. */
const MAX_NAME = 200;

/**
 * The name a file output goes by: its file name (a path relative to the code's working directory, as
 * `sub/out.csv`), else the last part of its host path, else its provider id, else "file".
 */
export function fileName(f: FileOutput): string {
  const name =
    (typeof f.filename === 'string' && f.filename) || (typeof f.path === 'string' && f.path.split(/[\\/]/).filter(Boolean).pop()) || f.file_id || 'file';
  return clip(name, MAX_NAME);
}

/** "out.csv, 1.2 KB" (the size when known). */
export function fileLabel(f: FileOutput): string {
  const size = typeof f.bytes === 'number' ? approxBytes(f.bytes) : '';
  return size ? `${fileName(f)}, ${size}` : fileName(f);
}
