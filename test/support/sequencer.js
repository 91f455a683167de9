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
 * Seconds each file took in one full run at load 15-30 on 2 cores (docs/TESTING.md; a quiet machine
 * takes several times less). Only the order matters.
 */
const SLOW = {
  'test/billing/int/reload-kill.test.ts': 366,
  'test/platform/int/rebuild-safety.test.ts': 218,
  'test/cli/int/cli.test.ts': 200,
  'test/portal/browser/policy.test.ts': 196,
  'test/policy/e2e/usage-policy.test.ts': 155,
  'test/platform/e2e/split-roles.test.ts': 140,
  'test/platform/e2e/openapi.test.ts': 113,
  'test/billing/e2e/statements.test.ts': 108,
  'test/accounts/e2e/auth.test.ts': 94,
  'test/portal/browser/walk-findings.test.ts': 91,
  'test/platform/contract/eventstore.contract.test.ts': 84,
  'test/portal/browser/portal-details.test.ts': 84,
  'test/portal/browser/team.test.ts': 76,
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
