import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SfError } from '../../../src/errors';
import { compileExpression, compilePredicate } from '../../../src/expr';
import type { FieldMap } from '../../../src/types';

const F: FieldMap = Object.assign(Object.create(null) as FieldMap, {
  i: 'i64',
  j: 'i64',
  f: 'f64',
  s: 'str',
  t: 'str',
  b: 'bool',
  c: 'bool',
  d: 'datetime',
  e: 'datetime',
  y: 'bytes',
  amount: 'i64',
  'odd name': 'str',
});

function typeOf(src: string): string {
  return compileExpression(src, F).type;
}

function errorOf(src: string, fields: FieldMap = F): { code: string; message: string } {
  try {
    compileExpression(src, fields);
  } catch (err) {
    assert.ok(err instanceof SfError, `not an SfError: ${String(err)}`);
    return { code: err.code, message: err.message };
  }
  assert.fail(`expected an error for ${JSON.stringify(src)}`);
}

test('result types', () => {
  const cases: [string, string][] = [
    ['i + j', 'i64'],
    ['i / j', 'i64'],
    ['i % j', 'i64'],
    ['i + f', 'f64'],
    ['f * 2', 'f64'],
    ['i / 2.0', 'f64'],
    ['-i', 'i64'],
    ['-f', 'f64'],
    ['s + t', 'str'],
    ["s + 'x'", 'str'],
    ['d - e', 'i64'],
    ['d + i', 'datetime'],
    ['d - 1000', 'datetime'],
    ['d + null', 'datetime'],
    ['d - null', 'datetime'],
    ['null + d', 'datetime'],
    ['60000 + d', 'datetime'],
    ['i > f', 'bool'],
    ['d > i', 'bool'],
    ['d < 1.5', 'bool'],
    ["d >= '2024-01-01T00:00:00Z'", 'bool'],
    ["'2024-01-01' <= d", 'bool'],
    ['y == y', 'bool'],
    ["y != 'AAEC'", 'bool'],
    ['y == s', 'bool'],
    ['b < c', 'bool'],
    ['s >= t', 'bool'],
    ['b and c or not b', 'bool'],
    ['null', 'null'],
    ['null + 1', 'i64'],
    ['1.5 * null', 'f64'],
    ["null + 'x'", 'str'],
    ['null + null', 'null'],
    ['-null', 'null'],
    ['null and b', 'bool'],
    ['not null', 'bool'],
    ['i == null', 'bool'],
    ['null != s', 'bool'],
    ['i < null', 'bool'],
    ['null in (1, 2)', 'bool'],
    ['cast(s, int)', 'i64'],
    ['cast(i, float)', 'f64'],
    ["cast(b, 'str')", 'str'],
    ['cast(f, bool)', 'bool'],
    ['cast(y, str)', 'str'],
    ['cast(d, int)', 'i64'],
    ['cast(null, float)', 'f64'],
    ['cast(i, int)', 'i64'],
    ['isnull(y)', 'bool'],
    ['coalesce(i, j)', 'i64'],
    ['coalesce(i, f, 0)', 'f64'],
    ['coalesce(null, s)', 'str'],
    ['coalesce(null, null)', 'null'],
    ['coalesce(d, e)', 'datetime'],
    ['abs(i)', 'i64'],
    ['abs(f)', 'f64'],
    ['abs(null)', 'null'],
    ['lower(s)', 'str'],
    ['upper(null)', 'str'],
    ['length(s)', 'i64'],
    ['length(y)', 'i64'],
    ["s in ('a', 'b')", 'bool'],
    ['i in (1, 2.5, -3)', 'bool'],
    ["d in ('2024-01-01', 0)", 'bool'],
    ["y not in ('AAEC')", 'bool'],
    ['`odd name` + s', 'str'],
    ['amount > 100 and s == \'US\'', 'bool'],
  ];
  for (const [src, type] of cases) assert.equal(typeOf(src), type, src);
});

test('fields lists referenced names, sorted and unique', () => {
  const c = compileExpression('s == t or i > j and i < amount or `odd name` == s', F);
  assert.deepEqual(c.fields, ['amount', 'i', 'j', 'odd name', 's', 't']);
  assert.deepEqual(compileExpression('cast(i, int)', F).fields, ['i']);
  assert.deepEqual(compileExpression('1 + 2', F).fields, []);
  assert.equal(compileExpression('i+1', F).source, 'i+1');
});

