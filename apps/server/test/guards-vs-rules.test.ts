import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 24: "a Deployd-style app whose guards are replaced by rules, with the same answers to the
// same requests". fixtures/guards-app guards posts and users with event scripts as Deployd apps do
// (`if (!me) cancel(..., 401)`, owner checks in On Put/On Delete, `hide()` in On Get, an admin
// role); fixtures/rules-app says the same with config.json rules and no script. The same requests
// (a visitor, the owner, another user, an admin, root) go to both; every answer must match, but for
// the deliberate differences each step lists (docs/access-rules.md explains them). guards-app's
// app.json gives its scripts 10 s a run: a loaded test machine must not turn a guard into a 500.

type Who = 'anon' | 'ann' | 'bob' | 'carol' | 'root';

/** One request of the sequence. `:label` in the path and body stands for an id saved earlier. */
interface Step {
  who: Who;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
  /** Saves the answer's id under this label. */
  save?: string;
  /** A deliberate difference: the status each app answers. */
  differs?: { guards: number; rules: number; why: string };
}

const ROOT = { 'svc-ssh-key': 'development' };
const q = (query: object): string => `?${encodeURIComponent(JSON.stringify(query))}`;
const BY_TITLE = q({ $sort: { title: 1 } });

const SEQUENCE: Step[] = [
  // Sign-up is open; roles are root's.
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'ann', password: 'pw-ann-1' }, save: 'ann' },
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'bob', password: 'pw-bob-1' }, save: 'bob' },
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'carol', password: 'pw-carol-1' }, save: 'carol' },
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'eve', password: 'pw-eve-1', role: 'admin' } },
  { who: 'root', method: 'PUT', path: '/users/:carol', body: { role: 'admin' } },
  // Creating needs a login, as oneself.
  { who: 'anon', method: 'POST', path: '/posts', body: { title: 'anonymous', owner: ':ann' }, differs: { guards: 401, rules: 403, why: 'a rule refuses with 403 (forbidden by rules.create); the guard chose 401' } },
  { who: 'ann', method: 'POST', path: '/posts', body: { title: 'ann draft', owner: ':ann', secret: 's-ann-1' }, save: 'annDraft' },
  { who: 'ann', method: 'POST', path: '/posts', body: { title: 'ann public', owner: ':ann', published: true, secret: 's-ann-2' }, save: 'annPublic' },
  { who: 'ann', method: 'POST', path: '/posts', body: { title: 'in bob\'s name', owner: ':bob', published: true } },
  { who: 'bob', method: 'POST', path: '/posts', body: { title: 'bob public', owner: ':bob', published: true, secret: 's-bob-1' }, save: 'bobPublic' },
  { who: 'bob', method: 'POST', path: '/posts', body: { title: 'bob draft', owner: ':bob', secret: 's-bob-2' }, save: 'bobDraft' },
  // Reading: drafts are their owner's and admins'; so are secrets.
  { who: 'anon', method: 'GET', path: `/posts${BY_TITLE}` },
  { who: 'anon', method: 'GET', path: '/posts/:annPublic' },
  { who: 'anon', method: 'GET', path: '/posts/:annDraft' },
  { who: 'ann', method: 'GET', path: `/posts${BY_TITLE}` },
  { who: 'ann', method: 'GET', path: '/posts/:annDraft' },
  { who: 'ann', method: 'GET', path: '/posts/:bobPublic' },
  { who: 'bob', method: 'GET', path: '/posts/:annDraft' },
  { who: 'bob', method: 'GET', path: `/posts${q({ published: true, $sort: { title: 1 } })}` },
  { who: 'carol', method: 'GET', path: `/posts${BY_TITLE}` },
  { who: 'root', method: 'GET', path: `/posts${BY_TITLE}` },
  // Changing: the owner or an admin; the owner never changes.
  { who: 'anon', method: 'PUT', path: '/posts/:annPublic', body: { title: 'pwned' }, differs: { guards: 401, rules: 403, why: 'a rule refuses with 403; the guard chose 401' } },
  { who: 'bob', method: 'PUT', path: '/posts/:annPublic', body: { title: 'pwned' } },
  { who: 'bob', method: 'PUT', path: '/posts/:annDraft', body: { title: 'pwned' }, differs: { guards: 403, rules: 400, why: 'a PUT of an object the read rule hides answers as for a missing one (400 No object exists...): no existence oracle' } },
  { who: 'ann', method: 'PUT', path: '/posts/:annPublic', body: { title: 'ann public, edited' } },
  { who: 'ann', method: 'PUT', path: '/posts/:annPublic', body: { owner: ':bob' } },
  { who: 'carol', method: 'PUT', path: '/posts/:bobPublic', body: { title: 'bob public, moderated' } },
  { who: 'anon', method: 'GET', path: `/posts${BY_TITLE}` },
  // Deleting: the owner or an admin.
  { who: 'anon', method: 'DELETE', path: '/posts/:annPublic', differs: { guards: 401, rules: 403, why: 'a rule refuses with 403; the guard chose 401' } },
  { who: 'bob', method: 'DELETE', path: '/posts/:annPublic' },
  { who: 'ann', method: 'DELETE', path: '/posts/:annDraft' },
  { who: 'carol', method: 'DELETE', path: '/posts/:bobDraft' },
  { who: 'ann', method: 'GET', path: `/posts${BY_TITLE}` },
  // Users: each changes and deletes themself; an admin anyone; roles are root's.
  { who: 'anon', method: 'PUT', path: '/users/:ann', body: { displayName: 'pwned' }, differs: { guards: 401, rules: 403, why: 'a rule refuses with 403; the guard chose 401' } },
  { who: 'bob', method: 'PUT', path: '/users/:ann', body: { displayName: 'pwned' } },
  { who: 'ann', method: 'PUT', path: '/users/:ann', body: { displayName: 'Ann' } },
  { who: 'ann', method: 'PUT', path: '/users/:ann', body: { role: 'admin' } },
  { who: 'carol', method: 'PUT', path: '/users/:bob', body: { displayName: 'Bob (checked)' } },
  { who: 'anon', method: 'GET', path: `/users${q({ $sort: { username: 1 } })}` },
  { who: 'ann', method: 'GET', path: '/users/me' },
  { who: 'bob', method: 'DELETE', path: '/users/:ann' },
  { who: 'anon', method: 'DELETE', path: '/users/:ann', differs: { guards: 401, rules: 403, why: 'a rule refuses with 403; the guard chose 401' } },
  { who: 'ann', method: 'DELETE', path: '/users/:ann' },
  { who: 'carol', method: 'DELETE', path: '/users/:bob' },
  { who: 'root', method: 'GET', path: `/users${q({ $sort: { username: 1 } })}` },
];

