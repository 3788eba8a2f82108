import { useEffect, useRef, useState } from 'preact/hooks';
import type { EditorView } from '@codemirror/view';
import { ApiError, call } from './api.ts';
import type { AppView, ResourceView } from './api.ts';
import { createEditor } from './editor.ts';
import type { Problem } from './editor.ts';
import { EVENT_DOCS } from './scriptApi.ts';

interface TrialOutcome {
  object: Record<string, unknown>;
  errors?: Record<string, string>;
  cancelled?: { message: string; status: number };
  hidden: string[];
  protected: string[];
  result?: unknown;
  logs: string[];
  emits: unknown[][];
  refused: string[];
  failure?: Problem;
}

/** A sample object for a trial run: one value of the right type per property. */
function sampleOf(resource: ResourceView): Record<string, unknown> {
  const sample: Record<string, unknown> = {};
  const values: Record<string, unknown> = { string: 'text', number: 1, boolean: false, object: {}, array: [], date: new Date(0).toISOString() };
  if (resource.type === 'UserCollection') sample.username = 'alice';
  for (const [name, def] of Object.entries(resource.config.properties ?? {})) sample[name] = values[def.type] ?? null;
  return sample;
}

/** Each event script of the resource in an editor that knows the Script API, with a trial run. */
export function EventsPage({ app, resource, setApp }: { app: AppView; resource: ResourceView; setApp(a: AppView): void }) {
  const [event, setEvent] = useState(resource.files.find((f) => resource.events.includes(f)) ?? resource.events[0] ?? '');
  const [saved, setSaved] = useState('');
  const [text, setText] = useState('');
  const [loaded, setLoaded] = useState(false);
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView>();
  // The editor outlives renders: Ctrl+S calls the latest save.
  const saveRef = useRef<() => void>(() => undefined);

  useEffect(() => {
    if (!event) return;
    let gone = false;
    setLoaded(false);
    void call<{ source: string }>('GET', `/dashboard/api/resources/${resource.name}/events/${event}`).then(({ source }) => {
      if (gone) return;
      setSaved(source);
      setText(source);
      setLoaded(true);
      setMessage(undefined);
    });
    return () => {
      gone = true;
    };
  }, [event, resource.name]);

  useEffect(() => {
    if (!loaded || !host.current) return;
    view.current?.destroy();
    view.current = createEditor({
      parent: host.current,
      doc: saved,
      resources: app.resources.map((r) => r.name),
      properties: [...(resource.type === 'UserCollection' ? ['username'] : []), 'id', ...Object.keys(resource.config.properties ?? {})],
      onChange: (doc) => {
        setText(doc);
        setMessage(undefined);
      },
      save: () => saveRef.current(),
      check: async (doc) => {
        const out = await call<{ ok: boolean; problem?: Problem }>('POST', '/dashboard/api/check', { source: doc, event: event.slice(0, -3), name: resource.name });
        return out.problem;
      },
    });
    return () => {
      view.current?.destroy();
      view.current = undefined;
    };
  }, [loaded, saved]);

  const save = async () => {
    if (text === saved) return;
    try {
      const next = await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}/events/${event}`, { source: text });
      setSaved(text);
      setApp(next);
      setMessage({ kind: 'ok', text: text.trim() === '' ? `${event} removed` : `${event} saved; the server runs it from now on` });
    } catch (err) {
      setMessage({ kind: 'error', text: err instanceof ApiError ? (err.errors.source ?? err.message) : String(err) });
    }
  };

  saveRef.current = () => void save();
  if (resource.events.length === 0) return <p class="muted">{resource.type} runs no event scripts.</p>;
  const doc = EVENT_DOCS[event];
  const dirty = text !== saved;
  return (
    <div class="events">
      <nav class="event-list">
        {resource.events.map((file) => (
          <button key={file} class={`event ${file === event ? 'active' : ''}`} onClick={() => setEvent(file)} data-event={file}>
            <span class={`dot ${resource.files.includes(file) ? 'on' : ''}`} />
            {EVENT_DOCS[file]?.label ?? file}
            <span class="muted small mono">{file}</span>
          </button>
        ))}
      </nav>
      <div class="event-main">
        <div class="event-head">
          <div>
            <strong>{doc?.label ?? event}</strong> <span class="muted mono small">resources/{resource.name}/{event}</span>
            {doc && <p class="muted small">{doc.doc}</p>}
          </div>
          <span class="grow" />
          <button class="btn" disabled={!dirty} onClick={() => { view.current?.dispatch({ changes: { from: 0, to: view.current.state.doc.length, insert: saved } }); }}>Revert</button>
          <button class="btn primary" disabled={!dirty} onClick={() => void save()} data-test="save-event" title="Ctrl+S">Save</button>
        </div>
        {message && <div class={`notice ${message.kind}`} data-test="event-message">{message.text}</div>}
        <div class="editor" ref={host} data-test="editor" />
        <TrialPanel resource={resource} event={event} source={text} />
      </div>
    </div>
  );
}

function TrialPanel({ resource, event, source }: { resource: ResourceView; event: string; source: string }) {
  const [sample, setSample] = useState(() => JSON.stringify(sampleOf(resource), null, 2));
  const [previous, setPrevious] = useState('');
  const [me, setMe] = useState('');
  const [outcome, setOutcome] = useState<TrialOutcome | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const parse = (text: string, what: string): Record<string, unknown> | undefined => {
    if (text.trim() === '') return undefined;
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} must be a JSON object`);
    return v as Record<string, unknown>;
  };
  const run = async () => {
    setBusy(true);
    try {
      const body = { name: resource.name, event: event.slice(0, -3), source, object: parse(sample, 'the sample') ?? {}, previous: parse(previous, 'previous'), me: parse(me, 'me') };
      setOutcome(await call<TrialOutcome>('POST', '/dashboard/api/try', body));
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
      setOutcome(undefined);
    }
    setBusy(false);
  };
  return (
    <details class="trial" data-test="trial">
      <summary>Try it on a sample object <span class="muted small">(runs the editor's text in the sandbox: its writes and emit() are recorded, not done; its svc GETs run as usual)</span></summary>
      <div class="trial-grid">
        <label>this<textarea class="mono" rows={6} value={sample} onInput={(e) => setSample((e.target as HTMLTextAreaElement).value)} aria-label="sample object" /></label>
        <label>previous (On Put)<textarea class="mono" rows={6} value={previous} placeholder="{}" onInput={(e) => setPrevious((e.target as HTMLTextAreaElement).value)} /></label>
        <label>me<textarea class="mono" rows={6} value={me} placeholder='{"id": "...", "username": "alice"}' onInput={(e) => setMe((e.target as HTMLTextAreaElement).value)} /></label>
      </div>
      <button class="btn primary" onClick={() => void run()} disabled={busy} data-test="run-trial">Run</button>
      {error && <div class="notice error">{error}</div>}
      {outcome && <TrialResult outcome={outcome} />}
    </details>
  );
}

