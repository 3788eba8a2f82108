/**
 * The ETag the server gives an object's answer (@svc/core's etagOf, the same function): the
 * client names with it the version of an object its offline write was based on (If-Match).
 * The server makes it from the JSON text it answers, which is `JSON.stringify` of what it read.
 */
export function etagOf(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `"${(h2 >>> 0).toString(16).padStart(8, '0')}${(h1 >>> 0).toString(16).padStart(8, '0')}"`;
}

/** The ETag of an object as the server would answer it. */
export function etagOfObject(object: Record<string, unknown>): string {
  return etagOf(JSON.stringify(object));
}

/**
 * A new object id made on the client: 16 lowercase hex characters from the platform's CSPRNG
 * (what the server's own ids look like); the server creates at it only when no object has it
 * (POST with If-None-Match: *), so a collision is refused, never an overwrite.
 */
export function newObjectId(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}
