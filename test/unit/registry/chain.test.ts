/**
 * Chain evaluation (registry/chain.ts): every op's output row, rows of one feed
 * never seen or changed by another, and the generated literal steps keeping
 * rows in V8's fast (non-dictionary) mode on a deep chain.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileChain } from '../../../src/registry/chain';
import { compileRegistry } from '../../../src/registry/compile';
import type { FieldMap, Row } from '../../../src/types';

const fields = (o: Record<string, string>): FieldMap => Object.assign(Object.create(null), o) as FieldMap;

/** A row as a plain object with only the columns that hold a value (absent == undefined). */
const present = (r: Row | null): Record<string, unknown> | null =>
  r === null ? null : Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));

test('with_columns adds, overwrites and reads columns of the same step in order', () => {
  const c = compileChain([{ op: 'with_columns', exprs: [['b', 'a + 1'], ['a', 'a * 10'], ['c', 'a + b']] }], fields({ a: 'i64', s: 'str' }), ['s'], 'n');
  assert.deepEqual(Object.keys(c.fields), ['a', 's', 'b', 'c']);
  const input: Row = { a: 2 };
  const out = c.fn!(input);
  assert.deepEqual(present(out), { a: 20, b: 3, c: 23 });
  assert.deepEqual(input, { a: 2 }, 'the input row is not changed');
  assert.notEqual(out, input);
});

test('consecutive with_columns ops run as one step with the same result as one after another', () => {
  const c = compileChain([
    { op: 'with_columns', exprs: [['b', 'a + 1']] },
    { op: 'with_columns', exprs: [['a', 'b * 2'], ['c', 'a + b']] },
    { op: 'with_columns', exprs: [['b', 'cast(b, str)']] },
    { op: 'filter', expr: 'c > 0' },
    { op: 'with_columns', exprs: [['d', 'c - a']] },
  ], fields({ a: 'i64' }), [], 'n');
  assert.deepEqual({ ...c.fields }, { a: 'i64', b: 'str', c: 'i64', d: 'i64' });
  // b = 3, a = 6, c = 6 + 3 = 9, b = "3", then d = 9 - 6.
  assert.deepEqual(present(c.fn!({ a: 2 })), { a: 6, b: '3', c: 9, d: 3 });
  assert.equal(c.fn!({ a: -5 }), null);
});

test('select, drop and rename keep exactly their columns; absent optional columns stay absent', () => {
  const f = fields({ a: 'i64', b: 'str', c: 'f64', d: 'bool' });
  const sel = compileChain([{ op: 'select', fields: ['c', 'a'] }], f, ['b'], 'n');
  assert.deepEqual(present(sel.fn!({ a: 1, b: 'x', c: 1.5, d: true })), { c: 1.5, a: 1 });
  assert.deepEqual(Object.keys(sel.fields).sort(), ['a', 'c']);
  const drop = compileChain([{ op: 'drop', fields: ['b', 'd'] }], f, ['b'], 'n');
  assert.deepEqual(present(drop.fn!({ a: 1, c: 2, d: false })), { a: 1, c: 2 });
  const ren = compileChain([{ op: 'rename', mapping: [['a', 'x'], ['b', 'y']] }], f, ['b'], 'n');
  const r = ren.fn!({ a: 1, c: 2, d: false });
  assert.deepEqual(present(r), { x: 1, c: 2, d: false });
  assert.equal(r!.a, undefined);
  assert.equal(r!.y, undefined, 'an absent optional column renamed stays absent');
  assert.deepEqual(ren.optional, ['y']);
});

test('filter drops rows and composes with the other steps', () => {
  const c = compileChain([
    { op: 'with_columns', exprs: [['d', 'a * 2']] },
    { op: 'filter', expr: 'd > 4' },
    { op: 'drop', fields: ['a'] },
  ], fields({ a: 'i64' }), [], 'n');
  assert.equal(c.fn!({ a: 2 }), null);
  assert.deepEqual(present(c.fn!({ a: 3 })), { d: 6 });
});

