import { isPlainObject, MAX_CACHE_MB, MAX_MMAP_MB, OutboundPolicy, ProxyTrust } from '@svc/core';
import { moduleNameProblem } from './scriptModules.js';

/**
 * The schema of app.json, checked at start: a wrong type, a value out of range or an unknown
 * (misspelt) key stops the start with the file, the key and what is expected, instead of being
 * silently replaced by the default.
 */
type Rule =
  | { kind: 'int'; min: number; max?: number }
  | { kind: 'boolean' }
  | { kind: 'string' }
  | { kind: 'origins' }
  | { kind: 'publicCount' }
  | { kind: 'trustProxy' }
  | { kind: 'modules' }
  | { kind: 'outboundAllow' }
  | { kind: 'path' }
  | { kind: 'urlPath' }
  | { kind: 'redisPrefix' }
  | { kind: 'oneOf'; values: readonly string[] }
  | { kind: 'object'; keys: Record<string, Rule> };

const int = (min: number, max?: number): Rule => (max === undefined ? { kind: 'int', min } : { kind: 'int', min, max });

export const APP_SCHEMA: Record<string, Rule> = {
  publicCount: { kind: 'publicCount' },
  bodyLimit: int(1),
  sessionIdleSeconds: int(1),
  cors: { kind: 'object', keys: { origins: { kind: 'origins' }, crossSiteCookies: { kind: 'boolean' } } },
  methodOverrideKey: { kind: 'string' },
  scripts: {
    kind: 'object',
    keys: {
      memoryLimitMb: int(8, 8192),
      timeoutMs: int(1, 600_000),
      isolates: int(1, 256),
      requestCpuMs: int(1, 3_600_000),
      requestWallMs: int(1, 3_600_000),
      queueLimit: int(1, 1_000_000),
      recursionCap: int(0, 1000),
      modules: { kind: 'modules' },
    },
  },
  databaseTimeoutMs: int(1),
  migrations: { kind: 'object', keys: { leaseMs: int(1000, 3_600_000), timeoutMs: int(1, 3_600_000) } },
  passwordCost: int(4, 31),
  loginRateLimit: { kind: 'object', keys: { max: int(1), windowSeconds: int(1), maxPerAddress: int(1), slowdownMs: int(0) } },
  dashboard: { kind: 'boolean' },
  fastPaths: { kind: 'boolean' },
  http: {
    kind: 'object',
    keys: { headersTimeoutMs: int(1), requestTimeoutMs: int(1), keepAliveTimeoutMs: int(1), maxConnections: int(1), maxConnectionsPerAddress: int(0), drainMs: int(0, 600_000) },
  },
  health: { kind: 'object', keys: { livePath: { kind: 'path' }, readyPath: { kind: 'path' } } },
  realtime: {
    kind: 'object',
    keys: { maxSocketsPerAddress: int(0), maxSockets: int(0), maxLiveQueriesPerSocket: int(0), maxLiveQueriesPerUser: int(0), liveReplay: int(1, 100_000), liveBufferedPackets: int(1) },
  },
  embeddedStore: { kind: 'object', keys: { fsync: { kind: 'boolean' }, engine: { kind: 'oneOf', values: ['files', 'sqlite'] }, cacheMb: int(1, MAX_CACHE_MB), mmapMb: int(0, MAX_MMAP_MB) } },
  redisPrefix: { kind: 'redisPrefix' },
  backups: { kind: 'object', keys: { intervalMinutes: int(1, 525_600), keep: int(1, 10_000), bucket: { kind: 'string' } } },
  files: { kind: 'object', keys: { bucket: { kind: 'string' }, maxPixels: int(1, 1_000_000_000), orphanGraceMinutes: int(0, 525_600), sweepMinutes: int(0, 525_600) } },
  trustProxy: { kind: 'trustProxy' },
  metrics: { kind: 'object', keys: { enabled: { kind: 'boolean' }, path: { kind: 'urlPath' }, port: int(0, 65535), host: { kind: 'string' } } },
  log: { kind: 'object', keys: { access: { kind: 'boolean' }, health: { kind: 'boolean' } } },
  relations: { kind: 'object', keys: { expandDepth: int(1, 4), maxExpanded: int(1), maxFilterIds: int(1) } },
  aggregate: { kind: 'object', keys: { maxGroups: int(1), maxScanned: int(1), timeoutMs: int(1, 600_000) } },
  outbound: {
    kind: 'object',
    keys: { allow: { kind: 'outboundAllow' }, timeoutMs: int(1, 600_000), maxBytes: int(1, 32 * 1024 * 1024), maxRedirects: int(0, 20), requestCalls: int(0, 100_000), concurrent: int(1, 100) },
  },
};

