/**
 * The gateway's `install_packages` for a host (the extension and the CLI alike): an installer for the local
 * runtime's interpreter, or the reason there is none (the Jupyter runtime, hosted mode, no one to approve).
 */
import type { EngineConfig } from './resolve';
import { runtimeConfigFrom } from './engine';
import type { GatewayOptions } from '../gateway/gateway';
import { packageInstaller, type InstallApprover } from '../runtime/install/installer';

interface InstallHost {
  /** The folder is trusted (Workspace Trust, `codeact trust`): without it nothing is installed. */
  trusted: boolean;
  /** The folder a `.venv` may be made in. */
  folder?: string;
  /** The interpreter the folder's runtime runs, as the host resolved it (VS Code: with the Python extension's choice); else the runtime config's. */
  python?: string;
  /** Asks the person; undefined: nobody can (the call is refused, saying so). */
  approve?: InstallApprover;
  /** A `.venv` was made: the host's next session runs it. */
  switchEnvironment?(venvPython: string): PromiseLike<void> | void;
  log?(line: string): void;
}

/**
 * Why the Jupyter runtime has no install_packages: the kernel's Python is the Jupyter server's, which may run
 * on another machine whose environment and network the host cannot see, so "pip outside the sandbox, into
 * the session's environment" has no meaning there. Its code runs unsandboxed in the kernel, where the user
 * installs as they do in any notebook.
 */
export const JUPYTER_INSTALL_UNAVAILABLE =
  "install_packages is not available on the Jupyter runtime: the kernel runs in the Jupyter server's own Python environment (possibly on another machine), " +
  'which CodeAct does not manage. Ask the user to install the package into that kernel\'s environment (for example "%pip install name" in a notebook on that kernel).';

const UNTRUSTED =
  'install_packages needs a trusted folder (Workspace Trust in VS Code, `codeact trust` for the CLI): this one is not. Ask the user to trust it, or to install the packages.';

/** Said when nobody can approve an install (the CLI without a terminal). */
const NO_APPROVER =
  "install_packages needs the user's approval, and nobody can approve it here (no terminal to ask in). Ask the user to install the packages, or to run CodeAct interactively.";

export function installOptionsFrom(config: EngineConfig, host: InstallHost): Pick<GatewayOptions, 'installer' | 'installUnavailable'> {
  if (config.mode === 'hosted')
    return { installUnavailable: "install_packages is not available in hosted mode: the provider's sandbox has its own environment." };
  if (config.runtime === 'jupyter') return { installUnavailable: JUPYTER_INSTALL_UNAVAILABLE };
  if (!host.trusted) return { installUnavailable: UNTRUSTED };
  if (config.defaultApproval === 'deny')
    return { installUnavailable: 'install_packages is off: codeact.approval.default is "deny". Ask the user to install the packages.' };
  if (!host.approve) return { installUnavailable: NO_APPROVER };
  // The interpreter the session runs: the local runtime's, as the runtime config resolves it.
  const python =
    host.python ?? runtimeConfigFrom(config, { workspace: host.folder, longLived: false, trusted: host.trusted }).local?.python ?? config.python ?? 'python3';
  return {
    installer: packageInstaller({
      python,
      folder: host.folder,
      installArgs: config.installArgs,
      approve: host.approve,
      switchEnvironment: host.switchEnvironment,
      log: host.log,
    }),
  };
}
