// The mutants of tools/read-mutants.mjs: each weakens one predicate that lets a shortcut of the
// read side answer, so that the shortcut answers where it must not. `from` must occur exactly once
// in `file`.
const C = 'packages/core/src/resources/Collection.ts';
const S = 'packages/core/src/server.ts';
const E = 'packages/core/src/relations/expandTexts.ts';
const A = 'packages/core/src/access/CollectionAccess.ts';
const N = 'packages/core/src/resources/nowAnswers.ts';

const ANSWER_NOW = 'if (fastPaths && anonymous !== undefined && search === \'\' && match.resource.answerNow !== undefined && (req.method === \'GET\' || req.method === \'HEAD\') && !hasBody(req) && rootHeader(req) === undefined) {';

export const MUTANTS = [
  // server.ts: which requests are offered to answerNow.
  { id: 'srv-anonymous', file: S, from: ANSWER_NOW, to: ANSWER_NOW.replace('anonymous !== undefined', 'true'), what: 'answer at once: a logged-in session too' },
  { id: 'srv-search', file: S, from: ANSWER_NOW, to: ANSWER_NOW.replace("search === ''", 'true'), what: 'answer at once: with a query string' },
  { id: 'srv-method', file: S, from: ANSWER_NOW, to: ANSWER_NOW.replace("(req.method === 'GET' || req.method === 'HEAD')", 'true'), what: 'answer at once: any method' },
  { id: 'srv-body', file: S, from: ANSWER_NOW, to: ANSWER_NOW.replace('!hasBody(req)', 'true'), what: 'answer at once: with a body' },
  { id: 'srv-root', file: S, from: ANSWER_NOW, to: ANSWER_NOW.replace('rootHeader(req) === undefined', 'true'), what: 'answer at once: with a root key' },
  // Collection.answerNow (path A) and answerScriptedNow (B, C).
  { id: 'now-parts', file: C, from: 'if (!this.fastPaths || parts.length !== 1 ||', to: 'if (!this.fastPaths ||', what: 'answerNow: a longer path' },
  { id: 'now-private', file: C, from: ' || this.privateProps.size !== 0 || !this.access.showsStored(\'read\')) return undefined;', to: " || !this.access.showsStored('read')) return undefined;", what: 'answerNow: a collection with private properties' },
  { id: 'now-propertyRules', file: C, from: ' || this.privateProps.size !== 0 || !this.access.showsStored(\'read\')) return undefined;', to: ' || this.privateProps.size !== 0) return undefined;', what: 'answerNow: a collection with property read rules' },
  { id: 'now-emptyId', file: C, from: "if (id === '' || id === 'count' || id === 'aggregate' ||", to: "if (id === 'count' || id === 'aggregate' ||", what: "answerNow: id '' (no path segment is empty: changes no answer)" },
  { id: 'now-count', file: C, from: "if (id === '' || id === 'count' || id === 'aggregate' ||", to: "if (id === '' || id === 'aggregate' ||", what: 'answerNow: /count' },
  { id: 'now-aggregate', file: C, from: "if (id === '' || id === 'count' || id === 'aggregate' ||", to: "if (id === '' || id === 'count' ||", what: 'answerNow: /aggregate' },
  { id: 'now-beforerequest', file: C, from: " || this.events.has('beforerequest') || !this.storedIsShown()) return undefined;", to: ' || !this.storedIsShown()) return undefined;', what: 'answerNow: On BeforeRequest' },
  { id: 'now-storedIsShown', file: C, from: " || this.events.has('beforerequest') || !this.storedIsShown()) return undefined;", to: " || this.events.has('beforerequest')) return undefined;", what: 'answerNow: a UserCollection (password hash)' },
  { id: 'now-readRule', file: C, from: 'return text !== undefined && this.access.anonymousAllowsText(id, text) ? text : undefined;', to: 'return text !== undefined ? text : undefined;', what: 'answerNow: the read rule' },
  { id: 'nowget-readRule', file: C, from: 'if (text === undefined || !this.access.anonymousAllowsText(id, text)) return undefined;', to: 'if (text === undefined) return undefined;', what: 'answerScriptedNow: the read rule' },
  { id: 'nowget-keptText', file: N, from: 'return kept !== undefined && kept.stored === stored ? kept.answer : undefined;', to: 'return kept !== undefined ? kept.answer : undefined;', what: 'kept On Get answers: the stored text they were made from' },
  { id: 'nowget-constant', file: 'apps/server/src/scripts.ts', from: 'getScript.constant ? getScript : undefined;', to: 'getScript.planned ? getScript : undefined;', what: 'getNow: a plan that reads the request (not constant)' },
  // handleGet D (by id, stored text) and E (by id, On Get patching the text).
  { id: 'D-query', file: C, from: "this.store.findOneJson && !hasKeys(ctx.query) && !this.events.has('get')", to: "this.store.findOneJson && !this.events.has('get')", what: 'D: a query' },
  { id: 'D-onGet', file: C, from: "this.store.findOneJson && !hasKeys(ctx.query) && !this.events.has('get')", to: 'this.store.findOneJson && !hasKeys(ctx.query)', what: 'D: On Get' },
  { id: 'D-readRule', file: C, from: "if (text === null || !this.access.allowsText(ctx, text)) throw new SvcError('NOT_FOUND', 'not found');", to: "if (text === null) throw new SvcError('NOT_FOUND', 'not found');", what: 'D: the read rule' },
  { id: 'E-query', file: C, from: "this.store.findOneWithJsonNow && !hasKeys(ctx.query) && this.events.has('get')", to: "this.store.findOneWithJsonNow && this.events.has('get')", what: 'E: a query' },
  { id: 'E-readRule', file: C, from: 'if (found === null || (found !== undefined && !this.access.allowsText(ctx, found.text)))', to: 'if (found === null)', what: 'E: the read rule' },
  // What every stored-text answer requires of the caller and the collection (D, E, G-K).
  { id: 'stored-internal', file: C, from: 'return this.fastPaths && !ctx.internal && this.storedIsShown()', to: 'return this.fastPaths && this.storedIsShown()', what: 'stored texts: to internal requests' },
  { id: 'stored-storedIsShown', file: C, from: 'return this.fastPaths && !ctx.internal && this.storedIsShown()', to: 'return this.fastPaths && !ctx.internal', what: 'stored texts: of a UserCollection' },
  { id: 'stored-private', file: C, from: ' && this.seesPrivate(ctx) && (this.access.bypasses(ctx) || this.access.showsStored(action));', to: ' && (this.access.bypasses(ctx) || this.access.showsStored(action));', what: 'stored texts: with private properties, to a caller who may not see them' },
  { id: 'stored-propertyRules', file: C, from: ' && this.seesPrivate(ctx) && (this.access.bypasses(ctx) || this.access.showsStored(action));', to: ' && this.seesPrivate(ctx);', what: 'stored texts: with property read rules' },
  { id: 'stored-expanding', file: C, from: 'return this.showsStoredTo(ctx, action) && !this.expanding.has(ctx);', to: 'return this.showsStoredTo(ctx, action);', what: 'stored texts: a list or object to be expanded' },
  // G, H: $expand spliced into the texts.
  { id: 'G-onGet', file: C, from: 'if (expanding !== undefined && !scripted && this.store.findTexts', to: 'if (expanding !== undefined && this.store.findTexts', what: 'G/H: On Get' },
  { id: 'G-fields', file: C, from: "this.showsStoredTo(ctx, 'list') && compiled.options.fields === undefined && expandsAsText(", to: "this.showsStoredTo(ctx, 'list') && expandsAsText(", what: 'G/H: $fields' },
  { id: 'G-expandsAsText', file: C, from: "this.showsStoredTo(ctx, 'list') && compiled.options.fields === undefined && expandsAsText(this.relations, ctx, expanding.tree)) {", to: "this.showsStoredTo(ctx, 'list') && compiled.options.fields === undefined) {", what: 'G/H: related collections that do not show their texts' },
  { id: 'G-relatedFields', file: E, from: '    if (node.fields !== undefined) return false;\n', to: '', what: 'expandsAsText: $fields of a relation' },
  { id: 'G-relatedShows', file: E, from: 'if (target.owner.showsTextsTo?.(ctx) !== true || !expandsAsText(target, ctx, node.children)) return false;', to: 'if (!expandsAsText(target, ctx, node.children)) return false;', what: 'expandsAsText: a related collection with On Get, private or rule-hidden properties' },
  { id: 'G-knownNested', file: E, from: 'if (node.children.size > 0 || node.sort !== undefined || node.fields !== undefined) return undefined;', to: 'if (node.sort !== undefined || node.fields !== undefined) return undefined;', what: 'knownShape: a nested $expand' },
  { id: 'G-knownSort', file: E, from: 'if (node.children.size > 0 || node.sort !== undefined || node.fields !== undefined) return undefined;', to: 'if (node.children.size > 0 || node.fields !== undefined) return undefined;', what: 'knownShape: a $sort of the relation (one object: changes no answer)' },
  { id: 'G-knownMany', file: E, from: 'if (def === undefined || def.many === true) return undefined;', to: 'if (def === undefined) return undefined;', what: 'knownShape: a many relation' },
  { id: 'G-keptRelation', file: E, from: 'if (splice === undefined || splice.relation !== shape.name) return false;', to: 'if (splice === undefined) return false;', what: 'expandKnown: a splice kept for another relation' },
  { id: 'G-keptRelated', file: E, from: "if ((row < 0 ? 'null' : (related?.texts[row] as string)) !== splice.replacement) return false;", to: '', what: 'expandKnown: the related text changed since it was spliced' },
  { id: 'G-idsNowPlan', file: C, from: 'return plan === undefined && this.refusals(ctx, plan) === NOTHING_REFUSED && !hasKeys(this.access.filter(ctx, \'list\'));', to: 'return true;', what: 'related read by ids at once: with a read plan, refusals or an access filter' },
  { id: 'G-textsFields', file: C, from: '    if (options.fields !== undefined) return undefined;\n', to: '', what: 'readTextsAs: $fields' },
  { id: 'G-textsOnGet', file: C, from: "return this.store.findTexts !== undefined && !this.events.has('get') && this.showsStoredTo(ctx, 'list');", to: "return this.store.findTexts !== undefined && this.showsStoredTo(ctx, 'list');", what: 'showsTextsTo: On Get' },
  // I: list of stored texts; J: On Get naming its properties; K: On Get patching texts.
  { id: 'I-onGet', file: C, from: "if (!scripted && this.store.findJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {", to: "if (this.store.findJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {", what: 'I: On Get' },
  { id: 'I-fields', file: C, from: "if (!scripted && this.store.findJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {", to: "if (!scripted && this.store.findJson && this.answersStoredJson(ctx, 'list')) {", what: 'I: $fields' },
  { id: 'J-fields', file: C, from: 'this.events.runGetChanges && compiled.options.fields === undefined ? this.events.getReads?.() : undefined;', to: 'this.events.runGetChanges ? this.events.getReads?.() : undefined;', what: 'J: $fields' },
  { id: 'J-proto', file: C, from: "if (reads !== undefined && !reads.includes('__proto__') && this.answersStoredJson(ctx, 'list')) {", to: "if (reads !== undefined && this.answersStoredJson(ctx, 'list')) {", what: 'J: a script naming this.__proto__ (no test app script does: not covered)' },
  { id: 'K-fields', file: C, from: "if (scripted && this.store.findWithJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {", to: "if (scripted && this.store.findWithJson && this.answersStoredJson(ctx, 'list')) {", what: 'K: $fields' },
  // The read rule's own evaluation on the synchronous path.
  { id: 'rule-anonymousOpen', file: A, from: "    if (this.rules.isOpen('read')) return true;\n    // The query a GET by id has", to: '    return true;\n    // The query a GET by id has', what: 'anonymousAllowsText: always allows' },
];
