// Warnings about how far a run's figures can be trusted (shared by run.js and report.js).
import { median } from './stats.js';

/** @param {{ summaries: any[], results: any[] }} run */
export function warningsOf({ summaries, results }) {
  const warnings = [];
  // Figures are only comparable when nothing else ran on the server's core.
  const all = summaries.flatMap((s) => s.variants);
  const shared = all.filter((v) => v.otherOnServerCore >= 0.1);
  if (shared.length) {
    const worst = Math.max(...shared.map((v) => v.otherOnServerCore));
    warnings.push(
      `other processes used the server's core during ${shared.length} of ${all.length} variants (median up to ${worst.toFixed(2)} core): req/s and their ratios are unreliable in this run; compare CPU µs per request, and re-run on a quiet machine`,
    );
  }
  const steal = median(results.filter((r) => !r.error).map((r) => r.stealFraction));
  if (steal > 0.05) warnings.push(`the hypervisor stole ${(steal * 100).toFixed(0)}% of the CPU time (median): a noisy host`);
  return warnings;
}

/**
 * What held a variant's throughput, from its median cores in the measured window: the server's
 * CPU (alone, or sharing its core with other processes), the load generator, or waits inside the
 * server (its core partly idle: timers, I/O, locks).
 */
export function limitOf(v) {
  if (v.serverCores == null) return null;
  if (v.serverCores >= 0.9) return 'server CPU';
  if (v.serverCores + (v.otherOnServerCore ?? 0) >= 0.9) return 'server core, shared with other processes';
  if (v.loadgenCores >= 0.9) return 'load generator';
  return 'server waits (idle CPU)';
}
