import { render } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiError, call, follow, rootKey, setOwnRequestIdPrefix, whenUnauthorized } from './api.ts';
import type { AppView, FeedEvent, ResourceView } from './api.ts';
import { DataGrid } from './data.tsx';
import { PropertiesEditor } from './properties.tsx';
import { counted } from './words.ts';
import { RulesPage } from './rules.tsx';
import { AccountsPage } from './accounts.tsx';
import { ConfigPage } from './config.tsx';
import { EventsPage } from './events.tsx';
import { ApiPage } from './apiPage.tsx';
import { BackupsPage } from './backups.tsx';
import { DeliveriesPage } from './deliveries.tsx';
import { LogsPage } from './logs.tsx';
import { OfflineConflicts } from './offlineConflicts.tsx';

interface Session {
  env: string;
  root: boolean;
  app?: string;
  /** The prefix of this page's request ids (root only). */
  requestIdPrefix?: string;
}

type LogLine = Extract<FeedEvent, { kind: 'log' }>;

/** #/r/<name>/<tab> -> {name, tab}; anything else is the home page. */
function parseRoute(hash: string): { name?: string; tab?: string; page?: string; query?: string } {
  const path = decodeURIComponent(hash.replace(/^#\/?/, ''));
  if (path === 'new' || path === 'backups' || path === 'logs') return { page: path };
  // #/r/<name>/data?<query>: a collection's data with a query (a relation's link to its object).
  const match = /^r\/([^?]+?)(?:\/(data|properties|rules|accounts|events|config|api))?(?:\?(.*))?$/.exec(path);
  if (!match) return {};
  return { name: match[1] as string, tab: match[2] ?? '', ...(match[3] !== undefined ? { query: match[3] } : {}) };
}

export const go = (hash: string): void => {
  location.hash = hash;
};

const isCollection = (r: ResourceView): boolean => r.type === 'Collection' || r.type === 'UserCollection';

function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [needKey, setNeedKey] = useState(false);
  const [app, setApp] = useState<AppView | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const [route, setRoute] = useState(parseRoute(location.hash));
  const [logs, setLogs] = useState<LogLine[]>([]);
  const [live, setLive] = useState(false);
  const listeners = useRef(new Set<(e: FeedEvent) => void>());

  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onHash);
    whenUnauthorized(() => {
      rootKey.clear();
      setApp(undefined);
      setNeedKey(true);
    });
    return () => removeEventListener('hashchange', onHash);
  }, []);

  const load = useCallback(async () => {
    try {
      const s = await call<Session>('GET', '/dashboard/api/session');
      // The app's name (and the prefix of this page's request ids) come only with a valid key.
      setOwnRequestIdPrefix(s.requestIdPrefix);
      setSession(s);
      if (s.env === 'production' && rootKey.get() === null) return setNeedKey(true);
      setApp(await call<AppView>('GET', '/dashboard/api/app'));
      setNeedKey(false);
      setFailure(undefined);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      setFailure((err as Error).message);
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  // Live: log lines, data changes and reloads, from the moment the app is shown.
  useEffect(() => {
    if (!app) return;
    return follow(
      (event) => {
        if (event.kind === 'log') setLogs((l) => (l.length > 500 ? [...l.slice(-400), event] : [...l, event]));
        if (event.kind === 'reload') void call<AppView>('GET', '/dashboard/api/app').then(setApp, () => undefined);
        for (const listener of listeners.current) listener(event);
      },
      setLive,
    );
    // Once per key: a new app view (after a save) keeps the same stream.
  }, [Boolean(app)]);

  const subscribe = useCallback((listener: (e: FeedEvent) => void) => {
    listeners.current.add(listener);
    return () => listeners.current.delete(listener);
  }, []);

  if (needKey) return <KeyPrompt app={session?.app} onKey={() => void load()} />;
  if (failure) return <Centered><div class="card error-card"><h2>The dashboard cannot reach the server</h2><p>{failure}</p><button class="btn" onClick={() => void load()}>Try again</button></div></Centered>;
  if (!app || !session) return <Centered><div class="spinner" aria-label="loading" /></Centered>;

  const resource = route.name ? app.resources.find((r) => r.name === route.name) : undefined;
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/"><span class="logo">svc</span><span class="app-name">{session.app}</span></a>
        <span class={`env env-${session.env}`}>{session.env}</span>
        <span class={`live ${live ? 'on' : ''}`} title={live ? 'following the server live' : 'reconnecting'}>{live ? 'live' : 'offline'}</span>
        <span class="grow" />
        <a class={`btn ghost ${route.page === 'logs' ? 'active' : ''}`} href="#/logs" data-test="logs-link">Logs</a>
        <a class="btn ghost" href="/dashboard/api/types" onClick={(e) => { e.preventDefault(); void downloadTypes(); }}>Download svc-types.ts</a>
        {session.env === 'production' && (
          <button class="btn ghost" onClick={() => { rootKey.clear(); location.reload(); }}>Lock</button>
        )}
      </header>
      <aside class="side">
        <div class="side-head">
          <span>Resources</span>
          <a class="btn small primary" href="#/new" data-test="new-resource">+ New</a>
        </div>
        <nav>
          {app.resources.length === 0 && <p class="muted pad">No resources yet.</p>}
          {app.resources.map((r) => (
            <a key={r.name} class={`res ${route.name === r.name ? 'active' : ''}`} href={`#/r/${r.name}`}>
              <TypeIcon type={r.type} />
              <span class="res-name">/{r.name}</span>
              {!r.installed && <span class="badge warn" title="its type package is not installed">!</span>}
            </a>
          ))}
        </nav>
        <div class="side-head"><span>App</span></div>
        <nav>
          <a class={`app-link ${route.page === 'backups' ? 'active' : ''}`} href="#/backups" data-test="nav-backups">
            <span class="type-icon" aria-hidden="true">⟲</span>
            <span class="res-name">Backups</span>
          </a>
        </nav>
      </aside>
      <main class="main">
        {route.page === 'logs' ? (
          <LogsPage subscribe={subscribe} />
        ) : route.page === 'new' ? (
          <NewResource app={app} onCreated={(next, name) => { setApp(next); go(`#/r/${name}`); }} />
        ) : route.page === 'backups' ? (
          <BackupsPage />
        ) : resource ? (
          <ResourcePage key={resource.name} app={app} resource={resource} tab={route.tab ?? ''} query={route.query} setApp={setApp} subscribe={subscribe} env={session.env} />
        ) : route.name ? (
          <div class="pad"><p>No resource {route.name}. <a href="#/">Back</a></p></div>
        ) : (
          <Home app={app} />
        )}
      </main>
      <LogPanel logs={logs} clear={() => setLogs([])} />
    </div>
  );
}

async function downloadTypes(): Promise<void> {
  const text = await call<string>('GET', '/dashboard/api/types');
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = 'svc-types.ts';
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function Centered({ children }: { children: ComponentChildren }) {
  return <div class="centered">{children}</div>;
}

function KeyPrompt({ app, onKey }: { app: string | undefined; onKey(): void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>();
  const submit = async (e: Event) => {
    e.preventDefault();
    rootKey.set(key.trim());
    try {
      await call('GET', '/dashboard/api/app');
      onKey();
    } catch (err) {
      rootKey.clear();
      setError(err instanceof ApiError && err.status === 401 ? 'That is not a root key of this app.' : (err as Error).message);
    }
  };
  return (
    <Centered>
      <form class="card key-card" onSubmit={submit} data-test="key-prompt">
        <div class="logo big">svc</div>
        <h1>{app ?? 'svc'} dashboard</h1>
        <p class="muted">This server runs in production. Enter a root key of the app: <code>svc showkey</code> prints it on the server. It stays in this tab only.</p>
        <input type="password" autoFocus placeholder="root key" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} aria-label="root key" />
        {error && <p class="field-error">{error}</p>}
        <button class="btn primary wide" type="submit" disabled={key.trim() === ''}>Open the dashboard</button>
      </form>
    </Centered>
  );
}

export function TypeIcon({ type }: { type: string }) {
  const icons: Record<string, string> = { Collection: '▦', UserCollection: '☺', Event: '⚡', Email: '✉', Bucket: '⬚', Importer: '⇩' };
  return <span class={`type-icon t-${type}`} aria-hidden="true">{icons[type] ?? '◆'}</span>;
}

function Home({ app }: { app: AppView }) {
  return (
    <div class="page">
      <h1>Resources</h1>
      <p class="muted">Each resource is a folder under <code>resources/</code>. Changes made here are written there and served at once.</p>
      <div class="cards">
        {app.resources.map((r) => (
          <a key={r.name} class="card res-card" href={`#/r/${r.name}`}>
            <TypeIcon type={r.type} />
            <div>
              <strong>/{r.name}</strong>
              <div class="muted">{r.type}{isCollection(r) ? ` · ${counted(Object.keys(r.config.properties ?? {}).length, 'property', 'properties')}` : ''} · {counted(r.files.length, 'event script')}</div>
            </div>
          </a>
        ))}
        <a class="card res-card add" href="#/new"><span class="type-icon">+</span><div><strong>New resource</strong><div class="muted">Collection, users or an installed type</div></div></a>
      </div>
    </div>
  );
}

function NewResource({ app, onCreated }: { app: AppView; onCreated(app: AppView, name: string): void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState('Collection');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<string | undefined>();
  const [settings, setSettings] = useState<Record<string, string>>({});
  // The owner convention (docs/access-rules.md): objects belong to the user who creates them.
  const [owner, setOwner] = useState('owner');
  // The settings a type cannot start without are asked for here; the rest on its Config page.
  const needed = Object.entries(app.types.find((t) => t.name === type)?.settings ?? {}).filter(([, spec]) => spec.required && spec.default === undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const given: Record<string, unknown> = {};
      for (const [field, spec] of needed) given[field] = spec.type === 'number' ? Number(settings[field]) : settings[field];
      const next = await call<AppView>('POST', '/dashboard/api/resources', { name, type, ...(needed.length > 0 ? { settings: given } : {}), ...(type === 'Collection' ? { owner: owner.trim() } : {}) });
      onCreated(next, name.replace(/^\/+|\/+$/g, ''));
    } catch (err) {
      setErrors(err instanceof ApiError ? err.errors : {});
      setMessage((err as Error).message);
    }
  };
  return (
    <div class="page narrow">
      <h1>New resource</h1>
      <form class="card form" onSubmit={submit}>
        <label>Type</label>
        <div class="type-picker">
          {app.types.map((t) => (
            <button type="button" key={t.name} class={`type-choice ${type === t.name ? 'chosen' : ''}`} onClick={() => setType(t.name)} data-type={t.name}>
              <TypeIcon type={t.name} />
              <span>{t.label}</span>
            </button>
          ))}
        </div>
        <label for="new-name">Name (its path: /name)</label>
        <input id="new-name" value={name} placeholder="todos" maxLength={100} onInput={(e) => setName((e.target as HTMLInputElement).value)} autoFocus />
        {errors.name && <p class="field-error">{errors.name}</p>}
        {needed.map(([field, spec]) => (
          <div class="field" key={field}>
            <label for={`new-${field}`}>{field} <span class="req">*</span> <span class="col-type">{spec.type}</span></label>
            <input id={`new-${field}`} value={settings[field] ?? ''} onInput={(e) => setSettings({ ...settings, [field]: (e.target as HTMLInputElement).value })} />
            {spec.description && <p class="muted small">{spec.description}</p>}
            {errors[field] && <p class="field-error">{errors[field]}</p>}
          </div>
        ))}
        {type === 'Collection' && (
          <div class="field">
            <label for="new-owner">Owner property</label>
            <input id="new-owner" class="mono" value={owner} placeholder="none" onInput={(e) => setOwner((e.target as HTMLInputElement).value)} />
            <p class="muted small">
              {owner.trim() === ''
                ? 'No owner: creating needs a login; anyone may change or delete (the Rules tab changes that).'
                : `Creating needs a login, with ${owner.trim()} set to the creator's id; only the owner (or root) changes or deletes.`}
            </p>
            {errors.owner && <p class="field-error">{errors.owner}</p>}
          </div>
        )}
        {type === 'UserCollection' && <p class="muted small">Anyone may sign up; a user changes or deletes only themself (the Rules tab changes that).</p>}
        {message && !errors.name && !errors.owner && !needed.some(([f]) => errors[f]) && <p class="field-error">{message}</p>}
        <p class="muted small">A type from a package you add to the app's package.json appears here after a restart of the server.</p>
        <button class="btn primary" type="submit" disabled={name.trim() === ''}>Create</button>
      </form>
    </div>
  );
}

function ResourcePage({ app, resource, tab, query, setApp, subscribe, env }: { app: AppView; resource: ResourceView; tab: string; query?: string; setApp(a: AppView): void; subscribe(l: (e: FeedEvent) => void): () => void; env: string }) {
  const collection = isCollection(resource);
  const type = app.types.find((t) => t.name === resource.type);
  // A type's own pages (its dashboard.pages: a Webhook's deliveries) come first.
  const own = (type?.pages ?? []).filter((p) => p === 'deliveries');
  const tabs = collection ? ['data', 'properties', 'rules', ...(resource.type === 'UserCollection' ? ['accounts'] : []), 'events', 'api'] : [...own, 'config', 'events', 'api'];
  const current = tabs.includes(tab) ? tab : (tabs[0] as string);
  const [renaming, setRenaming] = useState(false);
  return (
    <div class="page wide">
      <div class="res-head">
        <TypeIcon type={resource.type} />
        <div>
          <h1>/{resource.name}</h1>
          <span class="muted">{resource.type}</span>
          {collection && <OfflineConflicts resource={resource} setApp={setApp} />}
        </div>
        <span class="grow" />
        <button class="btn ghost" onClick={() => setRenaming(true)}>Rename</button>
        <button class="btn ghost danger" onClick={() => void remove(resource, setApp)}>Delete</button>
      </div>
      {!resource.installed && <div class="notice warn">Type {resource.type} is not installed: add its package to the app's package.json and restart the server.</div>}
      {renaming && <RenameDialog resource={resource} close={() => setRenaming(false)} setApp={setApp} />}
      <Tabs tabs={tabs} current={current} label={`/${resource.name}`} href={(t) => `#/r/${resource.name}/${t}`} />
      <div class="tab-body" role="tabpanel" id="tab-panel" aria-labelledby={`tab-${current}`} tabIndex={0}>
        {current === 'data' && <DataGrid key={query ?? ''} resource={resource} subscribe={subscribe} resources={app.resources} initialQuery={query} />}
        {current === 'properties' && <PropertiesEditor app={app} resource={resource} setApp={setApp} />}
        {current === 'rules' && <RulesPage app={app} resource={resource} setApp={setApp} />}
        {current === 'accounts' && <AccountsPage app={app} resource={resource} setApp={setApp} />}
        {current === 'deliveries' && <DeliveriesPage resource={resource} />}
        {current === 'config' && <ConfigPage resource={resource} type={type} setApp={setApp} />}
        {current === 'events' && <EventsPage app={app} resource={resource} setApp={setApp} />}
        {current === 'api' && <ApiPage resource={resource} type={type} env={env} />}
      </div>
    </div>
  );
}

/**
 * A resource's tabs as ARIA tabs (tablist, tab, aria-selected; the panel is #tab-panel): links, so
 * each tab has an address, with the keyboard of a tab list. Left and right arrows (wrapping), Home
 * and End move to a tab and open it; only the open tab is in the Tab order.
 */
function Tabs({ tabs, current, label, href }: { tabs: string[]; current: string; label: string; href(tab: string): string }) {
  const onKeyDown = (e: KeyboardEvent) => {
    // From the tab the key was pressed on (focused by the last key at once), not from `current`:
    // keys pressed before the page shows the last one's tab would each start from the same tab.
    const on = tabs.indexOf((e.target as HTMLElement | null)?.id?.replace(/^tab-/, '') ?? '');
    const at = on !== -1 ? on : tabs.indexOf(current);
    const to = e.key === 'ArrowRight' ? (at + 1) % tabs.length : e.key === 'ArrowLeft' ? (at - 1 + tabs.length) % tabs.length : e.key === 'Home' ? 0 : e.key === 'End' ? tabs.length - 1 : -1;
    if (to === -1) return;
    e.preventDefault();
    const tab = tabs[to] as string;
    document.getElementById(`tab-${tab}`)?.focus();
    go(href(tab));
  };
  return (
    <nav class="tabs" role="tablist" aria-label={label} onKeyDown={onKeyDown}>
      {tabs.map((t) => (
        <a key={t} id={`tab-${t}`} role="tab" aria-selected={t === current ? 'true' : 'false'} aria-controls="tab-panel" tabIndex={t === current ? 0 : -1} class={`tab ${t === current ? 'active' : ''}`} href={href(t)}>
          {t === 'api' ? 'API' : t[0]?.toUpperCase() + t.slice(1)}
        </a>
      ))}
    </nav>
  );
}

async function remove(resource: ResourceView, setApp: (a: AppView) => void): Promise<void> {
  const data = isCollection(resource) ? ' Its stored objects stay in the store (a collection with the same name gets them back).' : '';
  if (!confirm(`Delete /${resource.name}? Its folder (config and scripts) moves to .svc/trash.${data}`)) return;
  const next = await call<AppView>('DELETE', `/dashboard/api/resources/${resource.name}`);
  setApp(next);
  go('#/');
}

function RenameDialog({ resource, close, setApp }: { resource: ResourceView; close(): void; setApp(a: AppView): void }) {
  const [to, setTo] = useState(resource.name);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const next = await call<AppView & { notMoved?: number; message?: string }>('POST', `/dashboard/api/resources/${resource.name}/rename`, { to });
      // Users whose username was taken under the new name stayed behind: the server says which.
      if (next.notMoved) alert(next.message);
      setApp(next);
      close();
      go(`#/r/${to.replace(/^\/+|\/+$/g, '')}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <div class="modal-back" onClick={close}>
      <form class="card modal" onSubmit={submit} onClick={(e) => e.stopPropagation()}>
        <h2>Rename /{resource.name}</h2>
        {isCollection(resource) && <p class="muted small">Its objects move with it. Signed-in users of a renamed user collection sign in again.</p>}
        <input value={to} maxLength={100} onInput={(e) => setTo((e.target as HTMLInputElement).value)} autoFocus aria-label="new name" />
        {error && <p class="field-error">{error}</p>}
        <div class="row end">
          <button type="button" class="btn ghost" onClick={close}>Cancel</button>
          <button type="submit" class="btn primary" disabled={busy || to === resource.name}>Rename</button>
        </div>
      </form>
    </div>
  );
}

function LogPanel({ logs, clear }: { logs: LogLine[]; clear(): void }) {
  const [open, setOpen] = useState(false);
  const [errorsOnly, setErrorsOnly] = useState(false);
  const body = useRef<HTMLDivElement>(null);
  const shown = useMemo(() => (errorsOnly ? logs.filter((l) => l.level !== 'info') : logs), [logs, errorsOnly]);
  const errors = useMemo(() => logs.filter((l) => l.level === 'error').length, [logs]);
  useEffect(() => {
    if (open && body.current) body.current.scrollTop = body.current.scrollHeight;
  }, [shown, open]);
  return (
    <section class={`log ${open ? 'open' : ''}`} data-test="log-panel">
      <div class="log-head" onClick={() => setOpen(!open)}>
        <strong>Server log</strong>
        <span class="muted">{counted(logs.length, 'line')}</span>
        {errors > 0 && <span class="badge error">{counted(errors, 'error')}</span>}
        <span class="grow" />
        {open && (
          <>
            <label class="small" onClick={(e) => e.stopPropagation()}><input type="checkbox" checked={errorsOnly} onChange={() => setErrorsOnly(!errorsOnly)} /> warnings and errors</label>
            <button class="btn small ghost" onClick={(e) => { e.stopPropagation(); clear(); }}>Clear</button>
          </>
        )}
        <span class="chev">{open ? '▾' : '▴'}</span>
      </div>
      {open && (
        <div class="log-body" ref={body}>
          {shown.map((l, i) => (
            <div key={i} class={`log-line ${l.level}`}><time>{l.time.slice(11, 19)}</time><span>{l.message}</span></div>
          ))}
          {shown.length === 0 && <p class="muted pad">Nothing yet. Script console lines and errors appear here as they happen.</p>}
        </div>
      )}
    </section>
  );
}

render(<App />, document.getElementById('root') as HTMLElement);
