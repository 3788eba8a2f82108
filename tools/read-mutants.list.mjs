// The mutants of tools/read-mutants.mjs: each weakens one predicate that lets a shortcut of the
// read side answer (or that decides what the shortcut's answer holds), so that the shortcut
// answers where it must not. `from` must occur exactly once in `file`. `equivalent`: a mutant that
// changes no answer (its `what` says why, naming the second check that makes it unobservable); the
// tool checks that it applies but runs it only with --all or --only.
const S = 'packages/core/src/server.ts';
const P = 'packages/core/src/resources/read/answerPlan.ts';
const R = 'packages/core/src/resources/read/CollectionReads.ts';
const V = 'packages/core/src/access/Visibility.ts';
const E = 'packages/core/src/relations/expandTexts.ts';

const PLAIN = "anonymous !== undefined && search === '' && (req.method === 'GET' || req.method === 'HEAD') && !hasBody(req) && rootHeader(req) === undefined && req.headers['if-none-match'] === undefined;";
const BY_ID = "facts.byId = parts.length === 1 && id !== undefined && id !== '' && id !== 'count' && id !== 'aggregate';";
const AS_STORED = "this.asStored = visibility.storedIsShown && this.seesPrivate && (this.trusted || access.showsStored('read'));";
const ANON = "return this.privateProps.size === 0 && this.storeOnly.size === 0 && this.access.showsStored('read');";
const TEXTS_TO = "return this.fastPaths && !ctx.internal && this.store.findTexts !== undefined && !this.events.has('get') && this.scopeOf(ctx).asStored;";
const IDS_NOW = 'if (scope.plan !== undefined || scope.refusals.unqueryable !== undefined) return undefined;';
const IDS_FILTER = 'if (filter.keys.length === 0) return this.store.findTextsOfIdsNow?.(ids, pick);';
const IDS_KEYS = 'return keys === undefined ? undefined : { filter, keys };';
const ON_GET = "return { constant: events.getNow !== undefined, columns: reads !== undefined && !reads.includes('__proto__') };";

/** A mutant that replaces `part` of `whole` (which must be in `file` once) by `by`. */
const weaken = (id, file, whole, part, by, what) => ({ id, file, from: whole, to: whole.replace(part, by), what });

