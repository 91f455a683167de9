// One jest run, five projects. swc transforms TypeScript (type-checking is `npm run typecheck`).
const transform = {
  '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
};
const base = { transform, testEnvironment: 'node', setupFiles: ['<rootDir>/test/support/env.ts'] };
// A project's globalSetup runs only when one of its tests is selected: without Redis (or Chromium,
// which browser-setup installs from Debian's packages) one line says so before any test starts.
const needsRedis = { globalSetup: '<rootDir>/test/support/needs-redis.js' };
module.exports = {
  // A limit for a hung test, not a speed target: every test waits on its own conditions. 30 s (and
  // the 60 s some files set) was passed by working tests on a machine at load 15-25 (docs/TESTING.md).
  testTimeout: 120_000,
  // At least two workers: jest's default (cores - 1) runs one file at a time on a 2-core machine, and most files
  // spend much of their time waiting on child processes, Redis, PostgreSQL or Chromium, so a second
  // worker fills that time (docs/TESTING.md, "Where the time goes").
  maxWorkers: Math.max(2, require('node:os').availableParallelism() - 1),
  // Known-slow files first, so the run does not end on one long file.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // Uses the local PostgreSQL when TEST_DATABASE_URL is unset and one answers; else one line says the rows are skipped.
  globalSetup: '<rootDir>/test/support/global-setup.js',
  // Fails the run when it left Redis keys behind (naming the test prefix), then stops the test cluster.
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/*/unit/**/*.test.ts'] },
    { ...base, ...needsRedis, displayName: 'int', testMatch: ['<rootDir>/test/*/int/**/*.test.ts'] },
    { ...base, ...needsRedis, displayName: 'contract', testMatch: ['<rootDir>/test/*/contract/**/*.test.ts'] },
    { ...base, ...needsRedis, displayName: 'e2e', testMatch: ['<rootDir>/test/*/e2e/**/*.test.ts'] },
    {
      ...base,
      globalSetup: '<rootDir>/test/support/browser-setup.js',
      displayName: 'browser',
      testMatch: ['<rootDir>/test/*/browser/**/*.test.ts'],
    },
  ],
};
