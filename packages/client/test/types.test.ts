import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTypes } from '@svc/client/server';
import type { TypeSource } from '@svc/client/server';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** An app's resources as `svc types` reads them. */
const app: TypeSource[] = [
  {
    path: '/todos',
    config: { type: 'Collection', properties: { title: { type: 'string', required: true }, done: { type: 'boolean' }, order: { type: 'number' }, tags: { type: 'array' }, meta: { type: 'object' }, due: { type: 'date' } } },
    // An On Get computing a field; `title` is declared already and stays a string.
    scriptProperties: ['summary', 'title'],
  },
  { path: '/users', config: { type: 'UserCollection', properties: { displayName: { type: 'string' } } } },
  // Two-factor: its login may answer the second step.
  { path: '/staff', config: { type: 'UserCollection', properties: {}, auth: { mfa: {} } } },
  { path: '/add-follower', config: { type: 'Event' }, client: { methods: { notify: { method: 'POST', func: 'notify' } } } },
  { path: '/a/b', config: { type: 'Collection', properties: { x: { type: 'number' } } } },
  // Issue 25: relations, typed as ids, and what $expand makes of them.
  { path: '/articles', config: { type: 'Collection', properties: { title: { type: 'string' }, writer: { type: 'relation', collection: 'users' }, topics: { type: 'relation', collection: 'todos', many: true }, cover: { type: 'file' }, files: { type: 'file', many: true } } } },
  { path: '/comments', config: { type: 'Collection', properties: { text: { type: 'string' }, article: { type: 'relation', collection: 'articles' }, author: { type: 'relation', collection: 'users' } } } },
];

/** Code an app would write against the generated types: it must compile. */
const good = `
import { createClient } from '@svc/client';
import type { FileInfo, SessionInfo } from '@svc/client';
import { resources } from './svc-types.js';
import type { Articles, Todos, Types, Users } from './svc-types.js';

const svc = createClient<Types>('http://127.0.0.1:2403', { resources });
export async function use(): Promise<void> {
  const todo: Todos = await svc.todos.post({ title: 'a', done: false, order: 1 });
  // Only required properties are: done (a boolean, stored false) and the others may be left out.
  const bare: Todos = await svc.todos.post({ title: 'b' });
  const summary: unknown = bare.summary;
  const user: Users = await svc.users.post({ username: 'w', password: 'p' });
  const list: Todos[] = await svc.todos.get({ done: false, order: { $gt: 1 }, tags: 'x', $sort: { order: -1 }, $limit: 5 });
  const one: Todos = await svc.todos.get(todo.id);
  await svc.todos.put(todo.id, { order: { $inc: 1 }, tags: { $push: 'y' } });
  await svc.todos.put({ id: todo.id, title: 'b' });
  const gone: null = await svc.todos.del(todo.id);
  svc.todos.get((result: Todos[] | null) => void result).fail(() => undefined);
  const session: SessionInfo = await svc.users.login({ username: 'u', password: 'p' });
  const answer = await svc.staff.login({ username: 'u', password: 'p' });
  const step: SessionInfo | string = 'mfaRequired' in answer ? answer.mfaToken : answer;
  const verified: SessionInfo = await svc.users.mfa.verify({ mfaToken: 't', code: '123456' });
  const { secret, uri }: { secret: string; uri: string } = await svc.users.mfa.enroll();
  void svc.users.loginWithProvider('google', { redirect: 'https://app.example/done', mode: 'popup' });
  void [verified, secret, uri, step];
  const me: Users | null = await svc.users.me();
  await svc.users.post({ username: 'v', password: 'p', displayName: 'V' });
  await svc.addfollower.notify('x', { a: 1 });
  await svc.addfollower.get('func', 'path', { q: 1 });
  await svc('a/b').get();
  svc.todos.on<Todos>('create', (t) => void t.title);
  svc.on('message', (data: unknown) => void data);
  svc.socketReady(() => undefined);
  const article: Articles = await svc.articles.post({ title: 't', writer: user.id, topics: [todo.id] });
  const writerId: string | null | undefined = article.writer;
  const expanded = await svc.articles.get({ title: 't', $expand: ['writer', 'topics'], $total: true });
  const writer: Users | null = expanded[0]!.writer;
  const topics: Todos[] = expanded[0]!.topics;
  const back = await svc.users.get({ $expand: ['articles_via_writer'] });
  const written: Articles[] = back[0]!.articles_via_writer;
  const nested: Articles[] = await svc.articles.get({ $expand: { writer: { $fields: { username: 1 } } } });
  // Nested $expand: each level typed by the relations of the objects it expands to.
  const deep = await svc.articles.get({ $expand: ['writer', 'comments_via_article.author'] });
  const commenter: Users | null = deep[0]!.comments_via_article[0]!.author;
  const commentText: string | undefined = deep[0]!.comments_via_article[0]!.text;
  const deepWriter: Users | null = deep[0]!.writer;
  const byUser = await svc.users.get({ $expand: ['articles_via_writer.topics', 'articles_via_writer.comments_via_article', 'comments_via_author.article.writer'] });
  const userTopics: Todos[] = byUser[0]!.articles_via_writer[0]!.topics;
  const onArticle: string | undefined = byUser[0]!.articles_via_writer[0]!.comments_via_article[0]!.text;
  const threeLevels: Users | null = byUser[0]!.comments_via_author[0]!.article!.writer;
  const notExpanded: string | null | undefined = (await svc.articles.get({ $expand: ['comments_via_article'] }))[0]!.comments_via_article[0]!.author;
  // Issue 43: file properties, typed as the server answers them; uploads name only file properties.
  const cover: FileInfo | null | undefined = article.cover;
  const firstUrl: string | undefined = article.files?.[0]?.url;
  const withCover: Articles = await svc.articles.upload(article.id, 'cover', new Blob(['x']), { name: 'c.png' });
  await svc.articles.upload(article.id, 'files', new Uint8Array([1]), { add: true });
  await svc.articles.removeFile(article.id, 'files', 'f'.repeat(24));
  const form = new FormData();
  form.append('cover', new Blob(['x']), 'c.png');
  const made: Articles = await svc.articles.post(form);
  const changed: Articles = await svc.articles.put(made.id, form);
  void [cover, firstUrl, withCover, changed];
  void [list, one, gone, session, me, bare, user, summary, writerId, writer, topics, written, nested, commenter, commentText, deepWriter, userTopics, onArticle, threeLevels, notExpanded];
}
`;

