import { ScriptRuntimeError } from '../errors.js';
import type { HostApi, RunInput, RunResult } from '../types.js';
import type { JobWire, RunWire } from './wire.js';
import { findStackPosition } from './wrap-source.js';

/** A job ready to send: the JSON string and the host tables it refers to by index. */
export interface EncodedJob {
  json: string;
  hosts: HostApi[];
}

/** Returns the index of `value` in `list`, adding it when new; identity decides, so shared objects are sent once. */
function indexOf<T>(list: T[], index: Map<T, number>, value: T): number {
  let at = index.get(value);
  if (at === undefined) {
    at = list.push(value) - 1;
    index.set(value, at);
  }
  return at;
}

/**
 * Encodes a run or a batch as one JSON string. Locals, hosts and labels are deduplicated by
 * identity: an On Get batch usually shares one `locals` and one `host`, so they cross once.
 */
export function encodeJob(inputs: readonly RunInput[]): EncodedJob {
  const locals: Record<string, unknown>[] = [];
  const localsIndex = new Map<Record<string, unknown>, number>();
  const hosts: HostApi[] = [];
  const hostsIndex = new Map<HostApi, number>();
  const labels: string[] = [];
  const labelsIndex = new Map<string, number>();
  const noHost: HostApi = {};
  const items: JobWire['I'] = inputs.map((input) => [
    input.thisObj,
    indexOf(locals, localsIndex, input.locals ?? {}),
    indexOf(hosts, hostsIndex, input.host ?? noHost),
    indexOf(labels, labelsIndex, input.label ?? ''),
  ]);
  const wire: JobWire = {
    L: locals.map((v) => ({ k: Object.keys(v), v })),
    H: hosts.map((host) => hostKey(host)),
    B: labels,
    I: items,
  };
  return { json: JSON.stringify(wire), hosts };
}

/**
 * The names of a host table's functions as one string: requests build a new host object each time,
 * but with the same names, so the isolate keeps one tree per distinct string instead of
 * rebuilding it per run (about 1 µs per name per run otherwise).
 */
function hostKey(host: HostApi): string {
  let key = '';
  for (const name in host) {
    if (typeof host[name] !== 'function') continue;
    key = key === '' ? name : `${key}\n${name}`;
  }
  return key;
}

/** Turns one run's outcome into a RunResult, or the ScriptRuntimeError the script threw. */
export function decodeRun(wire: RunWire, script: { filename: string; prefixLength: number }): RunResult | ScriptRuntimeError {
  const filename = script.filename;
  if (wire.x) {
    const position = findStackPosition(wire.x.s, filename, script.prefixLength);
    return new ScriptRuntimeError(wire.x.m, { filename, ...position }, { scriptStack: wire.x.s || undefined });
  }
  const result: RunResult = { thisObj: wire.t, hidden: wire.h, protected: wire.p };
  if (wire.c) result.cancelled = wire.c;
  if (wire.e) result.errors = wire.e;
  if (wire.s) {
    result.setResultCalled = true;
    result.result = wire.r;
  }
  return result;
}

/** The JSON shape of an error thrown by a host function, as the script's callback receives it. */
export function hostErrorToWire(err: unknown): unknown {
  if (err instanceof Error) {
    const extra = err as Error & { status?: unknown; statusCode?: unknown; errors?: unknown };
    const status = typeof extra.status === 'number' ? extra.status : extra.statusCode;
    return {
      message: err.message,
      ...(typeof status === 'number' ? { status } : {}),
      ...(extra.errors !== undefined ? { errors: extra.errors } : {}),
    };
  }
  if (err !== null && typeof err === 'object') return err;
  return { message: String(err) };
}
