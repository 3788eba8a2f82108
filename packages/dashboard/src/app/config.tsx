import { useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, ResourceView, SettingSpec, TypeView } from './api.ts';
import { useResetOn } from './hooks.ts';

const SECRET = /password|secret|token|apikey|accesskey/i;

/** Checks one setting as the server will; answers the problem or undefined. */
export function checkSetting(spec: SettingSpec, value: unknown): string | undefined {
  if (value === undefined || value === '' || value === null) return spec.required && spec.default === undefined ? 'required' : undefined;
  switch (spec.type) {
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'a number';
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return 'true or false';
      break;
    case 'array':
      if (!Array.isArray(value)) return 'a JSON array';
      break;
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) return 'a JSON object';
      break;
    default:
      if (typeof value !== 'string') return 'text';
  }
  if (spec.enum && !spec.enum.includes(value as string | number)) return `one of ${spec.enum.join(', ')}`;
  return undefined;
}

/** A custom resource's settings, as a form made from its type's settings schema. */
export function ConfigPage({ resource, type, setApp }: { resource: ResourceView; type: TypeView | undefined; setApp(a: AppView): void }) {
  const schema = type?.settings ?? {};
  const fields = Object.entries(schema);
  const textOf = (name: string, spec: SettingSpec): string => {
    const v = resource.config[name];
    if (v === undefined) return '';
    return spec.type === 'object' || spec.type === 'array' ? JSON.stringify(v, null, 2) : String(v);
  };
  const initial = () => Object.fromEntries(fields.map(([name, spec]) => [name, textOf(name, spec)]));
  const [texts, setTexts] = useState<Record<string, string>>(initial);
  const initialFlags = () => Object.fromEntries(fields.filter(([, s]) => s.type === 'boolean').map(([n]) => [n, resource.config[n] === true]));
  const [flags, setFlags] = useState<Record<string, boolean>>(initialFlags);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<string | undefined>();
  const [saved, setSaved] = useState(false);
  // Reset when the stored settings change, not each time the app view is fetched again.
  useResetOn(JSON.stringify(resource.config), () => {
    setTexts(initial());
    setFlags(initialFlags());
  });

  if (!type) return <div class="notice warn">Type {resource.type} is not installed, so its settings cannot be shown. Add its package and restart the server.</div>;
  if (fields.length === 0) return <p class="muted">{resource.type} has no settings.</p>;

  const valueOf = (name: string, spec: SettingSpec): { value?: unknown; error?: string } => {
    if (spec.type === 'boolean') return { value: flags[name] === true };
    const text = (texts[name] ?? '').trim();
    if (text === '') return { value: undefined };
    if (spec.type === 'number') return Number.isFinite(Number(text)) ? { value: Number(text) } : { error: 'a number' };
    if (spec.type === 'object' || spec.type === 'array') {
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        return { error: `JSON (${spec.type})` };
      }
    }
    return { value: text };
  };

  const save = async (e: Event) => {
    e.preventDefault();
    const config: Record<string, unknown> = { ...resource.config };
    const problems: Record<string, string> = {};
    for (const [name, spec] of fields) {
      const { value, error } = valueOf(name, spec);
      const problem = error ?? checkSetting(spec, value);
      if (problem) problems[name] = `must be ${problem}`;
      if (value === undefined) delete config[name];
      else config[name] = value;
    }
    setErrors(problems);
    if (Object.keys(problems).length > 0) return setMessage('Fix the marked settings first: nothing was saved.');
    try {
      setApp(await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}`, { config }));
      setMessage(undefined);
      setSaved(true);
      setTimeout(() => setSaved(false), 2000);
    } catch (err) {
      setErrors(err instanceof ApiError ? err.errors : {});
      setMessage((err as Error).message);
    }
  };

  return (
    <form class="card form config" onSubmit={save} data-test="config-form">
      {fields.map(([name, spec]) => (
        <div class={`field ${errors[name] ? 'has-error' : ''}`} key={name} data-setting={name}>
          <label for={`s-${name}`}>
            {name} {spec.required && <span class="req">*</span>} <span class="col-type">{spec.type}</span>
          </label>
          {spec.type === 'boolean' ? (
            <input id={`s-${name}`} type="checkbox" checked={flags[name] === true} onChange={() => setFlags({ ...flags, [name]: !flags[name] })} />
          ) : spec.enum ? (
            <select id={`s-${name}`} value={texts[name]} onChange={(e) => setTexts({ ...texts, [name]: (e.target as HTMLSelectElement).value })}>
              <option value="">{spec.default !== undefined ? `default (${String(spec.default)})` : '—'}</option>
              {spec.enum.map((v) => <option key={v} value={String(v)}>{v}</option>)}
            </select>
          ) : spec.type === 'object' || spec.type === 'array' ? (
            <textarea id={`s-${name}`} class="mono" rows={4} value={texts[name]} onInput={(e) => setTexts({ ...texts, [name]: (e.target as HTMLTextAreaElement).value })} />
          ) : (
            <input
              id={`s-${name}`}
              type={SECRET.test(name) ? 'password' : spec.type === 'number' ? 'number' : 'text'}
              value={texts[name]}
              placeholder={spec.default !== undefined ? `default: ${String(spec.default)}` : ''}
              onInput={(e) => setTexts({ ...texts, [name]: (e.target as HTMLInputElement).value })}
              autoComplete="off"
            />
          )}
          {spec.description && <p class="muted small">{spec.description}</p>}
          {errors[name] && <p class="field-error">{errors[name]}</p>}
        </div>
      ))}
      {message && <div class="notice error">{message}</div>}
      <div class="row end">
        {saved && <span class="ok">Saved and reloaded</span>}
        <button class="btn primary" type="submit" data-test="save-config">Save</button>
      </div>
    </form>
  );
}
