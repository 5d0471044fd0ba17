import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileExpression, compilePredicate } from '../../../src/expr';
import { parseRfc3339 } from '../../../src/expr/runtime';
import type { FieldMap, Row, Value } from '../../../src/types';

const F: FieldMap = { i: 'i64', j: 'i64', f: 'f64', g: 'f64', s: 'str', t: 'str', b: 'bool', c: 'bool', d: 'datetime', e: 'datetime', y: 'bytes' };

function ev(src: string, row: Row = {}): Value {
  return compileExpression(src, F).fn(row);
}

const MAX = Number.MAX_SAFE_INTEGER;
const TRI: (boolean | null)[] = [true, false, null];
/** A bool-typed field row value for each truth value (null as missing field). */
function boolRow(x: boolean | null, y: boolean | null): Row {
  const r: Row = {};
  if (x !== null) r.b = x;
  if (y !== null) r.c = y;
  return r;
}

test('three-valued and / or / not truth tables', () => {
  const and = (x: boolean | null, y: boolean | null): boolean | null => (x === false || y === false ? false : x === true && y === true ? true : null);
  const or = (x: boolean | null, y: boolean | null): boolean | null => (x === true || y === true ? true : x === false && y === false ? false : null);
  for (const x of TRI) {
    for (const y of TRI) {
      const r = boolRow(x, y);
      assert.equal(ev('b and c', r), and(x, y), `${x} and ${y}`);
      assert.equal(ev('b && c', r), and(x, y), `${x} && ${y}`);
      assert.equal(ev('b or c', r), or(x, y), `${x} or ${y}`);
      assert.equal(ev('b || c', r), or(x, y), `${x} || ${y}`);
      // Literal forms go through the same code.
      assert.equal(ev(`${x} and ${y}`), and(x, y));
      assert.equal(ev(`${x} or ${y}`), or(x, y));
    }
    assert.equal(ev('not b', boolRow(x, null)), x === null ? null : !x);
    assert.equal(ev('!b', boolRow(x, null)), x === null ? null : !x);
  }
});

test('predicates keep a row only on exactly true', () => {
  const p = compilePredicate('b and c', F);
  assert.equal(p(boolRow(true, true)), true);
  assert.equal(p(boolRow(true, null)), false);
  assert.equal(p(boolRow(false, null)), false);
  assert.equal(compilePredicate('null', F)({}), false);
  assert.equal(compilePredicate('i > 1', F)({ i: 'oops' }), false);
});

test('null operands: arithmetic and comparisons give null, null tests never do', () => {
  for (const src of ['i + 1', 'i * j', 'f / 2', 's + t', 'i > 1', 'i == j', 's < t', 'f != 1', '-i', 'abs(f)', 'lower(s)', 'length(s)', 'cast(s, int)', 'd - e', 'i in (1, 2)', 'i not in (1, 2)']) {
    assert.equal(ev(src, {}), null, src);
    assert.equal(ev(src, { i: null, j: null, f: null, s: null, t: null, d: null, e: null }), null, src);
  }
  assert.equal(ev('i == null', {}), true);
  assert.equal(ev('i == null', { i: 0 }), false);
  assert.equal(ev('null == i', { i: null }), true);
  assert.equal(ev('i != null', { i: 3 }), true);
  assert.equal(ev('i != null', {}), false);
  assert.equal(ev('null == null'), true);
  assert.equal(ev('null != null'), false);
  assert.equal(ev('i < null', { i: 1 }), null);
  assert.equal(ev('isnull(s)', {}), true);
  assert.equal(ev('isnull(s)', { s: '' }), false);
  assert.equal(ev('isnull(i + 1)', { i: 1 }), false);
  assert.equal(ev('isnull(i / 0)', { i: 1 }), true);
  assert.equal(ev('null'), null);
  assert.equal(ev('null + 1'), null);
});

