import type { StoredTexts } from '../store/Store.js';
import type { Context, PropertyDef } from '../types.js';
import type { ExpandNode } from './parseExpand.js';
import { idsOf, readQuery, tooMany } from './Relations.js';
import type { Relations } from './Relations.js';
import { plainJson } from '../query/plainJson.js';

/**
 * `$expand` written from the stored objects' kept JSON texts: each object's text with the texts of
 * the objects its relations point to spliced in place of their ids (back-relations appended),
 * without building, copying or serialising an object. The answer is byte for byte the one the
 * object path (Relations.expand, then JSON.stringify) gives. It is taken only where every
 * collection the expansion reads answers this caller its stored objects as they are (no On Get,
 * no private or rule-hidden property, no `$fields`: {@link expandsAsText}), and every related read
 * is the related collection's own read for the caller (`readTextsAs`: readAs's query, refusals and
 * access filter). Whatever cannot be spliced for sure makes {@link expandTexts} answer false, and
 * the caller takes the object path.
 */

/** Stored texts with the names their values were picked for (`values` and `spans` index by name). */
export interface TextRows extends StoredTexts {
  pick: readonly string[];
}

/** The value of row i's k-th picked property. */
function valueOf(rows: TextRows, i: number, k: number): unknown {
  return rows.values[i * rows.pick.length + k];
}

/** Whether every level of `tree` can be answered from stored texts for ctx's caller. */
export function expandsAsText(relations: Relations, ctx: Context, tree: ReadonlyMap<string, ExpandNode>): boolean {
  for (const [name, node] of tree) {
    if (node.fields !== undefined) return false;
    const def = relations.forwardFor(ctx, name);
    let target: Relations | undefined;
    if (def !== undefined) {
      target = relations.relationsAt(def.collection ?? '');
      // The object path leaves such a relation as it is; so does this one.
      if (target === undefined) continue;
    } else {
      // A name that is no relation: the object path answers the error (or nothing, on no objects).
      target = relations.backRelationOrUndefined(ctx, name)?.from;
      if (target === undefined) return false;
    }
    if (target.owner.showsTextsTo?.(ctx) !== true || !expandsAsText(target, ctx, node.children)) return false;
  }
  return true;
}

/**
 * The key of the answer made by expanding `tree` for ctx's caller, beside the list's own rows (the
 * store keeps it with them: KeptList): each level's names and options, and every collection the
 * expansion reads with what its text reads depend on for this caller (RelatedCollection.textsKey:
 * the collection's configuration, as the serial of its reads that a reload makes anew; its
 * generation, which any write changes; the caller's list filter). Undefined when one of them
 * cannot be told: nothing is kept or looked up. Taken before anything is read, so that an answer
 * kept under it was read after every generation in it.
 */
export function keptAnswerKey(relations: Relations, ctx: Context, tree: ReadonlyMap<string, ExpandNode>, listed = true): string | undefined {
  // The list's own rows are kept apart (KeptList): their collection's generation is left out.
  const own = relations.owner.textsKey?.(ctx, listed);
  if (own === undefined) return undefined;
  let key = own;
  for (const [name, node] of tree) {
    const def = relations.forwardFor(ctx, name);
    const options = [name, node.sort ?? 0, node.limit ?? 0];
    if (node.fields !== undefined || !plainJson(options, 0)) return undefined;
    let target: Relations | undefined;
    if (def !== undefined) {
      target = relations.relationsAt(def.collection ?? '');
      key += `|>${JSON.stringify(options)}`;
    } else {
      const back = relations.backRelationOrUndefined(ctx, name);
      if (back === undefined) return undefined;
      target = back.from;
      key += `|<${JSON.stringify([...options, back.property])}`;
    }
    if (target === undefined) continue;
    const below = keptAnswerKey(target, ctx, node.children, false);
    if (below === undefined) return undefined;
    key += `{${below}}`;
  }
  return key;
}

const PICK_LISTS_MAX = 256;

