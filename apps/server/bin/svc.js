#!/usr/bin/env node
// The svc launcher. isolated-vm needs V8's startup snapshot off, so the CLI runs under
// --no-node-snapshot: when this process was started without it, run the CLI in a child that has it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Checked first: on an older Node, isolated-vm fails later with "No native build was found".
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `svc needs Node.js 22.12 or newer (24 LTS recommended); this is Node ${process.versions.node}.\n` +
      'Install Node 24 (https://nodejs.org, or nvm install 24 / fnm install 24) and run svc with it.\n',
  );
  process.exit(1);
}

if (!process.execArgv.includes('--no-node-snapshot')) {
  const child = spawn(process.execPath, ['--no-node-snapshot', ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  const { main } = await import('../dist/cli.js');
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
