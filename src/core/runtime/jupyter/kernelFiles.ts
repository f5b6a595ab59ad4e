/**
 * The files a run wrote in the kernel's working directory, copied to the host through the server's contents
 * API (`/api/contents`), within the same caps as the local guest. The kernel reports the files (relative to
 * its working directory) and that directory; where it sits under the server's root is found once per kernel
 * and directory by asking the contents API for the first file at each suffix of the directory. A server
 * without a contents API (Kernel Gateway, Enterprise Gateway) lists the files with where they are.
 */
import type { FileOutput } from '../../../common/events';
import { formatBytes } from '../../../common/format';
import { ArtifactStore, safeRelativePath } from '../artifacts';
import type { RuntimeLimits } from '../types';
import type { KernelRestClient } from './connection';

export interface ReportedFiles {
  cwd: string;
  files: { path: string; size: number }[];
}

/** The kernel's files report, checked (it is untrusted input). */
export function reportedFiles(raw: { cwd?: unknown; files?: unknown }, max: number): ReportedFiles | undefined {
  if (typeof raw.cwd !== 'string' || !raw.cwd.startsWith('/') || raw.cwd.length > 4096 || !Array.isArray(raw.files) || !raw.files.length) return undefined;
  const files: ReportedFiles['files'] = [];
  for (const f of raw.files.slice(0, max)) {
    const rel = safeRelativePath((f as { path?: unknown })?.path);
    const size = (f as { size?: unknown })?.size;
    if (rel && Number.isSafeInteger(size) && (size as number) >= 0) files.push({ path: rel, size: size as number });
  }
  return files.length ? { cwd: raw.cwd, files } : undefined;
}

const MAX_SUFFIXES = 12;
/** Where each kernel's working directory is under the server's root (kernel id + directory -> prefix). */
const prefixes = new Map<string, string | null>();

async function serverPrefix(rest: KernelRestClient, kernelId: string, report: ReportedFiles): Promise<string | null> {
  const key = `${kernelId}\0${report.cwd}`;
  if (prefixes.has(key)) return prefixes.get(key)!;
  const parts = report.cwd.split('/').filter(Boolean);
  const probe = report.files[0];
  let found: string | null = null;
  for (let n = 0; n <= Math.min(parts.length, MAX_SUFFIXES); n++) {
    const prefix = parts.slice(parts.length - n).join('/');
    const model = await rest.fileModel(prefix ? `${prefix}/${probe.path}` : probe.path, undefined).catch(() => undefined);
    if (model && model.size === probe.size) {
      found = prefix;
      break;
    }
  }
  if (prefixes.size > 1000) prefixes.clear();
  prefixes.set(key, found);
  return found;
}

/** Copies the reported files to the host; one `file` output each, with a note where one could not be copied. */
export async function collectKernelFiles(
  rest: KernelRestClient,
  kernelId: string,
  report: ReportedFiles,
  limits: RuntimeLimits,
  store: ArtifactStore,
  itemId: string,
): Promise<FileOutput[]> {
  const prefix = await serverPrefix(rest, kernelId, report);
  const out: FileOutput[] = [];
  let total = 0;
  for (const f of report.files) {
    if (prefix === null) {
      out.push(
        ArtifactStore.output(
          f.path,
          f.size,
          undefined,
          `it is on the kernel's machine at ${report.cwd}/${f.path}; this server has no contents API to copy it from`,
        ),
      );
      continue;
    }
    if (f.size > limits.maxFileBytes || total + f.size > limits.maxFilesTotalBytes) {
      out.push(
        ArtifactStore.output(
          f.path,
          f.size,
          undefined,
          `too large to copy out (${formatBytes(f.size)}; the limit is ${formatBytes(limits.maxFileBytes)} a file and ${formatBytes(limits.maxFilesTotalBytes)} an execution)`,
        ),
      );
      continue;
    }
    try {
      // Read within what may still be copied: a server that sends more is cut off as it streams.
      const room = Math.min(limits.maxFileBytes, limits.maxFilesTotalBytes - total);
      const model = await rest.fileModel(prefix ? `${prefix}/${f.path}` : f.path, room);
      if (!model || model.format !== 'base64' || typeof model.content !== 'string') throw new Error('the server did not send its contents');
      const data = Buffer.from(model.content, 'base64');
      if (data.length > limits.maxFileBytes || total + data.length > limits.maxFilesTotalBytes)
        throw new Error(`it grew to ${formatBytes(data.length)}, over the limit`);
      total += data.length;
      out.push(ArtifactStore.output(f.path, data.length, await store.write(itemId, f.path, data)));
    } catch (err) {
      out.push(ArtifactStore.output(f.path, f.size, undefined, `it could not be copied from the server: ${(err as Error).message}`));
    }
  }
  return out;
}
