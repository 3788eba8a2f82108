import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 21 (performance) and issue 24's observation that real apps' scripts are mostly guards:
// a script in the static subset (@svc/script-runtime's static plans) is answered in the server
// process without a script process. The HTTP answers must be those of the same scripts run in the
// isolate: the same requests go to two apps whose scripts differ only by a first line that takes
// them out of the subset (`var unplanned;`), and every answer must match. /metrics shows which app
// used plans.

const ROOT = { 'svc-ssh-key': 'development' };

const SCRIPTS: Record<string, string> = {
  // The trivial On Get of the aim, and a guard.
  'resources/open/get.js': 'this.seen = true;',
  'resources/guarded/get.js': "if (!me) cancel('login first', 401);\nif (!isMe(this.owner) && me.role !== 'admin') hide('secret');",
  'resources/guarded/post.js': "if (!me) cancel('login first', 401);\nif (this.owner !== me.id) cancel('owner must be you', 403);\nerrorIf(this.title === '', 'title', 'is empty');",
  'resources/guarded/delete.js': "if (!isRoot) {\n  if (!me) cancel('You must be logged in', 401);\n  if (!isMe(this.owner)) cancel('not yours', 403);\n}",
};

const CONFIG = {
  'app.json': { metrics: {}, scripts: { timeoutMs: 10_000 } },
  'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
  'resources/open/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/guarded/config.json': { type: 'Collection', properties: { title: { type: 'string' }, owner: { type: 'string' }, secret: { type: 'string' } } },
};

type Who = 'anon' | 'ann' | 'bob' | 'root';
interface Step {
  who: Who;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
  /** Saves the answer's id under this label; `:label` in paths and bodies stands for it. */
  save?: string;
}

const SEQUENCE: Step[] = [
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'ann', password: 'pw-ann-1' }, save: 'ann' },
  { who: 'anon', method: 'POST', path: '/users', body: { username: 'bob', password: 'pw-bob-1', role: 'admin' }, save: 'bob' },
  { who: 'root', method: 'POST', path: '/open', body: { title: 'one' }, save: 'one' },
  { who: 'root', method: 'POST', path: '/open', body: { title: 'two', seen: false }, save: 'two' },
  { who: 'anon', method: 'GET', path: '/open' },
  { who: 'anon', method: 'GET', path: '/open/:one' },
  { who: 'anon', method: 'GET', path: `/open?${encodeURIComponent(JSON.stringify({ title: 'two' }))}` },
  { who: 'anon', method: 'POST', path: '/guarded', body: { title: 'x', owner: ':ann' } },
  { who: 'ann', method: 'POST', path: '/guarded', body: { title: 'bob\'s', owner: ':bob' } },
  { who: 'ann', method: 'POST', path: '/guarded', body: { title: '', owner: ':ann' } },
  { who: 'ann', method: 'POST', path: '/guarded', body: { title: 'ann 1', owner: ':ann', secret: 's1' }, save: 'ann1' },
  { who: 'bob', method: 'POST', path: '/guarded', body: { title: 'bob 1', owner: ':bob', secret: 's2' }, save: 'bob1' },
  { who: 'anon', method: 'GET', path: '/guarded' },
  { who: 'anon', method: 'GET', path: '/guarded/:ann1' },
  { who: 'ann', method: 'GET', path: '/guarded' },
  { who: 'ann', method: 'GET', path: '/guarded/:bob1' },
  { who: 'bob', method: 'GET', path: '/guarded' },
  { who: 'root', method: 'GET', path: '/guarded' },
  { who: 'anon', method: 'DELETE', path: '/guarded/:ann1' },
  { who: 'bob', method: 'DELETE', path: '/guarded/:ann1' },
  { who: 'ann', method: 'DELETE', path: '/guarded/:ann1' },
  { who: 'root', method: 'DELETE', path: '/guarded/:bob1' },
  { who: 'root', method: 'GET', path: '/guarded' },
];

interface Answer {
  status: number;
  body: string;
}

