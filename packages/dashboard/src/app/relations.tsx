import { useEffect, useRef, useState } from 'preact/hooks';
import { call, collectionUrl } from './api.ts';
import type { ResourceView } from './api.ts';

/** A relation column: the collection its ids point into (a name, no slash) and whether it holds many. */
export interface RelationTarget {
  collection: string;
  many: boolean;
}

/** An object of the related collection, as the picker and the links show it. */
interface Related {
  id: string;
  label: string;
}

/** Per related collection, id -> what to show for it. */
export type RelationLabels = Record<string, Record<string, string>>;

/** Names an object is known by, in order of preference, before any other text property. */
const LABEL_NAMES = ['name', 'title', 'username', 'label', 'email'];

/** The relation of a property definition, undefined for any other type. */
export function relationOf(def: { type: string; collection?: unknown; many?: unknown }): RelationTarget | undefined {
  if (def.type !== 'relation' || typeof def.collection !== 'string') return undefined;
  return { collection: def.collection.replace(/^\/+/, ''), many: def.many === true };
}

/**
 * The dashboard's address of a related object: the related collection's data, filtered to that id
 * (`$in`: a query naming one id answers the object, not a list).
 */
export function relatedHref(collection: string, id: string): string {
  return `#/r/${collection}/data?${encodeURIComponent(JSON.stringify({ id: { $in: [id] } }))}`;
}

