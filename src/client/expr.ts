/**
 * Expression builder: `col('amount').gt(100).and(col('country').eq('US'))`
 * emits the server's expression string `((amount > 100) and (country == 'US'))`.
 *
 * Every binary sub-expression is parenthesised in the output, and `not` is
 * written `(not x)`. The server accepts ordinary infix too (docs/expressions.md),
 * but the fully parenthesised form reads the same under any precedence rules and
 * is also what beava requires (docs/compatibility.md), so a string we emit never
 * depends on operator precedence.
 *
 * Literals: strings single-quoted with `\\` and `\'` escapes; integers in plain
 * decimal; other finite numbers with a `.` in the mantissa (`1.5`, `1.0e-7`);
 * `true`, `false`, `null`. A non-finite number has no literal and throws.
 */

export type LiteralValue = string | number | boolean | null | bigint | Date;
export type ExprInput = Expr | LiteralValue;
/** Cast targets of spec 2.5. */
export type CastTarget = 'str' | 'int' | 'float' | 'bool';

export class Expr {
  /** The emitted expression text. */
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  toString(): string {
    return this.text;
  }

  toJSON(): string {
    return this.text;
  }

  // Comparisons.
  eq(other: ExprInput): Expr { return binary(this, '==', other); }
  ne(other: ExprInput): Expr { return binary(this, '!=', other); }
  lt(other: ExprInput): Expr { return binary(this, '<', other); }
  le(other: ExprInput): Expr { return binary(this, '<=', other); }
  gt(other: ExprInput): Expr { return binary(this, '>', other); }
  ge(other: ExprInput): Expr { return binary(this, '>=', other); }
  // Long names, for readers who prefer them.
  neq(other: ExprInput): Expr { return this.ne(other); }
  lte(other: ExprInput): Expr { return this.le(other); }
  gte(other: ExprInput): Expr { return this.ge(other); }

  // Arithmetic.
  add(other: ExprInput): Expr { return binary(this, '+', other); }
  sub(other: ExprInput): Expr { return binary(this, '-', other); }
  mul(other: ExprInput): Expr { return binary(this, '*', other); }
  div(other: ExprInput): Expr { return binary(this, '/', other); }
  mod(other: ExprInput): Expr { return binary(this, '%', other); }

  // Boolean logic.
  and(...others: ExprInput[]): Expr { return others.reduce<Expr>((acc, o) => binary(acc, 'and', o), this); }
  or(...others: ExprInput[]): Expr { return others.reduce<Expr>((acc, o) => binary(acc, 'or', o), this); }
  not(): Expr { return new Expr(`(not ${this.text})`); }

  // Functions.
  isNull(): Expr { return new Expr(`isnull(${this.text})`); }
  isNotNull(): Expr { return this.isNull().not(); }
  cast(target: CastTarget): Expr { return new Expr(`cast(${this.text}, ${target})`); }
  /** `(x in ('a', 'b'))`; an empty list has no literal form and throws. */
  isIn(values: readonly LiteralValue[]): Expr {
    if (values.length === 0) throw new TypeError('isIn() needs at least one value');
    return new Expr(`(${this.text} in (${values.map(literalText).join(', ')}))`);
  }
}

/** Column reference. The name is emitted as written (the server checks it exists). */
export function col(name: string): Expr {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('col() needs a non-empty column name');
  return new Expr(name);
}

/** Literal value. */
export function lit(value: LiteralValue): Expr {
  return new Expr(literalText(value));
}

/** A raw expression string, passed to the server verbatim. */
export function raw(text: string): Expr {
  return new Expr(text);
}

export function and(first: ExprInput, ...rest: ExprInput[]): Expr { return toExpr(first).and(...rest); }
export function or(first: ExprInput, ...rest: ExprInput[]): Expr { return toExpr(first).or(...rest); }
export function not(x: ExprInput): Expr { return toExpr(x).not(); }
export function isnull(x: ExprInput): Expr { return toExpr(x).isNull(); }
export function cast(x: ExprInput, target: CastTarget): Expr { return toExpr(x).cast(target); }

/**
 * Any function of the server's expression language by name, for those without
 * a method here: `fn('coalesce', col('discount'), 0.0)` -> `coalesce(discount, 0.0)`.
 */
export function fn(name: string, ...args: ExprInput[]): Expr {
  return new Expr(`${name}(${args.map((a) => toExpr(a).text).join(', ')})`);
}

/** An Expr as is; a literal as its literal text. */
export function toExpr(x: ExprInput): Expr {
  return x instanceof Expr ? x : lit(x);
}

/**
 * Expression text for a builder argument: an Expr gives its text, a string is a
 * raw expression written by the caller (not a string literal: use lit('x') for that).
 */
export function exprText(x: Expr | string): string {
  return typeof x === 'string' ? x : x.text;
}

function binary(left: Expr, op: string, right: ExprInput): Expr {
  return new Expr(`(${left.text} ${op} ${toExpr(right).text})`);
}

export function literalText(v: LiteralValue): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return quoteString(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'number':
      return numberText(v);
    default:
      if (v instanceof Date) return numberText(v.getTime());
      throw new TypeError(`no expression literal for ${String(v)}`);
  }
}

export function quoteString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Integers print as plain digits (never exponent form: the lexer reads `1e21`
 * as `1` then an identifier); other numbers keep a dot in the mantissa.
 */
export function numberText(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`no expression literal for ${n}`);
  if (Number.isInteger(n)) {
    if (Object.is(n, -0)) return '0';
    return Math.abs(n) < 1e21 ? String(n) : BigInt(n).toString();
  }
  const s = String(n);
  const e = s.indexOf('e');
  if (e < 0) return s;
  const mantissa = s.slice(0, e);
  const exponent = s.slice(e + 1);
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}e${exponent}`;
}
