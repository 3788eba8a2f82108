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

  it('development: not for other sites\' pages in the developer\'s browser (cross-origin calls, DNS rebinding)', () => {
    const keys = new RootKeys([]);
    const local = (host: string, origin?: string) => keys.isRoot('anything', false, '127.0.0.1', { host, origin });
    expect(local('127.0.0.1:2403')).toBe(true);
    expect(local('localhost:2403', 'http://localhost:2403')).toBe(true);
    expect(local('[::1]:2403', 'http://[::1]:2403')).toBe(true);
    expect(local('app.localhost:2403')).toBe(true);
    // Another site's page calling across origins (development CORS admits any origin).
    expect(local('127.0.0.1:2403', 'https://evil.example')).toBe(false);
    expect(local('127.0.0.1:2403', 'http://127.0.0.1:3000')).toBe(false);
    expect(local('127.0.0.1:2403', 'null')).toBe(false);
    // A name of the attacker's resolving to 127.0.0.1: the browser sends it as Host (and Origin).
    expect(local('evil.example:2403')).toBe(false);
    expect(local('evil.example:2403', 'http://evil.example:2403')).toBe(false);
    expect(local('127.0.0.1.evil.example:2403')).toBe(false);
    // Production is judged by the key alone.
    expect(new RootKeys(['k'.repeat(64)]).isRoot('k'.repeat(64), true, '10.0.0.5', { host: 'api.example', origin: 'https://evil.example' })).toBe(true);
  });

  it('production takes only a configured key, from anywhere', () => {
    const keys = new RootKeys(['k'.repeat(64)]);
    expect(keys.isRoot('k'.repeat(64), true, '10.0.0.5')).toBe(true);
    expect(keys.isRoot('k'.repeat(63), true, '127.0.0.1')).toBe(false);
  });

  it('production asks a key source at every check: a key removed from it is refused at the next request', () => {
    let current: readonly string[] = ['a'.repeat(64), 'b'.repeat(64)];
    const keys = new RootKeys(() => current);
    expect(keys.isRoot('a'.repeat(64), true, '10.0.0.5')).toBe(true);
    current = ['b'.repeat(64)];
    expect(keys.isRoot('a'.repeat(64), true, '10.0.0.5')).toBe(false);
    expect(keys.isRoot('b'.repeat(64), true, '10.0.0.5')).toBe(true);
    current = [];
    expect(keys.isRoot('b'.repeat(64), true, '10.0.0.5')).toBe(false);
  });
});