/** Each line must fail to compile: a wrong property name, in a read, a create, a query, an update. */
const bad = [
  `export const a = async () => (await svc.todos.get('x')).titel;`,
  `export const b = () => svc.todos.post({ titel: 'a', done: false });`,
  `export const c = () => svc.todos.get({ titel: 'a' });`,
  `export const d = () => svc.todos.put('x', { titel: 'a' });`,
  `export const e = () => svc.todos.get({ $sort: { titel: 1 } });`,
  `export const f = () => svc.todoz.get();`,
  `export const g = () => svc.users.login({ username: 'u' });`,
  `export const h = () => svc.addfollower.notifyy();`,
  `export const k = () => svc.users.mfa.verify({ mfaToken: 't' });`,
  `export const l = () => svc.users.loginWithProvider('google', { mode: 'popup' });`,
  `export const m = async () => (await svc.staff.login({ username: 'u', password: 'p' })).uid;`,
  `export const i = () => svc.todos.post({ done: true });`,
  `export const j = () => svc.users.post({ username: 'u' });`,
  `export const l = async () => (await svc.articles.get({ $expand: ['writer'] }))[0]!.writer!.titel;`,
  `export const m = () => svc.articles.post({ title: 't', writer: 5 });`,
  `export const n = async () => (await svc.articles.get({ $expand: ['comments_via_article.author'] }))[0]!.comments_via_article[0]!.author!.titel;`,
  `export const p = async () => (await svc.articles.get({ $expand: ['comments_via_article'] }))[0]!.comments_via_article[0]!.author!.username;`,
  `export const q = () => svc.articles.upload('x', 'title', new Blob(['x']));`,
  `export const r = async () => (await svc.articles.get('x')).cover!.nme;`,
  `export const s = () => svc.articles.post({ title: 't', cover: 5 });`,
];