/**
 * The properties of each object of `relations`' collection that expanding `tree` reads: `id`, and
 * each relation's (its value, or whether the object has one of a back-relation's name). The same
 * names give the same list (the collection's `pickLists`, bounded: emptied when full): the
 * embedded store keeps, with each object, the names it was last asked to pick and what it found,
 * and tells the same list by identity at once; a new list each request made it compare the names
 * (and load another object) for every object of a list.
 */
export function keysToExpand(relations: Relations, tree: ReadonlyMap<string, ExpandNode>, ...more: string[]): readonly string[] {
  const names = ['id'];
  for (const name of tree.keys()) if (!names.includes(name)) names.push(name);
  for (const name of more) if (!names.includes(name)) names.push(name);
  const lists = relations.pickLists;
  const key = JSON.stringify(names);
  const kept = lists.get(key);
  if (kept !== undefined) return kept;
  if (lists.size >= PICK_LISTS_MAX) lists.clear();
  lists.set(key, names);
  return names;
}

/**
 * Expands `tree` in `rows` (texts replaced in place), as Relations.expand does in objects. False
 * when some text cannot be spliced for sure (the store could not tell where a value is): the
 * answer must then be made from objects. Every splice is made anew: a whole answer is kept, with its
 * list, by CollectionReads.splicedList (keptAnswerKey).
 */
export async function expandTexts(relations: Relations, ctx: Context, rows: TextRows, tree: ReadonlyMap<string, ExpandNode>): Promise<boolean> {
  if (rows.texts.length === 0) return true;
  const edits = new Edits(rows);
  for (const [name, node] of tree) {
    const def = relations.forwardFor(ctx, name);
    const done = def !== undefined ? await expandForward(relations, ctx, rows, edits, name, def, node) : await expandBack(relations, ctx, rows, edits, name, node);
    if (!done) return false;
  }
  edits.apply();
  return true;
}

async function expandForward(relations: Relations, ctx: Context, rows: TextRows, edits: Edits, name: string, def: PropertyDef, node: ExpandNode): Promise<boolean> {
  const target = relations.relationsAt(def.collection ?? '');
  if (target === undefined) return true;
  const k = rows.pick.indexOf(name);
  const count = rows.texts.length;
  // Every id the rows name, in row order, repeats included (the related read's `$in`), and each
  // row's ids as places in that list: the store tells where each listed id's object is in its
  // answer, so the join looks nothing up by id (see placeTexts).
  const listed: string[] = [];
  const many = def.many === true;
  const rowPlace: number[] = many ? [] : new Array<number>(count);
  const rowPlaces: (number[] | undefined)[] = many ? new Array<number[] | undefined>(count) : [];
  for (let i = 0; i < count; i++) {
    const value = valueOf(rows, i, k);
    if (!many) {
      rowPlace[i] = typeof value === 'string' && value !== '' ? listed.push(value) - 1 : -1;
    } else {
      const ids = typeof value === 'string' ? (value === '' ? [] : [value]) : idsOf(value);
      rowPlaces[i] = ids?.map((id) => listed.push(id) - 1);
    }
  }
  // A long list is read without its repeats (and joined by id): the limit counts distinct ids.
  let ids = listed;
  if (listed.length > relations.settings.maxExpanded) {
    ids = [...new Set(listed)];
    if (ids.length > relations.settings.maxExpanded) throw tooMany(name, relations.settings.maxExpanded);
  }
  // Joined by place, not by the read's order: only a many relation's `$sort` needs that.
  const pick = keysToExpand(target, node.children);
  // Without a `$sort`, the ids straight from the store's id index when nothing else limits the
  // read. Joined by the places the store tells (placeTexts): a last level reading the listed ids
  // themselves needs no value of the related objects.
  const now = ids.length === 0 || node.sort !== undefined ? undefined : readTextsOfIdsNow(target, ctx, ids, ids === listed && node.children.size === 0 ? NO_PICK : pick);
  const related = ids.length === 0 ? undefined : (now ?? (await readTexts(target, ctx, readQuery(node, { id: { $in: ids } }, ['id']), pick, node.sort === undefined)));
  if (ids.length > 0 && related === undefined) return false;
  if (related !== undefined && node.children.size > 0 && !(await expandTexts(target, ctx, related, node.children))) return false;
  // Where each listed id's object is in the related read (-1: absent, or hidden from the caller).
  const rowOf = related === undefined ? [] : placeTexts(related, listed);
  const textAt = (at: number): string | undefined => {
    const row = rowOf[at] as number;
    return row < 0 ? undefined : (related?.texts[row] as string);
  };
  for (let i = 0; i < count; i++) {
    const value = valueOf(rows, i, k);
    if (value === undefined || value === null) continue;
    let replacement: string;
    if (!many) {
      const at = rowPlace[i] as number;
      replacement = at < 0 ? 'null' : (textAt(at) ?? 'null');
    } else {
      let kept = (rowPlaces[i] ?? []).filter((at) => (rowOf[at] as number) >= 0);
      // The read's order is the `$sort`'s.
      if (node.sort !== undefined) kept = kept.sort((a, b) => (rowOf[a] as number) - (rowOf[b] as number));
      if (node.limit !== undefined) kept = kept.slice(0, node.limit);
      replacement = `[${kept.map((at) => textAt(at) as string).join(',')}]`;
    }
    if (!edits.replace(i, k, replacement)) return false;
  }
  return true;
}

