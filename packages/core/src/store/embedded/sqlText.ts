/** A value bound to a statement parameter. */
export type SqlValue = string | number | null;

/**
 * Collects a statement's parameters: each value gets a numbered placeholder (`?3`), so fragments
 * of SQL can be put together in any order and the same value (a JSON path) is bound once.
 */
export class Params {
  readonly values: SqlValue[] = [];
  readonly #strings = new Map<string, number>();

  /** The placeholder of `value`. */
  bind(value: SqlValue | boolean): string {
    const v = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    if (typeof v === 'string') {
      const known = this.#strings.get(v);
      if (known !== undefined) return `?${known}`;
      this.values.push(v);
      this.#strings.set(v, this.values.length);
      return `?${this.values.length}`;
    }
    this.values.push(v);
    return `?${this.values.length}`;
  }
}

/**
 * The parameters the SQL texts use, numbered anew in order of first use (a condition dropped
 * after its values were bound, such as a superset that cannot be negated, leaves numbers unused,
 * and SQLite refuses more values than a statement's highest number). Safe to rewrite by a search
 * for `?N`: the only literals in the engine's SQL are path literals (see pathLiteral), which
 * cannot hold a `?`, and fixed words.
 */
export function renumber(sqls: string[], values: readonly SqlValue[]): { sqls: string[]; values: SqlValue[] } {
  const map = new Map<number, number>();
  const used: SqlValue[] = [];
  const out = sqls.map((sql) =>
    sql.replace(/\?(\d+)/g, (_, n: string) => {
      const old = Number(n);
      let next = map.get(old);
      if (next === undefined) {
        used.push(values[old - 1] ?? null);
        next = used.length;
        map.set(old, next);
      }
      return `?${next}`;
    }),
  );
  return { sqls: out, values: used };
}

/**
 * The SQLite JSON path of a dotted property path (`a.b` -> `$."a"."b"`), or undefined when a name
 * cannot be written in one (SQLite's quoted labels have no escape for `"`; names with a backslash
 * or a control character are left to the process too).
 */
export function jsonPath(path: string): string | undefined {
  let out = '$';
  for (const segment of path.split('.')) {
    if (segment === '' || segment.includes('"') || segment.includes('\\') || hasControl(segment)) return undefined;
    out += `."${segment}"`;
  }
  return out;
}

function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x20) return true;
  return false;
}

/**
 * A SQL string literal of a JSON path, for the expressions of indexes (SQLite matches an index's
 * expression only against the same literal text, never a parameter). Paths come from the schema
 * (declared indexes), never from a request.
 */
export function pathLiteral(path: string): string | undefined {
  const json = jsonPath(path);
  // No `?` (see renumber) and no `'` in a literal: such names are not indexed.
  return json === undefined || /['?]/.test(json) ? undefined : `'${json}'`;
}

/** A quoted SQL identifier (table and index names, which the schema makes: `c12`, `x12_3`). */
export function ident(name: string): string {
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`not an identifier the engine makes: ${name}`);
  return `"${name}"`;
}
