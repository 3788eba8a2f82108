// Tiny `--name value` / `--flag` parser shared by the harness and the baseline servers.

/**
 * @param {string[]} argv
 * @param {Record<string, 'string' | 'number' | 'boolean'>} spec
 * @returns {Record<string, string | number | boolean | undefined> & { _: string[] }}
 */
export function parseArgs(argv, spec) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      out._.push(arg);
      continue;
    }
    let name = arg.slice(2);
    let value;
    const eq = name.indexOf('=');
    if (eq !== -1) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (!spec[name] && name.startsWith('no-') && spec[name.slice(3)] === 'boolean' && value === undefined) {
      out[name.slice(3)] = false;
      continue;
    }
    const type = spec[name];
    if (!type) throw new Error(`unknown option --${name}`);
    if (type === 'boolean') {
      out[name] = value === undefined ? true : value !== 'false';
      continue;
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
    }
    if (type === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number >= 0, got ${value}`);
      out[name] = n;
    } else {
      out[name] = value;
    }
  }
  return out;
}

/** Stops an http.Server on SIGTERM/SIGINT: no new connections, idle ones closed, then exit. */
export function exitOnSignals(server) {
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
