/**
 * Type checker: untyped tree + field types -> typed tree (ast.ts TExpr).
 * Every typing rule of docs/expressions.md ("Typing") lives here, and every
 * register-time error except syntax errors is raised here. After this pass
 * the compiler only has to pick code for an already-decided operation.
 */
import { isFieldType, type FieldMap, type FieldType } from '../types';
import type { ArithMode, CastTarget, CmpMode, CmpOp, Expr, ExprType, LitExpr, TExpr } from './ast';
import { exprError } from './error';
import { parseRfc3339 } from './runtime';
import { nearestName } from '../util/near_name';

export interface Checked {
  readonly expr: TExpr;
  /** Referenced field names, sorted, unique. */
  readonly fields: string[];
}

export function typecheck(e: Expr, fields: FieldMap): Checked {
  const used = new Set<string>();
  const expr = check(e, fields, used);
  return { expr, fields: [...used].sort() };
}

const NULL_LIT: TExpr = { kind: 'lit', type: 'null', value: null };
/** A bool-typed expression whose value is always null (`x < null`). */
const NULL_BOOL: TExpr = { kind: 'lit', type: 'bool', value: null };

const CAST_TARGETS: Readonly<Record<string, CastTarget>> = { int: 'int', float: 'float', str: 'str', bool: 'bool' };
const CAST_RESULT: Readonly<Record<CastTarget, FieldType>> = { int: 'i64', float: 'f64', str: 'str', bool: 'bool' };
/** The type a cast target names, to skip identity casts. */
const SAME_AS_TARGET: Readonly<Record<CastTarget, readonly ExprType[]>> = { int: ['i64'], float: ['f64'], str: ['str'], bool: ['bool'] };

const FUNCTIONS = ['abs', 'cast', 'coalesce', 'isnull', 'length', 'lower', 'upper'];

function isNum(t: ExprType): boolean {
  return t === 'i64' || t === 'f64';
}

function check(e: Expr, fields: FieldMap, used: Set<string>): TExpr {
  switch (e.kind) {
    case 'lit':
      return { kind: 'lit', type: e.type, value: e.value };
    case 'field':
      return checkField(e.name, e.pos, fields, used);
    case 'neg': {
      const arg = check(e.arg, fields, used);
      if (arg.type === 'null') return NULL_LIT;
      if (!isNum(arg.type)) throw exprError('schema_mismatch', e.pos, `unary '-' needs a numeric operand (i64 or f64), got ${arg.type}`);
      return { kind: 'neg', type: arg.type, int: arg.type === 'i64', arg };
    }
    case 'not': {
      const arg = check(e.arg, fields, used);
      if (arg.type !== 'bool' && arg.type !== 'null') throw exprError('schema_mismatch', e.pos, `'not' needs a bool operand, got ${arg.type}`);
      return { kind: 'not', type: 'bool', arg };
    }
    case 'logic': {
      const left = check(e.left, fields, used);
      const right = check(e.right, fields, used);
      for (const side of [left, right]) {
        if (side.type !== 'bool' && side.type !== 'null') {
          throw exprError('schema_mismatch', e.pos, `'${e.op}' needs bool operands, got ${left.type} and ${right.type}`);
        }
      }
      return { kind: 'logic', type: 'bool', op: e.op, left, right };
    }
    case 'arith':
      return checkArith(e, check(e.left, fields, used), check(e.right, fields, used));
    case 'cmp':
      return checkCmp(e, e.op, check(e.left, fields, used), check(e.right, fields, used));
    case 'in':
      return checkIn(e, check(e.arg, fields, used));
    case 'call':
      return checkCall(e, fields, used);
  }
}

function checkField(name: string, pos: number, fields: FieldMap, used: Set<string>): TExpr {
  if (!Object.prototype.hasOwnProperty.call(fields, name)) {
    const near = nearestName(name, Object.keys(fields));
    const hint = near === null ? '' : ` (did you mean '${near}'?)`;
    throw exprError('unknown_field_reference', pos, `unknown field '${name}'${hint}`);
  }
  const type = fields[name];
  // A bad schema is a bug of the caller (schemas are validated first), not a user error.
  if (!isFieldType(type)) throw new Error(`field '${name}' has no valid type: ${String(type)}`);
  used.add(name);
  return { kind: 'field', type, name };
}