test('values of the wrong runtime type read as null; evaluation never throws', () => {
  assert.equal(ev('i + 1', { i: '5' }), null);
  assert.equal(ev('i + 1', { i: 1.5 }), null);
  assert.equal(ev('i == null', { i: true }), true);
  assert.equal(ev('f * 2', { f: '2' }), null);
  assert.equal(ev('s + t', { s: 1, t: 'x' }), null);
  assert.equal(ev('not b', { b: 'true' as Value }), null);
  assert.equal(ev('d > 0', { d: '2024-01-01' }), null);
  assert.equal(ev('length(y)', { y: 12 }), null);
  assert.equal(ev('lower(s)', { s: { toLowerCase: 1 } as unknown as Value }), null);
  const weird: unknown[] = [undefined, null, 0, -0, 1.5, NaN, Infinity, '', 'x', true, false, {}, [], Symbol('s'), 10n, () => 1];
  const all = compileExpression(
    "coalesce(cast(s, int), i, 0) + length(lower(s)) > abs(f) or y == 'AA' and d - e > 0 and b != c or t in ('a', 'b')",
    F,
  );
  for (const w of weird) {
    const row = Object.fromEntries(Object.keys(F).map((k) => [k, w])) as Row;
    assert.doesNotThrow(() => all.fn(row));
  }
});

test('integer arithmetic: truncating division, modulo, division by zero, saturation, no -0', () => {
  assert.equal(ev('7 / 2'), 3);
  assert.equal(ev('-7 / 2'), -3);
  assert.equal(ev('7 / -2'), -3);
  assert.equal(ev('7 % 3'), 1);
  assert.equal(ev('-7 % 3'), -1);
  assert.equal(ev('7 % -3'), 1);
  assert.equal(ev('i / j', { i: 5, j: 0 }), null);
  assert.equal(ev('i % j', { i: 5, j: 0 }), null);
  assert.equal(ev('i / 0', { i: 0 }), null);
  assert.ok(Object.is(ev('i * j', { i: 0, j: -5 }), 0));
  assert.ok(Object.is(ev('i / j', { i: -1, j: 5 }), 0));
  assert.ok(Object.is(ev('i % j', { i: -5, j: 5 }), 0));
  assert.ok(Object.is(ev('-i', { i: 0 }), 0));
  assert.equal(ev('i + 1', { i: MAX }), MAX);
  assert.equal(ev('i - 1', { i: -MAX }), -MAX);
  assert.equal(ev('i * j', { i: MAX, j: -2 }), -MAX);
  assert.equal(ev('i * j', { i: 94906267, j: 94906267 }), MAX); // 9007199515875289 > MAX
  assert.equal(ev('i * j', { i: 94906265, j: 94906265 }), 9007199136250225);
  assert.equal(ev('i / j', { i: MAX, j: 3 }), 3002399751580330);
  assert.equal(ev('i / j', { i: MAX - 1, j: MAX }), 0);
  assert.equal(ev('-i', { i: -MAX }), MAX);
  assert.equal(ev('abs(i)', { i: -MAX }), MAX);
});

test('float arithmetic is IEEE; NaN compares false, even with !=', () => {
  assert.equal(ev('f / 0', { f: 1 }), Infinity);
  assert.equal(ev('f / 0', { f: -1 }), -Infinity);
  assert.ok(Number.isNaN(ev('f / 0', { f: 0 }) as number));
  assert.ok(Number.isNaN(ev('f % 0', { f: 3 }) as number));
  assert.equal(ev('7 / 2.0'), 3.5);
  assert.equal(ev('i / 2.0', { i: 7 }), 3.5);
  assert.equal(ev('5.5 % 2'), 1.5);
  assert.ok(Object.is(ev('-f', { f: 0 }), -0));
  const nan = { f: NaN, g: NaN, i: 1 };
  for (const op of ['==', '!=', '<', '<=', '>', '>=']) {
    assert.equal(ev(`f ${op} g`, nan), false, `NaN ${op} NaN`);
    assert.equal(ev(`f ${op} i`, nan), false, `NaN ${op} 1`);
    assert.equal(ev(`i ${op} f`, nan), false, `1 ${op} NaN`);
  }
  assert.equal(ev('f != g', { f: 1, g: 2 }), true);
  assert.equal(ev('f == g', { f: 0, g: -0 }), true);
  assert.equal(ev('f in (1.5, 2)', { f: NaN }), false);
  assert.equal(ev('f not in (1.5, 2)', { f: NaN }), true);
});

