/**
 * The ways a GET on a Collection is answered, and the one function that chooses among them
 * ({@link planAnswer}). Every shortcut of the read side is one of these plans; none is chosen
 * anywhere else. The plan that answered is told to the access log (`plan=`) and to /metrics
 * (`svc_answer_plans_total`): a label with a fixed set of values.
 */

/**
 * How a GET was answered. `objects` is the plain path; every other plan is a shortcut that must
 * answer the same bytes (apps/server/test/fast-paths-differential.test.ts) and that `fastPaths:
 * false` turns off.
 */
export type AnswerPlan =
  /** The plain path: objects read, On Get run (in a script process or as its static plan), shown to the caller. */
  | 'objects'
  /** One object's stored JSON text as it is (by id; at once for an anonymous visitor). */
  | 'storedText'
  /** By id, at once: the stored text patched with the changes of an On Get that does the same whatever the request. */
  | 'constantPlan'
  /** By id: the stored text patched with On Get's changes. */
  | 'scriptedText'
  /** A list with `$expand`, the related objects' texts spliced into the stored texts (or the answer kept with the list: CollectionReads.splicedList). */
  | 'splicedTexts'
  /** A list of stored texts, joined. */
  | 'storedTexts'
  /** A list whose On Get names the properties it reads: their values cross, the changes are spliced into the texts. */
  | 'columns'
  /** A list whose On Get's changes are patched into the stored texts. */
  | 'patchedTexts';

/** Every plan, in the order of the docs (the label values of /metrics). */
export const ANSWER_PLANS: readonly AnswerPlan[] = ['objects', 'storedText', 'constantPlan', 'scriptedText', 'splicedTexts', 'storedTexts', 'columns', 'patchedTexts'];

/** The plans whose answer is a stored text (as it is, patched or spliced): only a caller shown stored objects as they are gets one. */
export const TEXT_PLANS: ReadonlySet<AnswerPlan> = new Set(ANSWER_PLANS.filter((plan) => plan !== 'objects'));

/** What the store can read as text or at once (its optional reads). */
export interface TextReads {
  readonly findOneJsonNow: boolean;
  readonly findOneWithJsonNow: boolean;
  readonly findOneJson: boolean;
  readonly findJson: boolean;
  readonly findTexts: boolean;
  readonly findWithJson: boolean;
}

/** A collection's On Get, as far as plans go; undefined when it has none (or root skips it). */
export interface OnGetFacts {
  /** Does the same whatever the request (a constant static plan): may run at once, without a request. */
  readonly constant: boolean;
  /** The properties of `this` it names, when it names all it uses and the runner takes them as columns. */
  readonly columns: boolean;
}

/** Everything a GET's plan depends on. */
export interface PlanFacts {
  /** The server's shortcuts are on (`fastPaths`). */
  readonly fastPaths: boolean;
  /**
   * Asked by the server's synchronous path, before any session, body or Context exists: only an
   * anonymous visitor's plain GET by id may be answered there.
   */
  readonly now: boolean;
  /** For `now`: the request is a GET or HEAD, without query string, body or root key, from a returning anonymous visitor. */
  readonly plainAnonymous: boolean;
  /** The path names one object; else a list. */
  readonly byId: boolean;
  /** The query names anything (by id: anything at all; a list: anything is compiled). */
  readonly query: boolean;
  /** `$fields` asked for. */
  readonly fields: boolean;
  /** `$expand` asked for. */
  readonly expand: boolean;
  /** A script's own request: scripts get data, never text. */
  readonly internal: boolean;
  /** The caller is shown the stored objects exactly as they are (ReadScope.asStored; `now`: Visibility.anonymousAsStored). */
  readonly asStored: boolean;
  /** On BeforeRequest runs before the GET (it needs a request). */
  readonly beforeRequest: boolean;
  readonly onGet: OnGetFacts | undefined;
  readonly store: TextReads;
  /** Whether every level of the `$expand` may be spliced from texts for this caller (asked only when it decides). */
  expandsAsText(): boolean;
}

/**
 * The plan of a GET: the one place that decides which way it is answered. The plan chosen may
 * still give way when it runs: a store busy writing, a run that needs the request or a text that
 * cannot be spliced for sure falls to `objects`. Whatever answers is told (Reply.plan).
 */
export function planAnswer(f: PlanFacts): AnswerPlan {
  // A stored text answers only a caller who sees the objects as stored, over HTTP, with shortcuts on.
  if (!f.fastPaths || f.internal || !f.asStored) return 'objects';
  if (f.now) return planNow(f);
  if (f.byId) {
    if (f.query || f.expand) return 'objects';
    if (f.onGet === undefined) return f.store.findOneJson ? 'storedText' : 'objects';
    return f.store.findOneWithJsonNow ? 'scriptedText' : 'objects';
  }
  if (f.fields) return 'objects';
  if (f.expand) return f.onGet === undefined && f.store.findTexts && f.expandsAsText() ? 'splicedTexts' : 'objects';
  if (f.onGet === undefined) return f.store.findJson ? 'storedTexts' : 'objects';
  if (f.onGet.columns && f.store.findTexts) return 'columns';
  return f.store.findWithJson ? 'patchedTexts' : 'objects';
}

/** The server's synchronous path: by id, an anonymous visitor's plain GET, nothing on the way that needs the request. */
function planNow(f: PlanFacts): AnswerPlan {
  if (!f.plainAnonymous || !f.byId || f.beforeRequest || !f.store.findOneJsonNow) return 'objects';
  if (f.onGet === undefined) return 'storedText';
  return f.onGet.constant && f.store.findOneWithJsonNow ? 'constantPlan' : 'objects';
}
