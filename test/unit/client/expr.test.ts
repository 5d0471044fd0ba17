import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Expr, and, cast, col, fn, isnull, lit, not, or, raw } from '../../../src/client/expr';
import { numberText, quoteString } from '../../../src/client/expr';
import { prng } from './fake_servers';

test('golden expression strings', () => {
  assert.equal(col('amount').gt(100).text, '(amount > 100)');
  assert.equal(col('amount').gt(100).and(col('country').eq('US')).text, "((amount > 100) and (country == 'US'))");
  assert.equal(col('a').add(1).mul(col('b')).text, '((a + 1) * b)');
  assert.equal(col('a').add(col('b').mul(2)).text, '(a + (b * 2))');
  assert.equal(not(col('ok')).text, '(not ok)');
  assert.equal(col('x').isNull().text, 'isnull(x)');
  assert.equal(col('x').isNotNull().text, '(not isnull(x))');
  assert.equal(isnull('x').text, "isnull('x')", 'a bare string argument is a literal');
  assert.equal(cast(col('amount'), 'int').text, 'cast(amount, int)');
  assert.equal(col('country').isIn(['US', 'CA']).text, "(country in ('US', 'CA'))");
  assert.equal(col('n').mod(2).eq(0).text, '((n % 2) == 0)');
  assert.equal(and(col('a'), col('b'), col('c')).text, '((a and b) and c)');
  assert.equal(or(col('a').lt(1), col('a').ge(9)).text, '((a < 1) or (a >= 9))');
  assert.equal(col('a').ne(null).text, '(a != null)');
  assert.equal(col('a').le(-2.5).text, '(a <= -2.5)');
  assert.equal(col('flag').eq(true).text, '(flag == true)');
  assert.equal(raw('amount > 100').text, 'amount > 100');
  assert.equal(fn('coalesce', col('discount'), 0.5).div(col('price')).lt(0.5).text, '((coalesce(discount, 0.5) / price) < 0.5)');
  assert.equal(fn('length', fn('lower', col('email'))).gt(3).text, '(length(lower(email)) > 3)');
  assert.equal(String(col('a').sub(1).div(3)), '((a - 1) / 3)');
  assert.equal(JSON.stringify({ e: col('a').gt(1) }), '{"e":"(a > 1)"}');
  assert.equal(lit(new Date(1700000000000)).text, '1700000000000');
  assert.equal(lit(12345678901234567890n).text, '12345678901234567890');
});

test('string literals escape backslash and quote', () => {
  assert.equal(quoteString("it's"), "'it\\'s'");
  assert.equal(quoteString('a\\b'), "'a\\\\b'");
  assert.equal(quoteString("\\'"), "'\\\\\\''");
  assert.equal(col('s').eq("O'Brien").text, "(s == 'O\\'Brien')");
});

test('number literals never use bare exponent form', () => {
  assert.equal(numberText(0), '0');
  assert.equal(numberText(-0), '0');
  assert.equal(numberText(1e21), '1000000000000000000000');
  assert.equal(numberText(1e-7), '1.0e-7');
  assert.equal(numberText(1.5e-7), '1.5e-7');
  assert.equal(numberText(0.1), '0.1');
  assert.throws(() => numberText(NaN), TypeError);
  assert.throws(() => numberText(Infinity), TypeError);
  assert.throws(() => col('a').isIn([]), TypeError);
  assert.throws(() => col(''), TypeError);
});

// ---- Property test: emitted text parses back to the same tree --------------------

type Ast =
  | { t: 'col'; name: string }
  | { t: 'lit'; v: string | number | boolean | null }
  | { t: 'bin'; op: string; l: Ast; r: Ast }
  | { t: 'not'; x: Ast }
  | { t: 'isnull'; x: Ast }
  | { t: 'cast'; x: Ast; to: string }
  | { t: 'in'; x: Ast; values: Array<string | number> };

const BIN_OPS = ['==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', 'and', 'or'];
const METHOD: Record<string, keyof Expr> = {
  '==': 'eq', '!=': 'ne', '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge',
  '+': 'add', '-': 'sub', '*': 'mul', '/': 'div', '%': 'mod', and: 'and', or: 'or',
};
const CHARS = "ab'\\ xé\"()-,0";

function genString(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 6);
  for (let i = 0; i < n; i++) s += CHARS[Math.floor(r() * CHARS.length)];
  return s;
}

function genLit(r: () => number): string | number | boolean | null {
  const k = Math.floor(r() * 6);
  if (k === 0) return genString(r);
  if (k === 1) return Math.floor((r() - 0.5) * 1e6);
  if (k === 2) return (r() - 0.5) * 10 ** Math.floor(r() * 30 - 15);
  if (k === 3) return r() < 0.5;
  if (k === 4) return null;
  return Math.floor(r() * 10);
}

