/** Where svc writes what happens: one line per event, fields for machines. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger writing human-readable lines to stderr (stdout stays for `listening on port`). */
export function createConsoleLogger(options: { quiet?: boolean } = {}): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>): void => {
    if (options.quiet && level === 'info') return;
    let line = `${new Date().toISOString()} ${level} ${message}`;
    if (fields && Object.keys(fields).length > 0) line += ` ${safeJson(fields)}`;
    process.stderr.write(`${line}\n`);
  };
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v));
  } catch {
    return '[unserialisable]';
  }
}
