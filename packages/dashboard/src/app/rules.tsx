import { useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, PropertyDef, ResourceView } from './api.ts';
import { useResetOn } from './hooks.ts';

/** The actions a collection's `rules` may name, in the order the tab shows them. */
const ACTIONS = [
  ['list', 'which objects GET /<c> lists (becomes part of the store query)'],
  ['read', 'whether GET /<c>/<id> answers an object (404 when not)'],
  ['create', 'whether a POST may create this object (@new is the object)'],
  ['update', 'whether a PUT may change this object (@old before, @new after)'],
  ['delete', 'whether a DELETE may remove this object'],
] as const;
type Action = (typeof ACTIONS)[number][0];

/** What the form holds for one rule: absent (open), true, false, or a query as JSON text. */
type RuleKind = 'absent' | 'true' | 'false' | 'query';
interface RuleDraft {
  kind: RuleKind;
  text: string;
}

const draftOf = (value: unknown): RuleDraft =>
  value === undefined ? { kind: 'absent', text: '' } : value === true ? { kind: 'true', text: '' } : value === false ? { kind: 'false', text: '' } : { kind: 'query', text: JSON.stringify(value) };

/** The rule's value for config.json, or the problem of its text. */
function valueOf(draft: RuleDraft): { value?: unknown; error?: string } {
  if (draft.kind === 'absent') return {};
  if (draft.kind !== 'query') return { value: draft.kind === 'true' };
  try {
    const value = JSON.parse(draft.text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'a query is a JSON object, e.g. {"owner": "@me.id"}' };
    return { value };
  } catch {
    return { error: 'not JSON' };
  }
}

/**
 * Rows a query's text needs to be read whole (a long `$or` wraps instead of being cut): its lines,
 * each counted by ~56 characters a row, at most 16 (then the field scrolls and can be dragged taller).
 */
function queryRows(text: string): number {
  const rows = text.split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(line.length / 56)), 0);
  return Math.min(16, Math.max(1, rows));
}

/** One rule: its kind and, for a query, its JSON. */
function RuleField({ label, draft, set }: { label: string; draft: RuleDraft; set(d: RuleDraft): void }) {
  const error = valueOf(draft).error;
  return (
    <div class={`rule-field ${error ? 'has-error' : ''}`}>
      <select value={draft.kind} onChange={(e) => set({ ...draft, kind: (e.target as HTMLSelectElement).value as RuleKind })} aria-label={`${label} kind`}>
        <option value="absent">open (no rule)</option>
        <option value="true">anyone (true)</option>
        <option value="false">root only (false)</option>
        <option value="query">query</option>
      </select>
      {draft.kind === 'query' && (
        <textarea
          class="mono rule-query"
          rows={queryRows(draft.text)}
          spellcheck={false}
          value={draft.text}
          placeholder='{"owner": "@me.id"}'
          onInput={(e) => set({ ...draft, text: (e.target as HTMLTextAreaElement).value })}
          aria-label={`${label} query`}
        />
      )}
      {error && <div class="cell-error">{error}</div>}
    </div>
  );
}

/** Account fields a UserCollection with `auth` keeps private unless they have a read rule or `private` of their own (UserCollection.ts). */
const ACCOUNT_FIELDS = ['email', 'verified'];

/**
 * Who can list a UserCollection's users and see their account fields, from the saved rules (what
 * a production start warns about: openWriteRules.ts).
 */
function WhoListsUsers({ resource, rule }: { resource: ResourceView; rule: unknown }) {
  const properties = resource.config.properties ?? {};
  const accounts = resource.config.auth !== undefined && resource.config.auth !== null;
  const hidden = Object.entries(properties)
    .filter(([name, def]) => def.private === true || (accounts && ACCOUNT_FIELDS.includes(name) && def.read === undefined && def.private === undefined))
    .map(([name]) => name);
  const open = rule === undefined || rule === true;
  const who =
    rule === undefined ? 'Anyone, logged in or not, can list every user (no list rule, as in Deployd): a production start warns about it.'
    : rule === true ? 'Anyone, logged in or not, can list every user (anyone: open on purpose).'
    : rule === false ? 'Only root (and event scripts) can list users.'
    : `Users are listed to those the list rule allows: ${JSON.stringify(rule)}.`;
  return (
    <div class={`notice ${open ? 'warn' : ''}`} data-test="who-lists-users">
      <strong>Who can list users.</strong> {who}{' '}
      {hidden.length > 0 ? <>Private to the user (at /me) and root: <code>{hidden.join(', ')}</code>.</> : open ? 'Every property but the password is in the list.' : ''}
    </div>
  );
}