/** Checks a parsed app.json; throws naming the file and the first wrong key. */
export function validateAppJson(file: string, value: unknown): void {
  if (!isPlainObject(value)) throw new Error(`${file}: must be a JSON object of settings`);
  checkObject(file, '', value, APP_SCHEMA);
}

function checkObject(file: string, prefix: string, value: Record<string, unknown>, keys: Record<string, Rule>): void {
  for (const [key, v] of Object.entries(value)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const rule = Object.hasOwn(keys, key) ? keys[key] : undefined;
    if (rule === undefined) {
      const near = closest(key, Object.keys(keys));
      throw new Error(`${file}: unknown key "${path}"${near ? ` (did you mean "${prefix === '' ? near : `${prefix}.${near}`}"?)` : ''}; known: ${Object.keys(keys).join(', ')}`);
    }
    const problem = check(rule, v, file, path);
    if (problem !== undefined) throw new Error(`${file}: "${path}" must be ${problem}, not ${JSON.stringify(v)}`);
  }
}

/** What the value should be when it is wrong, else undefined. */
function check(rule: Rule, v: unknown, file: string, path: string): string | undefined {
  switch (rule.kind) {
    case 'int': {
      const range = rule.max === undefined ? `>= ${rule.min}` : `from ${rule.min} to ${rule.max}`;
      return typeof v === 'number' && Number.isInteger(v) && v >= rule.min && (rule.max === undefined || v <= rule.max) ? undefined : `a whole number ${range}`;
    }
    case 'boolean':
      return typeof v === 'boolean' ? undefined : 'true or false';
    case 'string':
      return typeof v === 'string' && v !== '' ? undefined : 'a non-empty string';
    case 'oneOf':
      return typeof v === 'string' && rule.values.includes(v) ? undefined : `one of ${rule.values.map((x) => JSON.stringify(x)).join(', ')}`;
    case 'origins':
      return v === '*' || (Array.isArray(v) && v.every((s) => typeof s === 'string' && /^https?:\/\/[^/]+$/.test(s)))
        ? undefined
        : '"*" or an array of origins such as "https://app.example.com" (scheme and host, no path)';
    case 'path':
      return v === false || (typeof v === 'string' && /^\/[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*$/.test(v)) ? undefined : 'false or a path such as "/healthz"';
    case 'publicCount':
      return typeof v === 'boolean' || (Array.isArray(v) && v.every((s) => typeof s === 'string')) ? undefined : 'true, false or an array of collection names';
    case 'trustProxy':
      return trustProxyProblem(v);
    case 'redisPrefix':
      // No ':' nor '#': one app's prefix can never be the start of another's keys or channels.
      return typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v) ? undefined : '1 to 64 letters, digits, "_", "." or "-", such as "shop"';
    case 'urlPath':
      return typeof v === 'string' && /^(\/(?!\.\.?(?:\/|$))[A-Za-z0-9._~-]+)+$/.test(v) ? undefined : 'a path such as "/metrics" (segments of letters, digits, . _ ~ -)';
    case 'modules': {
      if (!Array.isArray(v)) return 'an array of npm package names, such as ["moment", "lodash"]';
      const problem = v.map(moduleNameProblem).find((p) => p !== undefined);
      if (problem !== undefined) return `an array of npm package names (${problem})`;
      return new Set(v).size === v.length ? undefined : 'an array of npm package names, each once';
    }
    case 'outboundAllow': {
      if (!Array.isArray(v)) return 'an array of addresses, ranges or host names, such as ["10.0.0.5", "10.1.0.0/16", "api.internal:8443"]';
      try {
        new OutboundPolicy(v);
        return undefined;
      } catch (err) {
        return `an array of addresses, ranges or host names (${(err as Error).message})`;
      }
    }
    case 'object':
      if (!isPlainObject(v)) return `an object with ${Object.keys(rule.keys).join(', ')}`;
      checkObject(file, path, v, rule.keys);
      return undefined;
  }
}

function trustProxyProblem(v: unknown): string | undefined {
  const expected = 'a hop count (a whole number from 0 to 32) or a list of proxy addresses and CIDR blocks such as ["127.0.0.1", "10.0.0.0/8", "loopback"]';
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 32 ? undefined : expected;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) return expected;
  try {
    new ProxyTrust(v as string[]);
    return undefined;
  } catch (err) {
    return `${expected} (${(err as Error).message})`;
  }
}

/** The known key nearest to a misspelt one (case or two edits away), if any. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = k.toLowerCase() === key.toLowerCase() ? 0 : distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length] as number;
}
