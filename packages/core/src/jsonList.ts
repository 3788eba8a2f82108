/**
 * `[a,b,...]` of JSON texts as one flat string, copied once: the brackets go onto the first and
 * last texts (`texts` is the caller's own list, changed here), so join makes the answer. Join, then
 * the brackets, would copy a 40 KB answer once more; a chain of concatenations allocates a link
 * per text, then is copied where it is written.
 */
export function jsonList(texts: string[]): string {
  const last = texts.length - 1;
  if (last < 0) return '[]';
  texts[0] = `[${texts[0] as string}`;
  texts[last] = `${texts[last] as string}]`;
  return texts.join(',');
}