/**
 * For each listed id, the row of its object in the related read, -1 when the read has none: what
 * the store tells (`listedRows`), or else found by id.
 */
function placeTexts(related: TextRows, listed: readonly string[]): number[] {
  if (related.listedRows !== undefined && related.listedRows.length === listed.length) return related.listedRows;
  const idAt = related.pick.indexOf('id');
  const rowOfId = new Map<unknown, number>();
  for (let j = 0; j < related.texts.length; j++) rowOfId.set(valueOf(related, j, idAt), j);
  return listed.map((id) => rowOfId.get(id) ?? -1);
}

async function expandBack(relations: Relations, ctx: Context, rows: TextRows, edits: Edits, name: string, node: ExpandNode): Promise<boolean> {
  const { from, property } = relations.backRelation(ctx, name);
  const idAt = rows.pick.indexOf('id');
  const parentIds = [...new Set(rows.texts.map((_text, i) => valueOf(rows, i, idAt)).filter((id): id is string => typeof id === 'string'))];
  const limit = relations.settings.maxExpanded;
  const related = parentIds.length === 0 ? undefined : await readTexts(from, ctx, { ...readQuery(node, { [property]: { $in: parentIds } }, ['id', property]), $limit: limit + 1 }, keysToExpand(from, node.children, property));
  if (parentIds.length > 0 && related === undefined) return false;
  if (related !== undefined && related.texts.length > limit) throw tooMany(name, limit);
  if (related !== undefined && node.children.size > 0 && !(await expandTexts(from, ctx, related, node.children))) return false;
  const byParent = new Map<string, string[]>();
  if (related !== undefined) {
    const propertyAt = related.pick.indexOf(property);
    for (let i = 0; i < related.texts.length; i++) {
      for (const id of idsOf(valueOf(related, i, propertyAt)) ?? []) {
        let list = byParent.get(id);
        if (list === undefined) byParent.set(id, (list = []));
        list.push(related.texts[i] as string);
      }
    }
  }
  const key = `${JSON.stringify(name)}:`;
  const k = rows.pick.indexOf(name);
  for (let i = 0; i < rows.texts.length; i++) {
    const id = valueOf(rows, i, idAt);
    const list = typeof id === 'string' ? (byParent.get(id) ?? []) : [];
    if (!edits.add(i, k, `${key}[${(node.limit === undefined ? list : list.slice(0, node.limit)).join(',')}]`)) return false;
  }
  return true;
}

/** Nothing picked: the related objects' texts only. */
const NO_PICK: readonly string[] = [];

function readTextsOfIdsNow(target: Relations, ctx: Context, ids: readonly string[], pick: readonly string[]): TextRows | undefined {
  const found = target.owner.readTextsOfIdsNow?.(ctx, ids, pick);
  // Without the store's places the join looks each id up: it needs the ids picked.
  if (found === undefined || (pick === NO_PICK && found.listedRows?.length !== ids.length)) return undefined;
  return { ...found, pick };
}

