import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/coverage/**', 'apps/server/example/data/**', '**/public/**', '**/templates/**', '**/resources/**/*.js'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', queueMicrotask: 'readonly', fetch: 'readonly', AbortController: 'readonly', performance: 'readonly', structuredClone: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly' },
    },
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@svc/*/src', '@svc/*/src/**', '**/packages/*/src/**'], message: 'Import a package by its public name, not its source.' }] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