test('unknown_field_reference names the field (and suggests a near one)', () => {
  const e = errorOf('amout > 100');
  assert.equal(e.code, 'unknown_field_reference');
  assert.match(e.message, /at column 1: unknown field 'amout' \(did you mean 'amount'\?\)/);
  assert.match(errorOf('i + zzz_q').message, /column 5: unknown field 'zzz_q'$/);
  // Names inherited from Object.prototype are not fields.
  assert.equal(errorOf('constructor == null').code, 'unknown_field_reference');
  assert.equal(errorOf('toString == null', { a: 'i64' }).code, 'unknown_field_reference');
  assert.equal(errorOf('`__proto__` == null', { a: 'i64' }).code, 'unknown_field_reference');
  // The cast target is not a field reference.
  assert.equal(typeOf('cast(i, str)'), 'str');
});

test('schema_mismatch: operand types that cannot combine', () => {
  const cases = [
    'b + 1',
    'i + b',
    'b * c',
    '-b',
    '-s',
    '-d',
    's - t',
    's * 2',
    "s + 1",
    '1 + s',
    'y + y',
    'd + d',
    'd * 2',
    'd - f',
    'd + f',
    'i - d',
    'd % 2',
    'null + b',
    'null - d',
    'i == s',
    'b == 1',
    "b == 'true'",
    'd == s',
    "d > 'yesterday'",
    "d == '2024-02-30'",
    'y < y',
    "y > 'AA'",
    'y == i',
    'i and b',
    'b or s',
    'not i',
    '!s',
    'i in (\'a\')',
    "s in (1)",
    'b in (1)',
    "d in ('nope')",
    'y in (1)',
    'abs(s)',
    'abs(b)',
    'lower(i)',
    'upper(y)',
    'length(i)',
    'coalesce(i, s)',
    'coalesce(d, i)',
    'coalesce(b, null, 1)',
    'cast(y, int)',
    'cast(y, float)',
    'cast(y, bool)',
  ];
  for (const src of cases) assert.equal(errorOf(src).code, 'schema_mismatch', src);
  assert.match(errorOf('i + b').message, /at column 3: operator '\+' cannot combine i64 and bool/);
  assert.match(errorOf('y < y').message, /bytes only support == and !=/);
});

test('invalid_cast_target: anything but int, float, str, bool', () => {
  for (const src of ['cast(i, i64)', 'cast(i, f64)', "cast(i, 'datetime')", 'cast(i, INT)', 'cast(i, 1)', 'cast(i, i + 1)', "cast(i, 'int ')", 'cast(i, string)', 'cast(i, null)']) {
    assert.equal(errorOf(src).code, 'invalid_cast_target', src);
  }
  assert.match(errorOf('cast(i, i64)').message, /at column 9: cast target must be int, float, str or bool, got 'i64'/);
  for (const t of ['int', 'float', 'str', 'bool', "'int'", '"float"', '`str`']) assert.doesNotThrow(() => compileExpression(`cast(s, ${t})`, F), t);
});

test('invalid_expression: unknown functions and wrong arity', () => {
  const cases: [string, RegExp][] = [
    ['foo(i)', /unknown function 'foo'/],
    ['LOWER(s)', /unknown function 'LOWER'/],
    ['cast(i)', /cast\(\) takes 2 arguments, got 1/],
    ['cast(i, int, 1)', /cast\(\) takes 2 arguments, got 3/],
    ['isnull()', /isnull\(\) takes 1 argument, got 0/],
    ['coalesce()', /coalesce\(\) takes at least 1 argument/],
    ['abs(i, j)', /abs\(\) takes 1 argument/],
    ['length()', /length\(\) takes 1 argument/],
  ];
  for (const [src, re] of cases) {
    const e = errorOf(src);
    assert.equal(e.code, 'invalid_expression', src);
    assert.match(e.message, re, src);
  }
  // The expression must be a string (registration payloads are JSON).
  assert.equal(errorOf(42 as unknown as string).code, 'invalid_expression');
});

test('compilePredicate demands bool (or always-null) expressions', () => {
  for (const src of ['b', 'i > 1', 'null', 'b and null', 'i == null', 'cast(s, bool)']) assert.doesNotThrow(() => compilePredicate(src, F), src);
  for (const src of ['i', 's', 'i + 1', 'd', 'y', 'coalesce(f, 1)']) {
    try {
      compilePredicate(src, F);
      assert.fail(`expected schema_mismatch for ${src}`);
    } catch (err) {
      assert.ok(err instanceof SfError);
      assert.equal(err.code, 'schema_mismatch', src);
      assert.match(err.message, /predicate must be of type bool/);
    }
  }
  assert.equal((() => { try { compilePredicate('i +', F); } catch (err) { return (err as SfError).code; } return ''; })(), 'invalid_expression');
});

test('errors are checked in source order: the leftmost problem is reported', () => {
  assert.equal(errorOf('nope + b').code, 'unknown_field_reference');
  assert.equal(errorOf('b + nope').code, 'unknown_field_reference');
  assert.equal(errorOf('(i + b) + nope').code, 'schema_mismatch');
});
