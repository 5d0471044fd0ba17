import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SfError } from '../../../src/errors';
import { EXPRESSION_DEPTH_MAX, EXPRESSION_LENGTH_MAX } from '../../../src/limits';
import type { Expr } from '../../../src/expr/ast';
import { parse } from '../../../src/expr/parser';

/** Fully parenthesised S-expression form of a parse tree. */
function sx(e: Expr): string {
  switch (e.kind) {
    case 'lit':
      return e.type === 'str' ? JSON.stringify(e.value) : e.type === 'f64' ? `${Object.is(e.value, -0) ? '-0' : e.value}f` : String(e.value);
    case 'field':
      return e.name;
    case 'neg':
      return `(neg ${sx(e.arg)})`;
    case 'not':
      return `(not ${sx(e.arg)})`;
    case 'arith':
    case 'cmp':
    case 'logic':
      return `(${e.op} ${sx(e.left)} ${sx(e.right)})`;
    case 'in':
      return `(${e.negated ? 'notin' : 'in'} ${sx(e.arg)} [${e.items.map(sx).join(' ')}])`;
    case 'call':
      return `(${e.name}${e.args.map((a) => ' ' + sx(a)).join('')})`;
  }
}

function p(src: string): string {
  return sx(parse(src));
}

function parseError(src: string): { code: string; col: number; message: string } {
  try {
    parse(src);
  } catch (err) {
    assert.ok(err instanceof SfError, `not an SfError: ${String(err)}`);
    const m = /^at column (\d+): /.exec(err.message);
    assert.ok(m !== null, `message without column: ${err.message}`);
    return { code: err.code, col: Number(m[1]), message: err.message };
  }
  assert.fail(`expected a parse error for ${JSON.stringify(src)}`);
}

test('precedence: or < and < not < comparison < additive < multiplicative < unary', () => {
  assert.equal(p('a or b and c'), '(or a (and b c))');
  assert.equal(p('a and b or c'), '(or (and a b) c)');
  assert.equal(p('not a and b'), '(and (not a) b)');
  assert.equal(p('not a == b'), '(not (== a b))');
  assert.equal(p('a + b * c'), '(+ a (* b c))');
  assert.equal(p('a * b + c % d'), '(+ (* a b) (% c d))');
  assert.equal(p('a + 1 > b * 2'), '(> (+ a 1) (* b 2))');
  assert.equal(p('-a * b'), '(* (neg a) b)');
  assert.equal(p('!a == b'), '(== (not a) b)');
  assert.equal(p('x + 1 in (1, 2)'), '(in (+ x 1) [1 2])');
  assert.equal(p('not x in (1)'), '(not (in x [1]))');
  assert.equal(p('amount > 100 and country == \'US\''), '(and (> amount 100) (== country "US"))');
  assert.equal(p('a || b && c'), '(or a (and b c))');
  assert.equal(p('(a or b) and c'), '(and (or a b) c)');
});

test('associativity: binary operators are left-associative, prefix operators nest', () => {
  assert.equal(p('a - b - c'), '(- (- a b) c)');
  assert.equal(p('a / b * c'), '(* (/ a b) c)');
  assert.equal(p('a % b % c'), '(% (% a b) c)');
  assert.equal(p('a or b or c'), '(or (or a b) c)');
  assert.equal(p('a and b and c'), '(and (and a b) c)');
  assert.equal(p('not not a'), '(not (not a))');
  assert.equal(p('- - a'), '(neg (neg a))');
  assert.equal(p('--a'), '(neg (neg a))');
  assert.equal(p('!!a'), '(not (not a))');
  assert.equal(p('a - -b'), '(- a (neg b))');
});

test('comparisons do not chain', () => {
  for (const src of ['a < b < c', 'a == b == c', 'a < b in (1)', 'a in (1) == b', 'a == b not in (1)']) {
    assert.equal(parseError(src).code, 'invalid_expression', src);
  }
  assert.equal(parseError('a < b < c').col, 7);
  assert.equal(p('(a < b) == c'), '(== (< a b) c)');
});

test('literals: integers, floats, strings, booleans, null', () => {
  assert.equal(p('42'), '42');
  assert.equal(p('-42'), '-42');
  assert.equal(p('-0'), '0');
  assert.equal(p('-0.0'), '-0f');
  assert.equal(p('1.5'), '1.5f');
  assert.equal(p('1e3'), '1000f');
  assert.equal(p('1E+3'), '1000f');
  assert.equal(p('2.5e-3'), '0.0025f');
  assert.equal(p('9007199254740991'), '9007199254740991');
  assert.equal(p('-9007199254740991'), '-9007199254740991');
  assert.equal(p('true'), 'true');
  assert.equal(p('false'), 'false');
  assert.equal(p('null'), 'null');
  assert.equal(p("'it\\'s'"), JSON.stringify("it's"));
  assert.equal(p('"say \\"hi\\""'), JSON.stringify('say "hi"'));
  assert.equal(p("'a\\\\b\\n\\t\\r\\0'"), JSON.stringify('a\\b\n\t\r\0'));
  assert.equal(p("'\\u00e9\\u{1F600}'"), JSON.stringify('é😀'));
  assert.equal(p("'héllo 😀'"), JSON.stringify('héllo 😀'));
  assert.equal(p("'double \" inside single'"), JSON.stringify('double " inside single'));
  assert.equal(p('""'), '""');
});

