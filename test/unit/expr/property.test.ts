/**
 * Property test: random well-typed expressions, printed with random spacing,
 * aliases and parenthesisation, are compiled and run on random rows (with
 * nulls, missing fields and values of the wrong type); every answer must equal
 * that of the tree-walking reference interpreter below, which implements
 * docs/expressions.md independently (BigInt for i64 arithmetic, Buffer for
 * base64, the string iterator for code points, hand-written number parsers).
 *
 * Deterministic: seed from EXPR_SEED or the default; a failure prints the seed,
 * the source and the row.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SfError } from '../../../src/errors';
import { compileExpression, compilePredicate } from '../../../src/expr';
import type { FieldMap, FieldType, Row, Value } from '../../../src/types';
import { prng } from '../../harness/prng';

const SEED = Number(process.env.EXPR_SEED ?? 0x5eed2024);
const EXPRESSIONS = 4000;
const ROWS_PER_EXPRESSION = 24;
const MAX = Number.MAX_SAFE_INTEGER;

// ---------------------------------------------------------------------------
// PRNG (mulberry32) and helpers.

class Rng {
  private readonly s: () => number;
  constructor(seed: number) {
    this.s = prng(seed);
  }
  next(): number {
    return this.s();
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
}

// ---------------------------------------------------------------------------
// Schema and value pools (small pools so that equality and `in` hit often).

type T = FieldType | 'null';

const FIELDS: FieldMap = { i: 'i64', j: 'i64', f: 'f64', g: 'f64', s: 'str', t: 'str', b: 'bool', c: 'bool', d: 'datetime', e: 'datetime', y: 'bytes', z: 'bytes' };
const NAMES_BY_TYPE: Record<FieldType, string[]> = { i64: ['i', 'j'], f64: ['f', 'g'], str: ['s', 't'], bool: ['b', 'c'], datetime: ['d', 'e'], bytes: ['y', 'z'] };

const I64S = [0, 1, -1, 2, -2, 3, 5, 7, 10, -10, 100, 1000, 94906267, -94906267, 4503599627370496, MAX, -MAX, MAX - 1];
const F64S = [0, -0, 0.5, -0.5, 1.5, -2.5, 2.9, 3, 1e300, -1e300, 1e-300, NaN, Infinity, -Infinity, 0.1, 1e21, 123.456];
const STRS = ['', 'a', 'B', 'US', 'us', 'CA', 'héllo', 'ÀÉ', 'straße', '😀x', '\uD800', '42', '-7', '+3', '007', '1.5', '.5', '5.', '1e3', '-2.5e-3', '1e400', 'NaN', 'true', 'false', 'True', ' 5', 'a\'b"c\\d', 'line\nbreak\t', '9007199254740993'];
const T0 = Date.UTC(2024, 4, 1, 12);
const DTS = [0, -1, 1, T0, T0 + 1, T0 - 60000, T0 + 3600000, -62135596800000, 253402300799999, 9e15, -9e15];
const BYTES = ['', 'AA==', 'AAE=', 'AAEC', 'AAECAw==', 'AAECAwQ', '/w==', 'aGVsbG8='];

// ---------------------------------------------------------------------------
// Generated tree. Every node carries its static type `t` as the spec defines it.

type G =
  | { k: 'lit'; t: T; v: Value; text?: string }
  | { k: 'field'; t: T; name: string }
  | { k: 'neg'; t: T; a: G }
  | { k: 'not'; t: T; bang: boolean; a: G }
  | { k: 'arith'; t: T; op: string; a: G; b: G }
  | { k: 'cmp'; t: T; op: string; a: G; b: G }
  | { k: 'logic'; t: T; op: 'and' | 'or'; a: G; b: G }
  | { k: 'isnull'; t: T; form: 'eq' | 'ne' | 'fn' | 'eqr'; a: G }
  | { k: 'in'; t: T; neg: boolean; a: G; items: G[] }
  | { k: 'cast'; t: T; to: string; a: G }
  | { k: 'fn'; t: T; name: string; args: G[] };

const NULL: G = { k: 'lit', t: 'null', v: null };

class Gen {
  constructor(private readonly r: Rng) {}

  gen(t: FieldType, depth: number): G {
    if (depth <= 0 || this.r.chance(0.2)) return this.leaf(t);
    switch (t) {
      case 'i64':
        return this.genI64(depth - 1);
      case 'f64':
        return this.genF64(depth - 1);
      case 'str':
        return this.genStr(depth - 1);
      case 'bool':
        return this.genBool(depth - 1);
      case 'datetime':
        return this.genDatetime(depth - 1);
      case 'bytes':
        return this.r.chance(0.5) ? this.leaf('bytes') : { k: 'fn', t: 'bytes', name: 'coalesce', args: [this.gen('bytes', depth - 1), this.gen('bytes', depth - 1)] };
    }
  }

  leaf(t: FieldType): G {
    if (this.r.chance(0.6)) return { k: 'field', t, name: this.r.pick(NAMES_BY_TYPE[t]) };
    switch (t) {
      case 'i64':
        return { k: 'lit', t, v: this.r.pick(I64S) };
      case 'f64':
        return { k: 'lit', t, v: this.r.pick(F64S.filter(Number.isFinite)) };
      case 'str':
        return { k: 'lit', t, v: this.r.pick(STRS) };
      case 'bool':
        return { k: 'lit', t, v: this.r.chance(0.5) };
      case 'datetime':
      case 'bytes':
        return { k: 'field', t, name: this.r.pick(NAMES_BY_TYPE[t]) };
    }
  }

  private genI64(d: number): G {
    const r = this.r;
    switch (r.int(9)) {
      case 0:
      case 1:
        return { k: 'arith', t: 'i64', op: r.pick(['+', '-', '*', '/', '%']), a: this.gen('i64', d), b: this.gen('i64', d) };
      case 2:
        return { k: 'neg', t: 'i64', a: this.gen('i64', d) };
      case 3:
        return { k: 'fn', t: 'i64', name: 'abs', args: [this.gen('i64', d)] };
      case 4:
        return { k: 'fn', t: 'i64', name: 'length', args: [this.gen(r.pick(['str', 'bytes'] as const), d)] };
      case 5:
        return { k: 'cast', t: 'i64', to: 'int', a: this.gen(r.pick(['str', 'f64', 'bool', 'datetime', 'i64'] as const), d) };
      case 6:
        return { k: 'fn', t: 'i64', name: 'coalesce', args: this.list(r.int(3), () => (r.chance(0.2) ? NULL : this.gen('i64', d))).concat([this.gen('i64', d)]) };
      case 7:
        return { k: 'arith', t: 'i64', op: '-', a: this.gen('datetime', d), b: this.gen('datetime', d) };
      default:
        return r.chance(0.5)
          ? { k: 'arith', t: 'i64', op: r.pick(['+', '-', '*', '/', '%']), a: this.gen('i64', d), b: NULL }
          : { k: 'arith', t: 'i64', op: r.pick(['+', '*']), a: NULL, b: this.gen('i64', d) };
    }
  }

  private genF64(d: number): G {
    const r = this.r;
    const ops = ['+', '-', '*', '/', '%'];
    switch (r.int(8)) {
      case 0:
        return { k: 'arith', t: 'f64', op: r.pick(ops), a: this.gen('f64', d), b: this.gen('f64', d) };
      case 1:
        return { k: 'arith', t: 'f64', op: r.pick(ops), a: this.gen('i64', d), b: this.gen('f64', d) };
      case 2:
        return { k: 'arith', t: 'f64', op: r.pick(ops), a: this.gen('f64', d), b: this.gen('i64', d) };
      case 3:
        return { k: 'neg', t: 'f64', a: this.gen('f64', d) };
      case 4:
        return { k: 'fn', t: 'f64', name: 'abs', args: [this.gen('f64', d)] };
      case 5:
        return { k: 'cast', t: 'f64', to: 'float', a: this.gen(r.pick(['str', 'i64', 'bool', 'datetime', 'f64'] as const), d) };
      case 6: {
        const args = this.list(1 + r.int(3), () => this.gen(r.pick(['i64', 'f64'] as const), d));
        args.splice(r.int(args.length + 1), 0, this.gen('f64', d));
        return { k: 'fn', t: 'f64', name: 'coalesce', args };
      }
      default:
        return { k: 'arith', t: 'f64', op: r.pick(ops), a: this.gen('f64', d), b: NULL };
    }
  }

  private genStr(d: number): G {
    const r = this.r;
    switch (r.int(5)) {
      case 0:
        return { k: 'arith', t: 'str', op: '+', a: this.gen('str', d), b: r.chance(0.1) ? NULL : this.gen('str', d) };
      case 1:
        return { k: 'fn', t: 'str', name: r.pick(['lower', 'upper']), args: [this.gen('str', d)] };
      case 2:
        return { k: 'cast', t: 'str', to: 'str', a: this.gen(r.pick(['i64', 'f64', 'bool', 'datetime', 'bytes', 'str'] as const), d) };
      case 3:
        return { k: 'fn', t: 'str', name: 'coalesce', args: this.list(1 + r.int(3), () => (r.chance(0.2) ? NULL : this.gen('str', d))).concat([this.gen('str', d)]) };
      default:
        return { k: 'cast', t: 'str', to: 'str', a: NULL };
    }
  }

  private genDatetime(d: number): G {
    const r = this.r;
    switch (r.int(4)) {
      case 0:
        return { k: 'arith', t: 'datetime', op: r.pick(['+', '-']), a: this.gen('datetime', d), b: this.gen('i64', d) };
      case 1:
        return { k: 'arith', t: 'datetime', op: '+', a: this.gen('i64', d), b: this.gen('datetime', d) };
      case 2:
        return { k: 'fn', t: 'datetime', name: 'coalesce', args: [this.gen('datetime', d), this.gen('datetime', d)] };
      default:
        return r.chance(0.5)
          ? { k: 'arith', t: 'datetime', op: r.pick(['+', '-']), a: this.gen('datetime', d), b: NULL }
          : { k: 'arith', t: 'datetime', op: '+', a: NULL, b: this.gen('datetime', d) };
    }
  }

  private genBool(d: number): G {
    const r = this.r;
    switch (r.int(11)) {
      case 0:
      case 1:
        return this.genCmp(d);
      case 2:
      case 3:
        return { k: 'logic', t: 'bool', op: r.pick(['and', 'or'] as const), a: this.gen('bool', d), b: r.chance(0.1) ? NULL : this.gen('bool', d) };
      case 4:
        return { k: 'not', t: 'bool', bang: r.chance(0.5), a: this.gen('bool', d) };
      case 5:
        return { k: 'isnull', t: 'bool', form: r.pick(['eq', 'ne', 'fn', 'eqr'] as const), a: this.gen(this.anyType(), d) };
      case 6:
      case 7:
        return this.genIn(d);
      case 8:
        return { k: 'cast', t: 'bool', to: 'bool', a: this.gen(r.pick(['str', 'i64', 'f64', 'datetime', 'bool'] as const), d) };
      case 9:
        return { k: 'cmp', t: 'bool', op: r.pick(['<', '<=', '>', '>=']), a: this.gen(this.anyType(), d), b: NULL };
      default:
        return { k: 'logic', t: 'bool', op: r.pick(['and', 'or'] as const), a: NULL, b: this.gen('bool', d) };
    }
  }

  private anyType(): FieldType {
    return this.r.pick(['i64', 'f64', 'str', 'bool', 'datetime', 'bytes'] as const);
  }

  private genCmp(d: number): G {
    const r = this.r;
    const all = ['==', '!=', '<', '<=', '>', '>='];
    const pairs: [FieldType, FieldType][] = [
      ['i64', 'i64'], ['i64', 'f64'], ['f64', 'f64'], ['f64', 'i64'], ['str', 'str'], ['bool', 'bool'],
      ['datetime', 'datetime'], ['datetime', 'i64'], ['f64', 'datetime'], ['bytes', 'bytes'], ['bytes', 'str'], ['str', 'bytes'],
    ];
    const [ta, tb] = r.pick(pairs);
    const eqOnly = ta === 'bytes' || tb === 'bytes';
    const op = r.pick(eqOnly ? ['==', '!='] : all);
    if (ta === 'datetime' && tb === 'datetime' && r.chance(0.4)) {
      // A datetime against an RFC 3339 string literal.
      const lit = this.dtLiteral();
      return r.chance(0.5) ? { k: 'cmp', t: 'bool', op, a: this.gen('datetime', d), b: lit } : { k: 'cmp', t: 'bool', op, a: lit, b: this.gen('datetime', d) };
    }
    return { k: 'cmp', t: 'bool', op, a: this.gen(ta, d), b: this.gen(tb, d) };
  }

  private dtLiteral(): G {
    const ms = this.r.pick(DTS.filter((x) => Math.abs(x) <= 253402300799999 && x >= -62135596800000));
    const iso = new Date(ms).toISOString();
    return { k: 'lit', t: 'datetime', v: ms, text: this.r.chance(0.5) ? iso : iso.replace('Z', '+00:00') };
  }

  private genIn(d: number): G {
    const r = this.r;
    const t = r.pick(['i64', 'f64', 'str', 'bool', 'datetime', 'bytes'] as const);
    const n = 1 + r.int(12);
    const items: G[] = [];
    for (let k = 0; k < n; k++) {
      switch (t) {
        case 'i64':
        case 'f64':
          items.push(r.chance(0.5) ? { k: 'lit', t: 'i64', v: r.pick(I64S) } : { k: 'lit', t: 'f64', v: r.pick(F64S.filter(Number.isFinite)) });
          break;
        case 'str':
          items.push({ k: 'lit', t: 'str', v: r.pick(STRS) });
          break;
        case 'bool':
          items.push({ k: 'lit', t: 'bool', v: r.chance(0.5) });
          break;
        case 'datetime':
          items.push(r.chance(0.5) ? this.dtLiteral() : { k: 'lit', t: 'i64', v: r.pick(DTS) });
          break;
        case 'bytes':
          items.push({ k: 'lit', t: 'str', v: r.pick(BYTES) });
          break;
      }
    }
    return { k: 'in', t: 'bool', neg: r.chance(0.4), a: r.chance(0.05) ? NULL : this.gen(t, d), items };
  }

  private list(n: number, f: () => G): G[] {
    return Array.from({ length: n }, f);
  }
}

// ---------------------------------------------------------------------------
// Printer: minimal parentheses from the documented precedence table, or extra
// parentheses at random; random aliases, quoting and spacing.

const PREC_OR = 1;
const PREC_AND = 2;
const PREC_NOT = 3;
const PREC_CMP = 4;
const PREC_ADD = 5;
const PREC_MUL = 6;
const PREC_UNARY = 7;
const PREC_ATOM = 8;

class Printer {
  constructor(private readonly r: Rng) {}

  print(g: G): string {
    return this.p(g).text;
  }

  private sp(): string {
    return this.r.chance(0.1) ? '  ' : ' ';
  }

  private wrap(x: { text: string; prec: number }, min: number): string {
    return x.prec < min || this.r.chance(0.1) ? `(${x.text})` : x.text;
  }

  private p(g: G): { text: string; prec: number } {
    switch (g.k) {
      case 'lit':
        return { text: g.text !== undefined ? this.str(g.text) : this.lit(g.t, g.v), prec: typeof g.v === 'number' && (g.v < 0 || Object.is(g.v, -0)) ? PREC_UNARY : PREC_ATOM };
      case 'field':
        return { text: this.r.chance(0.1) ? `\`${g.name}\`` : g.name, prec: PREC_ATOM };
      case 'neg':
        return { text: `-${this.r.chance(0.3) ? ' ' : ''}${this.wrap(this.p(g.a), PREC_UNARY)}`, prec: PREC_UNARY };
      case 'not':
        return g.bang ? { text: `!${this.wrap(this.p(g.a), PREC_UNARY)}`, prec: PREC_UNARY } : { text: `not ${this.wrap(this.p(g.a), PREC_NOT)}`, prec: PREC_NOT };
      case 'arith': {
        const prec = g.op === '+' || g.op === '-' ? PREC_ADD : PREC_MUL;
        return { text: `${this.wrap(this.p(g.a), prec)}${this.sp()}${g.op}${this.sp()}${this.wrap(this.p(g.b), prec + 1)}`, prec };
      }
      case 'cmp':
        return { text: `${this.wrap(this.p(g.a), PREC_ADD)} ${g.op} ${this.wrap(this.p(g.b), PREC_ADD)}`, prec: PREC_CMP };
      case 'logic': {
        const prec = g.op === 'and' ? PREC_AND : PREC_OR;
        const word = this.r.chance(0.3) ? (g.op === 'and' ? '&&' : '||') : g.op;
        return { text: `${this.wrap(this.p(g.a), prec)} ${word} ${this.wrap(this.p(g.b), prec + 1)}`, prec };
      }
      case 'isnull': {
        if (g.form === 'fn') return { text: `isnull(${this.p(g.a).text})`, prec: PREC_ATOM };
        const a = this.wrap(this.p(g.a), PREC_ADD);
        if (g.form === 'eqr') return { text: `null == ${a}`, prec: PREC_CMP };
        return { text: `${a} ${g.form === 'eq' ? '==' : '!='} null`, prec: PREC_CMP };
      }
      case 'in':
        return { text: `${this.wrap(this.p(g.a), PREC_ADD)} ${g.neg ? 'not in' : 'in'} (${g.items.map((x) => this.p(x).text).join(', ')})`, prec: PREC_CMP };
      case 'cast': {
        const target = this.r.chance(0.3) ? this.str(g.to) : g.to;
        return { text: `cast(${this.p(g.a).text}, ${target})`, prec: PREC_ATOM };
      }
      case 'fn':
        return { text: `${g.name}(${g.args.map((x) => this.p(x).text).join(',' + this.sp())})`, prec: PREC_ATOM };
    }
  }

  private lit(t: T, v: Value): string {
    if (v === null) return 'null';
    if (typeof v === 'boolean') return String(v);
    if (typeof v === 'string') return this.str(v);
    if (t === 'f64') {
      if (Object.is(v, -0)) return '-0.0';
      const s = String(v);
      return /[.e]/.test(s) ? s : `${s}.0`;
    }
    return String(v);
  }

  /** A string literal with random quote style; escapes only what must be escaped, plus some at random. */
  private str(s: string): string {
    const q = this.r.chance(0.5) ? "'" : '"';
    let out = q;
    for (const ch of s) {
      const cp = ch.codePointAt(0) as number;
      if (ch === q || ch === '\\') out += '\\' + ch;
      else if (ch === '\n') out += '\\n';
      else if (ch === '\t') out += this.r.chance(0.5) ? '\\t' : '\t';
      else if (cp > 127 && this.r.chance(0.5)) out += cp > 0xffff || this.r.chance(0.5) ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += ch;
    }
    return out + q;
  }
}

