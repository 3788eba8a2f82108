import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { call, collectionUrl } from './api.ts';
import type { FeedEvent, PropertyDef, ResourceView , ApiError} from './api.ts';
import { SignInCell, hasAccounts, useSignInMethods } from './userMethods.tsx';
import { counted } from './words.ts';
import { RelationLinks, RelationPicker, relationOf, useRelationLabels } from './relations.tsx';
import type { RelationLabels, RelationTarget } from './relations.tsx';
import { FileCell } from './files.tsx';

type Row = { id: string } & Record<string, unknown>;
interface Column {
  name: string;
  type: string;
  required: boolean;
  /** A user's password: written, never read. */
  writeOnly?: boolean;
  /** Not a property of the collection: a value a script set (shown, not editable, not sortable). */
  undeclared?: boolean;
  /** A relation: shown as links to the related objects, edited with a picker. */
  relation?: RelationTarget;
  /** A file property: whether it holds a list. */
  many?: boolean;
}

const PAGE_SIZES = [25, 50, 100];

/** The columns of a collection: its properties in order; users get username and password first. */
export function columnsOf(resource: ResourceView): Column[] {
  const props = Object.entries(resource.config.properties ?? {}) as [string, PropertyDef][];
  const cols: Column[] = props.map(([name, def]) => {
    const relation = relationOf(def);
    return { name, type: def.type, required: def.required === true, ...(relation ? { relation } : {}), ...(def.type === 'file' ? { many: def.many === true } : {}) };
  });
  if (resource.type === 'UserCollection') {
    const own = new Set(cols.map((c) => c.name));
    const extra: Column[] = [];
    if (!own.has('username')) extra.push({ name: 'username', type: 'string', required: true });
    extra.push({ name: 'password', type: 'string', required: true, writeOnly: true });
    return [...extra, ...cols.filter((c) => c.name !== 'password')];
  }
  return cols;
}

/**
 * The columns after the collection's own: names the shown objects have that no property declares
 * (set by a script, or stored before a property was removed), so that nothing answered is hidden.
 */
export function undeclaredColumns(columns: readonly Column[], rows: readonly Row[]): Column[] {
  const known = new Set(['id', ...columns.map((c) => c.name)]);
  const extra = new Set<string>();
  for (const row of rows) for (const name of Object.keys(row)) if (!known.has(name)) extra.add(name);
  return [...extra].map((name) => ({ name, type: 'undeclared', required: false, undeclared: true }));
}

