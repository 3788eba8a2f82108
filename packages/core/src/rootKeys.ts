import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The root check of the `svc-ssh-key` header. Development accepts any value; production only a
 * key of `.svc/keys.json`, compared in constant time (hashes of equal length, so neither the
 * content nor the length of a key leaks through timing).
 */
export class RootKeys {
  private readonly digests: Buffer[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map(digest);
  }

  isRoot(header: string | undefined, production: boolean): boolean {
    if (header === undefined || header === '') return false;
    if (!production) return true;
    const candidate = digest(header);
    let ok = false;
    for (const key of this.digests) ok = timingSafeEqual(key, candidate) || ok;
    return ok;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
