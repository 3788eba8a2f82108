// The helper processes of a bench run (its server.js and clients.js), driven over IPC: each is
// started pinned to a core when taskset and a second core exist, asked commands, and killed by PID
// at the end or on SIGINT/SIGTERM. Used by bench/live and bench/realtime.
//
// The protocol: the runner sends {cmd, ...extra}; the helper answers {cmd, result} or {cmd, error}
// and sends {cmd: 'ready', result} once when it has started.
import { killAll, pinning, spawnNode } from './procs.js';

let pinned;

/** True when helpers are pinned to the cores they are given; says so once on stderr when not. */
export function helpersPinned() {
  if (pinned === undefined) {
    pinned = pinning() !== undefined;
    if (!pinned) process.stderr.write('note: taskset or a second core is missing: processes are not pinned\n');
  }
  return pinned;
}

let signalsHooked = false;

/**
 * Starts `node script ...args` (pinned to `core`) with an IPC channel. `ask(cmd, extra)` sends the
 * command and resolves with the helper's answer to it; `ready` resolves with its first message.
 */
export function startHelper(script, args, core) {
  // A runner with handlers of its own (stopAllOnSignals) kills its helpers there: exiting here
  // first would leave its other processes running and its folders behind.
  if (!signalsHooked && process.listenerCount('SIGINT') === 0 && process.listenerCount('SIGTERM') === 0) {
    signalsHooked = true;
    process.on('SIGINT', () => (killHelpers(), process.exit(130)));
    process.on('SIGTERM', () => (killHelpers(), process.exit(143)));
  }
  const child = spawnNode(['--no-node-snapshot', script, ...args], { core: helpersPinned() ? core : undefined, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  child.on('message', (msg) => {
    const w = waiting.get(msg.cmd);
    if (!w) return;
    waiting.delete(msg.cmd);
    if (msg.error) w.reject(new Error(`${script}: ${msg.error}`));
    else w.resolve(msg.result);
  });
  const ask = (cmd, extra = {}) =>
    new Promise((resolve, reject) => {
      waiting.set(cmd, { resolve, reject });
      if (cmd !== 'ready') child.send({ cmd, ...extra });
    });
  return { child, ask, ready: ask('ready') };
}

/** Kills every helper (and any other process of procs.js) still running, by PID. */
export function killHelpers() {
  killAll('SIGKILL');
}

/**
 * The helper's side of the protocol: answers each command with what `handle(msg)` resolves to (or
 * the error it throws), runs `close` on the 'close' command and exits once that is answered, and
 * says it is ready (with `ready` as the result).
 */
export function answerCommands(handle, { close, ready = true } = {}) {
  process.on('message', async (msg) => {
    try {
      if (msg.cmd === 'close') {
        await close?.();
        process.send({ cmd: 'close', result: true }, () => process.exit(0));
        return;
      }
      process.send({ cmd: msg.cmd, result: await handle(msg) });
    } catch (err) {
      process.send({ cmd: msg.cmd, error: String(err?.stack ?? err) });
    }
  });
  process.send({ cmd: 'ready', result: ready });
}