function gen(r: () => number, depth: number): Ast {
  const k = depth <= 0 ? Math.floor(r() * 2) : Math.floor(r() * 7);
  switch (k) {
    case 0: return { t: 'col', name: ['a', 'b_2', 'Txn.amount', 'country'][Math.floor(r() * 4)] };
    case 1: return { t: 'lit', v: genLit(r) };
    case 2: case 3: return { t: 'bin', op: BIN_OPS[Math.floor(r() * BIN_OPS.length)], l: gen(r, depth - 1), r: gen(r, depth - 1) };
    case 4: return { t: 'not', x: gen(r, depth - 1) };
    case 5: return r() < 0.5 ? { t: 'isnull', x: gen(r, depth - 1) } : { t: 'cast', x: gen(r, depth - 1), to: ['str', 'int', 'float', 'bool'][Math.floor(r() * 4)] };
    default: return { t: 'in', x: gen(r, depth - 1), values: [genString(r), Math.floor(r() * 100)].slice(0, 1 + Math.floor(r() * 2)) };
  }
}

function build(a: Ast): Expr {
  switch (a.t) {
    case 'col': return col(a.name);
    case 'lit': return lit(a.v);
    case 'bin': return (build(a.l)[METHOD[a.op]] as (o: Expr) => Expr).call(build(a.l), build(a.r));
    case 'not': return build(a.x).not();
    case 'isnull': return build(a.x).isNull();
    case 'cast': return build(a.x).cast(a.to as 'int');
    case 'in': return build(a.x).isIn(a.values);
  }
}

/** Naive reference reader of the fully parenthesised form (tokens, then recursive descent). */
function tokenize(s: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === ' ') { i++; continue; }
    if (c === "'") {
      let j = i + 1;
      let v = '';
      while (s[j] !== "'") {
        if (s[j] === '\\' && (s[j + 1] === '\\' || s[j + 1] === "'")) { v += s[j + 1]; j += 2; } else { v += s[j]; j++; }
        if (j >= s.length) throw new Error(`unterminated string in ${s}`);
      }
      out.push(`S${v}`);
      i = j + 1;
      continue;
    }
    if ('(),'.includes(c)) { out.push(c); i++; continue; }
    const m = /^(-?\d+(\.\d+)?(e[+-]?\d+)?|[A-Za-z_][A-Za-z0-9_.]*|==|!=|<=|>=|[<>+\-*/%])/.exec(s.slice(i));
    if (m === null) throw new Error(`bad char at ${i} in ${s}`);
    out.push(m[0]);
    i += m[0].length;
  }
  return out;
}

function parse(s: string): Ast {
  const toks = tokenize(s);
  let p = 0;
  const next = (): string => toks[p++];
  const expect = (t: string): void => assert.equal(next(), t, `expected ${t} in ${s}`);
  const atom = (): Ast => {
    const t = next();
    if (t === '(') {
      if (toks[p] === 'not') { p++; const x = atom(); expect(')'); return { t: 'not', x }; }
      const l = atom();
      const op = next();
      if (op === 'in') {
        expect('(');
        const values: Array<string | number> = [];
        for (;;) {
          const v = atom();
          assert.equal(v.t, 'lit');
          values.push((v as { v: string | number }).v);
          if (toks[p] === ',') { p++; continue; }
          break;
        }
        expect(')'); expect(')');
        return { t: 'in', x: l, values };
      }
      const r = atom();
      expect(')');
      return { t: 'bin', op, l, r };
    }
    if (t === 'isnull' && toks[p] === '(') { p++; const x = atom(); expect(')'); return { t: 'isnull', x }; }
    if (t === 'cast' && toks[p] === '(') { p++; const x = atom(); expect(','); const to = next(); expect(')'); return { t: 'cast', x, to }; }
    if (t.startsWith('S')) return { t: 'lit', v: t.slice(1) };
    if (t === 'true' || t === 'false') return { t: 'lit', v: t === 'true' };
    if (t === 'null') return { t: 'lit', v: null };
    if (/^-?\d/.test(t)) return { t: 'lit', v: Number(t) };
    return { t: 'col', name: t };
  };
  const a = atom();
  assert.equal(p, toks.length, `trailing tokens in ${s}`);
  return a;
}

function normalise(a: Ast): Ast {
  if (a.t === 'lit' && typeof a.v === 'number' && Object.is(a.v, -0)) return { t: 'lit', v: 0 };
  if (a.t === 'bin') return { ...a, l: normalise(a.l), r: normalise(a.r) };
  if (a.t === 'not' || a.t === 'isnull' || a.t === 'cast' || a.t === 'in') return { ...a, x: normalise(a.x) };
  return a;
}

test('property: every emitted expression reads back as the tree that built it', () => {
  const seed = Number(process.env.SEED ?? 20240611);
  const r = prng(seed);
  for (let i = 0; i < 2000; i++) {
    const ast = gen(r, 5);
    const text = build(ast).text;
    try {
      assert.deepEqual(parse(text), normalise(ast));
    } catch (e) {
      throw new Error(`seed ${seed}, case ${i}: ${text}\n${(e as Error).message}`);
    }
  }
});
