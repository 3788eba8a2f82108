// The servers a benchmark can measure. Every variant is started as a fresh process per
// measurement (pinned to core 0 by the harness), must listen on 127.0.0.1 at the port it is given
// and print `listening on port <n>` once it accepts connections, and must exit on SIGTERM.
//
// Fields:
//   title      what the table shows
//   tag        'baseline' | 'svc' (`--only baseline` / `--only svc` pick variants by tag)
//   stateful   true: the harness seeds it (POSTs) and takes a session cookie from it;
//              false: it answers fixed bytes captured from the byte-source variant (see run.js)
//   app        app folder (relative to the repo) copied to a temp folder per start (svc variants)
//   build      turbo --filter values built before the run (unless --no-build)
//   missing()  a reason string when the variant cannot run on this checkout, else undefined
//   command(ctx) -> { args, env? }: node arguments; ctx = { port, appDir, responseFile, response }
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SVC_NODE_FLAGS } from './lib/procs.js';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const at = (p) => fileURLToPath(new URL(p, import.meta.url));
const svcBin = fileURLToPath(new URL('../apps/server/bin/svc.js', import.meta.url));

const svcCommand = (ctx) => ({
  // The launcher adds these flags itself; passing them keeps one process (no re-spawn), so the
  // PID we pin and measure is the server's.
  args: [...SVC_NODE_FLAGS, svcBin, ctx.appDir, '--port', String(ctx.port), '--env', 'production'],
  env: { NODE_ENV: 'production' },
});

/**
 * svc on bench/app with `appJson` written into the temporary copy's app.json (bench/app stays as
 * it is): the same app with one setting changed.
 */
function svcWithAppJson(title, appJson) {
  return {
    title,
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: (ctx) => {
      writeFileSync(join(ctx.appDir, 'app.json'), JSON.stringify(appJson));
      return svcCommand(ctx);
    },
  };
}