// ---------------------------------------------------------------------------
// Reference interpreter over the generated tree.

function clampBig(x: bigint): number {
  const max = BigInt(MAX);
  return Number(x > max ? max : x < -max ? -max : x);
}

function readField(t: FieldType, v: unknown): Value {
  switch (t) {
    case 'i64':
    case 'datetime':
      return typeof v === 'number' && Number.isFinite(v) && Math.floor(v) === v ? v : null;
    case 'f64':
      return typeof v === 'number' ? v : null;
    case 'str':
    case 'bytes':
      return typeof v === 'string' ? v : null;
    case 'bool':
      return typeof v === 'boolean' ? v : null;
  }
}

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (const ch of s) if (ch < '0' || ch > '9') return false;
  return true;
}

function refStrToInt(s: string): number | null {
  const body = s[0] === '+' || s[0] === '-' ? s.slice(1) : s;
  if (!isDigits(body)) return null;
  const v = BigInt(s[0] === '+' ? body : s);
  return v > BigInt(MAX) || v < -BigInt(MAX) ? null : Number(v);
}

function refStrToFloat(s: string): number | null {
  const body = s[0] === '+' || s[0] === '-' ? s.slice(1) : s;
  const parts = body.split(/[eE]/);
  if (parts.length > 2) return null;
  const [mant, exp] = parts;
  if (exp !== undefined) {
    const e = exp[0] === '+' || exp[0] === '-' ? exp.slice(1) : exp;
    if (!isDigits(e)) return null;
  }
  const dot = mant.split('.');
  if (dot.length > 2) return null;
  const [whole, frac] = dot;
  if (!(whole === '' || isDigits(whole)) || !(frac === undefined || frac === '' || isDigits(frac))) return null;
  if (whole === '' && (frac === undefined || frac === '')) return null;
  return Number(s);
}

