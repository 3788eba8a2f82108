import { describe, expect, it } from 'vitest';
import { RootKeys, isLoopback } from '../src/rootKeys.js';

describe('root keys', () => {
  it('development takes any key from this machine only (a dev server on a network is no open admin door)', () => {
    const keys = new RootKeys([]);
    for (const local of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(keys.isRoot('anything', false, local)).toBe(true);
    for (const remote of ['10.0.0.5', '192.168.1.20', '::ffff:10.0.0.5', '2001:db8::1', '']) expect(keys.isRoot('anything', false, remote)).toBe(false);
    expect(keys.isRoot(undefined, false, '127.0.0.1')).toBe(false);
    expect(isLoopback('::ffff:127.0.0.1')).toBe(true);
  });

  it('production takes only a configured key, from anywhere', () => {
    const keys = new RootKeys(['k'.repeat(64)]);
    expect(keys.isRoot('k'.repeat(64), true, '10.0.0.5')).toBe(true);
    expect(keys.isRoot('k'.repeat(63), true, '127.0.0.1')).toBe(false);
  });
});