async function readTexts(target: Relations, ctx: Context, query: Record<string, unknown>, pick: readonly string[], anyOrder = false): Promise<TextRows | undefined> {
  const read = target.owner.readTextsAs;
  const found = read === undefined ? undefined : await read.call(target.owner, ctx, query, pick, anyOrder);
  return found === undefined ? undefined : { ...found, pick };
}

/**
 * The changes of a level's texts, applied at once (each value's place is known in the text as
 * stored): values replaced where they are, new properties appended in the order they came, as
 * assignments to the objects would put them.
 */
class Edits {
  private readonly rows: TextRows;
  /**
   * Each row's first replaced value, as start, end and text at 3 * row (undefined: none): one
   * flat list instead of a small list per row, as most expansions replace one value per object.
   */
  private readonly first: (number | string | undefined)[];
  /** Per row (made when needed): start, end and text of the values it replaces after its first, in the order they came. */
  private more: ((number | string)[] | undefined)[] | undefined;
  private added: (string[] | undefined)[] | undefined;

  constructor(rows: TextRows) {
    this.rows = rows;
    this.first = new Array<undefined>(rows.texts.length * 3);
  }

  /** Replaces the value of the k-th picked property of row i; false when the store could not tell where it is. */
  replace(i: number, k: number, text: string): boolean {
    const at = (i * this.rows.pick.length + k) * 2;
    const start = this.rows.spans[at] as number;
    if (start < 0) return false;
    const end = this.rows.spans[at + 1] as number;
    const f = i * 3;
    if (this.first[f] === undefined) {
      this.first[f] = start;
      this.first[f + 1] = end;
      this.first[f + 2] = text;
    } else {
      ((this.more ??= new Array<undefined>(this.rows.texts.length))[i] ??= []).push(start, end, text);
    }
    return true;
  }

  /** Appends a property to row i, whose name is the k-th picked one; false when the object has one of that name (or the store cannot tell). */
  add(i: number, k: number, property: string): boolean {
    if (this.rows.spans[(i * this.rows.pick.length + k) * 2] !== -1) return false;
    ((this.added ??= new Array<undefined>(this.rows.texts.length))[i] ??= []).push(property);
    return true;
  }

  apply(): void {
    const texts = this.rows.texts;
    for (let i = 0; i < texts.length; i++) {
      const f = i * 3;
      const start = this.first[f] as number | undefined;
      const added = this.added?.[i];
      if (start === undefined && added === undefined) continue;
      const replaced = start === undefined ? undefined : [start, this.first[f + 1] as number, this.first[f + 2] as string, ...(this.more?.[i] ?? [])];
      texts[i] = splice(texts[i] as string, replaced, added);
    }
  }
}

/**
 * `text` with its values replaced and properties appended, by concatenation: V8 keeps the pieces
 * as they are (a rope) until the page's texts are joined into the answer, which copies each
 * character once. Joining the pieces here copied them twice: the splice was most of `$expand`'s
 * own CPU (bench/RESULTS.md, "Issue 39, round 11").
 */
function splice(text: string, replaced: readonly (number | string)[] | undefined, added: readonly string[] | undefined): string {
  let out = '';
  let from = 0;
  if (replaced !== undefined) {
    for (const e of inTextOrder(replaced)) {
      out += text.slice(from, replaced[e] as number) + (replaced[e + 2] as string);
      from = replaced[e + 1] as number;
    }
  }
  if (added === undefined) return out + text.slice(from);
  // Before the closing brace; `{}` has no property to put a comma after.
  const rest = text.slice(from, -1);
  return `${out}${rest}${rest === '{' ? '' : ','}${added.join(',')}}`;
}

/** The offsets of the (start, end, text) triples of `edits`, by start. */
function inTextOrder(edits: readonly (number | string)[]): number[] {
  const offsets: number[] = [];
  for (let e = 0; e < edits.length; e += 3) offsets.push(e);
  return offsets.length === 1 ? offsets : offsets.sort((a, b) => (edits[a] as number) - (edits[b] as number));
}