/** Runs the sequence; answers with saved ids replaced by their labels (each app makes its own ids). */
async function play(h: AppHandle): Promise<Answer[]> {
  const clients: Record<Who, AppHandle['request']> = { anon: h.client(), ann: h.client(), bob: h.client(), root: h.client() };
  const ids = new Map<string, string>();
  const fill = (text: string): string => text.replace(/:(\w+)/g, (all, label: string) => ids.get(label) ?? all);
  const answers: Answer[] = [];
  for (const step of SEQUENCE) {
    const body = step.body === undefined ? undefined : (JSON.parse(fill(JSON.stringify(step.body))) as unknown);
    const res = await clients[step.who](step.method, fill(step.path), body, step.who === 'root' ? ROOT : {});
    if (step.save !== undefined) {
      expect(res.status).toBe(200);
      ids.set(step.save, (res.body as { id: string }).id);
    }
    if (step.path === '/users' && step.method === 'POST') {
      const user = step.body as { username: string; password: string };
      const login = await clients[user.username as Who]('POST', '/users/login', { username: user.username, password: user.password });
      expect(login.status).toBe(200);
    }
    let text = JSON.stringify(res.body);
    for (const [label, id] of ids) text = text.split(id).join(`<${label}>`);
    answers.push({ status: res.status, body: text });
  }
  return answers;
}

async function scriptMetrics(h: AppHandle): Promise<{ runs: number; planned: number }> {
  const text = await (await fetch(`${h.url}/metrics`, { headers: ROOT })).text();
  const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { runs: value('svc_script_runs_total'), planned: value('svc_script_planned_total') };
}

describe.each(appStores())('scripts in the static subset answer as in the isolate (%s)', (store) => {
  let planned: AppHandle;
  let isolated: AppHandle;
  let plannedAnswers: Answer[];
  let isolatedAnswers: Answer[];

  beforeAll(async () => {
    planned = await runApp({ ...CONFIG, ...SCRIPTS }, { store });
    const unplanned = Object.fromEntries(Object.entries(SCRIPTS).map(([file, source]) => [file, `var unplanned;\n${source}`]));
    isolated = await runApp({ ...CONFIG, ...unplanned }, { store });
    plannedAnswers = await play(planned);
    isolatedAnswers = await play(isolated);
  }, 120_000);

  afterAll(async () => {
    await planned?.close();
    await isolated?.close();
  });

  it('gives the same answers to the same requests', () => {
    expect(plannedAnswers).toEqual(isolatedAnswers);
  });

  it('gives the answers the scripts say', () => {
    const at = (i: number): Answer => plannedAnswers[i] as Answer;
    // GET /open: every object seen, also one stored with seen: false (On Get assigns after the read).
    expect(JSON.parse(at(4).body)).toEqual([expect.objectContaining({ title: 'one', seen: true }), expect.objectContaining({ title: 'two', seen: true })]);
    expect(JSON.parse(at(5).body)).toMatchObject({ title: 'one', seen: true });
    expect(at(7)).toMatchObject({ status: 401 });
    expect(JSON.parse(at(7).body)).toMatchObject({ message: 'login first' });
    expect(at(8)).toMatchObject({ status: 403 });
    expect(at(9)).toMatchObject({ status: 400 });
    expect(JSON.parse(at(9).body)).toMatchObject({ errors: { title: 'is empty' } });
    // A visitor: cancel() leaves each object out of a list silently, and answers 401 for one object.
    expect(at(12)).toEqual({ status: 200, body: '[]' });
    expect(at(13).status).toBe(401);
    // Ann sees her secret, not Bob's; Bob is an admin and sees both.
    expect(JSON.parse(at(14).body)).toEqual(expect.arrayContaining([expect.objectContaining({ title: 'ann 1', secret: 's1' }), expect.not.objectContaining({ secret: 's2' })]));
    expect(JSON.parse(at(15).body)).not.toHaveProperty('secret');
    expect(JSON.parse(at(16).body)).toEqual(expect.arrayContaining([expect.objectContaining({ secret: 's1' }), expect.objectContaining({ secret: 's2' })]));
    expect([at(18).status, at(19).status, at(20).status, at(21).status]).toEqual([401, 403, 204, 204]);
  });

  it('answers the planned app\'s runs without a script process, and the other\'s with one', async () => {
    const mine = await scriptMetrics(planned);
    expect(mine.runs).toBeGreaterThan(10);
    expect(mine.planned).toBe(mine.runs);
    const theirs = await scriptMetrics(isolated);
    expect(theirs.runs).toBe(mine.runs);
    expect(theirs.planned).toBe(0);
  });
});
