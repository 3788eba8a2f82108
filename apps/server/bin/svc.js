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

// The child also starts with a first old-generation limit of 128 MB, unless the heap's size was
// chosen already (here or in NODE_OPTIONS). With node's default, V8 marks the old generation again
// as soon as a collection ends while svc serves (its young generation is larger than the room
// left below the first limit): the bench measured 1.80x -> 1.10x a bare handler's CPU for a 5 MB
// upload and about 0.9x CPU for a GET by id and a POST (bench/RESULTS.md, "The launcher's heap
// flag"). Garbage may now grow to 128 MB before the first full collection.
const heapChosen = /--(initial|max)-(old-space|heap)-size/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);
const heapFlags = heapChosen ? [] : ['--initial-old-space-size=128'];

if (!process.execArgv.includes('--no-node-snapshot')) {
  const args = ['--no-node-snapshot', ...heapFlags, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  const { main } = await import('../dist/cli.js');
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