describe('svc types: the generated Types compile, wrong names do not (tsc)', () => {
  let dir: string;
  let output: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-types-'));
    await writeFile(join(dir, 'svc-types.ts'), generateTypes(app));
    await writeFile(join(dir, 'good.ts'), good);
    const header = `import { createClient } from '@svc/client';\nimport { resources } from './svc-types.js';\nimport type { Types } from './svc-types.js';\nconst svc = createClient<Types>('', { resources });\n`;
    await writeFile(join(dir, 'bad.ts'), header + bad.join('\n') + '\n');
    const tsconfig = {
      compilerOptions: {
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noUncheckedIndexedAccess: true,
        verbatimModuleSyntax: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(root, 'node_modules/@types')],
        paths: {
          '@svc/client': [join(root, 'packages/client/src/index.ts')],
          '@svc/core': [join(root, 'packages/core/src/index.ts')],
        },
      },
      files: ['svc-types.ts', 'good.ts', 'bad.ts'],
    };
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    await writeFile(join(dir, 'package.json'), '{"type": "module"}');
    output = await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: dir }).then(
      (r) => r.stdout,
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
  }, 120_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the generated module and code using it compile without errors', () => {
    const errors = output.split('\n').filter((l) => /error TS/.test(l) && !l.startsWith('bad.ts'));
    expect(errors).toEqual([]);
  });

  it('every wrong property or resource name is a compile error, on its own line', () => {
    const lines = new Set(
      output
        .split('\n')
        .map((l) => /^bad\.ts\((\d+),/.exec(l)?.[1])
        .filter((n): n is string => n !== undefined)
        .map(Number),
    );
    const headerLines = 4;
    expect([...lines].sort((a, b) => a - b)).toEqual(bad.map((_, i) => headerLines + 1 + i));
  });

  it('the generated text names properties, optional unless required or boolean, and the resources list', () => {
    const text = generateTypes(app);
    expect(text).toContain(
      'export interface Todos {\n  id: string;\n  title: string;\n  done: boolean;\n  order?: number;\n  tags?: unknown[];\n  meta?: Record<string, unknown>;\n  due?: string;\n  /** Set by an event script; no property declares it. */\n  summary?: unknown;\n}',
    );
    expect(text).toContain('export interface Users {\n  id: string;\n  username: string;\n  displayName?: string;\n}');
    expect(text).toContain('    addfollower: CustomDef<"notify">;');
    expect(text).toContain('    "a/b": CollectionDef<AB>;');
    expect(text).toContain('"path": "/add-follower"');
    expect(text).toContain('export interface ArticlesRelations {\n  writer: Users | null;\n  topics: Todos[];\n  comments_via_article: Comments[];\n}');
    expect(text).toContain('export interface UsersRelations {\n  articles_via_writer: Articles[];\n  comments_via_author: Comments[];\n}');
    expect(text).toContain('    articles: CollectionDef<Articles, ArticlesRelations, ArticlesRelated>;');
    expect(text).toContain('export interface ArticlesRelated {\n  writer: RelationLinks<UsersRelations, UsersRelated>;\n  topics: RelationLinks<TodosRelations, TodosRelated>;\n  comments_via_article: RelationLinks<CommentsRelations, CommentsRelated>;\n}');
    expect(text).toContain('  writer?: string | null;');
  });

  it('a property an access rule or `private` may leave out of answers is optional, even required or boolean (issue 24)', () => {
    const text = generateTypes([
      {
        path: '/posts',
        config: {
          type: 'Collection',
          properties: { title: { type: 'string', required: true, read: true }, salary: { type: 'number', required: true, read: { '@me.role': 'hr' } }, flag: { type: 'boolean', read: false }, notes: { type: 'string', required: true, private: true } },
        },
      },
    ]);
    const hidden = '  /** Left out of answers to callers its read rule (or `private`) does not allow. */\n';
    expect(text).toContain(`export interface Posts {\n  id: string;\n  title: string;\n${hidden}  salary?: number;\n${hidden}  flag?: boolean;\n${hidden}  notes?: string;\n}`);
  });
});

describe('svc types and auth.verification (issue 27)', () => {
  it('a user collection with auth.verification gets verified: boolean, set by the server', () => {
    const text = generateTypes([
      { path: '/members', config: { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { verification: {}, reset: {} } } },
      { path: '/staff', config: { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { reset: {} } } },
    ]);
    expect(text).toContain('export interface Members {\n  id: string;\n  username: string;\n  email?: string;\n  /** Whether the user confirmed their email address (set by the server). */\n  verified: boolean;\n}');
    expect(text).toContain('export interface Staff {\n  id: string;\n  username: string;\n  email?: string;\n}');
  });
});