function TrialResult({ outcome }: { outcome: TrialOutcome }) {
  const verdict = outcome.failure
    ? { kind: 'error', text: `The script fails${outcome.failure.line ? ` at line ${outcome.failure.line}` : ''}: ${outcome.failure.message} (the request would answer 500)` }
    : outcome.errors
      ? { kind: 'error', text: `The request would be refused (400) with errors: ${Object.entries(outcome.errors).map(([k, v]) => `${k}: ${v}`).join('; ')}` }
      : outcome.cancelled
        ? { kind: 'error', text: `The request would be cancelled (${outcome.cancelled.status}): ${outcome.cancelled.message}` }
        : { kind: 'ok', text: 'The request would go through.' };
  return (
    <div class="trial-result" data-test="trial-result">
      <div class={`notice ${verdict.kind}`}>{verdict.text}</div>
      <div class="trial-grid">
        <div><h4>this afterwards</h4><pre>{JSON.stringify(outcome.object, null, 2)}</pre>{outcome.hidden.length > 0 && <p class="small muted">hidden: {outcome.hidden.join(', ')}</p>}{outcome.protected.length > 0 && <p class="small muted">protected: {outcome.protected.join(', ')}</p>}</div>
        <div><h4>console</h4><pre>{outcome.logs.join('\n') || '—'}</pre></div>
        <div><h4>emit() and writes</h4><pre>{[...outcome.emits.map((e) => `emit ${JSON.stringify(e)}`), ...outcome.refused.map((r) => `${r} (not done in a trial)`)].join('\n') || '—'}</pre></div>
      </div>
    </div>
  );
}
