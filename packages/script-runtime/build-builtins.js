// Build step of @svc/script-runtime (after tsc): writes dist/node-builtins.json, the Node
// built-ins event scripts get as pure JavaScript (see src/internal/node-builtins-bundle.ts).
import { writeFileSync } from 'node:fs';
import { bundleBuiltins } from './dist/internal/node-builtins-bundle.js';

writeFileSync(new URL('./dist/node-builtins.json', import.meta.url), JSON.stringify(bundleBuiltins()));
