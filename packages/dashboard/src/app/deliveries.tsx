import { useCallback, useEffect, useState } from 'preact/hooks';
import { call } from './api.ts';
import type { ResourceView } from './api.ts';

/** One delivery as the webhook's dashboard API lists it. */
interface Delivery {
  id: string;
  status: 'pending' | 'delivered' | 'dead' | 'skipped';
  event: string;
  objectId: string;
  createdAt: number;
  nextAt?: number;
  attempts: number;
  lastAt?: number;
  lastStatus?: number;
  lastError?: string;
  excerpt?: string;
  durationMs?: number;
  body?: string;
}

interface Overview {
  webhook: string;
  collection: string;
  url: string;
  events: string[];
  as: string;
  maxAttempts: number;
  delivering: { here: boolean; until: string } | null;
  counts: Record<Delivery['status'], number>;
  deliveries: Delivery[];
}

const STATUSES = ['', 'pending', 'delivered', 'dead', 'skipped'] as const;
const time = (ms: number | undefined): string => (ms === undefined ? '' : new Date(ms).toLocaleString());

/**
 * A webhook's deliveries (its outbox and their recent history): status, the receiver's status
 * code and the start of its answer, attempts, next try; a dead or delivered one can be sent again.
 * Through the webhook's root-only API under /dashboard/api/resources/<name>/-/.
 */
export function DeliveriesPage({ resource }: { resource: ResourceView }) {
  const base = `/dashboard/api/resources/${resource.name}/-/deliveries`;
  const [status, setStatus] = useState<(typeof STATUSES)[number]>('');
  const [view, setView] = useState<Overview | undefined>();
  const [open, setOpen] = useState<Delivery | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  const load = useCallback(async () => {
    try {
      setView(await call<Overview>('GET', `${base}?status=${status}&limit=100`));
    } catch (err) {
      setMessage((err as Error).message);
    }
  }, [base, status]);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => clearInterval(timer);
  }, [load]);
  const retry = async (id?: string) => {
    setMessage(undefined);
    try {
      const done = await call<{ retried: number }>('POST', id === undefined ? `${base}/retry-dead` : `${base}/${id}/retry`, {});
      setMessage(`${done.retried} ${done.retried === 1 ? 'delivery' : 'deliveries'} sent again.`);
      await load();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const show = async (id: string) => {
    try {
      setOpen(await call<Delivery>('GET', `${base}/${id}`));
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  if (view === undefined) return message ? <div class="notice warn">{message}</div> : <div class="spinner" aria-label="loading" />;
  return (
    <div data-test="deliveries-page">
      <p class="muted small">
        {view.events.join(', ')} of <code>/{view.collection}</code> to <code>{view.url}</code>, as {view.as} reads them; {view.maxAttempts} {view.maxAttempts === 1 ? 'attempt' : 'attempts'}, then the dead letters.{' '}
        {view.delivering === null ? 'No process delivers right now.' : view.delivering.here ? 'This process delivers.' : 'Another process delivers.'}
      </p>
      <div class="row">
        {STATUSES.map((s) => (
          <button key={s} class={`btn small ${status === s ? 'primary' : 'ghost'}`} onClick={() => setStatus(s)} data-status={s || 'all'}>
            {s === '' ? 'all' : s} {s !== '' && <span class="muted">{view.counts[s]}</span>}
          </button>
        ))}
        <span class="grow" />
        {view.counts.dead > 0 && <button class="btn small" onClick={() => void retry()} data-test="retry-dead">Send every dead letter again</button>}
      </div>
      {message && <div class="notice" data-test="deliveries-message">{message}</div>}
      <div class="grid-scroll">
        <table class="grid" data-test="deliveries">
          <thead><tr><th class="nosort">Written</th><th class="nosort">Event</th><th class="nosort">Object</th><th class="nosort">Status</th><th class="nosort">Code</th><th class="nosort">Attempts</th><th class="nosort">Next try</th><th class="nosort">Answer</th><th class="nosort" /></tr></thead>
          <tbody>
            {view.deliveries.length === 0 && <tr><td class="empty" colSpan={9}>No deliveries{status ? ` ${status}` : ''} yet.</td></tr>}
            {view.deliveries.map((d) => (
              <tr key={d.id} data-delivery={d.id} data-status={d.status}>
                <td class="nowrap">{time(d.createdAt)}</td>
                <td>{d.event}</td>
                <td class="id-col">{d.objectId}</td>
                <td>{d.status === 'dead' ? <span class="badge error">dead</span> : d.status === 'pending' && d.attempts > 0 ? <span class="badge warn">retrying</span> : d.status}</td>
                <td>{d.lastStatus ?? ''}</td>
                <td>{d.attempts}</td>
                <td class="nowrap">{d.status === 'pending' ? time(d.nextAt) : ''}</td>
                <td class="mono small" title={d.lastError}>{d.lastError ? `${d.lastError} ` : ''}{(d.excerpt ?? '').slice(0, 120)}</td>
                <td class="actions">
                  <button class="btn small ghost" onClick={() => void show(d.id)}>Details</button>
                  {(d.status === 'dead' || d.status === 'delivered') && <button class="btn small" onClick={() => void retry(d.id)} data-test="retry">Retry</button>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open && (
        <div class="modal-back" onClick={() => setOpen(undefined)}>
          <div class="card modal" onClick={(e) => e.stopPropagation()} data-test="delivery-details">
            <h2>{open.event} of {open.objectId}</h2>
            <p class="muted small">Event {open.id}: {open.status}, {open.attempts} attempts{open.lastAt ? `, last at ${time(open.lastAt)} (${open.durationMs ?? 0} ms)` : ''}.</p>
            {open.lastError && <p class="field-error">{open.lastError}</p>}
            <h3>Answer (its start)</h3>
            <pre class="code">{open.excerpt || '(none)'}</pre>
            <h3>Body sent</h3>
            <pre class="code">{open.body ?? '(not made yet: made at the first attempt, as the principal reads the object)'}</pre>
            <div class="row end"><button class="btn ghost" onClick={() => setOpen(undefined)}>Close</button></div>
          </div>
        </div>
      )}
    </div>
  );
}