function refCast(from: T, to: string, v: Value): Value {
  if (v === null) return null;
  switch (to) {
    case 'int':
      if (from === 'str') return refStrToInt(v as string);
      if (from === 'bool') return v ? 1 : 0;
      if (from === 'f64') return Number.isFinite(v) ? clampBig(BigInt(Math.trunc(v as number))) : null;
      return v;
    case 'float':
      if (from === 'str') return refStrToFloat(v as string);
      if (from === 'bool') return v ? 1 : 0;
      return v;
    case 'str': {
      if (from === 'bool') return v ? 'true' : 'false';
      if (from === 'datetime') {
        const dt = new Date(v as number);
        return Number.isNaN(dt.getTime()) ? null : dt.toISOString();
      }
      if (from === 'i64' || from === 'f64') return `${v as number}`;
      return v;
    }
    default:
      if (from === 'str') return v === 'true' ? true : v === 'false' ? false : null;
      if (from === 'bool') return v;
      return !(v === 0 || Number.isNaN(v));
  }
}

function refCmp(op: string, a: Value, b: Value): Value {
  if (a === null || b === null) return null;
  if (typeof a === 'number' && typeof b === 'number' && (Number.isNaN(a) || Number.isNaN(b))) return false;
  const x = typeof a === 'boolean' ? Number(a) : a;
  const y = typeof b === 'boolean' ? Number(b) : b;
  switch (op) {
    case '==':
      return x === y;
    case '!=':
      return x !== y;
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}

function refArith(g: Extract<G, { k: 'arith' }>, a: Value, b: Value): Value {
  if (a === null || b === null) return null;
  if (g.t === 'str') return (a as string) + (b as string);
  if (g.t === 'f64') {
    const x = a as number;
    const y = b as number;
    return g.op === '+' ? x + y : g.op === '-' ? x - y : g.op === '*' ? x * y : g.op === '/' ? x / y : x % y;
  }
  const x = BigInt(a as number);
  const y = BigInt(b as number);
  if ((g.op === '/' || g.op === '%') && y === 0n) return null;
  return clampBig(g.op === '+' ? x + y : g.op === '-' ? x - y : g.op === '*' ? x * y : g.op === '/' ? x / y : x % y);
}

function ref(g: G, row: Row): Value {
  switch (g.k) {
    case 'lit':
      return g.v;
    case 'field':
      return readField(FIELDS[g.name], row[g.name]);
    case 'neg': {
      const a = ref(g.a, row);
      if (a === null) return null;
      return g.t === 'i64' ? clampBig(-BigInt(a as number)) : -(a as number);
    }
    case 'not': {
      const a = ref(g.a, row);
      return a === null ? null : !a;
    }
    case 'arith':
      return refArith(g, ref(g.a, row), ref(g.b, row));
    case 'cmp':
      return refCmp(g.op, ref(g.a, row), ref(g.b, row));
    case 'logic': {
      const a = ref(g.a, row);
      const b = ref(g.b, row);
      const dominant = g.op === 'and' ? false : true;
      if (a === dominant || b === dominant) return dominant;
      return a === null || b === null ? null : !dominant;
    }
    case 'isnull': {
      const isNull = ref(g.a, row) === null;
      return g.form === 'ne' ? !isNull : isNull;
    }
    case 'in': {
      const a = ref(g.a, row);
      if (a === null) return null;
      let found = false;
      for (const item of g.items) if (refCmp('==', a, (item as Extract<G, { k: 'lit' }>).v) === true) found = true;
      return g.neg ? !found : found;
    }
    case 'cast':
      return refCast(g.a.t, g.to, ref(g.a, row));
    case 'fn':
      return refFn(g, row);
  }
}

function refFn(g: Extract<G, { k: 'fn' }>, row: Row): Value {
  if (g.name === 'coalesce') {
    for (const a of g.args) {
      const v = ref(a, row);
      if (v !== null) return v;
    }
    return null;
  }
  const a = ref(g.args[0], row);
  if (a === null) return null;
  switch (g.name) {
    case 'abs':
      return g.t === 'i64' ? clampBig((a as number) < 0 ? -BigInt(a as number) : BigInt(a as number)) : Math.abs(a as number);
    case 'lower':
      return (a as string).toLowerCase();
    case 'upper':
      return (a as string).toUpperCase();
    default:
      return g.args[0].t === 'bytes' ? Buffer.from(a as string, 'base64').length : [...(a as string)].length;
  }
}

function fieldsOf(g: G, out: Set<string>): Set<string> {
  if (g.k === 'field') out.add(g.name);
  for (const key of ['a', 'b'] as const) if (key in g) fieldsOf((g as unknown as Record<string, G>)[key], out);
  if (g.k === 'fn') for (const a of g.args) fieldsOf(a, out);
  return out;
}

// ---------------------------------------------------------------------------
// Random rows.

function randomValue(r: Rng, t: FieldType): unknown {
  switch (t) {
    case 'i64':
      return r.chance(0.7) ? r.pick(I64S) : r.int(2001) - 1000;
    case 'f64':
      return r.chance(0.7) ? r.pick(F64S) : (r.next() - 0.5) * 1000;
    case 'str':
      return r.pick(STRS);
    case 'bool':
      return r.chance(0.5);
    case 'datetime':
      return r.chance(0.7) ? r.pick(DTS) : T0 + r.int(7200000) - 3600000;
    case 'bytes':
      return r.chance(0.7) ? r.pick(BYTES) : Buffer.from(Array.from({ length: r.int(9) }, () => r.int(256))).toString('base64');
  }
}

/** A value of some other type, to check that wrong runtime types read as null. */
function wrongValue(r: Rng, t: FieldType): unknown {
  const pool: unknown[] = [1.5, 'x', '5', true, 7, {}, [], -0.25];
  for (;;) {
    const v = r.pick(pool);
    if (readField(t, v) === null) return v;
  }
}

function randomRow(r: Rng): Row {
  const row: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(FIELDS)) {
    const u = r.next();
    if (u < 0.7) row[name] = randomValue(r, t);
    else if (u < 0.8) row[name] = null;
    else if (u < 0.85) row[name] = wrongValue(r, t);
    // else: missing
  }
  return row as Row;
}

