/**
 * How a long-running command (`codeact mcp serve`, `codeact acp`) stops, armed before anything starts: the first
 * SIGINT or SIGTERM resolves `stopped` (the command ends its sessions and returns); a second one exits at once.
 */
interface StopSignals {
  stopped: Promise<void>;
  /** A signal came already. */
  readonly signalled: boolean;
  /** The command is over: the signals go back to Node's defaults. */
  disarm(): void;
}

export function armStopSignals(): StopSignals {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) process.exit(130);
    stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stopped,
    get signalled() {
      return signals > 0;
    },
    disarm() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
