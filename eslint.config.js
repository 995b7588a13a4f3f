// Lint rules for Sluice: a small set of correctness rules from eslint and typescript-eslint; no style rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tap/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // Mail code matches control characters on purpose (CR/LF injection, NUL, RFC 5322 §2.2 field bodies).
      'no-control-regex': 'off',
      // Unused bindings are dead code; a leading underscore marks one kept for its position.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // The storage seam is asynchronous: a promise left unawaited is a write that may not have happened yet (or a
    // failure nobody hears of), and a promise used as a condition is always true. Typed rules, so they see the ports.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      // tap's t.test() returns a promise tap itself awaits: the one known-safe floating promise.
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true, allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }] }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // The dependency-cruiser config is CommonJS, as that tool expects.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // Tests poke at untyped JSON bodies and library internals; `any` there is a convenience, not a hole in the product.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
