// Bundles the tsc output (dist/*.js) into: CommonJS for require(), the browser SDK with
// socket.io-client inside, and the /svc.js runtime (an IIFE the server wraps with the resources).
import commonjs from '@rollup/plugin-commonjs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import terser from '@rollup/plugin-terser';

const browser = () => [nodeResolve({ browser: true, exportConditions: ['browser', 'import', 'default'] }), commonjs(), terser({ format: { comments: false } })];

export default [
  {
    input: 'dist/index.js',
    external: ['socket.io-client'],
    output: { file: 'dist/index.cjs', format: 'cjs', exports: 'named', sourcemap: true },
  },
  {
    input: 'dist/browser.js',
    plugins: browser(),
    output: { file: 'dist/svc-client.browser.js', format: 'es', sourcemap: true },
  },
  {
    input: 'dist/browser/runtime.js',
    plugins: browser(),
    output: { file: 'dist/svc-runtime.js', format: 'iife', name: '__svcRuntime' },
  },
];
