/**
 * The one Python guest library, embedded in the bundle (esbuild's text loader; tests load the same
 * files through test/support/pyText.cjs). The local runtime writes the files once per host process into
 * a private folder and runs codeact_guest.py from there; the Jupyter runtime sends the library,
 * discovery and codeact_kernel.py to each kernel once (KERNEL_MODULES).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import checkpointSource from './codeact_checkpoint.py';
import discoverySource from './codeact_discovery.py';
import displaySource from './codeact_display.py';
import filesSource from './codeact_files.py';
import formatsSource from './codeact_formats.py';
import framesSource from './codeact_frames.py';
import guestSource from './codeact_guest.py';
import hooksSource from './codeact_hooks.py';
import installSource from './codeact_install.py';
import jobsSource from './codeact_jobs.py';
import jobToolsSource from './codeact_jobtools.py';
import keeperSource from './codeact_keeper.py';
import kernelSource from './codeact_kernel.py';
import libSource from './codeact_lib.py';
import mplSource from './codeact_mpl.py';
import outputSource from './codeact_output.py';
import outputsSource from './codeact_outputs.py';
import procSource from './codeact_proc.py';
import valuesSource from './codeact_values.py';
import zygoteSource from './codeact_zygote.py';
import { ownTempDir } from '../local/tempFolders';

const GUEST_FILES: Readonly<Record<string, string>> = {
  'codeact_lib.py': libSource,
  'codeact_values.py': valuesSource,
  'codeact_guest.py': guestSource,
  'codeact_output.py': outputSource,
  'codeact_outputs.py': outputsSource,
  'codeact_proc.py': procSource,
  'codeact_zygote.py': zygoteSource,
  'codeact_discovery.py': discoverySource,
  'codeact_formats.py': formatsSource,
  'codeact_display.py': displaySource,
  'codeact_hooks.py': hooksSource,
  'codeact_mpl.py': mplSource,
  'codeact_files.py': filesSource,
  'codeact_frames.py': framesSource,
  'codeact_install.py': installSource,
  'codeact_jobs.py': jobsSource,
  'codeact_jobtools.py': jobToolsSource,
  'codeact_checkpoint.py': checkpointSource,
  'codeact_keeper.py': keeperSource,
};

/**
 * What a Jupyter kernel gets, in import order: module name, the file name its tracebacks show, source.
 * The library first (values, then lib; the display modules, which import values; the matplotlib backend,
 * which imports nothing until matplotlib asks for it; files), then discovery, then the kernel glue as
 * `__codeact__`.
 */
export const KERNEL_MODULES: ReadonlyArray<readonly [name: string, filename: string, source: string]> = [
  ['codeact_values', '<codeact_values>', valuesSource],
  ['codeact_lib', '<codeact_lib>', libSource],
  ['codeact_formats', '<codeact_formats>', formatsSource],
  ['codeact_display', '<codeact_display>', displaySource],
  ['codeact_hooks', '<codeact_hooks>', hooksSource],
  ['codeact_mpl', '<codeact_mpl>', mplSource],
  ['codeact_files', '<codeact_files>', filesSource],
  ['codeact_discovery', '<codeact_discovery>', discoverySource],
  ['codeact_outputs', '<codeact_outputs>', outputsSource],
  ['codeact_install', '<codeact_install>', installSource],
  ['__codeact__', '<codeact_kernel>', kernelSource],
];

/** A short hash of what a kernel gets, so a kernel holding an older copy is set up again. */
export const LIB_VERSION = KERNEL_MODULES.reduce((h, [, , source]) => h.update(source), createHash('sha256'))
  .digest('hex')
  .slice(0, 12);

let dir: string | undefined;

/**
 * The folder holding the local guest's files: private to this user (0700), written once per host
 * process, removed when it exits. Neither the workspace nor the code's working directory can shadow it.
 */
export function guestDir(): string {
  if (dir) return dir;
  const made = ownTempDir('guest');
  chmodSync(made, 0o700);
  for (const [name, text] of Object.entries(GUEST_FILES)) writeFileSync(path.join(made, name), text, { mode: 0o600 });
  chmodSync(made, 0o500);
  dir = made;
  process.once('exit', () => {
    try {
      chmodSync(made, 0o700);
      rmSync(made, { recursive: true, force: true });
    } catch {
      // Best effort at exit.
    }
  });
  return made;
}

/** The interpreters the library has been compiled for, one after the other (each opens the folder for writing). */
const compiled = new Set<string>();
let compiling: Promise<void> = Promise.resolve();

/**
 * The guest's folder, with the library's bytecode for `python` put in its `__pycache__` in the
 * background (once per interpreter and host process). The folder is read-only to the guest, so
 * without this every cold start compiled the ~2,000 lines again (about 6 ms); a sandbox mounts the
 * folder elsewhere, and Python still finds the bytecode beside the source and checks it against the
 * source's size and time. Never fails: without bytecode the interpreter compiles as before.
 */
export function guestDirFor(python: string): string {
  const d = guestDir();
  if (!compiled.has(python)) {
    compiled.add(python);
    compiling = compiling.then(() => compileLibrary(python, d));
  }
  return d;
}

function compileLibrary(python: string, folder: string): Promise<void> {
  const files = Object.keys(GUEST_FILES).map((f) => path.join(folder, f));
  const script = 'import sys, py_compile\nfor f in sys.argv[1:]:\n    py_compile.compile(f, doraise=False, quiet=2)';
  return new Promise<void>((resolve) => {
    try {
      chmodSync(folder, 0o700);
    } catch {
      return resolve();
    }
    execFile(python, ['-I', '-c', script, ...files], { timeout: 60_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, () => {
      try {
        chmodSync(folder, 0o500);
      } catch {}
      resolve();
    });
  });
}