test('comparisons across numeric types, strings, bools, bytes, datetimes', () => {
  assert.equal(ev('i == f', { i: 2, f: 2.0 }), true);
  assert.equal(ev('i < f', { i: 2, f: 2.5 }), true);
  assert.equal(ev("s < t", { s: 'apple', t: 'banana' }), true);
  assert.equal(ev("s == 'é'", { s: 'é' }), true);
  assert.equal(ev('b > c', { b: true, c: false }), true);
  assert.equal(ev('b <= c', { b: true, c: false }), false);
  assert.equal(ev("y == 'AAEC'", { y: 'AAEC' }), true);
  assert.equal(ev('y != s', { y: 'AAEC', s: 'AAED' }), true);
  const t0 = Date.UTC(2024, 0, 1);
  assert.equal(ev("d >= '2024-01-01T00:00:00Z'", { d: t0 }), true);
  assert.equal(ev("d > '2024-01-01'", { d: t0 }), false);
  assert.equal(ev("d == '2024-01-01T01:00:00+01:00'", { d: t0 }), true);
  assert.equal(ev("d in ('2023-12-31T23:59:59.999-00:00', '2024-01-01')", { d: t0 }), true);
  assert.equal(ev('d > 0', { d: t0 }), true);
  assert.equal(ev('d - e', { d: t0 + 1500, e: t0 }), 1500);
  assert.equal(ev('d + 60000', { d: t0 }), t0 + 60000);
  assert.equal(ev('60000 + d - e', { d: t0, e: t0 }), 60000);
});

test('string concatenation and functions', () => {
  assert.equal(ev("s + '-' + t", { s: 'a', t: 'b' }), 'a-b');
  assert.equal(ev('lower(s)', { s: 'ÀBc' }), 'àbc');
  assert.equal(ev('upper(s)', { s: 'straße' }), 'STRASSE');
  assert.equal(ev('length(s)', { s: '' }), 0);
  assert.equal(ev('length(s)', { s: 'héllo😀' }), 6);
  assert.equal(ev('length(s)', { s: '\uD800x' }), 2);
  assert.equal(ev('length(y)', { y: 'AAECAw==' }), 4);
  assert.equal(ev('length(y)', { y: 'AAECAwQ=' }), 5);
  assert.equal(ev('length(y)', { y: 'AAECAwQF' }), 6);
  assert.equal(ev('length(y)', { y: 'AAECAwQ' }), 5);
  assert.equal(ev('length(y)', { y: '' }), 0);
  assert.equal(ev('abs(f)', { f: -2.5 }), 2.5);
  assert.ok(Object.is(ev('abs(f)', { f: -0 }), 0));
  assert.equal(ev('coalesce(i, j, 7)', { j: 3 }), 3);
  assert.equal(ev('coalesce(i, j, 7)', {}), 7);
  assert.equal(ev('coalesce(i, j)', {}), null);
  assert.equal(ev('coalesce(i, f)', { f: 1.5 }), 1.5);
  assert.equal(ev('coalesce(null, s)', { s: 'x' }), 'x');
});

test('in and not in', () => {
  assert.equal(ev("s in ('US', 'CA')", { s: 'CA' }), true);
  assert.equal(ev("s in ('US', 'CA')", { s: 'MX' }), false);
  assert.equal(ev("s not in ('US', 'CA')", { s: 'MX' }), true);
  assert.equal(ev("s not in ('US', 'CA')", {}), null);
  assert.equal(ev('i in (1, 2.0, -3)', { i: 2 }), true);
  assert.equal(ev('i in (1, 2.5, -3)', { i: -3 }), true);
  assert.equal(ev('f in (1, 2.5)', { f: 2.5 }), true);
  assert.equal(ev('b in (true)', { b: false }), false);
  // Long lists take the Set path; same answers.
  const many = Array.from({ length: 50 }, (_, k) => k * 3);
  for (const x of [0, 1, 3, 147, 148, 150, -0]) {
    assert.equal(ev(`i in (${many.join(', ')})`, { i: x }), many.includes(x), `i=${x}`);
    assert.equal(ev(`i not in (${many.join(', ')})`, { i: x }), !many.includes(x), `i=${x}`);
  }
  const words = Array.from({ length: 20 }, (_, k) => `'w${k}'`).join(', ');
  assert.equal(ev(`s in (${words})`, { s: 'w19' }), true);
  assert.equal(ev(`s in (${words})`, { s: 'w20' }), false);
  assert.equal(ev(`s in (${words})`, {}), null);
});

