// The first lines of a child node's script that imports our TypeScript sources: Node strips the
// types itself; this hook maps the `.js` specifiers of our sources to their `.ts` files.
export const TS_SOURCES_HOOK = `
import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      return next(specifier.slice(0, -3) + '.ts', context);
    }
    return next(specifier, context);
  },
});
`;
