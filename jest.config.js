// One jest run, five projects. swc transforms TypeScript (type-checking is `npm run typecheck`).
const transform = {
  '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
};
const base = { transform, testEnvironment: 'node', setupFiles: ['<rootDir>/test/support/env.ts'] };
module.exports = {
  testTimeout: 30000,
  // Prints the one line saying the PostgreSQL rows were skipped, when TEST_DATABASE_URL is unset.
  globalSetup: '<rootDir>/test/support/pg-skip-note.js',
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/*/unit/**/*.test.ts'] },
    { ...base, displayName: 'int', testMatch: ['<rootDir>/test/*/int/**/*.test.ts'] },
    { ...base, displayName: 'contract', testMatch: ['<rootDir>/test/*/contract/**/*.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/*/e2e/**/*.test.ts'] },
    { ...base, displayName: 'browser', testMatch: ['<rootDir>/test/*/browser/**/*.test.ts'] },
  ],
};