export const MUTANTS = [
  // The facts the server tells answerNow (server.ts).
  weaken('srv-anonymous', S, PLAIN, 'anonymous !== undefined', 'true', 'at once: a logged-in session too'),
  weaken('srv-search', S, PLAIN, "search === ''", 'true', 'at once: with a query string'),
  weaken('srv-method', S, PLAIN, "(req.method === 'GET' || req.method === 'HEAD')", 'true', 'at once: any method'),
  weaken('srv-body', S, PLAIN, '!hasBody(req)', 'true', 'at once: with a body'),
  { ...weaken('srv-root', S, PLAIN, 'rootHeader(req) === undefined', 'true', 'at once: with a root key (root reads an object a visitor reads as stored as that same text: changes no answer; the table sends it)'), equivalent: true },
  weaken('srv-ifNoneMatch', S, PLAIN, "req.headers['if-none-match'] === undefined", 'true', 'at once: with If-None-Match (a 304 due answered 200)'),
  // The request facts of the synchronous path (CollectionReads.answerNow).
  weaken('now-parts', R, BY_ID, 'parts.length === 1 && ', '', 'at once: a longer path'),
  { ...weaken('now-emptyId', R, BY_ID, " && id !== ''", '', "at once: id '' (no path segment is empty: changes no answer)"), equivalent: true },
  { ...weaken('now-count', R, BY_ID, " && id !== 'count'", '', 'at once: /count (no object has that id: changes no answer)'), equivalent: true },
  { ...weaken('now-aggregate', R, BY_ID, " && id !== 'aggregate'", '', 'at once: /aggregate (no object has that id: changes no answer)'), equivalent: true },
  { id: 'now-readRule', file: R, from: 'if (text === undefined || !this.access.allowsText(anonymousCaller({ id }), text)) return undefined;', to: 'if (text === undefined) return undefined;', what: 'at once: the read rule' },
  // planAnswer, the one function that chooses.
  { id: 'plan-fastPaths', file: P, from: 'if (!f.fastPaths || f.internal || !f.asStored)', to: 'if (f.internal || !f.asStored)', what: 'planAnswer: fastPaths false' },
  { id: 'plan-internal', file: P, from: 'if (!f.fastPaths || f.internal || !f.asStored)', to: 'if (!f.fastPaths || !f.asStored)', what: 'planAnswer: a script\'s request' },
  { id: 'plan-asStored', file: P, from: 'if (!f.fastPaths || f.internal || !f.asStored)', to: 'if (!f.fastPaths || f.internal)', what: 'planAnswer: a caller not shown the stored objects as they are (the net answers 500)' },
  { id: 'plan-now-plain', file: P, from: 'if (!f.plainAnonymous || !f.byId || f.beforeRequest', to: 'if (!f.byId || f.beforeRequest', what: 'planNow: not an anonymous plain GET' },
  { id: 'plan-now-byId', file: P, from: 'if (!f.plainAnonymous || !f.byId || f.beforeRequest', to: 'if (!f.plainAnonymous || f.beforeRequest', what: 'planNow: not one object' },
  { id: 'plan-now-beforeRequest', file: P, from: 'if (!f.plainAnonymous || !f.byId || f.beforeRequest', to: 'if (!f.plainAnonymous || !f.byId', what: 'planNow: On BeforeRequest' },
  { id: 'plan-now-constant', file: P, from: "return f.onGet.constant && f.store.findOneWithJsonNow ? 'constantPlan' : 'objects';", to: "return f.store.findOneWithJsonNow ? 'constantPlan' : 'objects';", what: 'planNow: an On Get that is not constant (onGet.constant is `events.getNow !== undefined`, and CollectionReads.constantNow answers undefined, so handle() does, when the runner has no getNow: collectionEvents.ts sets it for constant scripts only)', equivalent: true },
  { id: 'plan-id-query', file: P, from: "if (f.query || f.expand) return 'objects';", to: "if (f.expand) return 'objects';", what: 'by id: a query' },
  { id: 'plan-id-expand', file: P, from: "if (f.query || f.expand) return 'objects';", to: "if (f.query) return 'objects';", what: 'by id: $expand (Relations.finish parses a text answer before it expands it, so the stored or patched text expanded is the object path\'s answer; only slower)', equivalent: true },
  { id: 'plan-id-onGet', file: P, from: "if (f.onGet === undefined) return f.store.findOneJson ? 'storedText' : 'objects';", to: "return f.store.findOneJson ? 'storedText' : 'objects';", what: 'by id: On Get (the stored text unpatched)' },
  { id: 'plan-list-fields', file: P, from: "  if (f.fields) return 'objects';\n", to: '', what: 'list: $fields' },
  { id: 'plan-list-expand-onGet', file: P, from: "return f.onGet === undefined && f.store.findTexts && f.expandsAsText() ? 'splicedTexts' : 'objects';", to: "return f.store.findTexts && f.expandsAsText() ? 'splicedTexts' : 'objects';", what: 'list: $expand with On Get' },
  { id: 'plan-list-expandsAsText', file: P, from: "return f.onGet === undefined && f.store.findTexts && f.expandsAsText() ? 'splicedTexts' : 'objects';", to: "return f.onGet === undefined && f.store.findTexts ? 'splicedTexts' : 'objects';", what: 'list: $expand of collections that do not show their texts' },
  { id: 'plan-list-onGet', file: P, from: "if (f.onGet === undefined) return f.store.findJson ? 'storedTexts' : 'objects';", to: "return f.store.findJson ? 'storedTexts' : 'objects';", what: 'list: On Get (the stored texts unpatched)' },
  { id: 'plan-list-columns', file: P, from: "if (f.onGet.columns && f.store.findTexts) return 'columns';", to: "if (f.store.findTexts) return 'columns';", what: 'list: columns for an On Get that does not name what it reads' },
  // The facts of a GET (CollectionReads).
  weaken('facts-skipped', R, 'if (skipped || !events.has(\'get\')) return undefined;', 'skipped || ', '', 'On Get skipped by root\'s $skipEvents, patched all the same'),
  { ...weaken('facts-proto', R, ON_GET, " && !reads.includes('__proto__')", '', 'columns: a script naming this.__proto__ (the analyzer gives such a script no reads: unreachable)'), equivalent: true },
  { ...weaken('facts-constant', R, ON_GET, 'events.getNow !== undefined', 'true', 'constant: a runner without getNow (CollectionReads.constantNow answers undefined, so handle() does, when the runner has no getNow; as plan-now-constant)'), equivalent: true },
  { id: 'facts-expand', file: R, from: '      expand: expanding !== undefined,', to: '      expand: false,', what: 'facts: $expand' },
  // Visibility: whether stored texts may answer a caller.
  weaken('vis-storeOnly', V, AS_STORED, 'visibility.storedIsShown && ', '', 'asStored: store-only fields (a password hash)'),
  weaken('vis-private', V, AS_STORED, 'this.seesPrivate && ', '', 'asStored: private properties the caller may not see'),
  weaken('vis-propertyRules', V, AS_STORED, " && (this.trusted || access.showsStored('read'))", '', 'asStored: property read rules'),
  weaken('anon-private', V, ANON, 'this.privateProps.size === 0 && ', '', 'anonymousAsStored: private properties'),
  weaken('anon-storeOnly', V, ANON, ' && this.storeOnly.size === 0', '', 'anonymousAsStored: store-only fields'),
  weaken('anon-propertyRules', V, ANON, " && this.access.showsStored('read')", '', 'anonymousAsStored: property read rules'),
  // Answers of one object as text: the read rule tested on the text.
  { id: 'D-readRule', file: R, from: "if (text === null || !scope.allowsText(text)) throw new SvcError('NOT_FOUND', 'not found');", to: "if (text === null) throw new SvcError('NOT_FOUND', 'not found');", what: 'storedText: the read rule' },
  { id: 'E-readRule', file: R, from: 'if (found === null || (found !== undefined && !scope.allowsText(found.text)))', to: 'if (found === null)', what: 'scriptedText: the read rule' },
  // Kept answers, and `$expand` spliced from the texts.
  { id: 'runner-constant', file: 'apps/server/src/collectionEvents.ts', from: 'if (getScript?.constant === true) runner.getNow', to: 'if (getScript?.planned === true) runner.getNow', what: 'getNow: a plan that reads the request (not constant)' },
  { id: 'splice-relatedFields', file: E, from: '    if (node.fields !== undefined) return false;\n', to: '', what: 'expandsAsText: $fields of a relation' },
  { id: 'splice-relatedShows', file: E, from: 'if (target.owner.showsTextsTo?.(ctx) !== true || !expandsAsText(target, ctx, node.children)) return false;', to: 'if (!expandsAsText(target, ctx, node.children)) return false;', what: 'expandsAsText: a related collection with On Get, private or rule-hidden properties (each related read of a splice asks showsTextsTo itself: readTextsAs, and readTextsOfIdsNow through idsNowFilter, answer undefined and expandTexts gives way to objects; with no id to read, nothing of the target is in the answer; texts-* weaken showsTextsTo itself; expandTexts.http.test.ts sees the text read it wastes)', equivalent: true },
  // idsNowFilter asks showsTextsTo first: scope.asStored, which is storedIsShown && seesPrivate && (trusted || no property read rule).
  { ...weaken('splice-idsNow-plan', R, IDS_NOW, 'scope.plan !== undefined || ', '', 'related read by ids at once: with a property read plan (asStored implies none: CollectionAccess.readPlan is undefined for a trusted caller and without property read rules)'), equivalent: true },
  { ...weaken('splice-idsNow-refusals', R, IDS_NOW, ' || scope.refusals.unqueryable !== undefined', '', 'related read by ids at once: with refusals (asStored implies none: no store-only field, private properties seen and no read plan make refusalsOf answer NOTHING_REFUSED)'), equivalent: true },
  { id: 'splice-idsNow-filter', file: R, from: IDS_FILTER, to: 'return this.store.findTextsOfIdsNow?.(ids, pick);', what: 'related read by ids at once: the list rule\'s filter not applied' },
  { ...weaken('splice-idsNow-keys', R, IDS_KEYS, 'keys === undefined ? undefined', 'keys === undefined ? { filter, keys: [] }', 'related read by ids at once: a list rule that tests more than properties, unapplied (none exists: parseRule refuses any top-level $ key but $or/$and/$nor, and compileRule, andFilters and matchesNothing make only property keys, $or, $nor and $and, all of which filterKeys takes)'), equivalent: true },
  { id: 'splice-textsFields', file: R, from: '    if (options.fields !== undefined) return undefined;\n', to: '', what: 'readTextsAs: $fields (only expandTexts asks readTextsAs, with readQuery\'s $fields, made from a node\'s $fields alone, and expandsAsText refuses a $fields at every level)', equivalent: true },
  { ...weaken('texts-fastPaths', R, TEXTS_TO, 'this.fastPaths && ', '', 'showsTextsTo: fastPaths false (only a list under the splicedTexts plan asks it, which planAnswer chooses with fastPaths on, and every collection of a server takes fastPaths from its one host: server.ts, Collection.init)'), equivalent: true },
  { ...weaken('texts-internal', R, TEXTS_TO, ' && !ctx.internal', '', 'showsTextsTo: a script\'s request (only a list under the splicedTexts plan asks it, with that request\'s own ctx, and planAnswer gives a script\'s request objects)'), equivalent: true },
  weaken('texts-onGet', R, TEXTS_TO, " && !this.events.has('get')", '', 'showsTextsTo: On Get'),
  weaken('texts-asStored', R, TEXTS_TO, ' && this.scopeOf(ctx).asStored', '', 'showsTextsTo: a caller not shown the stored objects as they are'),
];
