/**
 * Code generation: typed tree -> ONE JavaScript function per expression,
 * built with `new Function` at register time.
 *
 * Shape of the generated code (for `amount * 2 > 100 and country == 'US'`):
 *
 *   "use strict";
 *   const MAX = 9007199254740991, MIN = -9007199254740991;
 *   return function sf_expr(r) {
 *     let v0, v1, v2, v3, v4, v5;
 *     v0 = r["amount"]; if (!Number.isInteger(v0)) v0 = null;       // typed field read
 *     v1 = null; if (!(v0 === null)) { v1 = v0 * 2 + 0; if (v1 > MAX) v1 = MAX; else ... }
 *     v2 = v1 === null ? null : v1 > 100;
 *     if (v2 === false) v3 = false; else {                           // short-circuit 'and'
 *     v4 = r["country"]; if (typeof v4 !== "string") v4 = null;
 *     v5 = v4 === null ? null : v4 === "US";
 *     v3 = v5 === false ? false : v2 === null || v5 === null ? null : true; }
 *     return v3;                                                     // predicates: v3 === true
 *   };
 *
 * Every node writes one local; every operation is specialised by the static
 * types, so no per-row type dispatch, closure or allocation happens (apart from
 * strings built by `+`, lower/upper and casts to str). Field names and string
 * literals enter the source only through JSON.stringify, so no input can
 * inject code. A field value of the wrong runtime type reads as null, which is
 * why the function cannot throw.
 */
import type { FieldType, Row, Value } from '../types';
import type { TExpr } from './ast';
import { HELPERS, I64_MAX, type HelperName } from './runtime';
import { EXPRESSION_CACHE_ENTRIES } from '../limits';

/** `in` lists longer than this use a Set built once; shorter ones an `===` chain. */
const IN_CHAIN_MAX = 8;

export type CompiledFn = (row: Row) => Value;
export type CompiledPredicate = (row: Row) => boolean;

export function compileFn(e: TExpr): CompiledFn {
  return new Gen().build(e, false) as CompiledFn;
}

export function compilePredicateFn(e: TExpr): CompiledPredicate {
  return new Gen().build(e, true) as CompiledPredicate;
}

/** A JS number literal that keeps -0 and never prints in a form that re-parses differently. */
function num(n: number): string {
  if (Object.is(n, -0)) return '(-0)';
  return n < 0 ? `(${String(n)})` : String(n);
}

function lit(v: Value): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return num(v);
  return JSON.stringify(v);
}

/** Row value -> null unless it has the field's declared runtime type. */
function fieldGuard(type: FieldType, v: string): string {
  switch (type) {
    case 'i64':
    case 'datetime':
      return `if (!Number.isInteger(${v})) ${v} = null;`;
    case 'f64':
      return `if (typeof ${v} !== "number") ${v} = null;`;
    case 'str':
    case 'bytes':
      return `if (typeof ${v} !== "string") ${v} = null;`;
    case 'bool':
      return `if (typeof ${v} !== "boolean") ${v} = null;`;
  }
}

/** Atoms are locals (`v3`) or literals; only locals and the `null` literal can hold null. */
function mayBeNull(atom: string): boolean {
  return atom === 'null' || atom.charCodeAt(0) === 118 /* v */;
}

/** `a === null || b === null` over the atoms that may be null; '' when none may. */
function anyNull(...atoms: string[]): string {
  return atoms.filter(mayBeNull).map((a) => `${a} === null`).join(' || ');
}

/** `js` guarded so that a null operand gives null. */
function nullOr(js: string, ...atoms: string[]): string {
  const test = anyNull(...atoms);
  return test === '' ? js : `${test} ? null : ${js}`;
}

type Factory = (h: typeof HELPERS, c: unknown[]) => unknown;

/**
 * Generated source -> compiled factory, least recently used first. Every thread
 * compiles the whole registry on each register, and `new Function` is most of
 * an expression's compile cost: re-registering unchanged nodes (the common case)
 * then costs a type check and a string per expression. Constants travel in `C`,
 * so a factory is shared safely between registry versions.
 */
const FACTORIES = new Map<string, Factory>();

class Gen {
  private readonly out: string[];
  private vars: number;
  /** Constants (literals, Sets of `in` lists) passed to the factory as C[i]. */
  private readonly consts: unknown[];
  private readonly helpers: Set<HelperName>;

