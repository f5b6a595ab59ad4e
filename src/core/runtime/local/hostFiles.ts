/**
 * The files in the workspace that run on the host: the local runtime's interpreter when it lies there, and
 * for each tool whose source kind declares a program it launches (`launches` of each kind's descriptor in
 * core/tools/toolSources.ts: a `command` tool, a stdio `mcp` server), its program (looked up on PATH when it is a bare name) and every argument that
 * names a path inside the workspace, resolved from the folder the tool runs in. With
 * `codeact.sandbox.mountWorkspace: "readwrite"` the sandbox keeps them read-only (workspaceMount.ts):
 * otherwise code could rewrite `tools/inventory.py` and then call the tool, and the rewrite would run
 * on the host, outside the sandbox.
 *
 * `program` marks the program and scripts (by their extension): their folder is what the sandbox
 * protects (an interpreter imports the script's neighbours first). Other paths are protected themselves.
 * The declarations are untrusted input: every list and string is bounded.
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { isUnder } from '../../util/paths';
import type { HostLaunch } from '../../../common/tools';
import type { HostRunFile } from './workspaceMount';

export type { HostRunFile } from './workspaceMount';

const SCRIPT_EXTENSIONS = /\.(py|pyw|sh|bash|zsh|js|mjs|cjs|ts|mts|rb|pl|php|lua|r|jl|ps1)$/i;
const MAX_DECLARATIONS = 1000;
const MAX_ARGS = 256;
const MAX_PATHS = 512;
const MAX_ARG_LENGTH = 4096;

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Where a bare program name is found on PATH (resolved from `cwd`), as the host's spawn finds it. */
export function onPath(name: string, cwd: string, envPath: string): string | undefined {
  for (const dir of envPath.split(path.delimiter).slice(0, 64)) {
    const candidate = path.resolve(cwd, dir || '.', name);
    if (isFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The paths inside `workspace` that the tools run on the host, sorted, without duplicates: from what each
 * tool's source kind declares it launches (`launches` of its descriptor, read by `hostLaunches` in core/tools/toolSources.ts).
 */
export function toolHostPaths(launches: readonly HostLaunch[], workspace: string, envPath = process.env.PATH ?? ''): HostRunFile[] {
  const out = new Map<string, HostRunFile>();
  const add = (p: string, program: boolean, tool: string) => {
    if (out.size >= MAX_PATHS || !isUnder(p, workspace) || p === workspace) return;
    const had = out.get(p);
    if (!had) out.set(p, { path: p, program, tool });
    else had.program ||= program;
  };
  for (const launch of launches.slice(0, MAX_DECLARATIONS)) {
    const tool = launch.tool;
    const cwd = launch.cwd ? path.resolve(workspace, launch.cwd) : workspace;
    launch.argv.slice(0, MAX_ARGS).forEach((arg, i) => {
      if (typeof arg !== 'string' || !arg || arg.length > MAX_ARG_LENGTH) return;
      if (i === 0) {
        const program = arg.includes('/') ? path.resolve(cwd, arg) : onPath(arg, cwd, envPath);
        if (program) add(program, true, tool);
        return;
      }
      // "--config=tools/x.json": the value; other options and URLs are not paths.
      const value = arg.startsWith('-') ? (arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : '') : arg;
      if (!value || value.includes('://')) return;
      const resolved = path.resolve(cwd, value);
      const script = SCRIPT_EXTENSIONS.test(value);
      if (value.includes('/') || script || exists(resolved)) add(resolved, script, tool);
    });
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The runtime's own program on the host: the local guest's interpreter, when it lies in the workspace (the
 * folder's `.venv` or `venv`, a `codeact.python.path` there, the Python extension's choice there). The host
 * probes it, launches the guest with it and runs pip with it, so the sandbox keeps its environment read-only,
 * and a placeholder where it does not exist yet.
 */
function interpreterHostPaths(python: string | undefined, workspace: string): HostRunFile[] {
  if (!python || !path.isAbsolute(python) || !isUnder(python, workspace) || python === workspace) return [];
  return [{ path: python, program: true, tool: '', by: `the folder's interpreter ${path.relative(workspace, python)}`, placeholder: true }];
}

/** Everything in `workspace` that runs on the host: the declared tools' files and the interpreter's. */
export function hostRunPaths(launches: readonly HostLaunch[], workspace: string, python?: string, envPath = process.env.PATH ?? ''): HostRunFile[] {
  return [...interpreterHostPaths(python, workspace), ...toolHostPaths(launches, workspace, envPath)];
}
