// Preload for a svc server (node --import ./bench/lib/memProbe.mjs ... svc.js): every 2 s, and on
// SIGUSR2, appends the process's memory by part to $MEMPROBE_DIR/mem-<pid>.jsonl (default /tmp):
// RSS (anonymous / file-backed), process.memoryUsage(), V8's physical size per heap space, and
// /proc/self/smaps summed as `brk` (glibc's main arena, `[heap]`: SQLite's page cache and the other
// C allocations of the main thread), `file` (node's binary and libraries) and `other` (anonymous
// memory that is neither V8's heap nor the main arena: stacks, other arenas). Used by
// bench/engine-memory.js; does nothing in a process that is not the server (the launcher's parent).
import { appendFileSync, readFileSync } from 'node:fs';
import v8 from 'node:v8';

const mb = (bytes) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** Kilobytes of RSS in `[heap]` and in file-backed mappings, from /proc/self/smaps. */
function smaps() {
  let brk = 0;
  let file = 0;
  let path = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      path = head[1];
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    if (path === '[heap]') brk += Number(rss[1]);
    else if (path.startsWith('/')) file += Number(rss[1]);
  }
  return { brk: mb(brk * 1024), file: mb(file * 1024) };
}

function sample(why, file, t0) {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  const m = process.memoryUsage();
  const v8Physical = v8.getHeapStatistics().total_physical_size;
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().filter((s) => s.physical_space_size > 0).map((s) => [s.space_name, `${mb(s.space_used_size)}/${mb(s.physical_space_size)}`]));
  const { brk, file: fileMb } = smaps();
  const rssAnon = mb(kb('RssAnon') * 1024);
  const line = { why, t: Date.now() - t0, rss: mb(kb('VmRSS') * 1024), rssAnon, heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), v8Physical: mb(v8Physical), spaces, brk, file: fileMb, other: mb((rssAnon - mb(v8Physical) - brk) * 2 ** 20) };
  appendFileSync(file, `${JSON.stringify(line)}\n`);
}

if (process.execArgv.includes('--no-node-snapshot') && process.argv[1]?.endsWith('svc.js')) {
  const file = `${process.env.MEMPROBE_DIR ?? '/tmp'}/mem-${process.pid}.jsonl`;
  const t0 = Date.now();
  setInterval(() => sample('tick', file, t0), 2000).unref();
  process.on('SIGUSR2', () => sample('signal', file, t0));
}
