// Bundles the tsc output (dist/*.js) into: the browser SDK with
// socket.io-client inside, and the /svc.js runtime (an IIFE the server wraps with the resources).
import commonjs from '@rollup/plugin-commonjs';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import terser from '@rollup/plugin-terser';

const browser = () => [nodeResolve({ browser: true, exportConditions: ['browser', 'import', 'default'] }), commonjs(), terser({ format: { comments: false } })];

export default [
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
