import type { AggregateRow, AggregateSpec, Filter } from '../Store.js';
import { compareRows } from '../internal/compareRows.js';
import type { Engine } from './engine.js';
import { BOOL, NULL, NUMBER, STRING } from './paths.js';
import { planRead } from './planner.js';
import type { TableInfo } from './schema.js';
import { ident, jsonPath, Params, pathLiteral, renumber } from './sqlText.js';
import type { SqlValue } from './sqlText.js';

/**
 * An aggregate as one SQL statement (GROUP BY in SQLite: no object is read into the process),
 * with the meaning groupRows gives it in the process, or undefined when SQL could not say the
 * same and the caller groups in the process:
 *
 * - the filter must be exact (planner.ts), and every grouped and measured property a top-level
 *   property holding at most one kind of scalar besides null (path facts): then its SQL value
 *   (json_extract) tells its value back, missing and null are one group (null), as groupRows has
 *   them, and a boolean's 1/0 is turned back into true/false;
 * - sum and avg take numbers only (json_type guard), as groupRows does; min and max skip null and
 *   missing values (SQL's min/max skip NULL); sums are added as doubles (`total`).
 */
export function aggregateInSql(engine: Engine, info: TableInfo, filter: Filter, spec: AggregateSpec): AggregateRow[] | undefined {
  const plan = planRead(filter, {}, info);
  if (!plan.exact) return undefined;
  const params = new Params();
  // The filter's parameters come first, as numbered by the planner.
  for (const value of plan.params) params.values.push(value);
  const columns: string[] = [];
  const groupKinds: number[] = [];
  for (const name of spec.group) {
    const column = scalarColumn(info, name, params);
    if (column === undefined) return undefined;
    columns.push(column.sql);
    groupKinds.push(column.kind);
  }
  const measures: { kind: 'count' | 'sum' | 'avg' | 'min' | 'max'; name: string; valueKind: number }[] = [];
  if (spec.count) measures.push({ kind: 'count', name: '', valueKind: NUMBER });
  for (const [kind, names] of [['sum', spec.sum], ['avg', spec.avg], ['min', spec.min], ['max', spec.max]] as const) {
    for (const name of names) measures.push({ kind, name, valueKind: 0 });
  }
  const selected = columns.map((c, i) => `${c} AS g${i}`);
  for (const m of measures) {
    if (m.kind === 'count') {
      selected.push('count(*)');
      continue;
    }
    const column = scalarColumn(info, m.name, params);
    if (column === undefined) return undefined;
    m.valueKind = column.kind;
    if (m.kind === 'sum' || m.kind === 'avg') {
      const numbers = `CASE WHEN ${column.type} IN ('integer', 'real') THEN ${column.sql} END`;
      selected.push(m.kind === 'sum' ? `total(${numbers})` : `avg(${numbers})`);
    } else {
      selected.push(`${m.kind}(${column.sql})`);
    }
  }
  // Without a group, SQL answers one row even when nothing matches; groupRows answers none.
  const groupBy = columns.length > 0 ? ` GROUP BY ${columns.map((_, i) => `g${i}`).join(', ')}` : ' HAVING count(*) > 0';
  const limit = params.bind(spec.limit);
  const { sqls, values } = renumber([`SELECT ${selected.join(', ')} FROM ${ident(info.tbl)} WHERE ${plan.where}${groupBy} LIMIT ${limit}`], params.values);
  engine.reading();
  const rows = engine.prepare(sqls[0] as string).all(...(values as SqlValue[])) as unknown as unknown[][];
  return rows.map((row) => rowOf(row, spec, groupKinds, measures)).sort(compareRows);
}

/** A top-level property holding one kind of scalar (or only null): its SQL value and type. */
function scalarColumn(info: TableInfo, name: string, params: Params): { sql: string; type: string; kind: number } | undefined {
  if (name === 'id') return { sql: 'id', type: "'text'", kind: STRING };
  if (name.includes('.')) return undefined;
  const path = jsonPath(name);
  if (path === undefined) return undefined;
  const kinds = info.facts.kindsOf(name) & ~NULL;
  if (kinds !== 0 && kinds !== NUMBER && kinds !== STRING && kinds !== BOOL) return undefined;
  // The index's own literal where there is one (SQLite then reads the index, not the objects).
  const literal = (info.indexed.has(name) ? pathLiteral(name) : undefined) ?? params.bind(path);
  return { sql: `json_extract(doc, ${literal})`, type: `json_type(doc, ${literal})`, kind: kinds };
}

function rowOf(row: unknown[], spec: AggregateSpec, groupKinds: number[], measures: { kind: string; name: string; valueKind: number }[]): AggregateRow {
  const value = (v: unknown, kind: number): unknown => (v === null || v === undefined ? null : kind === BOOL ? v === 1 : v);
  const out: AggregateRow = { group: {} };
  spec.group.forEach((name, i) => (out.group[name] = value(row[i], groupKinds[i] as number)));
  let at = spec.group.length;
  for (const m of measures) {
    const v = row[at++];
    if (m.kind === 'count') out.count = v as number;
    else if (m.kind === 'sum') (out.sum ??= {})[m.name] = v as number;
    else if (m.kind === 'avg') (out.avg ??= {})[m.name] = (v ?? null) as number | null;
    else (out[m.kind as 'min' | 'max'] ??= {})[m.name] = value(v, m.valueKind);
  }
  return out;
}
