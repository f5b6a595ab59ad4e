// Mocha's spec reporter, followed by one line that CI reads: "N passed, N failed, N skipped in N s".
// The time is the wall time of the whole mocha process, loading the test files (tsx) included.
'use strict';
const Mocha = require('mocha');
const { Spec } = Mocha.reporters;
const { EVENT_RUN_END } = Mocha.Runner.constants;

class TotalsReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats ?? this.stats;
      // Printed after Spec's epilogue so that it is the very last line.
      process.nextTick(() => process.stdout.write(`${s.passes} passed, ${s.failures} failed, ${s.pending} skipped in ${process.uptime().toFixed(1)} s\n`));
    });
  }
}
module.exports = TotalsReporter;
