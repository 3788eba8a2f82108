import { useEffect, useMemo, useState } from 'preact/hooks';
import { call, ownRequestIdPrefix } from './api.ts';
import type { FeedEvent } from './api.ts';
import { matchesLogFilter, parseLogFilter } from '../logFilter.ts';
import type { LogEntry, LogFilter } from '../logFilter.ts';

/** Entries the page holds at once, the server's own bound. */
const MAX_SHOWN = 2000;
/** Live entries are added this often at most (one render per batch). */
const BATCH_MS = 200;

interface Form {
  kind: string;
  level: string;
  status: string;
  path: string;
  user: string;
  since: string;
  until: string;
  text: string;
}

/**
 * Whether the list holds the entry already: the stream replays the recent server lines when it
 * (re)connects. Only the newest entries can match (same time or later), so the scan stops early.
 */
function holds(list: readonly LogEntry[], entry: LogEntry): boolean {
  if (entry.kind !== 'log') return false;
  for (let i = list.length - 1; i >= 0; i--) {
    const e = list[i] as LogEntry;
    if (e.time < entry.time) return false;
    if (e.kind === 'log' && e.time === entry.time && e.message === entry.message) return true;
  }
  return false;
}

const EMPTY: Form = { kind: '', level: '', status: '', path: '', user: '', since: '', until: '', text: '' };

/** A datetime-local value (the browser's time zone) as ISO, or '' when empty. */
const isoOf = (local: string): string => (local === '' ? '' : new Date(local).toISOString());

/**
 * The server's last log entries and answered requests, filtered on the server (GET
 * /dashboard/api/logs), then live from the dashboard's stream through the same filter. Every
 * value is shown as text: paths and messages come from clients.
 */
