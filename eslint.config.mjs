// ESLint over src/, test/, bin/, portal/ and the config files (`npm run lint`; docs/TESTING.md).
// Formatting is Prettier's (.prettierrc.json): eslint-config-prettier turns off every rule it owns.
// No type-aware rules: with typescript-eslint's promise rules over src/ alone the run took ~60 s of
// CPU instead of ~30 s (docs/TESTING.md, "Lint and format").
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['**/dist/', 'coverage/', 'data/', 'test-results/', 'test/support/generated/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a value left out on purpose: `{ _gen, ...rest }`, `(_req, res)`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // An `async function*` cannot be an arrow function, so a generator over the store names it.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['store', 'self'] }],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read untyped JSON bodies and browser globals (page.evaluate): `any` there is the honest type.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The two classic hook rules; the plugin's React Compiler rules assume React's compiler, and the
    // portal is Preact without it.
    files: ['portal/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'warn' },
    languageOptions: { globals: { ...globals.browser } },
  },
  prettier,
);
