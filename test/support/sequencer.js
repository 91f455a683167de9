// jest testSequencer: the files known to take longest start first, so the run does not end with one
// worker busy on a 3-minute file while the other sits idle.
//
// jest's own sequencer orders by the durations of the previous run it cached (in its cache
// directory); a fresh clone has no cache and falls back to file size, which put the kill test (the
// longest file) sixth and browser files first. Files in SLOW start first, longest first; every other
// file keeps jest's order (cached durations, else size). Update the list when a file's time changes
// a lot (docs/TESTING.md, "Where the time goes", has the figures).
const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/**
 * Seconds each file took in the near-quiet full run of 2026-11-26 01:27 UTC (851 s, two workers;
 * docs/TESTING.md), before the cuts of the 03:00 UTC change (reload-kill, the kill test and
 * rebuild-under-load do about half their runs now; import-cycles no longer uses madge and left the
 * list). Only the order matters.
 */
const SLOW = {
  'test/platform/int/rebuild-safety.test.ts': 99,
  'test/billing/int/reload-kill.test.ts': 99,
  'test/platform/int/kill.test.ts': 80,
  'test/platform/contract/eventstore.contract.test.ts': 61,
  'test/inference/e2e/fuzz.test.ts': 59,
  'test/platform/e2e/rebuild-under-load.test.ts': 59,
  'test/portal/browser/team.test.ts': 42,
  'test/portal/browser/walk.test.ts': 36,
  'test/cli/int/cli.test.ts': 35,
  'test/platform/int/runner.test.ts': 34,
  'test/platform/e2e/partitioned-projector-faults.test.ts': 33,
  'test/billing/e2e/settlement-faults.test.ts': 33,
};

class SlowFirst extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const known = (t) => SLOW[relative(t.context.config.rootDir, t.path).split('\\').join('/')];
    const slow = ordered.filter((t) => known(t) !== undefined).sort((a, b) => known(b) - known(a));
    return [...slow, ...ordered.filter((t) => known(t) === undefined)];
  }
}

module.exports = SlowFirst;
