#!/usr/bin/env node
// Checks eslint-size-allowlist.json (issue 39): each entry names a source file that still exceeds
// the size limit it is listed for. A file brought under a limit must leave the list, so that the
// list only shrinks (eslint.config.js caps each listed file at its entry, so none grows).
//   node tools/check-size-allowlist.mjs
import { readFileSync, existsSync } from 'node:fs';
import { ESLint } from 'eslint';

const root = new URL('..', import.meta.url);
const { files } = JSON.parse(readFileSync(new URL('eslint-size-allowlist.json', root), 'utf8'));
const { SIZE_LIMITS } = await import(new URL('eslint.config.js', root).href);
const eslint = new ESLint({
  cwd: new URL('.', root).pathname,
  overrideConfigFile: true,
  overrideConfig: [
    { files: ['**/*.ts', '**/*.tsx'], languageOptions: { parser: (await import('typescript-eslint')).parser, parserOptions: { ecmaFeatures: { jsx: true } } } },
    { files: ['**/*.ts', '**/*.tsx'], rules: { 'max-lines': ['error', { max: SIZE_LIMITS.lines, skipBlankLines: false, skipComments: false }], 'max-lines-per-function': ['error', { max: SIZE_LIMITS.functionLines, skipBlankLines: true, skipComments: true, IIFEs: true }] } },
  ],
});
const problems = [];
for (const [file, size] of Object.entries(files)) {
  if (!existsSync(new URL(file, root))) {
    problems.push(`${file}: no such file; remove its entry`);
    continue;
  }
  const [result] = await eslint.lintFiles([file]);
  const over = new Set(result.messages.map((m) => m.ruleId));
  if (size.lines !== undefined && !over.has('max-lines')) problems.push(`${file}: no longer over ${SIZE_LIMITS.lines} lines; remove "lines" from its entry`);
  if (size.functionLines !== undefined && !over.has('max-lines-per-function')) problems.push(`${file}: no function over ${SIZE_LIMITS.functionLines} lines any more; remove "functionLines" from its entry`);
}
if (problems.length > 0) {
  console.error(`eslint-size-allowlist.json only shrinks:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`eslint-size-allowlist.json: ${Object.keys(files).length} files, each still over its limit`);
