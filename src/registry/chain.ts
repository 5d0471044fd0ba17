/**
 * Compiles a chain of derivation ops (filter, with_columns, select, drop, rename)
 * against its input schema into one row function and the output schema. Built
 * once per registry version; the per-event cost is a loop over precompiled steps.
 */
import { compileExpression, compilePredicate } from '../expr';
import { SfError } from '../errors';
import type { FieldMap, FieldType, Row } from '../types';
import { isValidName, NAME_RULE, type ChainOpDef } from './model';
import { withPath } from './with_path';

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
    throw new SfError('schema_propagation_failure', `${what} references column ${JSON.stringify(name)}, which the upstream chain does not produce`, { path });
  }
}

function stepFor(op: ChainOpDef, fields: FieldMap, optional: Set<string>, path: string): RowFn {
  switch (op.op) {
    case 'filter': {
      const pred = withPath(`${path}.expr`, () => compilePredicate(op.expr, fields));
      return (r) => (pred(r) ? r : null);
    }
    case 'with_columns': {
      const cols: string[] = [];
      const fns: Array<(r: Row) => unknown> = [];
      for (const [col, src] of op.exprs) {
        if (!isValidName(col)) throw new SfError('schema_invalid', `column name ${NAME_RULE}`, { path: `${path}.exprs.${col}` });
        const ce = withPath(`${path}.exprs.${col}`, () => compileExpression(src, fields));
        fields[col] = (ce.type === 'null' ? 'str' : ce.type) as FieldType;
        optional.add(col);
        cols.push(col);
        fns.push(ce.fn);
      }
      const n = cols.length;
      return (r) => {
        const o: Row = Object.assign({}, r);
        for (let i = 0; i < n; i++) o[cols[i]] = fns[i](o) as Row[string];
        return o;
      };
    }
    case 'select': {
      for (const f of op.fields) requireField(fields, f, `${path}.fields`, 'select');
      const keep = new Set(op.fields);
      for (const f of Object.keys(fields)) if (!keep.has(f)) { delete fields[f]; optional.delete(f); }
      const names = op.fields.slice();
      return (r) => {
        const o: Row = {};
        for (let i = 0; i < names.length; i++) { const v = r[names[i]]; if (v !== undefined) o[names[i]] = v; }
        return o;
      };
    }
    case 'drop': {
      for (const f of op.fields) requireField(fields, f, `${path}.fields`, 'drop');
      for (const f of op.fields) { delete fields[f]; optional.delete(f); }
      const names = op.fields.slice();
      return (r) => {
        const o: Row = Object.assign({}, r);
        for (let i = 0; i < names.length; i++) delete o[names[i]];
        return o;
      };
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
      const pairs = op.mapping.slice();
      return (r) => {
        const o: Row = Object.assign({}, r);
        for (let i = 0; i < pairs.length; i++) { const v = o[pairs[i][0]]; delete o[pairs[i][0]]; if (v !== undefined) o[pairs[i][1]] = v; }
        return o;
      };
    }
  }
}

export function compileChain(ops: readonly ChainOpDef[], inFields: FieldMap, inOptional: readonly string[], pathPrefix: string): CompiledChain {
  const fields = copyFields(inFields);
  const optional = new Set(inOptional);
  const steps: RowFn[] = [];
  ops.forEach((op, j) => steps.push(stepFor(op, fields, optional, `${pathPrefix}.ops[${j}]`)));
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
