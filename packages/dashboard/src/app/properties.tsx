import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, PropertyDef, ResourceView } from './api.ts';

const TYPES = ['string', 'number', 'boolean', 'object', 'array', 'date'];
const NAME = /^[A-Za-z_$][\w$]*$/;

interface Prop {
  name: string;
  def: PropertyDef;
}

/** A collection's properties: name, type, required, unique, index, private and their order. */
export function PropertiesEditor({ resource, setApp }: { resource: ResourceView; setApp(a: AppView): void }) {
  const initial = (): Prop[] => Object.entries(resource.config.properties ?? {}).map(([name, def]) => ({ name, def: { ...def } }));
  const [props, setProps] = useState<Prop[]>(initial);
  const [newName, setNewName] = useState('');
  const [newType, setNewType] = useState('string');
  const [error, setError] = useState<string | undefined>();
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  useEffect(() => setProps(initial()), [resource.config]);

  const dirty = JSON.stringify(toConfig(props)) !== JSON.stringify(resource.config.properties ?? {});
  const update = (i: number, change: Partial<PropertyDef>) => setProps(props.map((p, j) => (j === i ? { ...p, def: { ...p.def, ...change } } : p)));
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
    setProps([...props, { name, def: { type: newType } }]);
    setNewName('');
    setError(undefined);
  };
  const save = async () => {
    setBusy(true);
    try {
      setApp(await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}`, { config: { ...resource.config, properties: toConfig(props) } }));
      setError(undefined);
      setSaved(true);
      setTimeout(() => setSaved(false), 2000);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setBusy(false);
  };
  return (
    <div class="props">
      <table class="grid props-table" data-test="properties">
        <thead>
          <tr><th /><th>Property</th><th>Type</th><th title="a value is needed on create">Required</th><th title="no two objects share a value">Unique</th><th title="queries and sorts on it are faster">Index</th><th title="never answered, never queryable by non-root">Private</th><th /></tr>
        </thead>
        <tbody>
          {resource.type === 'UserCollection' && (
            <tr class="fixed"><td /><td class="mono">username, password</td><td colSpan={6} class="muted">built in: the password is stored hashed and never answered</td></tr>
          )}
          {props.map((p, i) => (
            <tr key={p.name} data-prop={p.name}>
              <td class="order">
                <button class="icon-btn" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`move ${p.name} up`}>▲</button>
                <button class="icon-btn" disabled={i === props.length - 1} onClick={() => move(i, 1)} aria-label={`move ${p.name} down`}>▼</button>
              </td>
              <td class="mono">{p.name}</td>
              <td>
                <select value={p.def.type} onChange={(e) => update(i, { type: (e.target as HTMLSelectElement).value })} aria-label={`${p.name} type`}>
                  {TYPES.map((t) => <option key={t}>{t}</option>)}
                </select>
              </td>
              {(['required', 'unique', 'index', 'private'] as const).map((flag) => (
                <td key={flag} class="center"><input type="checkbox" checked={p.def[flag] === true} onChange={() => update(i, { [flag]: !(p.def[flag] === true) })} aria-label={`${p.name} ${flag}`} /></td>
              ))}
              <td><button class="icon-btn" onClick={() => setProps(props.filter((_, j) => j !== i))} aria-label={`remove ${p.name}`} title="remove (stored values stay in the store)">✕</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <form class="toolbar" onSubmit={add}>
        <input placeholder="new property name" value={newName} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} aria-label="new property name" />
        <select value={newType} onChange={(e) => setNewType((e.target as HTMLSelectElement).value)} aria-label="new property type">
          {TYPES.map((t) => <option key={t}>{t}</option>)}
        </select>
        <button class="btn" type="submit" disabled={newName.trim() === ''} data-test="add-property">Add property</button>
        <span class="grow" />
        {saved && <span class="ok">Saved and reloaded</span>}
        <button class="btn" disabled={!dirty || busy} onClick={() => setProps(initial())} type="button">Revert</button>
        <button class="btn primary" disabled={!dirty || busy} onClick={() => void save()} type="button" data-test="save-properties">Save</button>
      </form>
      {error && <div class="notice error">{error}</div>}
      <p class="muted small">Saving writes resources/{resource.name}/config.json; the server serves the change at once. Removing a property leaves stored values in place (they are no longer answered).</p>
    </div>
  );
}

function toConfig(props: Prop[]): Record<string, PropertyDef> {
  const out: Record<string, PropertyDef> = {};
  for (const { name, def } of props) {
    const clean: PropertyDef = { ...def };
    for (const flag of ['required', 'unique', 'index', 'private'] as const) if (clean[flag] !== true) delete clean[flag];
    delete clean.order;
    out[name] = clean;
  }
  return out;
}
