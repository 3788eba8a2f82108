import { fileURLToPath } from 'node:url';
import { BUILT, builtinSources } from './node-builtins-bundle.js';

// How a script process (script-host-main.ts) is started: by the pool (script-pool.ts) and by the
// check of an app's script modules (check-script-modules.ts).

/** Under vitest, a script process runs the sources: its `.js` imports resolve to the `.ts` files beside them. */
const SOURCE_HOOKS = `
import { registerHooks } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
registerHooks({
  resolve(specifier, context, next) {
    if (context.parentURL && context.parentURL.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
      const url = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
      if (existsSync(fileURLToPath(url))) return next(url.href, context);
    }
    return next(specifier, context);
  },
});`;

/** What a script process's `init` carries of the built-ins: nothing when it reads them from the built files. */
export function builtinsForInit(): { builtins?: Readonly<Record<string, string>> } {
  return BUILT ? {} : { builtins: builtinSources() };
}

/** How to start a script process: from the built files, or from the sources under vitest. */
export function entryPoint(): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(new URL(fromSource ? './script-host-main.ts' : './script-host-main.js', import.meta.url));
  const execArgv = ['--no-node-snapshot'];
  if (fromSource) {
    execArgv.push('--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--import', `data:text/javascript,${encodeURIComponent(SOURCE_HOOKS)}`);
  }
  return { file, execArgv };
}
