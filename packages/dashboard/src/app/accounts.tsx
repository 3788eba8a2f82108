import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, ResourceView } from './api.ts';
import { useResetOn } from './hooks.ts';
import { MfaQrPreview } from './mfaPreview.tsx';

/** GET /dashboard/api/resources/<users>/accounts. */
interface AccountsView {
  auth: Record<string, unknown>;
  presets: string[];
  /** Where an app is registered with each preset's provider. */
  consoles?: Record<string, string>;
  messages: string[];
  parts: string[];
  placeholders: string[];
  /** Users with no verified address (and of them, with no address): whom verification.required keeps out. */
  unverified: { count: number; withoutAddress: number } | null;
}

/** GET /dashboard/api/resources/<users>/mail: each part's file (null: none) and the built-in text. */
interface TemplateView {
  files: Record<Part, string | null>;
  builtIn: Record<Part, string>;
}
type Part = 'subject' | 'text' | 'html';
const PARTS: Part[] = ['subject', 'text', 'html'];

/** What the server answers for a secret written as a value in config.json (dashboardAccounts.ts). */
const HIDDEN_SECRET = '(hidden: a value written in config.json)';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const at = (root: Obj, path: string[]): unknown => path.reduce<unknown>((o, k) => (isObj(o) ? o[k] : undefined), root);

/** A copy of `root` with the value at `path` set (undefined: removed), the objects on the way made. */
function setAt(root: Obj, path: string[], value: unknown): Obj {
  const [head, ...rest] = path as [string, ...string[]];
  const copy: Obj = { ...root };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  copy[head] = setAt(isObj(root[head]) ? root[head] : {}, rest, value);
  return copy;
}

/** The env variable's name of an `${env:NAME}` reference ('' when there is none). */
const envNameOf = (value: unknown): string => (typeof value === 'string' ? (/^\$\{env:([^}]*)\}$/.exec(value)?.[1] ?? '') : '');

/**
 * With `verification.required` on (saved, or ticked before saving): the users it keeps from logging
 * in, counted by the server, and how to let them in (docs/accounts.md).
 */
function UnverifiedUsers({ view, required, collection }: { view: AccountsView; required: boolean; collection: string }) {
  const count = view.unverified?.count ?? 0;
  if (!required || count === 0) return null;
  const without = view.unverified?.withoutAddress ?? 0;
  return (
    <div class="notice warn" data-test="unverified-users">
      {count} user{count === 1 ? ' has' : 's have'} no verified email address{without > 0 ? ` (${without} without any address)` : ''}: with verification required, they cannot log in until they confirm one.
      They ask for a link with <code>POST /{collection}/requestVerification</code>, or you mark those you trust <code>verified</code> in the data grid (docs/accounts.md).
    </div>
  );
}

