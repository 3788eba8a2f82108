// One run of the HTTP load generator (lib/drivers/http.js) in its own process on the load core,
// for the scripts that measure outside run.js's table (scale.js, mongo.js). Resolves with the
// driver's JSON line (req/s, latency percentiles, the server's CPU over the measured window).
import { fileURLToPath } from 'node:url';
import { spawnNode } from './procs.js';

const driver = fileURLToPath(new URL('./drivers/http.js', import.meta.url));
const repo = fileURLToPath(new URL('../..', import.meta.url));

/** `cfg`: { url, method, headers, connections, warmup, duration, serverPid, serverCore }; `core`: the load core. */
export function runLoad(cfg, core) {
  return new Promise((resolve, reject) => {
    const child = spawnNode([driver, JSON.stringify(cfg)], { core, cwd: repo });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.exited.then(({ code }) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve(JSON.parse(out.trim().split('\n').pop()));
      } catch (err) {
        reject(new Error(`load generator failed (${err.message}): ${child.tail.join('\n')}`));
      }
    });
  });
}
