import type { ResourceView, TypeView } from './api.ts';

interface Route {
  method: string;
  path: string;
  what: string;
}

/** The routes a resource answers, from its type and config. */
export function routesOf(resource: ResourceView): Route[] {
  const p = `/${resource.name}`;
  if (resource.type === 'Collection' || resource.type === 'UserCollection') {
    const routes: Route[] = [
      { method: 'GET', path: p, what: 'objects matching the query (?{"done": false, "$sort": {"title": 1}, "$limit": 10})' },
      { method: 'GET', path: `${p}/<id>`, what: 'one object' },
      { method: 'GET', path: `${p}/count`, what: 'how many match (root, or publicCount)' },
      { method: 'POST', path: p, what: 'create an object; answers it with its id' },
      { method: 'PUT', path: `${p}/<id>`, what: 'change properties ($inc, $push, $pull, $addUnique too)' },
      { method: 'DELETE', path: `${p}/<id>`, what: 'delete an object' },
    ];
    if (resource.type === 'UserCollection') {
      routes.push(
        { method: 'POST', path: `${p}/login`, what: 'sign in with {username, password}; sets the session cookie' },
        { method: 'POST', path: `${p}/logout`, what: 'sign out' },
        { method: 'GET', path: `${p}/me`, what: 'the signed-in user, or 204' },
      );
      routes.push(...accountRoutes(resource, p));
    }
    return routes;
  }
  if (resource.type === 'Email') return [{ method: 'POST', path: p, what: 'send {to, subject, text|html} (root or internal requests)' }];
  if (resource.type === 'Event') return [{ method: 'GET', path: `${p}[/...]`, what: 'runs get.js' }, { method: 'POST', path: `${p}[/...]`, what: 'runs post.js' }];
  return [{ method: 'ANY', path: `${p}[/...]`, what: `answered by the ${resource.type} type` }];
}

/** The routes of a user collection's `auth` settings (docs/accounts.md). */
function accountRoutes(resource: ResourceView, p: string): Route[] {
  const auth = resource.config.auth as { mfa?: unknown; oauth?: unknown } | undefined;
  if (typeof auth !== 'object' || auth === null) return [];
  const routes: Route[] = [{ method: 'GET', path: `${p}/methods`, what: 'how the signed-in user signs in (root: ?ids=a,b)' }];
  if (auth.oauth !== undefined) {
    routes.push(
      { method: 'GET', path: `${p}/oauth/<provider>?redirect=<url>`, what: 'sign in with a provider (redirect: one of auth.oauth.redirects; &link=true links it to the signed-in user)' },
      { method: 'GET', path: `${p}/oauth/<provider>/callback`, what: "the provider's answer: register it at the provider" },
    );
  }
  if (auth.mfa !== undefined) {
    routes.push(
      { method: 'POST', path: `${p}/mfa/enroll`, what: 'a new TOTP secret and its otpauth:// URI' },
      { method: 'POST', path: `${p}/mfa/confirm`, what: 'the first {code} turns two-factor on; answers the recovery codes' },
      { method: 'POST', path: `${p}/mfa/verify`, what: "a login's second step: {mfaToken, code}" },
      { method: 'POST', path: `${p}/mfa/disable`, what: 'turn two-factor off with a {code}' },
    );
  }
  return routes;
}

/** Example calls with /svc.js and @svc/client, generated from the config. */
export function ApiPage({ resource, type, env }: { resource: ResourceView; type: TypeView | undefined; env: string }) {
  const key = resource.name.split('/').map((s) => s.replace(/-/g, '')).join('.');
  const props = Object.entries(resource.config.properties ?? {});
  const sample: Record<string, unknown> = {};
  const values: Record<string, unknown> = { string: 'text', number: 1, boolean: true, object: {}, array: [], date: '2026-01-01T00:00:00.000Z' };
  for (const [name, def] of props.slice(0, 4)) sample[name] = values[def.type] ?? null;
  if (resource.type === 'UserCollection') Object.assign(sample, { username: 'alice', password: 'a long secret' });
  const sampleJson = JSON.stringify(sample);
  const collection = resource.type === 'Collection' || resource.type === 'UserCollection';
  const first = props[0]?.[0];
  const browser = collection
    ? `<script src="/svc.js"></script>
<script>
  // Promises, or callbacks fn(result, error)
  const created = await svc.${key}.post(${sampleJson});
  const list = await svc.${key}.get(${first ? `{ $sort: { ${first}: 1 }, $limit: 20 }` : '{ $limit: 20 }'});
  await svc.${key}.put(created.id, ${first ? `{ ${first}: ${JSON.stringify(sample[first])} }` : '{}'});
  await svc.${key}.del(created.id);${resource.type === 'UserCollection' ? `\n  await svc.${key}.login({ username: 'alice', password: 'a long secret' });\n  const me = await svc.${key}.me();` : ''}
  // Realtime: messages your scripts emit('${resource.name}:create', this), say in aftercommit.js
  svc.${key}.on('create', (object) => console.log(object));
</script>`
    : `<script src="/svc.js"></script>
<script>
  const answer = await svc.${key}.${resource.type === 'Email' ? 'post({ to: "someone@example.com", subject: "Hi", text: "Hello" })' : 'get()'};
</script>`;
  const typed = `// npm i @svc/client ; svc types > svc-types.ts (or download it above)
import { createClient } from '@svc/client';
import type { Types } from './svc-types';

const svc = createClient<Types>('${location.origin}');
${collection ? `const items = await svc.${key}.get({ $limit: 20 }); // typed objects\nconst one = await svc.${key}.post(${sampleJson});` : `await svc.${key}.${resource.type === 'Email' ? 'post({ to: "someone@example.com", subject: "Hi", text: "Hello" })' : 'get()'};`}`;
  const curl = collection
    ? `curl -X POST ${location.origin}/${resource.name} -H 'content-type: application/json' -d '${sampleJson}'
curl '${location.origin}/${resource.name}?${encodeURIComponent('{"$limit":5}')}'`
    : `curl ${location.origin}/${resource.name}`;
  return (
    <div class="api-page" data-test="api-page">
      <table class="grid routes">
        <thead><tr><th>Method</th><th>Path</th><th>What it does</th></tr></thead>
        <tbody>
          {routesOf(resource).map((r) => (
            <tr key={`${r.method} ${r.path}`}><td><span class={`method m-${r.method}`}>{r.method}</span></td><td class="mono">{r.path}</td><td>{r.what}</td></tr>
          ))}
        </tbody>
      </table>
      {type && !type.builtIn && <p class="muted small">Routes of {type.name} come from its package; its README has the details.</p>}
      <h3>In a web page (/svc.js)</h3>
      <pre class="code">{browser}</pre>
      <h3>With @svc/client (typed)</h3>
      <pre class="code">{typed}</pre>
      <p><a class="btn" href="/dashboard/api/types" download="svc-types.ts" onClick={(e) => { e.preventDefault(); document.querySelector<HTMLAnchorElement>('header .btn.ghost')?.click(); }}>Download svc-types.ts</a></p>
      <h3>curl</h3>
      <pre class="code">{curl}</pre>
      {env === 'production' && <p class="muted small">Root requests (the dashboard's) carry the header svc-ssh-key. Never put a root key in front-end code.</p>}
    </div>
  );
}