/** A cell's text for a value of the column's type. */
function display(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Reads what was typed into a cell as a value of the column's type. */
export function parseCell(text: string, type: string): { value?: unknown; error?: string } {
  if (text === '') return { value: null };
  switch (type) {
    case 'number': {
      const n = Number(text);
      return Number.isFinite(n) ? { value: n } : { error: 'a number' };
    }
    case 'boolean':
      return text === 'true' || text === 'false' ? { value: text === 'true' } : { error: 'true or false' };
    case 'relations': {
      // A many relation: a JSON array of ids, or ids separated by commas.
      if (text.trim().startsWith('[')) return parseCell(text, 'array');
      return { value: text.split(',').map((id) => id.trim()).filter((id) => id !== '') };
    }
    case 'object':
    case 'array':
      try {
        const v: unknown = JSON.parse(text);
        if (type === 'array' ? !Array.isArray(v) : typeof v !== 'object' || v === null || Array.isArray(v)) return { error: type === 'array' ? 'a JSON array' : 'a JSON object' };
        return { value: v };
      } catch {
        return { error: `JSON (${type})` };
      }
    default:
      return { value: text };
  }
}

/**
 * A collection's objects: pages of a query, sorted by a column, each cell editable in place; errors
 * of the server's validation (and of event scripts) appear on their cell.
 */
export function DataGrid({ resource, subscribe, resources = [], initialQuery }: { resource: ResourceView; subscribe(l: (e: FeedEvent) => void): () => void; resources?: readonly ResourceView[]; initialQuery?: string }) {
  const [rows, setRows] = useState<Row[]>([]);
  const declared = columnsOf(resource);
  const columns = [...declared, ...undeclaredColumns(declared, rows)];
  const relationColumns = declared.filter((c) => c.relation !== undefined);
  const labels = useRelationLabels(relationColumns.map((c) => c.relation as RelationTarget), relationColumns.map((c) => c.name), rows);
  const [total, setTotal] = useState<number | undefined>();
  const [page, setPage] = useState(0);
  const [size, setSize] = useState(50);
  const [sort, setSort] = useState<{ field: string; dir: 1 | -1 } | undefined>();
  // A link to a related object opens its collection with the query that finds it.
  const [queryText, setQueryText] = useState(initialQuery ?? '');
  const [query, setQuery] = useState<Record<string, unknown>>(() => parsedQuery(initialQuery));
  // The search box: shown when a property is searchable ("search": true); ANDed with the query.
  const searchable = Object.values(resource.config.properties ?? {}).some((def) => def.search === true);
  const [searchText, setSearchText] = useState('');
  const [search, setSearch] = useState('');
  const [queryError, setQueryError] = useState<string | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [editing, setEditing] = useState<{ id: string; col: string } | undefined>();
  const [cellErrors, setCellErrors] = useState<Record<string, string>>({});
  // Values being saved, shown at once (a checkbox stays ticked while its PUT is on the way, even
  // when a live refresh brings the row back before the server has it).
  const [pending, setPending] = useState<Record<string, unknown>>({});
  const [adding, setAdding] = useState(false);
  const [flash, setFlash] = useState<Set<string>>(new Set());
  const [took, setTook] = useState<number | undefined>();
  const seq = useRef(0);
  const { methods: signIn, reload: reloadSignIn } = useSignInMethods(resource, rows.map((r) => r.id));
  const accounts = hasAccounts(resource);

  const load = useCallback(async () => {
    const mine = ++seq.current;
    const started = performance.now();
    const filter: Record<string, unknown> = search === '' ? query : { ...query, $search: search };
    const q: Record<string, unknown> = { ...filter, $limit: size, $skip: page * size };
    if (sort) q.$sort = { [sort.field]: sort.dir };
    try {
      const [list, count] = await Promise.all([
        call<Row[]>('GET', collectionUrl(resource.name, q)),
        call<{ count: number }>('GET', collectionUrl(resource.name, filter, '/count')),
      ]);
      if (mine !== seq.current) return;
      setRows(list);
      setTotal(count.count);
      setLoadError(undefined);
      setTook(Math.round(performance.now() - started));
    } catch (err) {
      if (mine === seq.current) setLoadError((err as Error).message);
    }
  }, [resource.name, query, search, sort, page, size]);

  useEffect(() => {
    void load();
  }, [load]);

  // Changes made elsewhere (another tab, the app, a script) show without a reload.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return subscribe((event) => {
      if (event.kind !== 'change' || event.collection !== resource.name) return;
      if (event.id) setFlash((f) => new Set([...f, event.id as string]));
      clearTimeout(timer);
      timer = setTimeout(() => {
        void load();
        setTimeout(() => setFlash(new Set()), 1200);
      }, 150);
    });
  }, [subscribe, load, resource.name]);

  const applyQuery = (e: Event) => {
    e.preventDefault();
    const text = queryText.trim();
    if (text === '') {
      setQuery({});
      setQueryError(undefined);
      setPage(0);
      return;
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('a JSON object, such as {"done": false}');
      setQuery(parsed as Record<string, unknown>);
      setQueryError(undefined);
      setPage(0);
    } catch (err) {
      setQueryError(`The query is ${err instanceof SyntaxError ? 'not JSON' : (err as Error).message}: ${err instanceof SyntaxError ? err.message : ''}`);
    }
  };

  const toggleSort = (field: string) => {
    setSort((s) => (s?.field !== field ? { field, dir: 1 } : s.dir === 1 ? { field, dir: -1 } : undefined));
    setPage(0);
  };

  const save = async (row: Row, col: Column, value: unknown) => {
    const key = `${row.id}:${col.name}`;
    setPending((p) => ({ ...p, [key]: value }));
    try {
      const updated = await call<Row>('PUT', `/${resource.name}/${encodeURIComponent(row.id)}`, { [col.name]: value });
      setRows((rs) => rs.map((r) => (r.id === row.id ? updated : r)));
      setCellErrors((e) => {
        const { [key]: _gone, ...rest } = e;
        return rest;
      });
      setEditing(undefined);
    } catch (err) {
      const e = err as ApiError;
      setCellErrors((all) => ({ ...all, [key]: e.errors?.[col.name] ?? e.message }));
    } finally {
      setPending((p) => {
        const { [key]: _done, ...rest } = p;
        return rest;
      });
    }
  };

  const remove = async (row: Row) => {
    if (!confirm(`Delete ${row.id}?`)) return;
    try {
      await call('DELETE', `/${resource.name}/${encodeURIComponent(row.id)}`);
      void load();
    } catch (err) {
      alert((err as Error).message);
    }
  };

  const pages = total === undefined ? 1 : Math.max(1, Math.ceil(total / size));
  return (
    <div class="grid-wrap">
      <form class="toolbar" onSubmit={applyQuery}>
        <input class="query" placeholder='query, as JSON: {"done": false, "title": {"$regex": "^a"}}' value={queryText} onInput={(e) => setQueryText((e.target as HTMLInputElement).value)} aria-label="query" />
        <button class="btn" type="submit">Apply</button>
        {searchable && (
          <input
            class="search"
            type="search"
            placeholder="search (words)"
            value={searchText}
            aria-label="search"
            data-test="search"
            onInput={(e) => setSearchText((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              if (e.key !== 'Enter') return;
              e.preventDefault();
              setSearch(searchText.trim());
              setPage(0);
            }}
          />
        )}
        <span class="grow" />
        <button type="button" class="btn primary" onClick={() => setAdding(true)} data-test="add-row">+ Add</button>
      </form>
      {queryError && <div class="notice error">{queryError}</div>}
      {loadError && <div class="notice error">{loadError}</div>}
      <div class="grid-scroll">
        <table class="grid" data-test="grid">
          <thead>
            <tr>
              <th class="id-col" onClick={() => toggleSort('id')}>id {sortMark(sort, 'id')}</th>
              {accounts && <th class="nosort">sign-in</th>}
              {columns.map((c) => (
                <th key={c.name} onClick={() => !c.writeOnly && !c.undeclared && toggleSort(c.name)} class={c.writeOnly || c.undeclared ? 'nosort' : ''} title={c.undeclared ? 'not a property of this collection: set by a script' : undefined}>
                  {c.name} <span class="col-type">{c.type}{c.required ? ' *' : ''}</span> {sortMark(sort, c.name)}
                </th>
              ))}
              <th class="actions" />
            </tr>
          </thead>
          <tbody>
            {adding && <NewRow columns={columns} resource={resource} done={(added) => { setAdding(false); if (added) void load(); }} />}
            {rows.map((row) => (
              <tr key={row.id} class={flash.has(row.id) ? 'flash' : ''} data-id={row.id}>
                <td class="id-col mono">{row.id}</td>
                {accounts && <SignInCell methods={signIn[row.id]} resource={resource} id={row.id} changed={reloadSignIn} />}
                {columns.map((col) => {
                  const key = `${row.id}:${col.name}`;
                  const isEditing = editing?.id === row.id && editing.col === col.name;
                  if (col.type === 'file') return <FileCell key={col.name} name={col.name} path={`/${resource.name}/${row.id}/${col.name}`} many={col.many === true} value={row[col.name]} changed={() => void load()} />;
                  return (
                    <Cell
                      key={col.name}
                      col={col}
                      labels={labels}
                      related={col.relation ? resources.find((r) => r.name === col.relation?.collection) : undefined}
                      value={key in pending ? pending[key] : row[col.name]}
                      editing={isEditing}
                      error={cellErrors[key]}
                      startEdit={() => setEditing({ id: row.id, col: col.name })}
                      cancel={() => setEditing(undefined)}
                      save={(v) => void save(row, col, v)}
                    />
                  );
                })}
                <td class="actions"><button class="icon-btn" title="delete" onClick={() => void remove(row)} aria-label={`delete ${row.id}`}>✕</button></td>
              </tr>
            ))}
            {rows.length === 0 && !adding && (
              <tr><td class="empty" colSpan={columns.length + (accounts ? 3 : 2)}>{Object.keys(query).length > 0 ? 'Nothing matches the query.' : 'No objects yet. Add one, or POST to /' + resource.name + '.'}</td></tr>
            )}
          </tbody>
        </table>
      </div>
      <div class="pager">
        <span class="muted">{total === undefined ? '' : counted(total, 'object')}{took !== undefined ? ` · ${took} ms` : ''}</span>
        <span class="grow" />
        <select value={size} onChange={(e) => { setSize(Number((e.target as HTMLSelectElement).value)); setPage(0); }} aria-label="page size">
          {PAGE_SIZES.map((s) => <option key={s} value={s}>{s} a page</option>)}
        </select>
        <button class="btn small" disabled={page === 0} onClick={() => setPage(0)}>«</button>
        <button class="btn small" disabled={page === 0} onClick={() => setPage(page - 1)}>‹ Prev</button>
        <span>page {(page + 1).toLocaleString()} of {pages.toLocaleString()}</span>
        <button class="btn small" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>Next ›</button>
        <button class="btn small" disabled={page + 1 >= pages} onClick={() => setPage(pages - 1)}>»</button>
      </div>
    </div>
  );
}

