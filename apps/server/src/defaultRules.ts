import { SvcError } from '@svc/core';
import type { PropertyDef } from '@svc/core';

/**
 * The access rules new collections start with (`svc create` and the dashboard's "new resource"),
 * so that a new app is not Deployd's "anyone may write anything". Apps loaded from disk keep what
 * their config.json says (absent = open).
 */

/** A rule of config.json: true (anyone), false (root only) or a query the object must match. */
export type RuleValue = boolean | Record<string, unknown>;

/** A collection's write rules, as written into config.json's `rules`. */
export interface WriteRules {
  create?: RuleValue;
  update?: RuleValue;
  delete?: RuleValue;
}

/** A new collection's rules: the write rules, and for a UserCollection who may list and read users. */
export interface NewRules extends WriteRules {
  list?: RuleValue;
  read?: RuleValue;
}

/**
 * The owner convention: a string property holding the id of the user who made the object. The
 * dashboard's "new collection" form proposes this name (and takes another); `svc create`'s
 * example collection has it.
 */
export const OWNER_PROPERTY = 'owner';

/** The property an owner rule compares to `@me.id`: indexed, since lists filtered by owner are common. */
export const OWNER_PROPERTY_DEF: Readonly<PropertyDef> = { type: 'string', index: true };

/** Logged in: the session has a user. */
const LOGGED_IN = { '@me.id': { $exists: true } } as const;

/**
 * The rules of a new collection: its write rules and, for a UserCollection, list and read for the
 * user themself (Deployd's default let anyone list every user; issue 38). A Collection's reads stay
 * open (what it holds is the app's to decide: a blog's posts are public).
 */
export function defaultRules(type: 'Collection' | 'UserCollection', owner?: string): NewRules {
  if (type === 'UserCollection') return { list: { id: '@me.id' }, read: { id: '@me.id' }, ...defaultWriteRules(type) };
  return defaultWriteRules(type, owner);
}

/**
 * The write rules of a new collection:
 * - Collection: `create` needs a login; with an owner property, the new object's owner must be the
 *   caller (nobody creates objects in another user's name) and `update`/`delete` are the owner's.
 *   Without one, `update`/`delete` stay open (the production start lists them).
 * - UserCollection: `create` is sign-up, open on purpose (`true`, which the production warning
 *   leaves out); a user may change and delete only themself.
 * Root passes every rule.
 */
export function defaultWriteRules(type: 'Collection' | 'UserCollection', owner?: string): WriteRules {
  if (type === 'UserCollection') return { create: true, update: { id: '@me.id' }, delete: { id: '@me.id' } };
  if (owner === undefined) return { create: { ...LOGGED_IN } };
  return { create: { ...LOGGED_IN, [owner]: '@me.id' }, update: { [owner]: '@me.id' }, delete: { [owner]: '@me.id' } };
}

const PROPERTY_NAME = /^[A-Za-z_][\w]*$/;

/**
 * A new Collection's or UserCollection's config.json as the dashboard writes it: `owner` (a
 * Collection's owner property, e.g. {@link OWNER_PROPERTY}) adds that property and the owner
 * rules; absent or '' makes a collection without an owner.
 */
export function newCollectionConfig(type: 'Collection' | 'UserCollection', owner: unknown): { type: string; properties: Record<string, PropertyDef>; rules: NewRules } {
  if (type === 'UserCollection' || owner === undefined || owner === null || owner === '') return { type, properties: {}, rules: defaultRules(type) };
  if (typeof owner !== 'string' || !PROPERTY_NAME.test(owner) || owner === 'id') {
    throw new SvcError('BAD_REQUEST', 'the owner property needs a name of letters, digits and _ (not id)', { errors: { owner: 'letters, digits and _; not id' } });
  }
  return { type, properties: { [owner]: { ...OWNER_PROPERTY_DEF } }, rules: defaultWriteRules(type, owner) };
}