test('identifiers, quoted identifiers and calls', () => {
  assert.equal(p('_a1 + B_2'), '(+ _a1 B_2)');
  assert.equal(p('`odd name` + `and`'), '(+ odd name and)');
  assert.equal(p('`a``b`'), 'a`b');
  assert.equal(p('cast(x, int)'), '(cast x int)');
  assert.equal(p("cast(x, 'float')"), '(cast x "float")');
  assert.equal(p('coalesce(a, b, 1)'), '(coalesce a b 1)');
  assert.equal(p('f()'), '(f)');
  assert.equal(p('lower (s)'), '(lower s)');
  assert.equal(p('`lower`'), 'lower');
  assert.match(parseError('`lower`(s)').message, /unexpected '\(' after a complete expression/);
  assert.equal(p('isnull(a > 1 and b)'), '(isnull (and (> a 1) b))');
  assert.equal(p('cast'), 'cast'); // a field named like a function
});

test('in lists', () => {
  assert.equal(p("country in ('US', 'CA')"), '(in country ["US" "CA"])');
  assert.equal(p('x not in (1, -2, 3.5)'), '(notin x [1 -2 3.5f])');
  assert.equal(p('b in (true)'), '(in b [true])');
  assert.equal(parseError('x in ()').code, 'invalid_expression');
  assert.equal(parseError('x in (1,)').col, 9);
  assert.match(parseError('x in (1, null)').message, /null cannot be an element/);
  assert.match(parseError('x in (y)').message, /literals only/);
  assert.equal(parseError('x in 1').col, 6);
  assert.equal(parseError('x in (- y)').col, 9);
});

test('errors carry the 1-based column of the offending token', () => {
  const cases: [string, number, RegExp][] = [
    ['', 1, /empty expression/],
    ['   ', 1, /empty expression/],
    ['a +', 4, /expected an operand, found end of input/],
    ['a + * b', 5, /expected an operand, found '\*'/],
    ['(a + b', 7, /expected '\)' to close the '\(' at column 1/],
    ['a + b)', 6, /unexpected '\)' after a complete expression/],
    ['a = b', 3, /use '==' for equality/],
    ['a & b', 3, /'&&' or 'and'/],
    ['a | b', 3, /'\|\|' or 'or'/],
    ['a # b', 3, /unexpected character "#"/],
    ["'abc", 1, /unterminated string/],
    ['x + "ab\\qc"', 8, /unknown escape "\\\\q"/],
    ["'\\u12'", 2, /malformed \\uXXXX/],
    ["'\\u{110000}'", 2, /above U\+10FFFF/],
    ['1.', 3, /digit after '.'/],
    ['1e', 3, /exponent/],
    ['12abc', 1, /malformed number/],
    ['1.5.2', 1, /malformed number/],
    ['.5', 1, /unexpected character/],
    ['9007199254740992', 1, /outside the i64 range/],
    ['-9007199254740992', 1, /outside the i64 range/],
    ['1e400', 1, /out of range/],
    ['`abc', 1, /unterminated `quoted` identifier/],
    ['``', 1, /empty `quoted` identifier/],
    ['a and', 6, /expected an operand/],
    ['a and or b', 7, /expected an operand, found 'or'.*`or`/],
    ['f(a, )', 6, /expected an operand/],
    ['f(a b)', 5, /expected ',' or '\)' in the arguments of f\(\)/],
    ['a not b', 3, /unexpected 'not'/],
    ['x é', 3, /unexpected character "é"/],
    ['Txn.amount', 4, /unexpected character "\."/],
  ];
  for (const [src, col, re] of cases) {
    const e = parseError(src);
    assert.equal(e.code, 'invalid_expression', src);
    assert.equal(e.col, col, `${src}: ${e.message}`);
    assert.match(e.message, re, src);
  }
});

test('length and depth limits', () => {
  const ok = 'a' + ' + a'.repeat(Math.floor((EXPRESSION_LENGTH_MAX - 1) / 4));
  assert.ok(ok.length <= EXPRESSION_LENGTH_MAX);
  // A chain of EXPRESSION_LENGTH_MAX/4 additions is far deeper than the depth limit.
  assert.match(parseError(ok).message, /nested deeper than/);
  const shallow = 'a' + ' + a'.repeat(EXPRESSION_DEPTH_MAX - 1);
  assert.doesNotThrow(() => parse(shallow));
  assert.match(parseError(shallow + ' + a').message, /nested deeper than/);
  assert.match(parseError('a'.repeat(EXPRESSION_LENGTH_MAX + 1)).message, /longer than/);
  assert.doesNotThrow(() => parse('a'.repeat(EXPRESSION_LENGTH_MAX)));
  // Deep parentheses are stopped before they can exhaust the JS stack.
  const open = '('.repeat(2000) + 'a' + ')'.repeat(2000);
  assert.match(parseError(open).message, /nested deeper than/);
  assert.match(parseError('-'.repeat(3000) + 'a').message, /nested deeper than/);
  assert.match(parseError('not '.repeat(1000) + 'a').message, /nested deeper than/);
  const nestedOk = '('.repeat(EXPRESSION_DEPTH_MAX - 1) + 'a' + ')'.repeat(EXPRESSION_DEPTH_MAX - 1);
  assert.doesNotThrow(() => parse(nestedOk));
});