/** A UserCollection's sign-in settings (config.json `auth`) and its mail templates. */
export function AccountsPage({ app, resource, setApp }: { app: AppView; resource: ResourceView; setApp(a: AppView): void }) {
  const [view, setView] = useState<AccountsView | undefined>();
  const [draft, setDraft] = useState<Obj>({});
  const [error, setError] = useState<string | undefined>();
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const load = async () => {
    try {
      const v = await call<AccountsView>('GET', `/dashboard/api/resources/${resource.name}/accounts`);
      setView(v);
      setDraft(v.auth);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useResetOn(JSON.stringify(resource.config.auth ?? null), () => void load());
  useEffect(() => void load(), [resource.name]);
  if (!view) return error ? <div class="notice error">{error}</div> : <p class="muted">Loading…</p>;

  const get = (...path: string[]) => at(draft, path);
  const set = (path: string[], value: unknown) => setDraft(setAt(draft, path, value));
  const dirty = JSON.stringify(draft) !== JSON.stringify(view.auth);

  const save = async () => {
    setBusy(true);
    try {
      const next = await call<AccountsView>('PUT', `/dashboard/api/resources/${resource.name}/accounts`, { auth: Object.keys(draft).length === 0 ? null : draft });
      setView(next);
      setDraft(next.auth);
      setError(undefined);
      setSaved(true);
      setTimeout(() => setSaved(false), 2000);
      setApp(await call<AppView>('GET', '/dashboard/api/app'));
    } catch (err) {
      // The server's own message: what its start would say about these settings.
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setBusy(false);
  };

  const emailResources = app.resources.filter((r) => r.type === 'Email').map((r) => r.name);
  return (
    <div class="accounts" data-test="accounts">
      <h2 class="section">Mail flows</h2>
      <table class="grid props-table" data-test="flows">
        <thead><tr><th>Flow</th><th>On</th><th>Settings</th></tr></thead>
        <tbody>
          {(['verification', 'reset', 'codes'] as const).map((flow) => {
            const on = isObj(get(flow)) && get(flow, 'enabled') !== false;
            return (
              <tr key={flow} data-flow={flow}>
                <td class="mono">{flow}</td>
                <td><input type="checkbox" checked={on} aria-label={`${flow} on`} onChange={() => set([flow], on ? undefined : {})} /></td>
                <td>
                  {on && (
                    <div class="row wrap">
                      <NumberField label={`${flow} expiresMinutes`} value={get(flow, 'expiresMinutes')} set={(v) => set([flow, 'expiresMinutes'], v)} />
                      <TextField label={`${flow} url`} placeholder="https://app.example.com/page?token={token}" value={get(flow, 'url')} set={(v) => set([flow, 'url'], v)} />
                      {flow === 'verification' && <CheckField label="verification required" value={get(flow, 'required')} set={(v) => set([flow, 'required'], v)} />}
                      {flow === 'codes' && <NumberField label="codes length" value={get(flow, 'length')} set={(v) => set([flow, 'length'], v)} />}
                      {flow === 'codes' && <NumberField label="codes maxAttempts" value={get(flow, 'maxAttempts')} set={(v) => set([flow, 'maxAttempts'], v)} />}
                    </div>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <UnverifiedUsers view={view} required={isObj(get('verification')) && get('verification', 'enabled') !== false && get('verification', 'required') === true} collection={resource.name} />
      <h2 class="section">Mail</h2>
      <div class="row wrap" data-test="mail">
        <label>
          Sent through{' '}
          <select aria-label="mail through" value={isObj(get('mail', 'smtp')) ? 'smtp' : 'resource'} onChange={(e) => set(['mail'], (e.target as HTMLSelectElement).value === 'smtp' ? { ...(get('mail') as Obj), resource: undefined, smtp: {} } : { ...(get('mail') as Obj), smtp: undefined, resource: emailResources[0] ?? '' })}>
            <option value="resource">an Email resource</option>
            <option value="smtp">SMTP settings</option>
          </select>
        </label>
        {isObj(get('mail', 'smtp')) ? (
          <>
            <TextField label="smtp host" value={get('mail', 'smtp', 'host')} set={(v) => set(['mail', 'smtp', 'host'], v)} />
            <NumberField label="smtp port" value={get('mail', 'smtp', 'port')} set={(v) => set(['mail', 'smtp', 'port'], v)} />
            <CheckField label="smtp ssl" value={get('mail', 'smtp', 'ssl')} set={(v) => set(['mail', 'smtp', 'ssl'], v)} />
            <TextField label="smtp username" value={get('mail', 'smtp', 'username')} set={(v) => set(['mail', 'smtp', 'username'], v)} />
            <SecretField label="smtp password" value={get('mail', 'smtp', 'password')} set={(v) => set(['mail', 'smtp', 'password'], v)} />
          </>
        ) : (
          <TextField label="mail resource" placeholder={emailResources.join(', ') || 'an Email resource'} value={get('mail', 'resource')} set={(v) => set(['mail', 'resource'], v)} />
        )}
        <TextField label="mail from" placeholder="App <app@example.com>" value={get('mail', 'from')} set={(v) => set(['mail', 'from'], v)} />
      </div>
      <h2 class="section">Two-factor (TOTP)</h2>
      <div class="row wrap" data-test="mfa">
        <CheckField label="mfa on" value={isObj(get('mfa'))} set={(v) => set(['mfa'], v ? {} : undefined)} />
        {isObj(get('mfa')) && <TextField label="mfa issuer" placeholder={resource.name} value={get('mfa', 'issuer')} set={(v) => set(['mfa', 'issuer'], v)} />}
        {isObj(get('mfa')) && <CheckField label="mfa required" value={get('mfa', 'required')} set={(v) => set(['mfa', 'required'], v)} />}
      </div>
      {isObj(get('mfa')) && <MfaQrPreview issuer={typeof get('mfa', 'issuer') === 'string' && get('mfa', 'issuer') !== '' ? (get('mfa', 'issuer') as string) : resource.name} />}
      <h2 class="section">Sign in with a provider (OAuth2 / OpenID Connect)</h2>
      <OAuthSection oauth={isObj(get('oauth')) ? (get('oauth') as Obj) : undefined} presets={view.presets} consoles={view.consoles ?? {}} collection={resource.name} set={(v) => set(['oauth'], v)} />
      <div class="toolbar">
        <span class="grow" />
        {saved && <span class="ok">Saved and reloaded</span>}
        <button class="btn" type="button" disabled={!dirty || busy} onClick={() => { setDraft(view.auth); setError(undefined); }}>Revert</button>
        <button class="btn primary" type="button" disabled={!dirty || busy} onClick={() => void save()} data-test="save-accounts">Save</button>
      </div>
      {error && <div class="notice error" data-test="accounts-error">{error}</div>}
      <p class="muted small">
        Saving writes the <code>auth</code> of resources/{resource.name}/config.json; the server checks it as at its start and serves it at once, or answers why not and changes nothing. Secrets
        are names of environment variables only (<code>{'${env:NAME}'}</code>): set the value in the server's environment. docs/accounts.md tells every setting.
      </p>
      <Templates resource={resource} view={view} />
    </div>
  );
}

/** `auth.oauth`: redirects allow-list, base URL, sign-up, and the providers. */
function OAuthSection({ oauth, presets, consoles, collection, set }: { oauth: Obj | undefined; presets: string[]; consoles: Record<string, string>; collection: string; set(v: Obj | undefined): void }) {
  const [adding, setAdding] = useState('google');
  const [newName, setNewName] = useState('');
  if (!oauth) return <CheckField label="oauth on" value={false} set={() => set({ providers: {}, redirects: [] })} />;
  const providers = isObj(oauth.providers) ? oauth.providers : {};
  const setProvider = (name: string, p: Obj | undefined) => set(setAt(oauth, ['providers', name], p));
  const redirects = Array.isArray(oauth.redirects) ? (oauth.redirects as string[]) : [];
  const add = () => {
    const name = (newName.trim() || adding).toLowerCase();
    if (name === '' || providers[name] !== undefined) return;
    const env = name.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
    // Apple: svc signs the client secret from the app's key (docs/accounts.md).
    const secret = adding === 'apple' ? { teamId: '', keyId: '', privateKey: `\${env:${env}_PRIVATE_KEY}` } : { clientSecret: `\${env:${env}_CLIENT_SECRET}` };
    setProvider(name, { ...(adding !== '' && adding !== name ? { preset: adding } : {}), clientId: '', ...secret });
    setNewName('');
  };
  return (
    <div data-test="oauth">
      <div class="row wrap">
        <CheckField label="oauth on" value={true} set={() => set(undefined)} />
        <CheckField label="oauth signup" value={oauth.signup ?? true} set={(v) => set(setAt(oauth, ['signup'], v ? undefined : false))} />
        <TextField label="oauth baseUrl" placeholder="from the request's Host" value={oauth.baseUrl} set={(v) => set(setAt(oauth, ['baseUrl'], v))} />
      </div>
      <label class="field">
        Redirects (the URLs a login may go back to; exact match, one a line)
        <textarea class="mono" rows={3} aria-label="oauth redirects" value={redirects.join('\n')} onInput={(e) => set(setAt(oauth, ['redirects'], (e.target as HTMLTextAreaElement).value.split('\n').map((l) => l.trim()).filter((l) => l !== '')))} />
      </label>
      <table class="grid props-table" data-test="providers">
        <thead><tr><th>Provider</th><th>Preset</th><th>Issuer or the preset's settings</th><th>Client id</th><th>Client secret (environment variable)</th><th /></tr></thead>
        <tbody>
          {Object.entries(providers).flatMap(([name, raw]) => {
            const p = isObj(raw) ? raw : {};
            const preset = typeof p.preset === 'string' ? p.preset : presets.includes(name) ? name : undefined;
            return [
              <tr key={name} data-provider={name}>
                <td class="mono">{name}</td>
                <td>
                  <select aria-label={`${name} preset`} value={typeof p.preset === 'string' ? p.preset : ''} onChange={(e) => setProvider(name, setAt(p, ['preset'], (e.target as HTMLSelectElement).value || undefined))}>
                    <option value="">{presets.includes(name) ? `${name} (by name)` : 'OpenID Connect (issuer)'}</option>
                    {presets.map((preset) => <option key={preset} value={preset}>{preset}</option>)}
                  </select>
                </td>
                <td><PresetSettings name={name} preset={preset} p={p} set={(next) => setProvider(name, next)} /></td>
                <td><TextField label={`${name} clientId`} value={p.clientId} set={(v) => setProvider(name, setAt(p, ['clientId'], v ?? ''))} /></td>
                <td><SecretField label={`${name} clientSecret`} value={p.clientSecret} set={(v) => setProvider(name, setAt(p, ['clientSecret'], v))} /></td>
                <td><button class="btn ghost danger" type="button" aria-label={`remove ${name}`} onClick={() => setProvider(name, undefined)}>Remove</button></td>
              </tr>,
              <tr key={`${name}-callback`} class="muted small" data-callback={name}>
                <td colSpan={6}>
                  Callback URL to register: <code>{`${typeof oauth.baseUrl === 'string' && oauth.baseUrl !== '' ? oauth.baseUrl.replace(/\/+$/, '') : location.origin}/${collection}/oauth/${name}/callback`}</code>
                  {preset !== undefined && consoles[preset] !== undefined && <> at {consoles[preset]}</>}
                </td>
              </tr>,
            ];
          })}
        </tbody>
      </table>
      <div class="toolbar">
        <select aria-label="new provider preset" value={adding} onChange={(e) => setAdding((e.target as HTMLSelectElement).value)}>
          {presets.map((preset) => <option key={preset} value={preset}>{preset}</option>)}
          <option value="">OpenID Connect (issuer)</option>
        </select>
        <input aria-label="new provider name" placeholder={adding || 'name'} value={newName} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} />
        <button class="btn" type="button" onClick={add} data-test="add-provider">Add provider</button>
      </div>
    </div>
  );
}

/**
 * The settings a provider's kind takes: an issuer (any OpenID Connect provider), Microsoft's
 * tenant, Apple's key (the key itself only as an environment variable); the other presets know
 * their endpoints.
 */
function PresetSettings({ name, preset, p, set }: { name: string; preset: string | undefined; p: Obj; set(p: Obj): void }) {
  if (preset === undefined) return <TextField label={`${name} issuer`} value={p.issuer} set={(v) => set(setAt(p, ['issuer'], v))} />;
  if (preset === 'microsoft') return <TextField label={`${name} tenant`} placeholder="common" value={p.tenant} set={(v) => set(setAt(p, ['tenant'], v))} />;
  if (preset === 'apple') {
    return (
      <div style="display: flex; flex-direction: column; align-items: flex-start; gap: 4px">
        <TextField label={`${name} teamId`} value={p.teamId} set={(v) => set(setAt(p, ['teamId'], v))} />
        <TextField label={`${name} keyId`} value={p.keyId} set={(v) => set(setAt(p, ['keyId'], v))} />
        <SecretField label={`${name} privateKey`} value={p.privateKey} set={(v) => set(setAt(p, ['privateKey'], v))} />
      </div>
    );
  }
  return <span class="muted small">the preset's endpoints</span>;
}

/**
 * A secret: only the name of the environment variable holding it is edited (saved as
 * `${env:NAME}`). A value written by hand in config.json is never shown; it is kept until replaced.
 */
function SecretField({ label, value, set }: { label: string; value: unknown; set(v: string | undefined): void }) {
  const hidden = value === HIDDEN_SECRET;
  const [name, setName] = useState(envNameOf(value));
  useResetOn(String(value), () => setName(envNameOf(value)));
  const bad = name !== '' && !ENV_NAME.test(name);
  return (
    <span class={`secret-field ${bad ? 'has-error' : ''}`}>
      <span class="field-name">{label.split(' ').slice(-1)[0]}</span>
      <span class="mono muted">{'${env:'}</span>
      <input
        class="mono"
        aria-label={label}
        value={name}
        placeholder={hidden ? 'hidden value in config.json: name a variable' : 'NAME'}
        autoComplete="off"
        onInput={(e) => {
          const next = (e.target as HTMLInputElement).value.trim();
          setName(next);
          set(next === '' ? (hidden ? HIDDEN_SECRET : undefined) : `\${env:${next}}`);
        }}
      />
      <span class="mono muted">{'}'}</span>
      {hidden && name === '' && <div class="notice warn small">A secret value is written in config.json: it is kept (never shown); move it to the environment.</div>}
      {bad && <div class="cell-error">letters, digits and _</div>}
    </span>
  );
}

function TextField({ label, value, set, placeholder }: { label: string; value: unknown; set(v: string | undefined): void; placeholder?: string }) {
  return (
    <label class="small">
      {label.split(' ').slice(-1)[0]}{' '}
      <input aria-label={label} value={typeof value === 'string' ? value : ''} placeholder={placeholder ?? ''} onInput={(e) => set((e.target as HTMLInputElement).value === '' ? undefined : (e.target as HTMLInputElement).value)} />
    </label>
  );
}

function NumberField({ label, value, set }: { label: string; value: unknown; set(v: number | undefined): void }) {
  return (
    <label class="small">
      {label.split(' ').slice(-1)[0]}{' '}
      <input
        type="number"
        aria-label={label}
        style="width: 7em"
        value={typeof value === 'number' ? String(value) : ''}
        placeholder="default"
        onInput={(e) => {
          const text = (e.target as HTMLInputElement).value;
          set(text === '' || !Number.isFinite(Number(text)) ? undefined : Number(text));
        }}
      />
    </label>
  );
}

function CheckField({ label, value, set }: { label: string; value: unknown; set(v: boolean): void }) {
  return (
    <label class="small">
      <input type="checkbox" aria-label={label} checked={value === true} onChange={() => set(value !== true)} /> {label.split(' ').slice(-1)[0]}
    </label>
  );
}

/** The mail templates: per message and language, a file per part (empty: the next fallback). */
function Templates({ resource, view }: { resource: ResourceView; view: AccountsView }) {
  const [language, setLanguage] = useState('');
  // What is typed; the templates of a language are loaded when the field is left (not per keystroke).
  const [languageText, setLanguageText] = useState('');
  const [message, setMessage] = useState(view.messages[0] ?? 'verification');
  const [loaded, setLoaded] = useState<TemplateView | undefined>();
  const [texts, setTexts] = useState<Record<Part, string>>({ subject: '', text: '', html: '' });
  const [error, setError] = useState<string | undefined>();
  const [saved, setSaved] = useState(false);
  // Only the answer for the latest choice of message and language is shown (an earlier one may come later).
  const latest = useRef(0);
  const load = async () => {
    const ask = ++latest.current;
    try {
      const t = await call<TemplateView>('GET', `/dashboard/api/resources/${resource.name}/mail?language=${encodeURIComponent(language)}&message=${encodeURIComponent(message)}`);
      if (ask !== latest.current) return;
      setLoaded(t);
      setTexts({ subject: t.files.subject ?? '', text: t.files.text ?? '', html: t.files.html ?? '' });
      setError(undefined);
    } catch (err) {
      if (ask !== latest.current) return;
      setLoaded(undefined);
      setError((err as Error).message);
    }
  };
  useEffect(() => void load(), [resource.name, message, language]);
  const save = async () => {
    if (!loaded) return;
    try {
      for (const part of PARTS) {
        if (texts[part] === (loaded.files[part] ?? '')) continue;
        await call('PUT', `/dashboard/api/resources/${resource.name}/mail`, { language, message, part, text: texts[part] === '' ? null : texts[part] });
      }
      await load();
      setSaved(true);
      setTimeout(() => setSaved(false), 2000);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section data-test="templates">
      <h2 class="section">Mail templates</h2>
      <div class="toolbar">
        <select aria-label="template message" value={message} onChange={(e) => setMessage((e.target as HTMLSelectElement).value)}>
          {view.messages.map((m) => <option key={m}>{m}</option>)}
        </select>
        <input aria-label="template language" placeholder="language (empty: default), e.g. de, pt-BR" value={languageText} onInput={(e) => setLanguageText((e.target as HTMLInputElement).value)} onChange={() => setLanguage(languageText.trim())} />
      </div>
      {loaded &&
        PARTS.map((part) => (
          <label class="field" key={part}>
            {part} <span class="muted small">resources/{resource.name}/mail/{language ? `${language}/` : ''}{message}.{part === 'subject' ? 'subject.txt' : part === 'text' ? 'txt' : 'html'}{loaded.files[part] === null ? ' (none: the next language or the built-in text below)' : ''}</span>
            {part === 'subject' ? (
              <input class="mono" aria-label={`template ${part}`} value={texts[part]} placeholder={loaded.builtIn[part]} onInput={(e) => setTexts({ ...texts, [part]: (e.target as HTMLInputElement).value })} />
            ) : (
              <textarea class="mono" rows={5} aria-label={`template ${part}`} value={texts[part]} placeholder={loaded.builtIn[part]} onInput={(e) => setTexts({ ...texts, [part]: (e.target as HTMLTextAreaElement).value })} />
            )}
          </label>
        ))}
      <div class="toolbar">
        <span class="muted small grow">Placeholders: {view.placeholders.map((p) => `{{${p}}}`).join(' ')}. An empty part removes its file.</span>
        {saved && <span class="ok">Saved</span>}
        <button class="btn primary" type="button" disabled={!loaded} onClick={() => void save()} data-test="save-template">Save template</button>
      </div>
      {error && <div class="notice error" data-test="template-error">{error}</div>}
    </section>
  );
}