test('a derived event feeding several tables: each feed sees its own rows, none leaks into another', () => {
  const reg = compileRegistry({ version: 1, nodes: [
    { kind: 'event', name: 'E', schema: { fields: { u: 'str', a: 'i64' } } },
    { kind: 'derivation', name: 'D', output_kind: 'event', upstreams: ['E'], ops: [{ op: 'with_columns', exprs: { b: 'a + 1' } }] },
    // Overwrites b in its own chain: the sibling tables must still see D's b.
    { kind: 'table', name: 'T1', upstreams: ['D'], ops: [{ op: 'with_columns', exprs: { b: 'b * 100' } }], key: ['u'], agg: { s: { op: 'sum', params: { field: 'b', window: 'forever' } } } },
    { kind: 'table', name: 'T2', upstreams: ['D'], key: ['u'], agg: { s: { op: 'sum', params: { field: 'b', window: 'forever' } } } },
    { kind: 'table', name: 'T3', upstreams: ['D'], ops: [{ op: 'rename', mapping: { b: 'z' } }], key: ['u'], agg: { s: { op: 'sum', params: { field: 'z', window: 'forever' } } } },
    { kind: 'table', name: 'T0', upstreams: ['E'], key: ['u'], agg: { s: { op: 'sum', params: { field: 'a', window: 'forever' } } } },
  ] }, { memoryGovEnforce: false, pushValidators: false });
  const plan = reg.events.get('E')!;
  const pushed: Row = { u: 'k', a: 5 };
  const rows = plan.feedRows(pushed).map((r) => present(r));
  const byTable = Object.fromEntries(plan.feeds.map((f, i) => [f.table.name, rows[i]]));
  assert.deepEqual(byTable, {
    T0: { u: 'k', a: 5 },
    T1: { u: 'k', a: 5, b: 600 },
    T2: { u: 'k', a: 5, b: 6 },
    T3: { u: 'k', a: 5, z: 6 },
  });
  assert.deepEqual(pushed, { u: 'k', a: 5 }, 'the pushed row is not changed');
});

test('a 150-deep with_columns chain computes every column and its rows stay fast-mode objects', () => {
  const nodes: Array<Record<string, unknown>> = [{ kind: 'event', name: 'R', schema: { fields: { u: 'str', c0: 'i64' } } }];
  for (let i = 1; i <= 150; i++) {
    nodes.push({ kind: 'derivation', name: `D${i}`, output_kind: 'event', upstreams: [i === 1 ? 'R' : `D${i - 1}`], ops: [{ op: 'with_columns', exprs: { [`c${i}`]: `c${i - 1} + 1` } }] });
    nodes.push({ kind: 'table', name: `T${i}`, upstreams: [`D${i}`], key: ['u'], agg: { s: { op: 'sum', params: { field: `c${i}`, window: 'forever' } } } });
  }
  const reg = compileRegistry({ version: 1, nodes }, { memoryGovEnforce: false, pushValidators: false });
  const plan = reg.events.get('R')!;
  const rows = plan.feedRows({ u: 'k', c0: 7 });
  assert.equal(rows.length, 150);
  plan.feeds.forEach((f, i) => {
    const n = Number(f.table.name.slice(1));
    const r = rows[i]!;
    assert.equal(r[`c${n}`], 7 + n);
    assert.equal(Object.keys(r).length, n + 2, `${f.table.name} sees exactly its columns`);
  });
  // Object.assign + keyed stores used to turn rows past ~16 columns into slow
  // dictionaries; a V8 intrinsic tells (only when the flag can be set).
  let hasFast: ((o: unknown) => boolean) | null = null;
  try {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    require('node:v8').setFlagsFromString('--allow-natives-syntax');
    hasFast = new Function('o', 'return %HasFastProperties(o);') as (o: unknown) => boolean;
  } catch { hasFast = null; }
  if (hasFast !== null) for (const r of rows) assert.equal(hasFast(r), true);
});
