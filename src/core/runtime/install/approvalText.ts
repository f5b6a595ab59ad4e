/** The approval's facts as the transcript event carries them (what the card, dialog and prompt show: common/installCommand). */
import type { InstallRequestInfo } from '../../../common/events';
import type { InstallApproval } from './installer';

export function installInfo(a: InstallApproval): InstallRequestInfo {
  return {
    packages: a.packages,
    python: a.python,
    environment: a.environment,
    tool: a.tool,
    install_args: a.installArgs,
    ...(a.createVenv ? { create_venv: a.createVenv, refused: a.refused } : {}),
  };
}
