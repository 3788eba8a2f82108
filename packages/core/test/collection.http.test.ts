import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import type { PropertyDef } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

const properties: Record<string, PropertyDef> = {
  title: { type: 'string', required: true },
  done: { type: 'boolean' },
  count: { type: 'number' },
  tags: { type: 'array' },
  meta: { type: 'object' },
  code: { type: 'string', unique: true },
};

type Obj = Record<string, unknown> & { id: string };

describe.each(storeKinds())('Collection over HTTP ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  const root = { 'svc-ssh-key': 'any' };

  beforeAll(async () => {
    store = await kind.make();
    t = await startTestServer(store.store, [new Collection({ path: '/todos', properties, store: store.store.collection('todos') })]);
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  async function create(body: Record<string, unknown>): Promise<Obj> {
    const res = await t.request('POST', '/todos', { body });
    expect(res.status).toBe(200);
    return res.body as Obj;
  }

  it('GET of an empty collection answers []', async () => {
    const res = await t.request('GET', '/todos');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('POST creates: 200 with the stored object, a 16-hex id, booleans false, unknown and mismatching values ignored', async () => {
    const res = await t.request('POST', '/todos', { body: { title: 'a', count: 'not a number', extra: 1, tags: 'no' } });
    expect(res.status).toBe(200);
    const obj = res.body as Obj;
    expect(obj.id).toMatch(/^[0-9a-f]{16}$/);
    expect(obj).toEqual({ id: obj.id, title: 'a', done: false });
    const again = await t.request('GET', `/todos/${obj.id}`);
    expect(again.body).toEqual(obj);
  });

  it('Boolean null is stored as false', async () => {
    const obj = await create({ title: 'b', done: null });
    expect(obj.done).toBe(false);
  });

  it('a missing required property answers 400 with errors {prop: "is required"}', async () => {
    for (const title of [undefined, null, '']) {
      const res = await t.request('POST', '/todos', { body: { title, done: true } });
      expect(res.status).toBe(400);
      // Deployd's shape ({errors, status}) with statusCode: no "validation failed" message.
      expect(res.body).toEqual({ status: 400, statusCode: 400, errors: { title: 'is required' } });
    }
  });

  it('GET of an unknown id answers 404 "not found"', async () => {
    const res = await t.request('GET', '/todos/0123456789abcdef');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 404, statusCode: 404, message: 'not found' });
  });

  it('POST /<c>/<id> and PUT /<c>/<id> change only the given properties', async () => {
    const obj = await create({ title: 'c', count: 1, tags: ['x'] });
    const post = await t.request('POST', `/todos/${obj.id}`, { body: { count: 2 } });
    expect(post.status).toBe(200);
    expect(post.body).toEqual({ ...obj, count: 2 });
    const put = await t.request('PUT', `/todos/${obj.id}`, { body: { done: true, unknown: 1 } });
    expect(put.body).toEqual({ ...obj, count: 2, done: true });
  });

  it('PUT /<c> and POST /<c> with id in the body update', async () => {
    const obj = await create({ title: 'd' });
    const put = await t.request('PUT', '/todos', { body: { id: obj.id, title: 'd2' } });
    expect(put.status).toBe(200);
    expect((put.body as Obj).title).toBe('d2');
    const post = await t.request('POST', '/todos', { body: { id: obj.id, title: 'd3' } });
    expect((post.body as Obj).title).toBe('d3');
    const list = (await t.request('GET', '/todos?title=d3')).body as Obj[];
    expect(list.map((o) => o.id)).toEqual([obj.id]);
  });

  it('PUT with a query precondition: a mismatch answers 400 "No object exists that matches that query"', async () => {
    const obj = await create({ title: 'e', count: 5 });
    const miss = await t.request('PUT', `/todos/${obj.id}?count=6`, { body: { title: 'e2' } });
    expect(miss.status).toBe(400);
    expect(miss.body).toEqual({ status: 400, statusCode: 400, message: 'No object exists that matches that query' });
    const hit = await t.request('PUT', `/todos/${obj.id}?count=5`, { body: { title: 'e2' } });
    expect(hit.status).toBe(200);
    expect((hit.body as Obj).title).toBe('e2');
    const unknown = await t.request('PUT', '/todos/0000000000000000', { body: { title: 'x' } });
    expect(unknown.status).toBe(400);
    expect((unknown.body as { message: string }).message).toBe('No object exists that matches that query');
  });

  it('PUT without any id answers 400', async () => {
    const res = await t.request('PUT', '/todos', { body: { title: 'x' } });
    expect(res.status).toBe(400);
  });

  it('DELETE /<c>/<id> and DELETE /<c>?id= answer 204 with an empty body; precondition and unknown id 404', async () => {
    const a = await create({ title: 'f', count: 1 });
    const b = await create({ title: 'g' });
    const miss = await t.request('DELETE', `/todos/${a.id}?count=2`);
    expect(miss.status).toBe(404);
    const del = await t.request('DELETE', `/todos/${a.id}?count=1`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await t.request('GET', `/todos/${a.id}`)).status).toBe(404);
    const delQ = await t.request('DELETE', `/todos?id=${b.id}`);
    expect(delQ.status).toBe(204);
    expect((await t.request('DELETE', `/todos/${b.id}`)).status).toBe(404);
    expect((await t.request('DELETE', '/todos')).status).toBe(400);
  });

  it('update modifiers $inc $push $pushAll $pull $pullAll', async () => {
    const obj = await create({ title: 'h', count: 1, tags: ['a', 'b', 'a'] });
    const inc = await t.request('PUT', `/todos/${obj.id}`, { body: { count: { $inc: 4 } } });
    expect((inc.body as Obj).count).toBe(5);
    const push = await t.request('PUT', `/todos/${obj.id}`, { body: { tags: { $push: 'c' } } });
    expect((push.body as Obj).tags).toEqual(['a', 'b', 'a', 'c']);
    const pushAll = await t.request('PUT', `/todos/${obj.id}`, { body: { tags: { $pushAll: ['d', 'e'] } } });
    expect((pushAll.body as Obj).tags).toEqual(['a', 'b', 'a', 'c', 'd', 'e']);
    const pull = await t.request('PUT', `/todos/${obj.id}`, { body: { tags: { $pull: 'a' } } });
    expect((pull.body as Obj).tags).toEqual(['b', 'c', 'd', 'e']);
    const pullAll = await t.request('PUT', `/todos/${obj.id}`, { body: { tags: { $pullAll: ['b', 'e'] } } });
    expect((pullAll.body as Obj).tags).toEqual(['c', 'd']);
  });

  it.skipIf(!kind.atomicUpdates)('$inc is atomic: 50 concurrent increments all count', async () => {
    const obj = await create({ title: 'i', count: 0 });
    await Promise.all(Array.from({ length: 50 }, () => t.request('PUT', `/todos/${obj.id}`, { body: { count: { $inc: 1 } } })));
    expect(((await t.request('GET', `/todos/${obj.id}`)).body as Obj).count).toBe(50);
  });

  it('a unique property refuses duplicates with errors {prop: "is already in use"}', async () => {
    await create({ title: 'u1', code: 'X1' });
    const dup = await t.request('POST', '/todos', { body: { title: 'u2', code: 'X1' } });
    expect(dup.status).toBe(400);
    expect(dup.body).toEqual({ status: 400, statusCode: 400, errors: { code: 'is already in use' } });
  });

  describe('queries', () => {
    let ids: Record<string, string>;
    beforeAll(async () => {
      ids = {};
      for (const [title, count, done, tags] of [
        ['q-apple', 1, true, ['red', 'fruit']],
        ['q-banana', 2, false, ['yellow', 'fruit']],
        ['q-cherry', 3, true, ['red']],
        ['q-date', 4, false, []],
      ] as const) {
        ids[title] = (await create({ title, count, done, tags: [...tags], meta: { n: count } })).id;
      }
    });
    const titles = async (query: string): Promise<string[]> => {
      const res = await t.request('GET', `/todos?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj[]).map((o) => o.title as string).filter((s) => s.startsWith('q-')).sort();
    };
    const json = (q: unknown): string => encodeURIComponent(JSON.stringify(q));

    it.each([
      ['plain key=value', 'title=q-apple', ['q-apple']],
      ['plain boolean coerced', 'done=true', ['q-apple', 'q-cherry']],
      ['plain number coerced', 'count=2', ['q-banana']],
      ['array contains a value', 'tags=red', ['q-apple', 'q-cherry']],
      ['whole-JSON query string', json({ done: false }), ['q-banana', 'q-date']],
      ['$gt / $lte', json({ count: { $gt: 1, $lte: 3 } }), ['q-banana', 'q-cherry']],
      ['$gte / $lt', json({ count: { $gte: 3, $lt: 100 } }), ['q-cherry', 'q-date']],
      ['$ne', json({ title: { $regex: '^q-' }, done: { $ne: true } }), ['q-banana', 'q-date']],
      ['$in', json({ count: { $in: [1, 4] } }), ['q-apple', 'q-date']],
      ['$regex with $options', json({ title: { $regex: '^Q-B', $options: 'i' } }), ['q-banana']],
      ['$or', json({ $or: [{ count: 1 }, { title: 'q-date' }] }), ['q-apple', 'q-date']],
      ['values as JSON in plain pairs', `count=${json({ $gt: 3 })}`, ['q-date']],
      ['keys that are not properties do not filter', 'title=q-apple&notAProperty=1', ['q-apple']],
      ['a q parameter holding a JSON query (the client put/del form)', `q=${json({ title: 'q-banana' })}`, ['q-banana']],
      ['a q parameter that is not JSON is an ordinary key', 'q=shoes&title=q-date', ['q-date']],
      ['nested object equality on an object property', json({ meta: { n: 2 } }), ['q-banana']],
    ])('%s', async (_name, query, expected) => {
      expect(await titles(query)).toEqual(expected);
    });

    it('$sort, $skip and $limit page the results', async () => {
      const q = (s: unknown) => t.request('GET', `/todos?${json(s)}`).then((r) => (r.body as Obj[]).map((o) => o.title));
      expect(await q({ title: { $regex: '^q-' }, $sort: { count: -1 } })).toEqual(['q-date', 'q-cherry', 'q-banana', 'q-apple']);
      expect(await q({ title: { $regex: '^q-' }, $sort: { count: 1 }, $skip: 1, $limit: 2 })).toEqual(['q-banana', 'q-cherry']);
      const plain = await t.request('GET', `/todos?title=${json({ $regex: '^q-' })}&$sort=${json({ count: 1 })}&$limit=1`);
      expect((plain.body as Obj[]).map((o) => o.title)).toEqual(['q-apple']);
    });

    it('$fields includes or excludes properties', async () => {
      const inc = (await t.request('GET', `/todos?${json({ title: 'q-apple', $fields: { title: 1 } })}`)).body as Obj[];
      expect(inc).toEqual([{ id: ids['q-apple'], title: 'q-apple' }]);
      const exc = (await t.request('GET', `/todos?${json({ title: 'q-apple', $fields: { tags: 0, meta: 0 } })}`)).body as Obj[];
      expect(Object.keys(exc[0] ?? {}).sort()).toEqual(['count', 'done', 'id', 'title']);
    });

    it('array-contains-id matching: a property equal to a single id matches arrays holding it', async () => {
      const owner = await create({ title: 'owner', tags: [ids['q-apple'], ids['q-date']] });
      const res = await t.request('GET', `/todos?tags=${ids['q-date']}`);
      expect((res.body as Obj[]).map((o) => o.id)).toEqual([owner.id]);
    });

    it('GET /<c>/count answers the store count, root only by default', async () => {
      const denied = await t.request('GET', '/todos/count');
      expect(denied.status).toBe(403);
      const all = await t.request('GET', `/todos/count?${json({ title: { $regex: '^q-' } })}`, { headers: root });
      expect(all.body).toEqual({ count: 4 });
      const some = await t.request('GET', '/todos/count?done=true&title=q-apple', { headers: root });
      expect(some.body).toEqual({ count: 1 });
    });
  });

  describe('bad input gets a clear JSON error', () => {
    it.each([
      ['malformed JSON body', { method: 'POST', path: '/todos', raw: '{"title":', contentType: 'application/json' }, 400],
      ['unsupported Content-Type', { method: 'POST', path: '/todos', raw: '<x/>', contentType: 'application/xml' }, 415],
      ['malformed JSON query', { method: 'GET', path: '/todos?{"title":' }, 400],
      ['malformed JSON query value', { method: 'GET', path: '/todos?$sort={bad' }, 400],
      ['unknown $ command', { method: 'GET', path: `/todos?${encodeURIComponent('{"$foo":1}')}` }, 400],
      ['unknown $ operator', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$foo":1}}')}` }, 400],
      ['$where', { method: 'GET', path: `/todos?${encodeURIComponent('{"$where":"sleep(1000)"}')}` }, 400],
      ['$where on a property', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$where":"1"}}')}` }, 400],
      ['$function', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$function":{}}}')}` }, 400],
      ['$accumulator', { method: 'GET', path: `/todos?${encodeURIComponent('{"$accumulator":{}}')}` }, 400],
      ['$expr', { method: 'GET', path: `/todos?${encodeURIComponent('{"$expr":{"$eq":[1,1]}}')}` }, 400],
      ['$expr inside $or', { method: 'GET', path: `/todos?${encodeURIComponent('{"$or":[{"$expr":{}}]}')}` }, 400],
      ['operator nested in a value', { method: 'GET', path: `/todos?${encodeURIComponent('{"meta":{"a":{"$gt":1}}}')}` }, 400],
      ['operator inside $in', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$in":[{"$ne":1}]}}')}` }, 400],
      ['operators mixed with keys', { method: 'GET', path: `/todos?${encodeURIComponent('{"meta":{"$ne":1,"a":1}}')}` }, 400],
      ['$in without an array', { method: 'GET', path: `/todos?${encodeURIComponent('{"count":{"$in":5}}')}` }, 400],
      ['$regex bad pattern', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$regex":"("}}')}` }, 400],
      ['$options bad flag', { method: 'GET', path: `/todos?${encodeURIComponent('{"title":{"$regex":"a","$options":"g"}}')}` }, 400],
      ['$limit negative', { method: 'GET', path: '/todos?$limit=-1' }, 400],
      ['$sort bad direction', { method: 'GET', path: `/todos?$sort=${encodeURIComponent('{"title":2}')}` }, 400],
      ['number property with a non-number', { method: 'GET', path: '/todos?count=abc' }, 400],
      ['$ key stored in an object', { method: 'POST', path: '/todos', body: { title: 'x', meta: { $set: 1 } } }, 400],
      ['body that is not an object', { method: 'POST', path: '/todos', body: [1, 2] }, 400],
      ['id that is not a string', { method: 'PUT', path: '/todos', body: { id: { $ne: null }, title: 'x' } }, 400],
      ['unknown route', { method: 'GET', path: '/nothing-here' }, 404],
      ['unknown sub-route', { method: 'GET', path: '/todos/a/b' }, 404],
      ['unsupported method', { method: 'PATCH', path: '/todos/abc', body: {} }, 405],
    ] as const)('%s -> %i', async (_name, req, status) => {
      const opts = 'raw' in req ? { raw: req.raw, contentType: req.contentType } : 'body' in req ? { body: req.body } : {};
      const res = await t.request(req.method, req.path, opts);
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/json');
      const body = res.body as { status: number; message?: string };
      expect(body.status).toBe(status);
      expect(typeof body.message).toBe('string');
    });

    it('a body over the limit answers 413', async () => {
      const big = JSON.stringify({ title: 'x'.repeat(1024 * 1024 + 10) });
      const res = await t.request('POST', '/todos', { raw: big, contentType: 'application/json' });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ status: 413 });
    });

    it('a chunked body over the limit answers 413 too', async () => {
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(chunk);
          controller.close();
        },
      });
      const res = await fetch(`${t.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
      expect(res.status).toBe(413);
    });
  });

  it('method override: POST with _method in the query or the JSON body', async () => {
    const obj = await create({ title: 'mo' });
    const put = await t.request('POST', `/todos/${obj.id}?_method=PUT`, { body: { title: 'mo2' } });
    expect((put.body as Obj).title).toBe('mo2');
    const del = await t.request('POST', `/todos/${obj.id}`, { body: { _method: 'DELETE' } });
    expect(del.status).toBe(204);
    expect((await t.request('GET', `/todos/${obj.id}`)).status).toBe(404);
  });
});