/** A collection's access rules (config.json `rules`, and each property's `read` and `write`), and "try as this user on this object". */
export function RulesPage({ app, resource, setApp }: { app: AppView; resource: ResourceView; setApp(a: AppView): void }) {
  const rulesOf = (): Record<string, unknown> => (typeof resource.config.rules === 'object' && resource.config.rules !== null ? (resource.config.rules as Record<string, unknown>) : {});
  const properties = resource.config.properties ?? {};
  const initialActions = (): Record<Action, RuleDraft> => Object.fromEntries(ACTIONS.map(([a]) => [a, draftOf(rulesOf()[a])])) as Record<Action, RuleDraft>;
  const initialProps = (): Record<string, { read: RuleDraft; write: RuleDraft }> =>
    Object.fromEntries(Object.entries(properties).map(([name, def]) => [name, { read: draftOf(def.read), write: draftOf(def.write) }]));
  const [actions, setActions] = useState(initialActions);
  const [props, setProps] = useState(initialProps);
  const [error, setError] = useState<string | undefined>();
  const [savedNote, setSavedNote] = useState(false);
  const [busy, setBusy] = useState(false);
  useResetOn(JSON.stringify([resource.config.rules, resource.config.properties]), () => {
    setActions(initialActions());
    setProps(initialProps());
  });

  /** The config.json the form describes, or the first problem of a rule's text. */
  const build = (): { config?: Record<string, unknown>; problem?: string } => {
    const rules: Record<string, unknown> = { ...rulesOf() };
    for (const [action] of ACTIONS) {
      const { value, error: bad } = valueOf(actions[action]);
      if (bad) return { problem: `${action}: ${bad}` };
      if (value === undefined) delete rules[action];
      else rules[action] = value;
    }
    const nextProps: Record<string, PropertyDef> = {};
    for (const [name, def] of Object.entries(properties)) {
      const next: PropertyDef = { ...def };
      for (const which of ['read', 'write'] as const) {
        const draft = props[name]?.[which] ?? draftOf(undefined);
        const { value, error: bad } = valueOf(draft);
        if (bad) return { problem: `${name} ${which}: ${bad}` };
        if (value === undefined) delete next[which];
        else next[which] = value;
      }
      nextProps[name] = next;
    }
    const config: Record<string, unknown> = { ...resource.config, properties: nextProps };
    if (Object.keys(rules).length === 0) delete config.rules;
    else config.rules = rules;
    return { config };
  };
  const built = build();
  const dirty = JSON.stringify([actions, props]) !== JSON.stringify([initialActions(), initialProps()]);

  const save = async () => {
    if (!built.config) return setError(built.problem);
    setBusy(true);
    try {
      setApp(await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}`, { config: built.config }));
      setError(undefined);
      setSavedNote(true);
      setTimeout(() => setSavedNote(false), 2000);
    } catch (err) {
      // The server checks rules when it loads them: its message names the rule and the bad part.
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setBusy(false);
  };

  // What the server's production start lists (openWriteRules.ts): write actions without a rule.
  const openWrites = (['create', 'update', 'delete'] as const).filter((action) => rulesOf()[action] === undefined);
  return (
    <div class="rules" data-test="rules">
      {openWrites.length > 0 && (
        <div class="notice warn" data-test="open-writes">
          Anyone may {openWrites.join(', ')} (no rule, as in Deployd): a production start lists this collection. Choose a rule, or <code>anyone (true)</code> to say it is open on purpose.
        </div>
      )}
      {resource.type === 'UserCollection' && <WhoListsUsers resource={resource} rule={rulesOf().list} />}
      <h2 class="section">Who may do what</h2>
      <table class="grid props-table" data-test="action-rules">
        <thead><tr><th>Action</th><th>Rule</th><th>What it decides</th></tr></thead>
        <tbody>
          {ACTIONS.map(([action, about]) => (
            <tr key={action} data-action={action}>
              <td class="mono">{action}</td>
              <td><RuleField label={action} draft={actions[action]} set={(d) => setActions({ ...actions, [action]: d })} /></td>
              <td class="muted small">{about}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2 class="section">Properties</h2>
      {Object.keys(properties).length === 0 ? (
        <p class="muted">No properties yet (the Properties tab adds them).</p>
      ) : (
        <table class="grid props-table" data-test="property-rules">
          <thead><tr><th>Property</th><th title="who sees it in answers and may filter or sort by it">Read</th><th title="who may set it on create and update">Write</th></tr></thead>
          <tbody>
            {Object.keys(properties).map((name) => (
              <tr key={name} data-prop={name}>
                <td class="mono">{name}</td>
                {(['read', 'write'] as const).map((which) => (
                  <td key={which}>
                    <RuleField label={`${name} ${which}`} draft={props[name]?.[which] ?? draftOf(undefined)} set={(d) => setProps({ ...props, [name]: { ...(props[name] ?? { read: draftOf(undefined), write: draftOf(undefined) }), [which]: d } })} />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="toolbar">
        <span class="grow" />
        {savedNote && <span class="ok">Saved and reloaded</span>}
        <button class="btn" type="button" disabled={!dirty || busy} onClick={() => { setActions(initialActions()); setProps(initialProps()); setError(undefined); }}>Revert</button>
        <button class="btn primary" type="button" disabled={!dirty || busy} onClick={() => void save()} data-test="save-rules">Save</button>
      </div>
      {error && <div class="notice error" data-test="rules-error">{error}</div>}
      <p class="muted small">
        A query is svc's query language; bare keys are the object's properties. Variables: <code>@me</code>, <code>@me.&lt;property&gt;</code>, <code>@root</code>, <code>@query.&lt;key&gt;</code>,{' '}
        <code>@new.&lt;property&gt;</code>, <code>@old.&lt;property&gt;</code>, <code>@now</code>. No rule: anyone (as Deployd); <code>false</code>: root only. Root passes every rule. Saving writes
        resources/{resource.name}/config.json; the server checks the rules and serves them at once.
      </p>
      <TryAs app={app} resource={resource} />
    </div>
  );
}

/** `Collection.explainAccess`'s answer (issue 24). */
interface Explanation {
  user: { id: string; username?: string; users: string } | null;
  object: string;
  access: {
    list: { allowed: boolean; rule: string };
    read: { allowed: boolean; rule: string };
    update: { allowed: boolean; rule: string };
    delete: { allowed: boolean; rule: string };
    properties: Record<string, { read: boolean; write: boolean }>;
  };
}

/** "Try as this user on this object": the server makes a request of that user and says what the rules allow. */
function TryAs({ app, resource }: { app: AppView; resource: ResourceView }) {
  const savedRules = (typeof resource.config.rules === 'object' && resource.config.rules !== null ? resource.config.rules : {}) as Record<string, unknown>;
  const userCollections = app.resources.filter((r) => r.type === 'UserCollection').map((r) => r.name);
  const [user, setUser] = useState('');
  const [users, setUsers] = useState(userCollections[0] ?? '');
  const [object, setObject] = useState('');
  const [answer, setAnswer] = useState<Explanation | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const explain = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      setAnswer(await call<Explanation>('POST', `/dashboard/api/resources/${resource.name}/explain`, { object: object.trim(), ...(user.trim() !== '' ? { user: user.trim(), users } : {}) }));
      setError(undefined);
    } catch (err) {
      setAnswer(undefined);
      setError((err as Error).message);
    }
    setBusy(false);
  };
  const mark = (allowed: boolean) => <span class={allowed ? 'ok' : 'denied'}>{allowed ? '✓ allowed' : '✗ refused'}</span>;
  return (
    <section class="try-as" data-test="try-as">
      <h2 class="section">Try as this user on this object</h2>
      <form class="toolbar" onSubmit={explain}>
        <input placeholder="user id or username (empty: not logged in)" value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} aria-label="try as user" />
        {userCollections.length > 1 && (
          <select value={users} onChange={(e) => setUsers((e.target as HTMLSelectElement).value)} aria-label="user collection">
            {userCollections.map((u) => <option key={u}>{u}</option>)}
          </select>
        )}
        <input class="mono" placeholder="object id" value={object} onInput={(e) => setObject((e.target as HTMLInputElement).value)} aria-label="try on object" />
        <button class="btn primary" type="submit" disabled={busy || object.trim() === ''} data-test="explain">Explain</button>
      </form>
      {error && <div class="notice error" data-test="explain-error">{error}</div>}
      {answer && (
        <div data-test="explanation">
          <p class="muted small">
            As {answer.user ? <strong>{answer.user.username ?? answer.user.id}</strong> : <strong>a visitor who is not logged in</strong>} on <code>{answer.object}</code> (saved rules):
          </p>
          <table class="grid props-table">
            <thead><tr><th>Action</th><th>Answer</th><th>Rule</th></tr></thead>
            <tbody>
              {(['list', 'read', 'update', 'delete'] as const).map((action) => (
                <tr key={action} data-explained={action}>
                  <td class="mono">{action}</td>
                  <td>{mark(answer.access[action].allowed)}</td>
                  <td class="mono small">
                    {answer.access[action].rule}
                    {/* The saved rule's text beside its name (the answer is for the saved rules). */}
                    {answer.access[action].rule === `rules.${action}` && savedRules[action] !== undefined && <span class="muted">: {JSON.stringify(savedRules[action])}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {!answer.access.read.allowed && (
            <p class="muted small" data-test="hidden-note">The read rule hides this object from this user: a GET answers 404, and an update or delete finds nothing, whatever their own rules say.</p>
          )}
          {Object.keys(answer.access.properties).length > 0 && (
            <table class="grid props-table">
              <thead><tr><th>Property</th><th>Read</th><th>Write</th></tr></thead>
              <tbody>
                {Object.entries(answer.access.properties).map(([name, p]) => (
                  <tr key={name} data-explained-prop={name}>
                    <td class="mono">{name}</td>
                    <td>{mark(p.read)}</td>
                    <td>{mark(p.write)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </section>
  );
}