test('cast semantics', () => {
  const cases: [string, Row, Value][] = [
    // str -> int
    ['cast(s, int)', { s: '42' }, 42],
    ['cast(s, int)', { s: '-7' }, -7],
    ['cast(s, int)', { s: '+7' }, 7],
    ['cast(s, int)', { s: '007' }, 7],
    ['cast(s, int)', { s: '-0' }, 0],
    ['cast(s, int)', { s: '1.5' }, null],
    ['cast(s, int)', { s: ' 1' }, null],
    ['cast(s, int)', { s: '' }, null],
    ['cast(s, int)', { s: 'abc' }, null],
    ['cast(s, int)', { s: '9007199254740992' }, null],
    // str -> float
    ['cast(s, float)', { s: '1.5' }, 1.5],
    ['cast(s, float)', { s: '-2.5e-3' }, -0.0025],
    ['cast(s, float)', { s: '.5' }, 0.5],
    ['cast(s, float)', { s: '5.' }, 5],
    ['cast(s, float)', { s: '1e400' }, Infinity],
    ['cast(s, float)', { s: 'NaN' }, null],
    ['cast(s, float)', { s: 'inf' }, null],
    ['cast(s, float)', { s: '1,5' }, null],
    ['cast(s, float)', { s: '0x10' }, null],
    // str -> bool
    ['cast(s, bool)', { s: 'true' }, true],
    ['cast(s, bool)', { s: 'false' }, false],
    ['cast(s, bool)', { s: 'True' }, null],
    ['cast(s, bool)', { s: '1' }, null],
    // f64 -> int
    ['cast(f, int)', { f: 2.9 }, 2],
    ['cast(f, int)', { f: -2.9 }, -2],
    ['cast(f, int)', { f: -0.5 }, 0],
    ['cast(f, int)', { f: 1e300 }, MAX],
    ['cast(f, int)', { f: -1e300 }, -MAX],
    ['cast(f, int)', { f: NaN }, null],
    ['cast(f, int)', { f: Infinity }, null],
    // bool -> *
    ['cast(b, int)', { b: true }, 1],
    ['cast(b, int)', { b: false }, 0],
    ['cast(b, float)', { b: true }, 1],
    ['cast(b, str)', { b: false }, 'false'],
    // numbers -> str / bool / float
    ['cast(i, str)', { i: -12 }, '-12'],
    ['cast(i, float)', { i: 3 }, 3],
    ['cast(i, bool)', { i: 0 }, false],
    ['cast(i, bool)', { i: -3 }, true],
    ['cast(f, str)', { f: 1.5 }, '1.5'],
    ['cast(f, str)', { f: 2 }, '2'],
    ['cast(f, str)', { f: NaN }, 'NaN'],
    ['cast(f, bool)', { f: 0.1 }, true],
    ['cast(f, bool)', { f: -0 }, false],
    ['cast(f, bool)', { f: NaN }, false],
    // datetime -> *
    ['cast(d, int)', { d: 1714564800000 }, 1714564800000],
    ['cast(d, float)', { d: 5 }, 5],
    ['cast(d, str)', { d: 1714564800000 }, '2024-05-01T12:00:00.000Z'],
    ['cast(d, str)', { d: 9e15 }, null],
    ['cast(d, bool)', { d: 0 }, false],
    // bytes -> str is the base64 text
    ['cast(y, str)', { y: 'AAEC' }, 'AAEC'],
    // identity and null
    ["cast(s, 'str')", { s: 'x' }, 'x'],
    ['cast(s, int)', {}, null],
    ['cast(null, bool)', {}, null],
  ];
  for (const [src, row, want] of cases) assert.deepEqual(ev(src, row), want, `${src} on ${JSON.stringify(row)}`);
});

test('RFC 3339 literal parsing', () => {
  assert.equal(parseRfc3339('2024-01-01'), Date.UTC(2024, 0, 1));
  assert.equal(parseRfc3339('2024-02-29T12:30:45.123Z'), Date.UTC(2024, 1, 29, 12, 30, 45, 123));
  assert.equal(parseRfc3339('2024-02-29t12:30:45.1239z'), Date.UTC(2024, 1, 29, 12, 30, 45, 123));
  assert.equal(parseRfc3339('2024-02-29 12:30:45.5-02:30'), Date.UTC(2024, 1, 29, 15, 0, 45, 500));
  assert.equal(parseRfc3339('1969-12-31T23:59:59.5Z'), -500);
  assert.equal(new Date(parseRfc3339('0050-06-01') as number).toISOString(), '0050-06-01T00:00:00.000Z');
  for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '2024-01-01T24:00:00Z', '2024-01-01T00:00:00', '2024-01-01T00:60:00Z', '24-01-01', '2024-01-01T00:00:00+25:00', 'yesterday', '']) {
    assert.equal(parseRfc3339(bad), null, bad);
  }
});
