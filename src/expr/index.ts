/**
 * The expression language of filter, with_columns and aggregation `where`
 * (spec 2.5; full reference in docs/expressions.md).
 *
 *   source --lexer--> tokens --parser--> tree --typecheck(fields)--> typed tree --compile--> JS function
 *
 * Everything runs once, at register time; the returned functions are what the
 * hot path calls per row.
 */
import { SfError } from '../errors';
import type { FieldMap, Row, Value } from '../types';
import type { ExprType } from './ast';
import { compileFn, compilePredicateFn } from './compile';
import { parse } from './parser';
import { typecheck } from './typecheck';

export type { ExprType } from './ast';

export interface CompiledExpr {
  readonly source: string;
  /** Static result type ('null' only for expressions that are always null, such as the literal `null`). */
  readonly type: ExprType;
  /** Compiled evaluator; never throws on any row. */
  readonly fn: (row: Row) => Value;
  /** Field names referenced (sorted, unique). */
  readonly fields: readonly string[];
}

/** Parse + type-check + compile. Throws SfError: invalid_expression | unknown_field_reference | schema_mismatch | invalid_cast_target. */
export function compileExpression(src: string, fields: FieldMap): CompiledExpr {
  const checked = typecheck(parse(checkSource(src)), fields);
  return Object.freeze({
    source: src,
    type: checked.expr.type,
    fn: compileFn(checked.expr),
    fields: Object.freeze(checked.fields),
  });
}

/**
 * The field names an expression reads (sorted, unique), without compiling it: the
 * front lists the columns a `where` reads (TablePlan.columns) but never runs it.
 */
export function expressionFields(src: string, fields: FieldMap): readonly string[] {
  return typecheck(parse(checkSource(src)), fields).fields;
}

/**
 * Same, but the expression must be of type bool (or always null) else
 * schema_mismatch. The returned function is true iff the value is exactly
 * `true`: null and false both reject the row (three-valued logic).
 */
export function compilePredicate(src: string, fields: FieldMap): (row: Row) => boolean {
  const checked = typecheck(parse(checkSource(src)), fields);
  const t = checked.expr.type;
  if (t !== 'bool' && t !== 'null') {
    throw new SfError('schema_mismatch', `at column 1: a predicate must be of type bool, got ${t}`);
  }
  return compilePredicateFn(checked.expr);
}

/** Registration payloads come from JSON, so the source may not even be a string. */
function checkSource(src: unknown): string {
  if (typeof src !== 'string') throw new SfError('invalid_expression', `expression must be a string, got ${src === null ? 'null' : typeof src}`);
  return src;
}
