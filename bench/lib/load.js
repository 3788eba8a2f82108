// One run of the HTTP load generator (lib/drivers/http.js) in its own process on the load core,
// for the scripts that measure outside run.js's table (scale.js, mongo.js). Resolves with the
// driver's JSON line (req/s, latency percentiles, the server's CPU over the measured window).
import { fileURLToPath } from 'node:url';
import { spawnNode } from './procs.js';

const drivers = { autocannon: fileURLToPath(new URL('./drivers/http.js', import.meta.url)), wrk: fileURLToPath(new URL('./drivers/wrk.js', import.meta.url)) };
const repo = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `cfg`: { url, method, headers, connections, warmup, duration, serverPid, serverCore, driver? };
 * `core`: the load core. `driver`: 'autocannon' (default, drivers/http.js) or 'wrk' (drivers/wrk.js).
 */
export function runLoad(cfg, core) {
  const driver = drivers[cfg.driver ?? 'autocannon'];
  if (driver === undefined) return Promise.reject(new Error(`no load driver ${cfg.driver}`));
  return runDriver(driver, { ...cfg, loadCore: core }, core, 'load generator');
}

/**
 * Runs a driver program (bench/lib/drivers/*.js) with its JSON configuration as its argument, on
 * `core`; resolves with the last line it printed, parsed; `what` names it in the error.
 */
export function runDriver(file, cfg, core, what) {
  return new Promise((resolve, reject) => {
    const child = spawnNode([file, JSON.stringify(cfg)], { core, cwd: repo });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.exited.then(({ code }) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve(JSON.parse(out.trim().split('\n').pop()));
      } catch (err) {
        reject(new Error(`${what} failed (${err.message}): ${child.tail.join('\n')}`));
      }
    });
  });
}
