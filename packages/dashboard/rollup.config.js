// Bundles the dashboard's web app (Preact + CodeMirror, TypeScript + JSX through sucrase) into
// dist/app: index.html, app.css and one app.js module. Type checking is `pnpm typecheck`.
import { readFileSync } from 'node:fs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import sucrase from '@rollup/plugin-sucrase';
import terser from '@rollup/plugin-terser';

/** Copies the page and its stylesheet next to the bundle. */
const staticFiles = () => ({
  name: 'static-files',
  generateBundle() {
    for (const file of ['index.html', 'app.css']) this.emitFile({ type: 'asset', fileName: file, source: readFileSync(`src/app/${file}`, 'utf8') });
  },
});

export default {
  input: 'src/app/main.tsx',
  plugins: [
    nodeResolve({ browser: true, extensions: ['.ts', '.tsx', '.js', '.mjs'] }),
    sucrase({ transforms: ['typescript', 'jsx'], jsxRuntime: 'automatic', jsxImportSource: 'preact', production: true, disableESTransforms: true }),
    terser({ format: { comments: false } }),
    staticFiles(),
  ],
  output: { dir: 'dist/app', entryFileNames: 'app.js', format: 'es', sourcemap: false },
};