/** The ids a relation value holds (one id, or an array of them). */
export function idsIn(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function labelOf(object: Record<string, unknown>): string {
  for (const name of LABEL_NAMES) if (typeof object[name] === 'string' && object[name] !== '') return object[name];
  for (const [name, value] of Object.entries(object)) if (name !== 'id' && typeof value === 'string' && value !== '') return value;
  return String(object.id);
}

/**
 * What to show for the related objects of the shown rows: one GET per related collection (the
 * ids of the page, as root, through the app's REST API), again whenever the rows change.
 */
export function useRelationLabels(targets: readonly RelationTarget[], columns: readonly string[], rows: readonly Record<string, unknown>[]): RelationLabels {
  const [labels, setLabels] = useState<RelationLabels>({});
  const wanted: Record<string, Set<string>> = {};
  targets.forEach((target, i) => {
    const ids = (wanted[target.collection] ??= new Set());
    for (const row of rows) for (const id of idsIn(row[columns[i] as string])) ids.add(id);
  });
  const key = JSON.stringify(Object.entries(wanted).map(([c, ids]) => [c, [...ids].sort()]));
  useEffect(() => {
    let current = true;
    void (async () => {
      const out: RelationLabels = {};
      for (const [collection, ids] of JSON.parse(key) as [string, string[]][]) {
        out[collection] = {};
        if (ids.length === 0) continue;
        try {
          const found = await call<Record<string, unknown>[]>('GET', collectionUrl(collection, { id: { $in: ids }, $limit: ids.length }));
          for (const object of found) (out[collection] as Record<string, string>)[String(object.id)] = labelOf(object);
        } catch {
          // No labels for this collection (removed meanwhile, an On Get refusing): the ids show.
        }
      }
      if (current) setLabels(out);
    })();
    return () => {
      current = false;
    };
  }, [key]);
  return labels;
}

/** A relation cell: each related object as a link to it, by its label (its id when unknown). */
export function RelationLinks({ target, value, labels }: { target: RelationTarget; value: unknown; labels: RelationLabels }) {
  const ids = idsIn(value);
  if (ids.length === 0) return <span class="cell-text muted">{value === undefined || value === null ? '' : JSON.stringify(value)}</span>;
  const known = labels[target.collection] ?? {};
  return (
    <span class="cell-text relation-links">
      {ids.map((id, i) => (
        <span key={`${id}-${i}`}>
          {i > 0 && ', '}
          <a href={relatedHref(target.collection, id)} title={`${target.collection} ${id}`} data-test="relation-link" class={known[id] === undefined ? 'missing' : ''} onDblClick={(e) => e.stopPropagation()}>
            {known[id] ?? id}
          </a>
        </span>
      ))}
    </span>
  );
}

/** The text properties of a collection the picker searches (a user's username too). */
function searchedProperties(resource: ResourceView | undefined): string[] {
  if (resource === undefined) return [];
  const names = Object.entries(resource.config.properties ?? {})
    .filter(([, def]) => def.type === 'string')
    .map(([name]) => name);
  return resource.type === 'UserCollection' && !names.includes('username') ? ['username', ...names] : names;
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Editing a relation: the objects it points to (a many relation's can be taken out one by one),
 * and a search of the related collection (its text properties, or an exact id) to pick from.
 * Picking saves at once: the id, or the array with it added.
 */
export function RelationPicker({ target, related, value, error, labels, cancel, save }: { target: RelationTarget; related: ResourceView | undefined; value: unknown; error: string | undefined; labels: RelationLabels; cancel(): void; save(v: unknown): void }) {
  const [text, setText] = useState('');
  const [found, setFound] = useState<Related[]>([]);
  const [problem, setProblem] = useState<string | undefined>();
  const seq = useRef(0);
  const current = idsIn(value);
  const known = labels[target.collection] ?? {};

  useEffect(() => {
    const mine = ++seq.current;
    const timer = setTimeout(() => {
      const typed = text.trim();
      const or: Record<string, unknown>[] = searchedProperties(related).map((name) => ({ [name]: { $regex: escapeRegex(typed), $options: 'i' } }));
      if (typed !== '') or.push({ id: typed });
      const query: Record<string, unknown> = { $limit: 10, ...(typed === '' || or.length === 0 ? {} : { $or: or }) };
      call<Record<string, unknown>[]>('GET', collectionUrl(target.collection, query))
        .then((objects) => {
          if (mine !== seq.current) return;
          setFound(objects.map((o) => ({ id: String(o.id), label: labelOf(o) })));
          setProblem(undefined);
        })
        .catch((err: unknown) => mine === seq.current && setProblem((err as Error).message));
    }, 150);
    return () => clearTimeout(timer);
  }, [text, target.collection, related]);

  const pick = (id: string) => save(target.many ? (current.includes(id) ? current : [...current, id]) : id);
  return (
    <td class={`cell editing relation-picker ${error || problem ? 'has-error' : ''}`} data-test="relation-picker">
      {target.many ? (
        <div class="chips">
          {current.map((id, i) => (
            <span class="chip" key={`${id}-${i}`}>
              {known[id] ?? id}
              <button class="icon-btn" aria-label={`remove ${known[id] ?? id}`} onClick={() => save(current.filter((_c, j) => j !== i))}>✕</button>
            </span>
          ))}
        </div>
      ) : (
        current.length > 0 && (
          <div class="chips">
            <span class="chip">
              {known[current[0] as string] ?? current[0]}
              <button class="icon-btn" aria-label="clear" onClick={() => save(null)}>✕</button>
            </span>
          </div>
        )
      )}
      <input
        autoFocus
        placeholder={`search ${target.collection}`}
        value={text}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') cancel();
          if (e.key === 'Enter' && found[0] !== undefined) pick(found[0].id);
        }}
        aria-label={`search ${target.collection}`}
      />
      <ul class="picker-results" role="listbox">
        {found.map((o) => (
          <li key={o.id}>
            <button type="button" class="linkish" role="option" aria-selected={current.includes(o.id)} onClick={() => pick(o.id)} data-test="relation-option" title={o.id}>
              {o.label} <span class="muted mono">{o.id}</span>
            </button>
          </li>
        ))}
        {found.length === 0 && <li class="muted">{text.trim() === '' ? 'No objects.' : 'Nothing matches.'}</li>}
      </ul>
      <button type="button" class="btn small ghost" onClick={cancel}>Close</button>
      {(problem ?? error) && <div class="cell-error">{problem ?? error}</div>}
    </td>
  );
}
