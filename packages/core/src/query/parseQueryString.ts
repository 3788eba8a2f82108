import { parse as parseQs } from 'node:querystring';
import { SvcError } from '../errors.js';

/**
 * Parses a URL query string the way svc clients send it: either the whole string is a JSON object
 * (`?{"done":true}`), or plain `key=value` pairs whose values may themselves be JSON
 * (`?$sort={"title":1}`; the client library serialises complex values so). A `q` parameter
 * holding a JSON object (what the client's put/del send) is merged into the result.
 */
export function parseQueryString(search: string): Record<string, unknown> {
  if (search === '') return {};
  let decoded: string | undefined;
  const first = search.charCodeAt(0);
  // '{' directly, or '%7B' encoded
  if (first === 123 || search.startsWith('%7B') || search.startsWith('%7b')) {
    decoded = safeDecode(search);
    return mergeQ(parseJsonObject(decoded, 'query string'));
  }
  const raw = parseQs(search);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(raw)) {
    if (key === '__proto__') continue;
    const value = raw[key];
    out[key] = Array.isArray(value) ? value.map(parseValue) : parseValue(value ?? '');
  }
  return mergeQ(out);
}

function mergeQ(query: Record<string, unknown>): Record<string, unknown> {
  // `q` holding a JSON object is the query the client's put/del send; any other `q` (a search
  // term on a custom resource, say) stays an ordinary key.
  const q = query.q;
  if (!isPlainObject(q)) return query;
  const { q: _q, ...rest } = query;
  return { ...rest, ...q };
}

/** A value that looks like JSON (object, array) is parsed; anything else stays a string. */
function parseValue(value: string): unknown {
  const c = value.charCodeAt(0);
  if (c === 123 /* { */ || c === 91 /* [ */) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      throw new SvcError('INVALID_QUERY', `malformed JSON in query value: ${truncate(value)}`);
    }
  }
  return value;
}

function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SvcError('INVALID_QUERY', `malformed JSON ${what}`);
  }
  if (!isPlainObject(parsed)) throw new SvcError('INVALID_QUERY', `the JSON ${what} must be an object`);
  return parsed;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new SvcError('INVALID_QUERY', 'malformed percent-encoding in query string');
  }
}

function truncate(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}...` : text;
}

/** A JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
