import { useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, PropertyDef, ResourceView } from './api.ts';
import { useResetOn } from './hooks.ts';

const TYPES = ['string', 'number', 'boolean', 'object', 'array', 'date', 'relation', 'file'];
/** What a relation does to the objects that point at a deleted one (docs/relations.md). */
const ON_DELETE = [
  ['restrict', 'restrict: refuse the delete (409)'],
  ['setNull', 'setNull: clear the reference'],
  ['cascade', 'cascade: delete them too'],
] as const;
/** The settings only a relation has: dropped when a property stops being one. */
const RELATION_KEYS = ['collection', 'many', 'onDelete'] as const;
/** The settings only a file property has (`many` too): dropped when a property stops being one. */
const FILE_KEYS = ['many', 'maxSize', 'maxFiles', 'types', 'thumbs'] as const;
const NAME = /^[A-Za-z_$][\w$]*$/;

interface Prop {
  name: string;
  def: PropertyDef;
  /** Its name in the store, when it is being renamed (config.json's $renameFrom moves the values). */
  from?: string;
  /** A stable row key while the name is edited. */
  uid: number;
}

let nextUid = 1;

/**
 * A collection's properties: name, type (a relation with the collection it points into, one id or
 * many, and what deleting a related object does), required, unique, index, private and their order.
 */