  constructor() {
    this.out = [];
    this.vars = 0;
    this.consts = [];
    this.helpers = new Set();
  }

  build(e: TExpr, predicate: boolean): unknown {
    const result = this.gen(e);
    const decls = this.vars === 0 ? '' : `  let ${Array.from({ length: this.vars }, (_, i) => `v${i}`).join(', ')};\n`;
    const helperDecls = [...this.helpers].map((h) => `const ${h} = H.${h};\n`).join('');
    const constDecls = this.consts.map((_, i) => `const c${i} = C[${i}];\n`).join('');
    const ret = predicate ? `${result} === true` : result;
    const source =
      `"use strict";\n${helperDecls}${constDecls}const MAX = ${I64_MAX}, MIN = ${-I64_MAX};\n` +
      `return function sf_expr(r) {\n${decls}${this.out.join('\n')}\n  return ${ret};\n};`;
    let factory = FACTORIES.get(source);
    if (factory === undefined) {
      factory = new Function('H', 'C', source) as Factory;
      if (FACTORIES.size >= EXPRESSION_CACHE_ENTRIES) FACTORIES.delete(FACTORIES.keys().next().value as string);
    } else FACTORIES.delete(source); // re-inserted below: most recently used last
    FACTORIES.set(source, factory);
    return factory(HELPERS, this.consts);
  }

  private tmp(): string {
    return `v${this.vars++}`;
  }

  private emit(line: string): void {
    this.out.push('  ' + line);
  }

  /**
   * Emits code for `e` (into `this.out`) and returns a JS atom holding its
   * value: a local name or a literal.
   */
  private gen(e: TExpr): string {
    switch (e.kind) {
      case 'lit':
        // Numbers and strings travel in C (not in the source): expressions that
        // differ only in their constants share one compiled factory (FACTORIES).
        if (typeof e.value === 'number' || typeof e.value === 'string') {
          this.consts.push(e.value);
          return `c${this.consts.length - 1}`;
        }
        return lit(e.value);
      case 'field': {
        const v = this.tmp();
        this.emit(`${v} = r[${JSON.stringify(e.name)}]; ${fieldGuard(e.type, v)}`);
        return v;
      }
      case 'neg': {
        const a = this.gen(e.arg);
        // 0 - a, not -a, for i64 so that negating 0 gives 0 rather than -0.
        return this.assign(nullOr(e.int ? `0 - ${a}` : `-${a}`, a));
      }
      case 'not': {
        const a = this.gen(e.arg);
        return this.assign(nullOr(`!${a}`, a));
      }
      case 'isnull': {
        const a = this.gen(e.arg);
        return this.assign(`${a} ${e.negated ? '!==' : '==='} null`);
      }
      case 'arith':
        return this.genArith(e);
      case 'cmp':
        return this.genCmp(e);
      case 'logic':
        return this.genLogic(e);
      case 'in':
        return this.genIn(e);
      case 'cast':
        return this.genCast(e);
      case 'coalesce':
        return this.genCoalesce(e.args);
      case 'abs': {
        const a = this.gen(e.arg);
        return this.assign(nullOr(`Math.abs(${a})`, a));
      }
      case 'case': {
        const a = this.gen(e.arg);
        return this.assign(nullOr(`${a}.${e.upper ? 'toUpperCase' : 'toLowerCase'}()`, a));
      }
      case 'length': {
        const h = e.bytes ? 'bytesLength' : 'strLength';
        this.helpers.add(h);
        return this.assign(`${h}(${this.gen(e.arg)})`);
      }
    }
  }

  private assign(js: string): string {
    const v = this.tmp();
    this.emit(`${v} = ${js};`);
    return v;
  }

  private genArith(e: Extract<TExpr, { kind: 'arith' }>): string {
    const a = this.gen(e.left);
    const b = this.gen(e.right);
    if (e.mode === 'concat') {
      this.helpers.add('concatStr');
      return this.assign(`concatStr(${a}, ${b})`);
    }
    if (e.mode !== 'int') return this.assign(nullOr(`${a} ${e.op} ${b}`, a, b));
    const v = this.tmp();
    // i64: `+ 0` turns -0 into 0; +,-,* saturate at the i64 (safe-integer) range,
    // which is exact because rounding is monotonic and 2^53 is representable.
    let body: string;
    switch (e.op) {
      case '/':
        body = `if (${b} !== 0) ${v} = Math.trunc(${a} / ${b}) + 0;`;
        break;
      case '%':
        body = `if (${b} !== 0) ${v} = ${a} % ${b} + 0;`;
        break;
      default:
        body = `${v} = ${a} ${e.op} ${b} + 0; if (${v} > MAX) ${v} = MAX; else if (${v} < MIN) ${v} = MIN;`;
    }
    const test = anyNull(a, b);
    this.emit(test === '' ? `${v} = null; ${body}` : `${v} = null; if (!(${test})) { ${body} }`);
    return v;
  }