/** A fixture app's files, as runApp writes them. */
async function fixture(name: string): Promise<Record<string, string>> {
  const root = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else out[relative(root, path)] = await readFile(path, 'utf8');
    }
  };
  await walk(root);
  return out;
}

interface Answer {
  status: number;
  body: unknown;
}

/** Runs the sequence on one app; answers each step's status and body with ids written as their labels. */
async function play(h: AppHandle): Promise<Answer[]> {
  const ids = new Map<string, string>();
  const labels = new Map<string, string>();
  const clients: Record<Who, AppHandle['request']> = { anon: h.client(), ann: h.client(), bob: h.client(), carol: h.client(), root: h.client() };
  const withIds = (text: string): string => text.replace(/:([A-Za-z]+)/g, (whole, label: string) => ids.get(label) ?? whole);
  const answers: Answer[] = [];
  for (const step of SEQUENCE) {
    const body = step.body === undefined ? undefined : (JSON.parse(withIds(JSON.stringify(step.body))) as unknown);
    const res = await clients[step.who](step.method, withIds(step.path), body, step.who === 'root' ? ROOT : {});
    if (step.save !== undefined && res.status === 200) {
      const id = (res.body as { id: string }).id;
      ids.set(step.save, id);
      labels.set(id, `:${step.save}`);
      // The users log in once they exist.
      if (['ann', 'bob', 'carol'].includes(step.save)) {
        const login = await clients[step.save as Who]('POST', '/users/login', { username: step.save, password: `pw-${step.save}-1` });
        expect(login.status).toBe(200);
      }
    }
    const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
    answers.push({ status: res.status, body: text === '' ? '' : (JSON.parse(text.replace(/"([A-Za-z0-9]{16,})"/g, (whole, id: string) => (labels.has(id) ? JSON.stringify(labels.get(id)) : whole))) as unknown) });
  }
  return answers;
}

const stores = ['embedded', ...(process.env.SVC_TEST_MONGODB_URL ? ['mongodb'] : [])];
if (!process.env.SVC_TEST_MONGODB_URL) process.stderr.write('SKIPPED guards-vs-rules on MongoDB: SVC_TEST_MONGODB_URL is not set\n');

describe.each(stores)('a Deployd-style app and the same app with rules answer alike (%s)', (store) => {
  it('the same requests get the same answers, but for the documented differences', async () => {
    const guards = await runApp(await fixture('guards-app'), { store });
    const rules = await runApp(await fixture('rules-app'), { store });
    try {
      const [a, b] = [await play(guards), await play(rules)];
      for (const [i, step] of SEQUENCE.entries()) {
        const what = `step ${i}: ${step.who} ${step.method} ${step.path}`;
        const [g, r] = [a[i] as Answer, b[i] as Answer];
        if (step.differs) {
          expect([g.status, r.status], `${what} (${step.differs.why})`).toEqual([step.differs.guards, step.differs.rules]);
          continue;
        }
        expect(r.status, `${what}: ${JSON.stringify(g.body)} / ${JSON.stringify(r.body)}`).toBe(g.status);
        // Errors say why in their own words (the guard's message, or the rule's name): same status.
        if (g.status < 400) expect(r.body, what).toEqual(g.body);
      }
      // The sequence tried what it should: each kind of answer happened.
      const statuses = new Set(a.map((x) => x.status));
      for (const status of [200, 204, 403, 404]) expect(statuses, String(status)).toContain(status);
    } finally {
      await guards.close();
      await rules.close();
    }
  });
});
