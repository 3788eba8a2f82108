import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { expect } from 'vitest';

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

/** What a writer child acknowledged before it was killed: the ids it inserted, the highest counter it saw. */
export interface Acknowledged {
  inserted: string[];
  counter: number;
}

/**
 * Runs `script` (a writer printing `insert <id>` and `inc <n>` lines once each write is
 * acknowledged) in a child node with `env` added, kills it with SIGKILL after `killAfter`
 * acknowledged inserts, and answers what it acknowledged; fails unless the kill ended it.
 */
export async function writeUntilKilled(script: string, env: Record<string, string>, killAfter = 400): Promise<Acknowledged> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((done) => child.on('exit', (_code, signal) => done(signal)));
  const inserted: string[] = [];
  let counter = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    const [kind, value = ''] = line.split(' ');
    if (kind === 'insert') inserted.push(value);
    if (kind === 'inc') counter = Math.max(counter, Number(value));
    if (inserted.length === killAfter) child.kill('SIGKILL');
  }
  expect(await exited, stderr).toBe('SIGKILL');
  return { inserted, counter };
}
