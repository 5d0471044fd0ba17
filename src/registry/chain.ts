/**
 * Compiles a chain of derivation ops (filter, with_columns, select, drop, rename)
 * against its input schema into one row function and the output schema. Built
 * once per registry version; the per-event cost is a loop over precompiled steps.
 *
 * Every step that reshapes a row builds its output as ONE generated object
 * literal over the columns its input schema declares (`{"a": r["a"], ...}`),
 * never `Object.assign` + keyed stores + `delete`: past ~16 properties V8 turns
 * an object grown by keyed stores (or by a delete) into a slow dictionary, and a
 * 150-deep with_columns chain then cost ~2.7 ms per push in copies alone
 * (bench/hardening.ts finding8). A literal has one fixed shape per step, so each
 * copy is a straight run of loads and stores. Rows carry only declared columns
 * (push validation rejects others), so copying the declared ones is the whole
 * row; an optional column absent from the input is an own property holding
 * undefined in the output, which every reader treats as absent (accessors, key
 * functions, expressions: rows never tell absent from null). Each step returns a
 * new object: a row seen by one feed or derived event is never changed by another.
 */
import { compileExpression, compilePredicate } from '../expr';
import { SfError } from '../errors';
import type { FieldMap, FieldType, Row } from '../types';
import { isValidName, NAME_RULE, type ChainOpDef } from './model';
import { withPath } from './with_path';
import { unknownNameHint } from '../util/near_name';

/** Returns the (possibly new) row, or null when a filter drops it. */
export type RowFn = (row: Row) => Row | null;

export interface CompiledChain {
  fn: RowFn | null;
  fields: FieldMap;
  optional: string[];
}

function copyFields(f: FieldMap): FieldMap {
  return Object.assign(Object.create(null), f) as FieldMap;
}

function requireField(fields: FieldMap, name: string, path: string, what: string): void {
  if (!(name in fields)) {
    throw new SfError('schema_propagation_failure', `${what} references column ${JSON.stringify(name)}, which the upstream chain does not produce${unknownNameHint(name, Object.keys(fields), 'upstream columns')}`, { path });
  }
}

const q = (name: string): string => JSON.stringify(name);

/**
 * A generated step: `o` = one object literal of `props` ([column, JS value
 * expression over the input row `r`]), then `after` (statements that may call
 * F[i]). Names reaching here passed isValidName (no `__proto__`, which a literal
 * would treat as the prototype); checked again since this is generated code.
 */
function buildRow(props: ReadonlyArray<[string, string]>, after: readonly string[] = [], fns: readonly unknown[] = []): RowFn {
  for (const [c] of props) if (!isValidName(c)) throw new Error(`chain: column ${q(c)} cannot be a generated property`);
  const literal = props.map(([c, v]) => `${q(c)}: ${v}`).join(', ');
  const src = `"use strict";\nreturn function sf_row(r) {\n  const o = {${literal}};\n  ${after.join('\n  ')}\n  return o;\n};`;
  return (new Function('F', src) as (f: readonly unknown[]) => RowFn)(fns);
}

/**
 * Consecutive with_columns ops (the peer's cast and fillna are with_columns too)
 * run as ONE generated step: one copy of the row for the run, not one per op.
 */
interface ColumnsGroup {
  /** Schema before the first op of the run. */
  inFields: FieldMap;
  /** Assignments in order (a column set again by a later op appears again). */
  cols: string[];
  fns: Array<(r: Row) => unknown>;
}

function addColumns(op: Extract<ChainOpDef, { op: 'with_columns' }>, fields: FieldMap, optional: Set<string>, path: string, group: ColumnsGroup): void {
  for (const [col, src] of op.exprs) {
    if (!isValidName(col)) throw new SfError('schema_invalid', `column name ${NAME_RULE}`, { path: `${path}.exprs.${col}` });
    const ce = withPath(`${path}.exprs.${col}`, () => compileExpression(src, fields));
    fields[col] = (ce.type === 'null' ? 'str' : ce.type) as FieldType;
    optional.add(col);
    group.cols.push(col);
    group.fns.push(ce.fn);
  }
}