export function LogsPage({ subscribe }: { subscribe(l: (e: FeedEvent) => void): () => void }) {
  const [form, setForm] = useState<Form>(EMPTY);
  const [applied, setApplied] = useState<Form>(EMPTY);
  const [entries, setEntries] = useState<LogEntry[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [live, setLive] = useState(true);
  // The dashboard's own calls (this page's included) would fill the list: left out unless asked.
  const [own, setOwn] = useState(false);
  const [kept, setKept] = useState<{ kept: number; capacity: number } | undefined>();

  const params = useMemo(() => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(applied)) if (v !== '') out[k] = k === 'since' || k === 'until' ? isoOf(v) : v;
    if (own) out.dashboard = '1';
    return out;
  }, [applied, own]);

  const filter = useMemo((): LogFilter | undefined => {
    try {
      const parsed = parseLogFilter(params);
      // Live entries pass the same filter the server applied.
      return own ? parsed : { ...parsed, withoutDashboard: ownRequestIdPrefix() };
    } catch {
      return undefined;
    }
  }, [params, own]);

  useEffect(() => {
    let stale = false;
    const query = new URLSearchParams(params).toString();
    call<{ entries: LogEntry[]; kept: number; capacity: number }>('GET', `/dashboard/api/logs${query ? `?${query}` : ''}`).then(
      (answer) => {
        if (stale) return;
        setEntries(answer.entries);
        setKept({ kept: answer.kept, capacity: answer.capacity });
        setError(undefined);
      },
      (err: unknown) => {
        if (!stale) setError((err as Error).message);
      },
    );
    return () => {
      stale = true;
    };
  }, [params]);

  useEffect(() => {
    if (!live || filter === undefined) return;
    // A busy server answers thousands of requests a second: the page renders them in batches.
    let pending: LogEntry[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = (): void => {
      timer = undefined;
      const batch = pending;
      pending = [];
      setEntries((list) => {
        const added = batch.filter((e) => !holds(list, e));
        if (added.length === 0) return list;
        const next = [...list, ...added];
        return next.length > MAX_SHOWN ? next.slice(-MAX_SHOWN) : next;
      });
    };
    const unsubscribe = subscribe((event) => {
      if (event.kind !== 'log' && event.kind !== 'access') return;
      if (!matchesLogFilter(event, filter)) return;
      pending.push(event);
      if (pending.length > MAX_SHOWN) pending = pending.slice(-MAX_SHOWN);
      timer ??= setTimeout(flush, BATCH_MS);
    });
    return () => {
      unsubscribe();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [live, filter, subscribe]);

  const field = (name: keyof Form, props: Record<string, unknown> = {}) => (
    <input name={name} value={form[name]} onInput={(e) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value })} {...props} />
  );
  const newestFirst = useMemo(() => [...entries].reverse(), [entries]);

  return (
    <div class="page wide logs-page" data-test="logs-page">
      <div class="res-head">
        <h1>Logs</h1>
        <span class="muted">{kept ? `${kept.kept} of the last ${kept.capacity} entries kept by this server process` : ''}</span>
        <span class="grow" />
        <label class="small" title="requests to /dashboard and those the dashboard page makes to the app's API"><input type="checkbox" checked={own} onChange={() => setOwn(!own)} data-test="logs-own" /> the dashboard's own calls</label>
        <label class="small"><input type="checkbox" checked={live} onChange={() => setLive(!live)} data-test="logs-live" /> live</label>
      </div>
      <form
        class="card logs-filters"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(form);
        }}
      >
        <select name="kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: (e.target as HTMLSelectElement).value })} aria-label="kind">
          <option value="">requests and server lines</option>
          <option value="access">requests</option>
          <option value="log">server lines</option>
        </select>
        <select name="level" value={form.level} onChange={(e) => setForm({ ...form, level: (e.target as HTMLSelectElement).value })} aria-label="level">
          <option value="">any level</option>
          <option value="warn">warnings and errors</option>
          <option value="error">errors</option>
        </select>
        {field('status', { placeholder: 'status: 404, 4xx, 500-599', size: 16, 'aria-label': 'status' })}
        {field('path', { placeholder: 'path starts with', 'aria-label': 'path' })}
        {field('user', { placeholder: 'user id', 'aria-label': 'user id' })}
        {field('text', { placeholder: 'text', 'aria-label': 'text' })}
        <label class="small">from {field('since', { type: 'datetime-local', step: 1 })}</label>
        <label class="small">to {field('until', { type: 'datetime-local', step: 1 })}</label>
        <button class="btn primary small" type="submit" data-test="logs-apply">Apply</button>
        <button class="btn ghost small" type="button" onClick={() => { setForm(EMPTY); setApplied(EMPTY); }}>Reset</button>
      </form>
      {error && <p class="field-error">{error}</p>}
      <div class="grid-scroll">
        <table class="grid logs-table" data-test="logs-table">
          <thead>
            <tr>
              <th class="nosort">time</th>
              <th class="nosort">level</th>
              <th class="nosort">status</th>
              <th class="nosort">request or message</th>
              <th class="nosort">ms</th>
              <th class="nosort">user</th>
              <th class="nosort">client</th>
              <th class="nosort">id</th>
            </tr>
          </thead>
          <tbody>
            {newestFirst.map((e, i) =>
              e.kind === 'access' ? (
                <tr key={`${e.id}-${i}`} class={`log-row ${e.status >= 500 ? 'error' : e.status >= 400 ? 'warn' : ''}`}>
                  <td class="mono nowrap">{e.time.replace('T', ' ').slice(0, 23)}</td>
                  <td>request</td>
                  <td class="mono">{e.aborted ? `${e.status || '-'} (cut)` : e.status}</td>
                  <td class="mono wrap">{e.method} {e.path}</td>
                  <td class="mono">{e.ms}</td>
                  <td class="mono">{e.uid ?? ''}</td>
                  <td class="mono">{e.client}</td>
                  <td class="mono muted">{e.id}</td>
                </tr>
              ) : (
                <tr key={`log-${e.time}-${i}`} class={`log-row ${e.level}`}>
                  <td class="mono nowrap">{e.time.replace('T', ' ').slice(0, 23)}</td>
                  <td>{e.level}</td>
                  <td />
                  <td class="mono wrap" colSpan={5}>{e.message}</td>
                </tr>
              ),
            )}
            {entries.length === 0 && (
              <tr>
                <td class="empty" colSpan={8}>No entry matches.</td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}
