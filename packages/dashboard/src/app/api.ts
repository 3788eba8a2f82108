/** The dashboard's calls: the app's REST API and /dashboard/api, as root. */
import type { LogEntry } from '../logFilter.ts';

const KEY_STORAGE = 'svc-dashboard-key';

/** The root key for this tab only (session storage: gone when the tab closes). */
export const rootKey = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (key: string): void => sessionStorage.setItem(KEY_STORAGE, key),
  clear: (): void => sessionStorage.removeItem(KEY_STORAGE),
};

/** An error answer of svc: status, message and errors by property. */
export class ApiError extends Error {
  readonly status: number;
  readonly errors: Record<string, string>;
  constructor(status: number, message: string, errors: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.errors = errors;
  }
}

/** The server's prefix for the request ids of this page's calls (GET /dashboard/api/session, root only). */
let ownIdPrefix = '';
let ownIds = 0;
/** Marks this page's later calls as the dashboard's own (the Logs page leaves them out by default). */
export function setOwnRequestIdPrefix(prefix: string | undefined): void {
  ownIdPrefix = prefix ?? '';
}
/** The prefix of this page's request ids ('' before the session said it). */
export function ownRequestIdPrefix(): string {
  return ownIdPrefix;
}

function headers(json: boolean): Record<string, string> {
  // Development accepts any key from this machine; production only a key of .svc/keys.json.
  const out: Record<string, string> = { 'svc-ssh-key': rootKey.get() ?? 'development' };
  if (json) out['content-type'] = 'application/json';
  if (ownIdPrefix !== '') out['x-request-id'] = `${ownIdPrefix}${(++ownIds).toString(36)}`;
  return out;
}

/** One call; answers the JSON body (or text), throws ApiError on 4xx/5xx. */
export async function call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? null : JSON.stringify(body), credentials: 'same-origin' });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  const data: unknown = type.includes('json') && text !== '' ? JSON.parse(text) : text;
  if (!res.ok) {
    const err = (data ?? {}) as { message?: string; errors?: Record<string, string> };
    // Only the dashboard's own API judges the key: a 401 of the app's REST API is that resource's
    // answer (a script's cancel(..., 401)), shown where it happened, and the key is kept.
    if (res.status === 401 && path.startsWith('/dashboard/api/')) unauthorized();
    throw new ApiError(res.status, err.message ?? `${res.status} ${res.statusText}`, err.errors ?? {});
  }
  return data as T;
}

/** A call of a file property's path with a file's bytes (or none): answers the updated object. */
export async function fileCall(method: string, path: string, body?: Blob): Promise<unknown> {
  const res = await fetch(path, { method, headers: headers(false), body: body ?? null, credentials: 'same-origin' });
  const text = await res.text();
  const data = (text !== '' && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : {}) as { message?: string; errors?: Record<string, string> };
  if (!res.ok) throw new ApiError(res.status, Object.values(data.errors ?? {})[0] ?? data.message ?? `${res.status} ${res.statusText}`, data.errors ?? {});
  return data;
}

/** A stored file's bytes, fetched as root. */
export async function fileBlob(path: string): Promise<Blob> {
  const res = await fetch(path, { headers: headers(false), credentials: 'same-origin' });
  if (!res.ok) throw new ApiError(res.status, `${res.status} ${res.statusText}`);
  return res.blob();
}

let onUnauthorized: () => void = () => undefined;
function unauthorized(): void {
  onUnauthorized();
}
/** What to do when the server says the key is wrong (the app shows the key prompt). */
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

/** A collection's path with a query as one JSON object (`?{"$sort":...}`). */
export function collectionUrl(name: string, query: Record<string, unknown>, sub = ''): string {
  const base = `/${name}${sub}`;
  return Object.keys(query).length === 0 ? base : `${base}?${encodeURIComponent(JSON.stringify(query))}`;
}

/** A setting of a resource type (the Config page's form is made of them). */
export interface SettingSpec {
  type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  required?: boolean;
  default?: unknown;
  description?: string;
  enum?: (string | number)[];
}

export interface TypeView {
  name: string;
  builtIn: boolean;
  settings: Record<string, SettingSpec>;
  events: string[];
  label: string;
  /** The type's own pages ('deliveries'). */
  pages?: string[];
}

export interface PropertyDef {
  type: string;
  required?: boolean;
  unique?: boolean;
  index?: boolean;
  /** Searchable by `$search` (the grid's search box). */
  search?: boolean;
  private?: boolean;
  order?: number;
  [key: string]: unknown;
}

export interface ResourceConfig {
  type: string;
  properties?: Record<string, PropertyDef>;
  [key: string]: unknown;
}

export interface ResourceView {
  name: string;
  path: string;
  type: string;
  config: ResourceConfig;
  events: string[];
  files: string[];
  installed: boolean;
}

export interface AppView {
  env: string;
  resources: ResourceView[];
  types: TypeView[];
  /** After a save of properties in development: the migration files it wrote. */
  migrations?: string[];
}

/** A log line, an answered request, a change of stored objects, or a reload of the app. */
export type FeedEvent =
  | LogEntry
  | { kind: 'change'; collection: string; op: 'insert' | 'update' | 'remove'; id?: string }
  | { kind: 'reload'; time: string };

/**
 * Follows /dashboard/api/stream (server-sent events read through fetch, which can carry the key
 * header); reconnects after a drop. Answers a function that stops.
 */
export function follow(onEvent: (event: FeedEvent) => void, onState: (live: boolean) => void): () => void {
  let stopped = false;
  let controller: AbortController | undefined;
  const run = async (): Promise<void> => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const res = await fetch('/dashboard/api/stream', { headers: headers(false), signal: controller.signal });
        if (!res.ok || !res.body) throw new Error(String(res.status));
        onState(true);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let at: number;
          while ((at = buffer.indexOf('\n\n')) !== -1) {
            const chunk = buffer.slice(0, at);
            buffer = buffer.slice(at + 2);
            if (chunk.startsWith('data: ')) onEvent(JSON.parse(chunk.slice(6)) as FeedEvent);
          }
        }
      } catch {
        // Reconnect below.
      }
      onState(false);
      if (!stopped) await new Promise((r) => setTimeout(r, 2000));
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