// ---------------------------------------------------------------------------

test(`compiled expressions agree with the reference interpreter (seed ${SEED})`, () => {
  const r = new Rng(SEED);
  const gen = new Gen(r);
  const printer = new Printer(r);
  const types: FieldType[] = ['i64', 'f64', 'str', 'bool', 'datetime', 'bytes'];
  let checked = 0;
  for (let n = 0; n < EXPRESSIONS; n++) {
    const type = types[n % types.length];
    const g = gen.gen(type, 1 + r.int(6));
    const src = printer.print(g);
    const where = `seed=${SEED} case=${n} src=${src}`;
    let compiled;
    try {
      compiled = compileExpression(src, FIELDS);
    } catch (err) {
      assert.fail(`${where}: did not compile: ${(err as Error).message}`);
    }
    assert.equal(compiled.type, g.t, `${where}: static type`);
    assert.deepEqual(compiled.fields, [...fieldsOf(g, new Set())].sort(), `${where}: fields`);
    const pred = type === 'bool' ? compilePredicate(src, FIELDS) : null;
    for (let k = 0; k < ROWS_PER_EXPRESSION; k++) {
      const row = randomRow(r);
      const want = ref(g, row);
      const got: Value = compiled.fn(row);
      if (!Object.is(got, want)) {
        assert.fail(`${where} row=${JSON.stringify(row)}: got ${String(got)}, reference ${String(want)}`);
      }
      if (pred !== null) assert.equal(pred(row), want === true, `${where}: predicate`);
      checked++;
    }
  }
  assert.equal(checked, EXPRESSIONS * ROWS_PER_EXPRESSION);
});