function columnsStep(group: ColumnsGroup): RowFn {
  // The input columns, then each new column (a placeholder until its expression
  // has run: an expression reads the row with the assignments before it done).
  const out = Object.keys(group.inFields).map((c): [string, string] => [c, `r[${q(c)}]`]);
  const added = new Set<string>();
  for (const c of group.cols) if (!(c in group.inFields) && !added.has(c)) { added.add(c); out.push([c, 'undefined']); }
  return buildRow(out, group.cols.map((c, i) => `o[${q(c)}] = F[${i}](o);`), group.fns);
}

function stepFor(op: ChainOpDef, fields: FieldMap, optional: Set<string>, path: string): RowFn {
  // Columns of the input row, in schema order (the step's generated literal copies these).
  const inFields = copyFields(fields);
  const inNames = Object.keys(inFields);
  switch (op.op) {
    case 'filter': {
      const pred = withPath(`${path}.expr`, () => compilePredicate(op.expr, fields));
      return (r) => (pred(r) ? r : null);
    }
    case 'with_columns': {
      const group: ColumnsGroup = { inFields, cols: [], fns: [] };
      addColumns(op, fields, optional, path, group);
      return columnsStep(group);
    }
    case 'select': {
      for (const f of op.fields) requireField(fields, f, `${path}.fields`, 'select');
      const keep = new Set(op.fields);
      for (const f of Object.keys(fields)) if (!keep.has(f)) { delete fields[f]; optional.delete(f); }
      return buildRow([...keep].map((c): [string, string] => [c, `r[${q(c)}]`]));
    }
    case 'drop': {
      for (const f of op.fields) requireField(fields, f, `${path}.fields`, 'drop');
      for (const f of op.fields) { delete fields[f]; optional.delete(f); }
      const gone = new Set(op.fields);
      return buildRow(inNames.filter((c) => !gone.has(c)).map((c): [string, string] => [c, `r[${q(c)}]`]));
    }
    case 'rename': {
      const types: Array<[string, string, FieldType]> = [];
      for (const [from, to] of op.mapping) {
        requireField(fields, from, `${path}.mapping.${from}`, 'rename');
        types.push([from, to, fields[from]]);
      }
      for (const [from] of types) delete fields[from];
      for (const [from, to, t] of types) {
        if (!isValidName(to)) throw new SfError('schema_invalid', `rename target ${NAME_RULE}`, { path: `${path}.mapping.${from}` });
        if (to in fields) throw new SfError('schema_propagation_failure', `rename target ${JSON.stringify(to)} collides with an existing column`, { path: `${path}.mapping.${from}` });
        fields[to] = t;
        if (optional.delete(from)) optional.add(to);
      }
      const moved = new Map(types.map(([from, to]) => [from, to]));
      const out = inNames.filter((c) => !moved.has(c)).map((c): [string, string] => [c, `r[${q(c)}]`]);
      for (const [from, to] of moved) out.push([to, `r[${q(from)}]`]);
      return buildRow(out);
    }
  }
}

export function compileChain(ops: readonly ChainOpDef[], inFields: FieldMap, inOptional: readonly string[], pathPrefix: string): CompiledChain {
  const fields = copyFields(inFields);
  const optional = new Set(inOptional);
  const steps: RowFn[] = [];
  let group: ColumnsGroup | null = null;
  ops.forEach((op, j) => {
    const path = `${pathPrefix}.ops[${j}]`;
    if (op.op === 'with_columns') {
      group ??= { inFields: copyFields(fields), cols: [], fns: [] };
      addColumns(op, fields, optional, path, group);
      return;
    }
    if (group !== null) { steps.push(columnsStep(group)); group = null; }
    steps.push(stepFor(op, fields, optional, path));
  });
  if (group !== null) steps.push(columnsStep(group));
  return { fn: composeSteps(steps), fields, optional: [...optional] };
}

/** One function over several steps; null for an empty chain (the caller skips it). */
export function composeSteps(steps: readonly RowFn[]): RowFn | null {
  if (steps.length === 0) return null;
  if (steps.length === 1) return steps[0];
  const s = steps.slice();
  const n = s.length;
  return (row) => {
    let r: Row | null = row;
    for (let i = 0; i < n && r !== null; i++) r = s[i](r);
    return r;
  };
}
