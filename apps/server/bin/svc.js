#!/usr/bin/env node
// The svc launcher. isolated-vm needs V8's startup snapshot off, so the CLI runs under
// --no-node-snapshot: when this process was started without it, run the CLI in a child that has it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

if (!process.execArgv.includes('--no-node-snapshot')) {
  const child = spawn(process.execPath, ['--no-node-snapshot', ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  const { main } = await import('../dist/cli.js');
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