  private genCmp(e: Extract<TExpr, { kind: 'cmp' }>): string {
    const a = this.gen(e.left);
    const b = this.gen(e.right);
    let test: string;
    if (e.op === '==') test = `${a} === ${b}`;
    else if (e.op !== '!=') test = `${a} ${e.op} ${b}`;
    // IEEE says NaN != x is true; our rule is that any comparison with NaN is false.
    else if (e.mode === 'num') test = `${a} !== ${b} && ${a} === ${a} && ${b} === ${b}`;
    else test = `${a} !== ${b}`;
    return this.assign(nullOr(test, a, b));
  }

  /** Short-circuit: the right side's code only runs when the left does not decide. */
  private genLogic(e: Extract<TExpr, { kind: 'logic' }>): string {
    const a = this.gen(e.left);
    const v = this.tmp();
    const decisive = e.op === 'and' ? 'false' : 'true';
    const other = e.op === 'and' ? 'true' : 'false';
    this.emit(`if (${a} === ${decisive}) ${v} = ${decisive}; else {`);
    const b = this.gen(e.right);
    const unknown = anyNull(a, b);
    this.emit(`${v} = ${b} === ${decisive} ? ${decisive} : ${unknown === '' ? other : `${unknown} ? null : ${other}`}; }`);
    return v;
  }

  private genIn(e: Extract<TExpr, { kind: 'in' }>): string {
    const a = this.gen(e.arg);
    let test: string;
    if (e.items.length <= IN_CHAIN_MAX) {
      test = e.items.map((x) => `${a} === ${lit(x)}`).join(' || ');
    } else {
      // SameValueZero: 0 and -0 match, as with ===; list items are never NaN.
      const c = `c${this.consts.length}`;
      this.consts.push(new Set(e.items));
      test = `${c}.has(${a})`;
    }
    return this.assign(nullOr(e.negated ? `!(${test})` : `(${test})`, a));
  }

  private genCast(e: Extract<TExpr, { kind: 'cast' }>): string {
    const a = this.gen(e.arg);
    const call = (h: HelperName): string => {
      this.helpers.add(h);
      return this.assign(`${h}(${a})`);
    };
    const ifSet = (js: string): string => this.assign(nullOr(js, a));
    switch (e.to) {
      case 'int':
        if (e.from === 'f64') return call('castFloatToInt');
        if (e.from === 'str') return call('castStrToInt');
        if (e.from === 'bool') return ifSet(`${a} ? 1 : 0`);
        return a; // datetime: epoch ms already
      case 'float':
        if (e.from === 'str') return call('castStrToFloat');
        if (e.from === 'bool') return ifSet(`${a} ? 1 : 0`);
        return a; // i64, datetime: already a number
      case 'str':
        if (e.from === 'datetime') return call('castDatetimeToStr');
        if (e.from === 'bool') return ifSet(`${a} ? "true" : "false"`);
        if (e.from === 'bytes') return a; // the base64 text
        return ifSet(`String(${a})`);
      case 'bool':
        if (e.from === 'str') return ifSet(`${a} === "true" ? true : ${a} === "false" ? false : null`);
        if (e.from === 'f64') return ifSet(`${a} !== 0 && ${a} === ${a}`);
        return ifSet(`${a} !== 0`); // i64, datetime
    }
  }

  /** Evaluates arguments lazily: the n-th runs only when all before it were null. */
  private genCoalesce(args: readonly TExpr[]): string {
    const v = this.tmp();
    let open = 0;
    for (let i = 0; i < args.length; i++) {
      const a = this.gen(args[i]);
      this.emit(`${v} = ${a};`);
      if (i < args.length - 1) {
        this.emit(`if (${v} === null) {`);
        open++;
      }
    }
    if (open > 0) this.emit('}'.repeat(open));
    return v;
  }
}
