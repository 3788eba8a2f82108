// Preload for bench/pair.js (GCSTAT_DIR): sums V8's GC pauses by kind (PerformanceObserver 'gc') and
// writes them, with the process CPU and the young generation's size, to $GCSTAT_DIR/gc-<pid>.json
// every 500 ms:
//   GCSTAT_DIR=/tmp/gc SVC_BENCH_FLAGS="--import ./bench/lib/gcStat.mjs --max-semi-space-size=8" \
//   SVC_BENCH_FLAGS_B="--import ./bench/lib/gcStat.mjs" node bench/pair.js --a svc-flags --b svc-flags-b ...
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

const kinds = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
const sum = {};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const k = kinds[e.detail?.kind] ?? 'other';
    const s = (sum[k] ??= { n: 0, ms: 0 });
    s.n++;
    s.ms += e.duration;
  }
}).observe({ entryTypes: ['gc'] });
const file = `${process.env.GCSTAT_DIR ?? '/tmp'}/gc-${process.pid}.json`;
setInterval(() => {
  const ns = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  writeFileSync(file, JSON.stringify({ at: Date.now(), cpu: process.cpuUsage(), gc: sum, newSpaceMb: ns ? ns.space_size / 2 ** 20 : null, rssMb: process.memoryUsage().rss / 2 ** 20 }));
}, 500).unref();
