import { Collection, createRequestScope, isPlainObject, isUserResource, SvcError } from '@svc/core';
import type { Context, Doc, Resource, Store, UserResource } from '@svc/core';

/** What "try as this user on this object" needs from the running app. */
export interface TryAccessHost {
  /** The resources served now. */
  resources(): readonly Resource[];
  store: Store;
}

/** The caller, as the dashboard's form gives it: a user's id or username (none: a visitor who is not logged in). */
interface TryAccessInput {
  /** The collection's name (its path without the leading /). */
  name: string;
  body: Record<string, unknown>;
}

/**
 * "Try as this user on this object": the collection's rules for that user (a Context made as a
 * request of theirs would be: not root, not internal) and that stored object, as
 * `Collection.explainAccess` decides them. Decides nothing itself.
 */
export async function tryAccess(host: TryAccessHost, { name, body }: TryAccessInput): Promise<Record<string, unknown>> {
  const resources = host.resources();
  const collection = resources.find((r) => r.path === `/${name}`);
  if (!(collection instanceof Collection)) throw new SvcError('NOT_FOUND', `no collection ${name}`);
  const objectId = body.object;
  if (typeof objectId !== 'string' || objectId === '') throw new SvcError('BAD_REQUEST', 'the object\'s id is required', { errors: { object: 'an id' } });
  const userText = body.user;
  if (userText !== undefined && userText !== null && typeof userText !== 'string') throw new SvcError('BAD_REQUEST', 'user is an id or a username', { errors: { user: 'an id or a username' } });
  const usersName = body.users;
  if (usersName !== undefined && typeof usersName !== 'string') throw new SvcError('BAD_REQUEST', 'users is the name of a user collection', { errors: { users: 'a user collection' } });
  const doc = await host.store.collection(name).findOne({ id: objectId });
  if (doc === null) throw new SvcError('NOT_FOUND', `no object ${objectId} in ${name}`, { errors: { object: 'not found' } });
  const me = userText === undefined || userText === null || userText === '' ? undefined : await findUser(resources, userText, usersName);
  const access = collection.explainAccess(contextFor(me, objectId), doc);
  return { user: me ? { id: me.user.id, username: me.user.username, users: me.users.path.slice(1) } : null, object: objectId, access };
}

/** The user by id, else by username, in the named user collection or (none named) in each. */
async function findUser(resources: readonly Resource[], text: string, usersName: string | undefined): Promise<{ user: Doc; users: UserResource }> {
  const all = resources.filter((r): r is UserResource => r.type === 'UserCollection' && isUserResource(r));
  const candidates = usersName === undefined || usersName === '' ? all : all.filter((r) => r.path === `/${usersName}`);
  if (candidates.length === 0) throw new SvcError('NOT_FOUND', usersName ? `no user collection ${usersName}` : 'the app has no user collection', { errors: { users: 'not found' } });
  for (const users of candidates) {
    const byId = await users.findUser(text);
    if (isPlainObject(byId)) return { user: byId as Doc, users };
    // text is a string (checked above): an equality, never an operator object.
    const [id] = await users.findUserIds({ username: text });
    const byName = id === undefined ? null : await users.findUser(id);
    if (isPlainObject(byName)) return { user: byName as Doc, users };
  }
  throw new SvcError('NOT_FOUND', `no user ${text}`, { errors: { user: 'no user with that id or username' } });
}

/** A GET of /<c>/<id> by that user (or by a visitor who is not logged in), as the server would make it. */
function contextFor(me: { user: Doc; users: UserResource } | undefined, objectId: string): Context {
  return {
    method: 'GET',
    originalMethod: 'GET',
    url: `/${objectId}`,
    parts: [objectId],
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: {},
    session: { id: 'dashboard-try-access', uid: me?.user.id, path: me?.users.path, isNew: true },
    me: me?.user,
    isRoot: false,
    internal: false,
    scope: createRequestScope('dashboard'),
  };
}