function checkArith(e: Extract<Expr, { kind: 'arith' }>, left: TExpr, right: TExpr): TExpr {
  // The null literal takes the other operand's type (an i64 offset next to a
  // datetime, so `d + null` and `d - null` stay datetime); the value is null anyway.
  const stand = (other: ExprType): ExprType => (other === 'datetime' ? 'i64' : other);
  const lt = left.type === 'null' ? stand(right.type) : left.type;
  const rt = right.type === 'null' ? stand(left.type) : right.type;
  const bad = (): never => {
    throw exprError('schema_mismatch', e.pos, `operator '${e.op}' cannot combine ${left.type} and ${right.type}`);
  };
  let type: ExprType;
  let mode: ArithMode;
  if (lt === 'null') {
    type = 'null';
    mode = 'float';
  } else if (isNum(lt) && isNum(rt)) {
    type = lt === 'i64' && rt === 'i64' ? 'i64' : 'f64';
    mode = type === 'i64' ? 'int' : 'float';
  } else if (lt === 'str' && rt === 'str') {
    if (e.op !== '+') bad();
    type = 'str';
    mode = 'concat';
  } else if (lt === 'datetime' || rt === 'datetime') {
    type = datetimeArith(e.op, lt, rt) ?? bad();
    mode = 'int';
  } else {
    return bad();
  }
  if (left.type === 'null' || right.type === 'null') return { kind: 'lit', type, value: null };
  return { kind: 'arith', type, mode, op: e.op, left, right };
}

/** datetime - datetime -> i64 ms; datetime +/- i64 -> datetime; i64 + datetime -> datetime. */
function datetimeArith(op: string, lt: ExprType, rt: ExprType): ExprType | null {
  if (op === '-' && lt === 'datetime' && rt === 'datetime') return 'i64';
  if ((op === '+' || op === '-') && lt === 'datetime' && rt === 'i64') return 'datetime';
  if (op === '+' && lt === 'i64' && rt === 'datetime') return 'datetime';
  return null;
}

/**
 * Decides how two operand types compare, or null when they cannot. A str
 * literal against a datetime is read as RFC 3339 (the caller converts it).
 */
function cmpMode(op: CmpOp, lt: ExprType, rt: ExprType): CmpMode | null {
  const ordering = op !== '==' && op !== '!=';
  if (lt === rt) {
    if (lt === 'bytes') return ordering ? null : 'str';
    return lt === 'f64' ? 'num' : lt === 'i64' || lt === 'datetime' ? 'int' : lt === 'str' ? 'str' : 'bool';
  }
  const numeric = (t: ExprType): boolean => isNum(t) || t === 'datetime';
  if (numeric(lt) && numeric(rt)) return lt === 'f64' || rt === 'f64' ? 'num' : 'int';
  if ((lt === 'bytes' && rt === 'str') || (lt === 'str' && rt === 'bytes')) return ordering ? null : 'str';
  return null;
}

function checkCmp(e: Expr, op: CmpOp, left: TExpr, right: TExpr): TExpr {
  if (left.type === 'null' || right.type === 'null') {
    // `x == null` / `x != null` are null tests and never null themselves.
    if (op === '==' || op === '!=') {
      const arg = left.type === 'null' ? right : left;
      return { kind: 'isnull', type: 'bool', negated: op === '!=', arg };
    }
    return NULL_BOOL;
  }
  left = datetimeLiteral(left, right.type, e);
  right = datetimeLiteral(right, left.type, e);
  const mode = cmpMode(op, left.type, right.type);
  if (mode === null) {
    const hint =
      left.type === 'datetime' || right.type === 'datetime'
        ? '; compare a datetime with a datetime, a number of epoch ms, or an RFC 3339 string literal'
        : left.type === 'bytes' || right.type === 'bytes'
          ? '; bytes only support == and !='
          : '';
    throw exprError('schema_mismatch', e.pos, `cannot compare ${left.type} ${op} ${right.type}${hint}`);
  }
  return { kind: 'cmp', type: 'bool', mode, op, left, right };
}

/** A str literal compared with a datetime becomes a datetime literal (epoch ms). */
function datetimeLiteral(side: TExpr, otherType: ExprType, e: Expr): TExpr {
  if (otherType !== 'datetime' || side.kind !== 'lit' || side.type !== 'str') return side;
  const ms = parseRfc3339(side.value as string);
  if (ms === null) throw exprError('schema_mismatch', e.pos, `${JSON.stringify(side.value)} is not an RFC 3339 timestamp or date`);
  return { kind: 'lit', type: 'datetime', value: ms };
}

function checkIn(e: Extract<Expr, { kind: 'in' }>, arg: TExpr): TExpr {
  if (arg.type === 'null') return NULL_BOOL;
  const items: (string | number | boolean)[] = [];
  for (const item of e.items) items.push(inItem(arg.type, item));
  return { kind: 'in', type: 'bool', negated: e.negated, arg, items };
}