export function PropertiesEditor({ app, resource, setApp }: { app: AppView; resource: ResourceView; setApp(a: AppView): void }) {
  // What a relation may point into: the app's collections (the server checks it again at save).
  const collections = app.resources.filter((r) => r.type === 'Collection' || r.type === 'UserCollection').map((r) => r.name);
  const initial = (): Prop[] =>
    Object.entries(resource.config.properties ?? {}).map(([name, def]) => {
      const { $renameFrom: _done, $default: _filled, ...rest } = def;
      return { name, def: rest, from: name, uid: nextUid++ };
    });
  const saved = (): Record<string, PropertyDef> => toConfig(initial());
  const [props, setProps] = useState<Prop[]>(initial);
  const [newName, setNewName] = useState('');
  const [newType, setNewType] = useState('string');
  // What the stored objects get for the new property (a migration's add with a default); '' none.
  const [newDefault, setNewDefault] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [savedNote, setSavedNote] = useState<string | false>(false);
  const [busy, setBusy] = useState(false);
  // Reset when the stored properties change, not each time the app view is fetched again.
  useResetOn(JSON.stringify(resource.config.properties ?? {}), () => setProps(initial()));

  const dirty = JSON.stringify(toConfig(props)) !== JSON.stringify(saved());
  const rename = (i: number, name: string) => setProps(props.map((p, j) => (j === i ? { ...p, name } : p)));
  const badName = (p: Prop, i: number): string | undefined =>
    !NAME.test(p.name) || p.name === 'id' ? 'letters, digits, _ and $; not id' : props.some((q, j) => j !== i && q.name === p.name) ? 'used twice' : undefined;
  const update = (i: number, change: Partial<PropertyDef>) => setProps(props.map((p, j) => (j === i ? { ...p, def: { ...p.def, ...change } } : p)));
  /** A new type; a relation starts pointing into this collection's first peer, the others lose a relation's settings. */
  const retype = (i: number, type: string) =>
    setProps(props.map((p, j) => (j === i ? { ...p, def: withType(p.def, type, collections) } : p)));
  const move = (i: number, by: number) => {
    const next = [...props];
    const [item] = next.splice(i, 1);
    next.splice(i + by, 0, item as Prop);
    setProps(next);
  };
  const add = (e: Event) => {
    e.preventDefault();
    const name = newName.trim();
    if (!NAME.test(name) || name === 'id') return setError(`"${name}" cannot be a property name: letters, digits, _ and $, not starting with a digit, and not id`);
    if (props.some((p) => p.name === name)) return setError(`${name} exists`);
    const filled = readDefault(newDefault, newType);
    if (filled === INVALID_DEFAULT) return setError(`value for stored objects: ${newType === 'string' ? 'a text' : `JSON of a ${newType}`} (or leave it empty)`);
    const def = withType({ type: 'string' }, newType, collections);
    setProps([...props, { name, def: filled === undefined ? def : { ...def, $default: filled }, uid: nextUid++ }]);
    setNewName('');
    setNewDefault('');
    setError(undefined);
  };
  const save = async () => {
    const bad = props.find((p, i) => badName(p, i));
    if (bad) return setError(`property "${bad.name}": ${badName(bad, props.indexOf(bad)) ?? ''}`);
    setBusy(true);
    try {
      const saved = await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}`, { config: { ...resource.config, properties: toConfig(props) } });
      setApp(saved);
      setError(undefined);
      const written = saved.migrations ?? [];
      setSavedNote(written.length > 0 ? `Saved and reloaded; wrote ${written.join(', ')} (commit it with config.json)` : 'Saved and reloaded');
      setTimeout(() => setSavedNote(false), written.length > 0 ? 10_000 : 2000);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setBusy(false);
  };
  return (
    <div class="props">
      <table class="grid props-table" data-test="properties">
        <thead>
          <tr><th /><th>Property</th><th>Type</th><th title="a value is needed on create">Required</th><th title="no two objects share a value">Unique</th><th title="queries and sorts on it are faster">Index</th><th title="found by the grid's search box and $search (a string or array property)">Search</th><th title="never answered, never queryable by non-root">Private</th><th /></tr>
        </thead>
        <tbody>
          {resource.type === 'UserCollection' && (
            <tr class="fixed"><td /><td class="mono">username, password</td><td colSpan={6} class="muted">built in: the password is stored hashed and never answered</td></tr>
          )}
          {props.map((p, i) => (
            <tr key={p.uid} data-prop={p.from ?? p.name}>
              <td class="order">
                <button class="icon-btn" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`move ${p.name} up`}>▲</button>
                <button class="icon-btn" disabled={i === props.length - 1} onClick={() => move(i, 1)} aria-label={`move ${p.name} down`}>▼</button>
              </td>
              <td class={`mono ${badName(p, i) ? 'has-error' : ''}`}>
                <input class="mono prop-name" value={p.name} onInput={(e) => rename(i, (e.target as HTMLInputElement).value.trim())} aria-label={`${p.from ?? p.name} name`} />
                {p.from !== undefined && p.from !== p.name && <div class="small muted">renamed from {p.from}: stored values move</div>}
                {p.def.$default !== undefined && <div class="small muted">stored objects get {JSON.stringify(p.def.$default)}</div>}
                {badName(p, i) && <div class="cell-error">{badName(p, i)}</div>}
              </td>
              <td>
                <select value={p.def.type} onChange={(e) => retype(i, (e.target as HTMLSelectElement).value)} aria-label={`${p.name} type`}>
                  {TYPES.includes(p.def.type) ? null : <option key={p.def.type}>{p.def.type}</option>}
                  {TYPES.map((t) => <option key={t}>{t}</option>)}
                </select>
                {p.def.type === 'relation' ? <RelationSettings name={p.name} def={p.def} collections={collections} set={(change) => update(i, change)} /> : p.def.type === 'file' ? <FileSettings name={p.name} def={p.def} set={(change) => update(i, change)} /> : null}
              </td>
              {(['required', 'unique', 'index', 'search', 'private'] as const).map((flag) => (
                <td key={flag} class="center"><input type="checkbox" checked={p.def[flag] === true} onChange={() => update(i, { [flag]: !(p.def[flag] === true) })} aria-label={`${p.name} ${flag}`} /></td>
              ))}
              <td><button class="icon-btn" onClick={() => setProps(props.filter((_, j) => j !== i))} aria-label={`remove ${p.name}`} title="remove (a migration removes the stored values, kept for svc migrate down)">✕</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <form class="toolbar" onSubmit={add}>
        <input placeholder="new property name" value={newName} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} aria-label="new property name" />
        <select value={newType} onChange={(e) => setNewType((e.target as HTMLSelectElement).value)} aria-label="new property type">
          {TYPES.map((t) => <option key={t}>{t}</option>)}
        </select>
        <input placeholder="value for stored objects" value={newDefault} onInput={(e) => setNewDefault((e.target as HTMLInputElement).value)} aria-label="new property value for stored objects" title="optional: the objects stored already get this value (a migration's default); JSON, or a text for a string" />
        <button class="btn" type="submit" disabled={newName.trim() === ''} data-test="add-property">Add property</button>
        <span class="grow" />
        {savedNote && <span class="ok" data-test="saved-note">{savedNote}</span>}
        <button class="btn" disabled={!dirty || busy} onClick={() => setProps(initial())} type="button">Revert</button>
        <button class="btn primary" disabled={!dirty || busy} onClick={() => void save()} type="button" data-test="save-properties">Save</button>
      </form>
      {error && <div class="notice error">{error}</div>}
      <p class="muted small">Saving writes resources/{resource.name}/config.json; the server serves the change at once. In development a rename, a removal, a new property, a type change or an index changed is also written as a migration file in migrations/ and applied to the stored objects (a removal keeps the values for svc migrate down; a type change converts them as the file states); commit it with config.json and production applies it at start (docs/migrations.md).</p>
    </div>
  );
}

/** A relation's settings: the collection its ids point into, one id or many, onDelete. */
function RelationSettings({ name, def, collections, set }: { name: string; def: PropertyDef; collections: string[]; set(change: Partial<PropertyDef>): void }) {
  const target = typeof def.collection === 'string' ? def.collection.replace(/^\/+/, '') : '';
  const onDelete = typeof def.onDelete === 'string' ? def.onDelete : 'restrict';
  return (
    <div class="relation-settings" data-test={`relation-${name}`}>
      <label class="small">
        to{' '}
        <select value={target} onChange={(e) => set({ collection: (e.target as HTMLSelectElement).value })} aria-label={`${name} relation collection`}>
          {!collections.includes(target) && <option value={target}>{target === '' ? 'choose a collection' : `${target} (not a collection)`}</option>}
          {collections.map((c) => <option key={c} value={c}>/{c}</option>)}
        </select>
      </label>
      <label class="small">
        <input type="checkbox" checked={def.many === true} onChange={() => set({ many: def.many !== true })} aria-label={`${name} relation many`} /> many ids
      </label>
      <label class="small">
        on delete{' '}
        <select value={onDelete} onChange={(e) => set({ onDelete: (e.target as HTMLSelectElement).value })} aria-label={`${name} relation onDelete`}>
          {ON_DELETE.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
      </label>
    </div>
  );
}

const MB = 1024 * 1024;
/** A file type as the server takes it (fileSettings.ts): `image/png`, `image/*`. */
const MEDIA_TYPE = /^[a-z]+\/(?:\*|[a-z0-9][a-z0-9.+-]*)$/;
const THUMB_SIZE = /^\d{1,4}x\d{1,4}$/;

/** A comma-separated list as typed: its items, trimmed, without empty ones. */
const listOf = (text: string): string[] => text.split(',').map((t) => t.trim()).filter((t) => t !== '');

/** What a setting's text means: its value (undefined: the server's default), or why it is wrong. */
type Parsed = { value: unknown } | { problem: string };

/** A list of items each matching `valid`; empty: none set. */
const parseList = (valid: RegExp, what: string) => (text: string): Parsed => {
  const items = listOf(text);
  const bad = items.find((t) => !valid.test(t));
  return bad !== undefined ? { problem: `"${bad}" is not ${what}` } : { value: items.length === 0 ? undefined : items };
};

/** A whole number of `scale` units, at least 1 once scaled; empty: none set. */
const parseNumber = (scale: number, what: string) => (text: string): Parsed => {
  if (text.trim() === '') return { value: undefined };
  const value = Math.round(Number(text) * scale);
  return Number.isSafeInteger(value) && value >= 1 ? { value } : { problem: `${what}: a positive number` };
};

/**
 * A setting's input: applied as it is typed when it reads well, else its problem is shown and
 * nothing changes. The text typed is kept (not re-formatted) while it means the value set.
 */
function SettingInput(props: { value: unknown; format(value: unknown): string; parse(text: string): Parsed; set(value: unknown): void; problem(text: string | undefined): void; label: string; placeholder: string; number?: boolean }) {
  const [text, setText] = useState(() => props.format(props.value));
  useResetOn(JSON.stringify(props.value ?? null), () => {
    const parsed = props.parse(text);
    if (!('value' in parsed) || JSON.stringify(parsed.value ?? null) !== JSON.stringify(props.value ?? null)) setText(props.format(props.value));
  });
  const typed = (next: string) => {
    setText(next);
    const parsed = props.parse(next);
    if ('problem' in parsed) return props.problem(parsed.problem);
    props.problem(undefined);
    props.set(parsed.value);
  };
  return (
    <input class={props.number ? 'num' : undefined} inputMode={props.number ? 'decimal' : undefined} value={text} placeholder={props.placeholder} onInput={(e) => typed((e.target as HTMLInputElement).value)} aria-label={props.label} />
  );
}

/**
 * A file property's settings (docs/files.md): one file or many, the largest file (in MB), how many
 * a list holds, the types allowed and the thumbnail sizes. An empty field is the server's default;
 * the server checks each again at save and enforces them on every upload, whatever sent it.
 */
function FileSettings({ name, def, set }: { name: string; def: PropertyDef; set(change: Partial<PropertyDef>): void }) {
  const [problems, setProblems] = useState<Record<string, string>>({});
  const many = def.many === true;
  const list = (value: unknown): string => (Array.isArray(value) ? value.join(', ') : '');
  const field = (key: 'maxSize' | 'maxFiles' | 'types' | 'thumbs') => ({
    value: def[key],
    set: (value: unknown) => set({ [key]: value }),
    problem: (text: string | undefined) =>
      setProblems((now) => {
        const { [key]: _was, ...rest } = now;
        return text === undefined ? rest : { ...rest, [key]: text };
      }),
  });
  return (
    <div class="file-settings" data-test={`file-${name}`}>
      <label class="small">
        <input type="checkbox" checked={many} onChange={() => set(many ? { many: undefined, maxFiles: undefined } : { many: true })} aria-label={`${name} file many`} /> many files
      </label>
      <label class="small" title="the largest file, in MB (1 MB = 1,048,576 bytes); empty: 10 MB">
        max MB <SettingInput {...field('maxSize')} number format={(v) => (typeof v === 'number' ? String(+(v / MB).toFixed(3)) : '')} parse={parseNumber(MB, 'max size')} label={`${name} file max size`} placeholder="10" />
      </label>
      {many && (
        <label class="small" title="files the list may hold; empty: 20 (at most 1000)">
          max files <SettingInput {...field('maxFiles')} number format={(v) => (typeof v === 'number' ? String(v) : '')} parse={parseNumber(1, 'max files')} label={`${name} file max files`} placeholder="20" />
        </label>
      )}
      <label class="small" title="types allowed, as sniffed from the bytes (image/* never admits SVG); empty: any">
        types <SettingInput {...field('types')} format={list} parse={parseList(MEDIA_TYPE, 'a media type such as image/png or image/*')} label={`${name} file types`} placeholder="any, e.g. image/*, application/pdf" />
      </label>
      <label class="small" title="thumbnail sizes served on request: WxH crops, Wx0 or 0xH keep proportions">
        thumbs <SettingInput {...field('thumbs')} format={list} parse={parseList(THUMB_SIZE, 'a size such as 100x100 or 400x0')} label={`${name} file thumbs`} placeholder="none, e.g. 100x100, 400x0" />
      </label>
      {Object.entries(problems).map(([key, text]) => <div key={key} class="cell-error" data-test="file-settings-error">{key}: {text}</div>)}
    </div>
  );
}

/** A property definition with another type: a relation gets a collection to point into, other types lose a relation's settings. */
function withType(def: PropertyDef, type: string, collections: string[]): PropertyDef {
  const next: PropertyDef = { ...def, type };
  if (def.type === 'file' && type !== 'file') for (const key of FILE_KEYS) delete next[key];
  if (type === 'relation') {
    if (typeof next.collection !== 'string' && collections[0] !== undefined) next.collection = collections[0];
  } else for (const key of RELATION_KEYS) delete next[key];
  return next;
}

const INVALID_DEFAULT = Symbol('invalid');

/**
 * The value for stored objects typed for a new property: undefined for none, a string property's
 * text as it is, JSON of the type otherwise (the server checks it again).
 */
function readDefault(text: string, type: string): unknown {
  if (text.trim() === '') return undefined;
  if (type === 'string') return text;
  try {
    const value: unknown = JSON.parse(text);
    const ok = type === 'number' ? typeof value === 'number' : type === 'boolean' ? typeof value === 'boolean' : type === 'array' ? Array.isArray(value) : type === 'object' ? typeof value === 'object' && value !== null && !Array.isArray(value) : true;
    return ok && value !== null ? value : INVALID_DEFAULT;
  } catch {
    return type === 'date' || type === 'relation' ? text : INVALID_DEFAULT;
  }
}

function toConfig(props: Prop[]): Record<string, PropertyDef> {
  const out: Record<string, PropertyDef> = {};
  for (const { name, def, from } of props) {
    const clean: PropertyDef = { ...def };
    if (from !== undefined && from !== name) clean.$renameFrom = from;
    for (const flag of ['required', 'unique', 'index', 'search', 'private'] as const) if (clean[flag] !== true) delete clean[flag];
    delete clean.order;
    // A file setting cleared in the editor (FileSettings sets it undefined): the server's default.
    for (const key of FILE_KEYS) if (clean[key] === undefined) delete clean[key];
    out[name] = clean;
  }
  return out;
}
