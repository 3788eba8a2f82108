import { readFile } from 'node:fs/promises';

/** The objects of an svc export file, as {collection: {id: object}}, without the header and end lines. */
export async function objectsOf(file: string): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  const lines = (await readFile(file, 'utf8')).trim().split('\n');
  for (const line of lines.slice(1, -1)) {
    const { collection, object } = JSON.parse(line) as { collection: string; object: { id: string } };
    (out[collection] ??= {})[object.id] = object;
  }
  return out;
}