test(`random token soup either compiles or fails with a coded, located error (seed ${SEED})`, () => {
  const r = new Rng(SEED ^ 0xabcdef);
  const parts = [
    'i', 'j', 'f', 's', 'b', 'd', 'y', 'zz', '`i`', '1', '0', '2.5', '1e3', "'a'", '"US"', 'true', 'false', 'null',
    '+', '-', '*', '/', '%', '==', '!=', '<', '<=', '>', '>=', '=', '!', '&&', '||', '&', 'and', 'or', 'not', 'in',
    '(', ')', ',', 'cast', 'int', 'str', 'i64', 'isnull', 'coalesce', 'abs', 'lower', 'length', 'nope', '.', '#', "'", '`', '\\',
  ];
  const codes = new Set(['invalid_expression', 'unknown_field_reference', 'schema_mismatch', 'invalid_cast_target']);
  const row = randomRow(r);
  let ok = 0;
  for (let n = 0; n < 3000; n++) {
    const len = 1 + r.int(12);
    let src = '';
    for (let k = 0; k < len; k++) src += r.pick(parts) + (r.chance(0.7) ? ' ' : '');
    try {
      const c = compileExpression(src, FIELDS);
      c.fn(row);
      c.fn({});
      ok++;
    } catch (err) {
      assert.ok(err instanceof SfError, `seed=${SEED} src=${src}: ${String(err)}`);
      assert.ok(codes.has(err.code), `seed=${SEED} src=${src}: code ${err.code}`);
      assert.match(err.message, /^at column \d+: /, `seed=${SEED} src=${src}`);
    }
  }
  assert.ok(ok > 0, 'some random inputs should compile');
});
