/**
 * The gateway's `install_packages` for a host (the extension and the CLI alike): an installer for the local
 * runtime's interpreter, or the reason there is none (a runtime that does not install, such as Jupyter's; hosted
 * mode; no one to approve).
 */
import type { EngineConfig } from './resolve';
import { runtimeConfigFrom } from './engine';
import type { GatewayOptions } from '../gateway/gateway';
import { packageInstaller, type InstallApprover } from '../runtime/install/installer';
import { configuredRuntime, MODES } from '../../common/runtimes';

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

const UNTRUSTED =
  'install_packages needs a trusted folder (Workspace Trust in VS Code, `codeact trust` for the CLI): this one is not. Ask the user to trust it, or to install the packages.';

/** Said when nobody can approve an install (the CLI without a terminal). */
const NO_APPROVER =
  "install_packages needs the user's approval, and nobody can approve it here (no terminal to ask in). Ask the user to install the packages, or to run CodeAct interactively.";

export function installOptionsFrom(config: EngineConfig, host: InstallHost): Pick<GatewayOptions, 'installer' | 'installUnavailable'> {
  if (!MODES[config.mode].ourRuntime)
    return { installUnavailable: "install_packages is not available in hosted mode: the provider's sandbox has its own environment." };
  // Only a runtime the catalogue says installs (into the host's interpreter it runs) gets an installer.
  const installs = configuredRuntime(config.runtime).installs;
  if (installs !== true) return { installUnavailable: installs.unavailable };
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
