/**
 * Seals the script realm, INSIDE the isolate, once its runtime is set up and before any script
 * runs. Serialised with Function.prototype.toString like isolateMain, so it must not reference
 * anything outside its own body.
 *
 * What it does, after SES's `lockdown()` (the reference; loading SES itself into every isolate
 * costs ~20x the set-up time of this and brings a module system the scripts do not need):
 * - removes `WebAssembly` (its memory is outside the isolate's heap limit), `SharedArrayBuffer`
 *   and `Atomics` from the realm;
 * - freezes every intrinsic reachable from the global object or from syntax (prototypes of
 *   generators, async functions, iterators, typed arrays...), and the global object itself, so that
 *   nothing a run changes on them (`Object.prototype.isAdmin = true`, `JSON.stringify = ...`) is
 *   seen by any other run or by the runtime;
 * - tames the "override mistake": on a frozen prototype, a data property such as
 *   `Object.prototype.toString` would make `obj.toString = fn` fail on every ordinary object. Those
 *   properties become accessors whose setter defines the property on the object assigned to, so
 *   the usual override pattern keeps working while the prototype itself stays unchanged.
 */
export function sealRealm(): void {
  const g = globalThis as unknown as Record<string, unknown>;
  for (const name of ['WebAssembly', 'SharedArrayBuffer', 'Atomics']) delete g[name];

  const { defineProperty, getOwnPropertyDescriptor, getOwnPropertyNames, getOwnPropertySymbols, getPrototypeOf, freeze } = Object;
  const hasOwn = Object.prototype.hasOwnProperty;
  const apply = Reflect.apply;

  function tame(target: object, key: PropertyKey): void {
    const desc = getOwnPropertyDescriptor(target, key);
    if (!desc || !('value' in desc) || !desc.configurable) return;
    const value: unknown = desc.value;
    defineProperty(target, key, {
      get: function () {
        return value;
      },
      set: function (this: unknown, next: unknown) {
        if (this === target) throw new TypeError(`Cannot assign to read only property '${String(key)}' of a sealed prototype`);
        if (this === null || (typeof this !== 'object' && typeof this !== 'function')) {
          throw new TypeError(`Cannot assign to property '${String(key)}' of a primitive`);
        }
        if (apply(hasOwn, this, [key])) (this as Record<PropertyKey, unknown>)[key] = next;
        else defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable === true,
      configurable: false,
    });
  }

  const errorTypes = [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError, AggregateError];
  const tamed: [object, PropertyKey[] | '*'][] = [
    [Object.prototype, '*'],
    [Function.prototype, ['constructor', 'toString', 'bind', 'call', 'apply']],
    [Array.prototype, ['constructor', 'toString', 'toLocaleString']],
    [Promise.prototype, ['constructor']],
    [Date.prototype, ['constructor', 'toString', 'toJSON', 'valueOf']],
    [RegExp.prototype, ['constructor', 'toString']],
    [Number.prototype, ['constructor', 'toString', 'valueOf']],
    [String.prototype, ['constructor', 'toString', 'valueOf']],
    [Boolean.prototype, ['constructor', 'toString', 'valueOf']],
    [Map.prototype, ['constructor']],
    // Buffer (the npm package scripts get as `buffer`) sets its own toString on a Uint8Array subclass.
    [(getPrototypeOf(Uint8Array) as { prototype: object }).prototype, '*'],
    [Set.prototype, ['constructor']],
    ...errorTypes.map((E): [object, PropertyKey[]] => [E.prototype, ['constructor', 'message', 'name', 'toString']]),
  ];
  for (const [target, keys] of tamed) {
    const list = keys === '*' ? [...getOwnPropertyNames(target), ...getOwnPropertySymbols(target)] : keys;
    for (const key of list) tame(target, key);
  }

  // V8's Error.stackTraceLimit stays a data property (V8 reads only a data property when it
  // captures a stack: an accessor here would leave every error without a stack, so without its
  // script's line), made read-only: the limit is the same for every run. The bundled `assert`
  // sets it around `new Error` in strict code; the build removes those writes (node-builtins-bundle.ts).
  const limit = getOwnPropertyDescriptor(Error, 'stackTraceLimit');
  if (limit && 'value' in limit && limit.configurable) {
    defineProperty(Error, 'stackTraceLimit', { value: limit.value, writable: false, enumerable: limit.enumerable === true, configurable: false });
  }

  // Intrinsics that no global names, reached through syntax.
  const hidden: unknown[] = [
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(async function* () {}),
    getPrototypeOf([][Symbol.iterator]()),
    getPrototypeOf(new Map()[Symbol.iterator]()),
    getPrototypeOf(new Set()[Symbol.iterator]()),
    getPrototypeOf(''[Symbol.iterator]()),
    getPrototypeOf(/a/[Symbol.matchAll]('a')),
    getPrototypeOf(Int8Array),
    (function () {
      'use strict';
      // %ThrowTypeError%: only reachable through a strict function's arguments object.
      // eslint-disable-next-line prefer-rest-params
      return getOwnPropertyDescriptor(arguments, 'callee')?.get;
    })(),
  ];

  const seen = new WeakSet<object>();
  const stack: unknown[] = [globalThis, ...hidden];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
    const obj = value as object;
    if (seen.has(obj)) continue;
    seen.add(obj);
    freeze(obj);
    stack.push(getPrototypeOf(obj));
    for (const key of [...getOwnPropertyNames(obj), ...getOwnPropertySymbols(obj)]) {
      const desc = getOwnPropertyDescriptor(obj, key);
      if (!desc) continue;
      if ('value' in desc) stack.push(desc.value);
      else stack.push(desc.get, desc.set);
    }
  }
}