/** An `in` element must compare with the tested value as `==` would; returns its runtime form. */
function inItem(t: ExprType, item: LitExpr): string | number | boolean {
  if (t === 'datetime' && item.type === 'str') {
    const ms = parseRfc3339(item.value as string);
    if (ms === null) throw exprError('schema_mismatch', item.pos, `${JSON.stringify(item.value)} is not an RFC 3339 timestamp or date`);
    return ms;
  }
  if (cmpMode('==', t, item.type) === null) {
    throw exprError('schema_mismatch', item.pos, `'in' list element of type ${item.type} cannot be compared with ${t}`);
  }
  return item.value as string | number | boolean;
}

function checkCall(e: Extract<Expr, { kind: 'call' }>, fields: FieldMap, used: Set<string>): TExpr {
  const arity = (min: number, max: number): void => {
    const n = e.args.length;
    if (n < min || n > max) {
      const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
      throw exprError('invalid_expression', e.pos, `${e.name}() takes ${want} argument${min === 1 && max === 1 ? '' : 's'}, got ${n}`);
    }
  };
  switch (e.name) {
    case 'cast':
      arity(2, 2);
      return checkCast(e, check(e.args[0], fields, used));
    case 'isnull':
      arity(1, 1);
      return { kind: 'isnull', type: 'bool', negated: false, arg: check(e.args[0], fields, used) };
    case 'coalesce': {
      arity(1, Infinity);
      return checkCoalesce(e, e.args.map((a) => check(a, fields, used)));
    }
    case 'abs': {
      arity(1, 1);
      const arg = check(e.args[0], fields, used);
      if (arg.type === 'null') return NULL_LIT;
      if (!isNum(arg.type)) throw exprError('schema_mismatch', e.pos, `abs() needs a numeric argument (i64 or f64), got ${arg.type}`);
      return { kind: 'abs', type: arg.type, arg };
    }
    case 'lower':
    case 'upper': {
      arity(1, 1);
      const arg = check(e.args[0], fields, used);
      if (arg.type !== 'str' && arg.type !== 'null') throw exprError('schema_mismatch', e.pos, `${e.name}() needs a str argument, got ${arg.type}`);
      return { kind: 'case', type: 'str', upper: e.name === 'upper', arg };
    }
    case 'length': {
      arity(1, 1);
      const arg = check(e.args[0], fields, used);
      if (arg.type !== 'str' && arg.type !== 'bytes' && arg.type !== 'null') {
        throw exprError('schema_mismatch', e.pos, `length() needs a str or bytes argument, got ${arg.type}`);
      }
      return { kind: 'length', type: 'i64', bytes: arg.type === 'bytes', arg };
    }
    default:
      throw exprError('invalid_expression', e.pos, `unknown function '${e.name}' (functions: ${FUNCTIONS.join(', ')})`);
  }
}

/** The target is a bare identifier or a string literal naming exactly int, float, str or bool. */
function castTarget(t: Expr): CastTarget {
  const name = t.kind === 'field' ? t.name : t.kind === 'lit' && t.type === 'str' ? (t.value as string) : null;
  if (name !== null && Object.prototype.hasOwnProperty.call(CAST_TARGETS, name)) return CAST_TARGETS[name];
  const shown = name !== null ? `'${name}'` : 'an expression';
  throw exprError('invalid_cast_target', t.pos, `cast target must be int, float, str or bool, got ${shown}`);
}

function checkCast(e: Extract<Expr, { kind: 'call' }>, arg: TExpr): TExpr {
  const to = castTarget(e.args[1]);
  const type = CAST_RESULT[to];
  if (arg.type === 'null') return { kind: 'lit', type, value: null };
  if (SAME_AS_TARGET[to].includes(arg.type)) return arg;
  if (arg.type === 'bytes' && to !== 'str') throw exprError('schema_mismatch', e.pos, `bytes cannot be cast to ${to} (only to str, which gives the base64 text)`);
  return { kind: 'cast', type, from: arg.type, to, arg };
}

/** All non-null arguments share one type; i64 mixed with f64 gives f64. */
function checkCoalesce(e: Expr, args: TExpr[]): TExpr {
  let type: ExprType = 'null';
  for (const a of args) {
    if (a.type === 'null' || a.type === type) continue;
    if (type === 'null') type = a.type;
    else if (isNum(type) && isNum(a.type)) type = 'f64';
    else throw exprError('schema_mismatch', e.pos, `coalesce() arguments must share one type, got ${args.map((x) => x.type).join(', ')}`);
  }
  const live = args.filter((a) => a.type !== 'null');
  if (live.length === 0) return NULL_LIT;
  if (live.length === 1 && live[0].type === type) return live[0];
  return { kind: 'coalesce', type, args: live };
}
