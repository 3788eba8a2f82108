import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The root check of the `svc-ssh-key` header. Development accepts any value from this machine (a
 * loopback client address: a development server listening on a network, or attached to a host
 * server that does, is no open admin door); production only a key of `.svc/keys.json`, compared in constant time (hashes of equal length, so neither the
 * content nor the length of a key leaks through timing).
 */
export class RootKeys {
  private readonly digests: Buffer[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map(digest);
  }

  isRoot(header: string | undefined, production: boolean, clientAddress?: string): boolean {
    if (header === undefined || header === '') return false;
    if (!production) return clientAddress === undefined || isLoopback(clientAddress);
    const candidate = digest(header);
    let ok = false;
    for (const key of this.digests) ok = timingSafeEqual(key, candidate) || ok;
    return ok;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}
