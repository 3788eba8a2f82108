import type { Logger } from '@svc/core';
import { limitRepeats } from '@svc/script-runtime';

/**
 * The logger, with each line (by level and message) logged at most 10 times per 10 s; then one
 * line says how many were dropped. One failure repeated for every request or every internal call
 * (a script that times out, a tree of refused calls) must not flood the log (issue 21).
 */
export function repeatLimitedLogger(logger: Logger): Logger {
  const level = (name: 'info' | 'warn' | 'error'): Logger['info'] => {
    let fields: Record<string, unknown> | undefined;
    const limited = limitRepeats((line) => logger[name](line, fields));
    return (message, data) => {
      fields = data;
      limited(message);
      fields = undefined;
    };
  };
  // Access lines differ per request and are bounded by the logger's backlog: never limited here.
  const access = logger.access?.bind(logger);
  return { info: level('info'), warn: level('warn'), error: level('error'), ...(access ? { access } : {}) };
}