function sortMark(sort: { field: string; dir: 1 | -1 } | undefined, field: string): string {
  return sort?.field === field ? (sort.dir === 1 ? '▲' : '▼') : '';
}

/** A query given in the address (`#/r/<c>/data?{"id": "..."}`), {} when it is none or not a JSON object. */
function parsedQuery(text: string | undefined): Record<string, unknown> {
  try {
    const parsed: unknown = text === undefined || text === '' ? {} : JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function Cell({ col, value, editing, error, labels, related, startEdit, cancel, save }: { col: Column; value: unknown; editing: boolean; error: string | undefined; labels: RelationLabels; related: ResourceView | undefined; startEdit(): void; cancel(): void; save(v: unknown): void }) {
  if (col.relation !== undefined) {
    if (editing) return <RelationPicker target={col.relation} related={related} value={value} error={error} labels={labels} cancel={cancel} save={save} />;
    return (
      <td class={`cell relation ${error ? 'has-error' : ''}`} data-col={col.name} onDblClick={startEdit} onClick={error ? startEdit : undefined} title={error ?? 'double-click to pick'}>
        <RelationLinks target={col.relation} value={value} labels={labels} />
        {error && <div class="cell-error">{error}</div>}
      </td>
    );
  }
  if (col.type === 'boolean' && !col.writeOnly) {
    return (
      <td class={`cell bool ${error ? 'has-error' : ''}`} data-col={col.name}>
        <input type="checkbox" checked={value === true} onChange={() => save(!(value === true))} aria-label={col.name} />
        {error && <div class="cell-error">{error}</div>}
      </td>
    );
  }
  if (col.undeclared) {
    return (
      <td class="cell undeclared" data-col={col.name} title="set by a script; declare the property to edit it">
        <span class="cell-text">{display(value)}</span>
      </td>
    );
  }
  if (editing) return <CellEditor col={col} value={value} error={error} cancel={cancel} save={save} />;
  return (
    <td class={`cell ${error ? 'has-error' : ''} ${col.type}`} data-col={col.name} onDblClick={startEdit} onClick={error ? startEdit : undefined} title={error ?? 'double-click to edit'}>
      {col.writeOnly ? <span class="muted">•••••• (write only)</span> : <span class="cell-text">{display(value)}</span>}
      {error && <div class="cell-error">{error}</div>}
    </td>
  );
}

/** A cell being edited: its own component, so that its text starts from the value when it opens. */
function CellEditor({ col, value, error, cancel, save }: { col: Column; value: unknown; error: string | undefined; cancel(): void; save(v: unknown): void }) {
  const [text, setText] = useState(col.writeOnly ? '' : display(value));
  const [local, setLocal] = useState<string | undefined>();
  const commit = () => {
    const parsed = parseCell(text, col.type);
    if (parsed.error) return setLocal(`must be ${parsed.error}`);
    setLocal(undefined);
    save(parsed.value);
  };
  return (
    <td class={`cell editing ${error || local ? 'has-error' : ''}`} data-col={col.name}>
      <input
        autoFocus
        type={col.writeOnly ? 'password' : 'text'}
        placeholder={col.writeOnly ? 'new password' : ''}
        value={text}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit();
          if (e.key === 'Escape') cancel();
        }}
        onBlur={() => (text === display(value) && !col.writeOnly ? cancel() : undefined)}
        aria-label={col.name}
      />
      {(local ?? error) && <div class="cell-error">{local ?? error}</div>}
    </td>
  );
}