export const variants = {
  bare: {
    title: 'bare node:http (same bytes)',
    tag: 'baseline',
    stateful: false,
    missing: () => undefined,
    command: (ctx) => ({
      args: [
        at('./servers/bare-http.js'),
        '--port', String(ctx.port),
        '--body-file', ctx.responseFile,
        '--status', String(ctx.response.status),
        '--content-type', ctx.response.contentType,
      ],
    }),
  },
  hand: {
    title: 'hand-written node:http + Map',
    tag: 'baseline',
    stateful: true,
    missing: () => undefined,
    command: (ctx) => ({ args: [at('./servers/hand-written.js'), '--port', String(ctx.port)] }),
  },
  svc: {
    title: 'svc (embedded store, production)',
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: svcCommand,
  },
  // svc of another checkout, built (SVC_AT=/path/to/clone): the same app, to compare a change with
  // the commit before it in one paired run (`node bench/pair.js --a svc --b svc-at`).
  'svc-at': {
    title: `svc at ${process.env.SVC_AT ?? '$SVC_AT'}`,
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    missing: () => (process.env.SVC_AT && existsSync(join(process.env.SVC_AT, 'apps/server/dist/cli.js')) ? undefined : 'SVC_AT names no built svc checkout'),
    command: (ctx) => ({ ...svcCommand(ctx), args: ['--no-node-snapshot', join(process.env.SVC_AT ?? '', 'apps/server/bin/svc.js'), ctx.appDir, '--port', String(ctx.port), '--env', 'production'] }),
  },
  // The same, started with the node flags svc gets here (the launcher's heap flag): a change
  // against a checkout that has the flag too (`node bench/pair.js --a svc --b svc-at-flags`).
  'svc-at-flags': {
    title: `svc at ${process.env.SVC_AT ?? '$SVC_AT'}, svc's node flags`,
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    missing: () => (process.env.SVC_AT && existsSync(join(process.env.SVC_AT, 'apps/server/dist/cli.js')) ? undefined : 'SVC_AT names no built svc checkout'),
    command: (ctx) => ({ ...svcCommand(ctx), args: [...SVC_NODE_FLAGS, join(process.env.SVC_AT ?? '', 'apps/server/bin/svc.js'), ctx.appDir, '--port', String(ctx.port), '--env', 'production'] }),
  },
  // The same app with the access log turned off (app.json log.access: false): what the access
  // line costs per request (`node bench/pair.js --a svc --b svc-no-access`). Its app.json is
  // written into the temporary copy, so bench/app stays as it is.
  // svc with node's default first old-generation limit, as before the launcher passed
  // --initial-old-space-size=128 (`node bench/pair.js --a svc --b svc-default-heap`).
  'svc-default-heap': {
    title: "svc, node's default heap limits",
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: (ctx) => ({ ...svcCommand(ctx), args: ['--no-node-snapshot', ...svcCommand(ctx).args.slice(SVC_NODE_FLAGS.length)] }),
  },
  // svc with more node flags (SVC_BENCH_FLAGS="--max-semi-space-size=8", after the launcher's, so
  // node takes them over its own): a V8 setting against the launcher's (`--a svc-flags --b svc`).
  'svc-flags': {
    title: `svc, node flags + ${process.env.SVC_BENCH_FLAGS ?? '$SVC_BENCH_FLAGS'}`,
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    build: ['@svc/server...'],
    missing: () => (!existsSync(svcBin) ? `${svcBin} does not exist yet` : process.env.SVC_BENCH_FLAGS ? undefined : 'SVC_BENCH_FLAGS is not set'),
    command: (ctx) => ({ ...svcCommand(ctx), args: [...SVC_NODE_FLAGS, ...(process.env.SVC_BENCH_FLAGS ?? '').split(' ').filter(Boolean), ...svcCommand(ctx).args.slice(SVC_NODE_FLAGS.length)] }),
  },
  // The same with SVC_BENCH_FLAGS_B: two settings against each other (`--a svc-flags --b svc-flags-b`).
  'svc-flags-b': {
    title: `svc, node flags + ${process.env.SVC_BENCH_FLAGS_B ?? '$SVC_BENCH_FLAGS_B'}`,
    tag: 'svc',
    stateful: true,
    app: 'bench/app',
    build: ['@svc/server...'],
    missing: () => (!existsSync(svcBin) ? `${svcBin} does not exist yet` : process.env.SVC_BENCH_FLAGS_B ? undefined : 'SVC_BENCH_FLAGS_B is not set'),
    command: (ctx) => ({ ...svcCommand(ctx), args: [...SVC_NODE_FLAGS, ...(process.env.SVC_BENCH_FLAGS_B ?? '').split(' ').filter(Boolean), ...svcCommand(ctx).args.slice(SVC_NODE_FLAGS.length)] }),
  },
  'svc-no-access': svcWithAppJson('svc, access log off', { log: { access: false } }),
  // The same app on the old embedded store (app.json embeddedStore.engine "files", the default
  // before the SQLite engine): what the store costs apart from the rest of the request, against a
  // release that had only that store (`node bench/pair.js --a svc-files --b svc-other`).
  'svc-files': svcWithAppJson('svc, old files store', { embeddedStore: { engine: 'files' } }),
  // The same app with a trivial On Get script (bench/app-scripts/resources/todos/get.js:
  // `this.seen = true;`), run by @svc/script-runtime (isolated-vm). Its responses carry
  // `"seen":true` on every object, so they are a few bytes longer than svc's.
  'svc-get': {
    title: 'svc + trivial On Get script',
    tag: 'svc',
    stateful: true,
    app: 'bench/app-scripts',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: svcCommand,
  },
  // The same with an On Get that needs the isolate (bench/app-scripts-dynamic:
  // `this.seen = String(this.title).length > 0;`, a function call): a script made only of constant
  // assignments may be answered without running it, this one never is.
  'svc-get-dyn': {
    title: 'svc + On Get calling a function',
    tag: 'svc',
    stateful: true,
    app: 'bench/app-scripts-dynamic',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: svcCommand,
  },
  // The same On Get taken out of static plans' subset by a first line (`var unplanned;`): each
  // run goes to a script process, as every run did before static plans (issue 21).
  'svc-get-isolate': {
    title: 'svc + trivial On Get in a script process (not a static plan)',
    tag: 'svc',
    stateful: true,
    app: 'bench/app-scripts',
    build: ['@svc/server...'],
    missing: () => (existsSync(svcBin) ? undefined : `${svcBin} does not exist yet`),
    command: (ctx) => unplanned({ command: svcCommand }).command(ctx),
  },
  'svc-get-no-access': {
    title: 'svc + trivial On Get, access log off',
    tag: 'svc',
    stateful: true,
    app: 'bench/app-scripts',
    build: ['@svc/server...'],
    missing: () => undefined,
    command: (ctx) => {
      writeFileSync(join(ctx.appDir, 'app.json'), JSON.stringify({ log: { access: false } }));
      return svcCommand(ctx);
    },
  },
  // The same apps run by another checkout's build (BENCH_OTHER=/path/to/checkout, built), for a
  // before/after pair of two commits: `BENCH_OTHER=/tmp/base node bench/pair.js --scenario
  // get-all-script --a svc-get --b svc-get-other --together`.
  'svc-get-other': otherCheckout('bench/app-scripts', 'svc + trivial On Get, built from $BENCH_OTHER'),
  'svc-get-dyn-other': otherCheckout('bench/app-scripts-dynamic', 'svc + On Get calling a function, built from $BENCH_OTHER'),
  'svc-other': otherCheckout('bench/app', 'svc, built from $BENCH_OTHER'),
  'svc-get-isolate-other': unplanned(otherCheckout('bench/app-scripts', 'svc + trivial On Get in a script process, built from $BENCH_OTHER')),
};

/** A variant whose On Get is taken out of static plans' subset (`var unplanned;` first), as svc-get-isolate's. */
function unplanned(variant) {
  return {
    ...variant,
    command: (ctx) => {
      const file = join(ctx.appDir, 'resources/todos/get.js');
      writeFileSync(file, `var unplanned;\n${readFileSync(file, 'utf8')}`);
      return variant.command(ctx);
    },
  };
}

function otherCheckout(app, title) {
  const bin = () => (process.env.BENCH_OTHER ? join(process.env.BENCH_OTHER, 'apps/server/bin/svc.js') : '');
  return {
    title,
    tag: 'svc',
    stateful: true,
    app,
    build: [],
    missing: () => (bin() && existsSync(bin()) ? undefined : 'BENCH_OTHER does not name a built checkout'),
    command: (ctx) => ({ ...svcCommand(ctx), args: ['--no-node-snapshot', bin(), ctx.appDir, '--port', String(ctx.port), '--env', 'production'] }),
  };
}
