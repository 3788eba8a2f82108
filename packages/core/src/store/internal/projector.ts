import type { Doc } from '../Store.js';

/** The projection of `fields` (`id` kept unless excluded by name). */
export function projector(fields: Record<string, 0 | 1> | undefined): (doc: Doc) => Doc {
  if (!fields) return (doc) => doc;
  const keys = Object.keys(fields).filter((k) => k !== 'id');
  const included = keys.filter((k) => fields[k] === 1);
  const withId = fields.id !== 0;
  if (included.length > 0 && included.length < keys.length) throw new Error('a projection cannot both include and exclude properties other than id');
  if (included.length > 0 || (fields.id === 1 && keys.length === 0)) {
    return (doc) => {
      const out: Record<string, unknown> = withId ? { id: doc.id } : {};
      for (const key of included) if (Object.hasOwn(doc, key)) out[key] = doc[key];
      return out as Doc;
    };
  }
  const excluded = new Set(keys);
  return (doc) => {
    const out: Record<string, unknown> = withId ? { id: doc.id } : {};
    for (const key in doc) if (key !== 'id' && !excluded.has(key) && Object.hasOwn(doc, key)) out[key] = doc[key];
    return out as Doc;
  };
}