function NewRow({ columns, resource, done }: { columns: Column[]; resource: ResourceView; done(added: boolean): void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<string | undefined>();
  const submit = async () => {
    const body: Record<string, unknown> = {};
    const local: Record<string, string> = {};
    for (const col of columns) {
      if (col.undeclared || col.type === 'file') continue;
      const text = values[col.name] ?? '';
      if (col.type === 'boolean') {
        if (text !== '') body[col.name] = text === 'true';
        continue;
      }
      if (text === '') continue;
      const parsed = parseCell(text, col.relation?.many ? 'relations' : col.type);
      if (parsed.error) local[col.name] = `must be ${parsed.error}`;
      else body[col.name] = parsed.value;
    }
    if (Object.keys(local).length > 0) return setErrors(local);
    try {
      await call('POST', `/${resource.name}`, body);
      done(true);
    } catch (err) {
      const e = err as ApiError;
      setErrors(e.errors ?? {});
      setMessage(Object.keys(e.errors ?? {}).length > 0 ? undefined : e.message);
    }
  };
  return (
    <tr class="new-row">
      <td class="id-col muted">new</td>
      {hasAccounts(resource) && <td />}
      {columns.map((col) => (
        <td key={col.name} class={`cell editing ${errors[col.name] ? 'has-error' : ''}`} data-col={col.name}>
          {col.undeclared ? null : col.type === 'file' ? (
            <span class="muted">upload once saved</span>
          ) : col.type === 'boolean' ? (
            <input type="checkbox" checked={values[col.name] === 'true'} onChange={() => setValues({ ...values, [col.name]: values[col.name] === 'true' ? 'false' : 'true' })} aria-label={col.name} />
          ) : (
            <input
              type={col.writeOnly ? 'password' : 'text'}
              placeholder={col.relation ? `${col.name}: id${col.relation.many ? 's, separated by commas' : ''} of ${col.relation.collection}` : col.name}
              value={values[col.name] ?? ''}
              onInput={(e) => setValues({ ...values, [col.name]: (e.target as HTMLInputElement).value })}
              onKeyDown={(e) => e.key === 'Enter' && void submit()}
              aria-label={col.name}
            />
          )}
          {errors[col.name] && <div class="cell-error">{errors[col.name]}</div>}
        </td>
      ))}
      <td class="actions">
        <button class="btn small primary" onClick={() => void submit()} data-test="save-row">Save</button>
        <button class="btn small ghost" onClick={() => done(false)}>✕</button>
        {message && <div class="cell-error">{message}</div>}
      </td>
    </tr>
  );
}
