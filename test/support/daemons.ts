/**
 * Guest code that leaves processes behind, for the tests that check none survive: a child in a new
 * session (`time.sleep(300)`) and a setsid, double-forked daemon (`time.sleep(301)`), both with `marker`
 * in their command line (what `processesWithCmdline(marker)` finds).
 */
export function daemonLines(marker: string): string[] {
  return [
    'import os, subprocess, sys, time',
    `subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "${marker}"], start_new_session=True)`,
    'if os.fork() == 0:',
    '    os.setsid()',
    '    if os.fork() == 0:',
    `        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(301)", "${marker}"])`,
    '    os._exit(0)',
  ];
}
