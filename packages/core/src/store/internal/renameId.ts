/** The keys of a filter or projection with `id` renamed to the stores' `_id`, in place order. */
export function renameId<T>(record: Record<string, T>): Record<string, T> {
  if (!('id' in record)) return record;
  const out: Record<string, T> = {};
  for (const [key, value] of Object.entries(record)) out[key === 'id' ? '_id' : key] = value;
  return out;
}
