/**
 * Property tests of n_unique, quantile, top_k, entropy (windowed and lifetime)
 * and bloom_member against naive recomputation. Value domains are kept small
 * enough that the sketches stay in their exact modes, so windows are checked
 * exactly (or within one bucket); the sketch-mode bounds are checked at the end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldType, JsonValue, Value } from '../../../src/types';
import { columnState } from './column_state';
import {
  BASE_T,
  BOOL,
  F64,
  I64,
  STR,
  close,
  compile,
  deepClose,
  expectEq,
  naiveTopK,
  rowOf,
  runOpCases,
  windowCheck,
  type Ev,
  type Rng,
  type WindowSpec,
} from './harness';

const SKETCH_BUCKETS = 64;
const RING = 64;

type Naive = (xs: Value[]) => JsonValue;

function present(e: Ev): boolean {
  return e.match && e.row.x !== null && e.row.x !== undefined;
}

function both(op: string, params: Record<string, unknown>, type: FieldType, gen: (r: Rng) => Value, naive: Naive, tol: number, bucketTol = tol): void {
  const vals = (evs: readonly Ev[]): Value[] => evs.map((e) => e.row.x as Value);
  for (const windowMs of [10_000, 2_000]) {
    const spec: WindowSpec = {
      windowMs,
      buckets: SKETCH_BUCKETS,
      ringMax: RING,
      relevant: present,
      agg: (evs) => naive(vals(evs)),
      eqExact: (a, b) => deepClose(a, b, tol),
      eqBucketed: (a, b) => deepClose(a, b, bucketTol),
    };
    runOpCases({
      name: `${op}/${type}/${windowMs}`,
      spec: { op, params: { field: 'x', window: `${windowMs}ms`, ...params } },
      fields: { x: type },
      row: rowOf(gen),
      windowMs,
      matchRate: 0.9,
      seeds: 8,
      check: (v, evs, now) => windowCheck(spec, v, evs, now),
    });
  }
  runOpCases({
    name: `${op}/${type}/forever`,
    spec: { op, params: { field: 'x', ...params } },
    fields: { x: type },
    row: rowOf(gen),
    matchRate: 0.9,
    seeds: 8,
    check: (v, evs) => (deepClose(v, naive(vals(evs.filter(present))), tol) ? null : `expected ${JSON.stringify(naive(vals(evs.filter(present))))}`),
  });
}

const distinct: Naive = (xs) => new Set(xs.map((x) => `${typeof x}:${String(x)}`)).size;

test('n_unique / count_distinct: exact distinct count (windowed and lifetime)', () => {
  both('n_unique', {}, 'str', STR, distinct, 0);
  both('count_distinct', {}, 'i64', I64, distinct, 0);
  both('n_unique', {}, 'bool', BOOL, distinct, 0);
});

function quantileOf(q: number): Naive {
  return (xs) => {
    if (xs.length === 0) return null;
    const a = (xs as number[]).slice().sort((p, r) => p - r);
    const pos = q * (a.length - 1);
    const r = Math.floor(pos);
    const f = pos - r;
    return f === 0 ? a[r] : a[r] + (a[r + 1] - a[r]) * f;
  };
}

test('quantile / percentile: linear interpolation at q (n - 1); sketch within 1 %', () => {
  for (const q of [0.5, 0.01, 0.99, 0.9]) both('quantile', { q }, 'f64', F64, quantileOf(q), 0, 0.011);
  both('percentile', { q: 0.25 }, 'i64', I64, quantileOf(0.25), 0, 0.011);
});

/** top_k's answer over the values (harness.ts naiveTopK). */
function topOf(k: number): Naive {
  return (xs) => naiveTopK(xs, k) as JsonValue;
}

test('top_k: most frequent values with exact counts while small', () => {
  for (const k of [1, 3, 10]) both('top_k', { k }, 'str', STR, topOf(k), 0);
  both('top_k', { k: 5 }, 'i64', (r) => I64(r) % 7, topOf(5), 0);
  both('top_k', {}, 'bool', BOOL, topOf(10), 0);
});

const entropyOf: Naive = (xs) => {
  const counts = new Map<string, number>();
  for (const x of xs) counts.set(String(x), (counts.get(String(x)) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / xs.length;
    h -= p * Math.log2(p);
  }
  return h;
};

test('entropy: Shannon entropy in bits of the category shares', () => {
  both('entropy', {}, 'str', STR, entropyOf, 1e-12, 1e-9);
  both('entropy', {}, 'i64', (r) => I64(r) % 5, entropyOf, 1e-12, 1e-9);
});

test('bloom_member: was the latest value seen before it arrived (exact while small)', () => {
  for (const [type, gen] of [['str', STR], ['i64', I64], ['bool', BOOL]] as const) {
    runOpCases({
      name: `bloom_member/${type}`,
      spec: { op: 'bloom_member', params: { field: 'x', capacity: 100_000, fpr: 0.01 } },
      fields: { x: type },
      row: rowOf(gen as (r: Rng) => Value, 0.2),
      matchRate: 0.8,
      check: (v, evs) => {
        const xs = evs.filter(present).map((e) => e.row.x);
        if (xs.length === 0) return expectEq(v, false);
        const last = xs[xs.length - 1];
        return expectEq(v, xs.slice(0, -1).includes(last));
      },
    });
  }
});

test('bloom_member past its exact list: no false negatives, false positives near fpr', () => {
  const f = compile({ op: 'bloom_member', params: { field: 'x', capacity: 4000, fpr: 0.02 } }, { x: 'str' });
  const st = columnState(f);
  let t = BASE_T;
  for (let i = 0; i < 2000; i++) st.update(`v${i}`, t++, {});
  let fp = 0;
  for (let i = 0; i < 2000; i++) {
    st.update(`v${(i * 13) % 2000}`, t++, {});
    assert.equal(st.read(t), true, 'a value seen before must answer true');
    st.update(`new${i}`, t++, {});
    if (st.read(t) === true) fp++;
  }
  // At most `capacity` values are inserted, so the false-positive rate is <= fpr; allow 2x for chance.
  assert.ok(fp <= 2000 * 0.04, `false positives ${fp}`);
});

test('n_unique beyond the exact set stays within 4 standard errors (HLL, 1.625 %)', () => {
  for (const windowMs of [0, 60_000]) {
    const spec = windowMs === 0 ? { field: 'x' } : { field: 'x', window: `${windowMs}ms` };
    const st = columnState(compile({ op: 'n_unique', params: spec }, { x: 'i64' }));
    const n = 20_000;
    for (let i = 0; i < n; i++) st.update(i * 7919, BASE_T + i, {});
    const v = st.read(BASE_T + n) as number;
    assert.ok(Math.abs(v - n) <= 4 * 0.01625 * n, `n_unique ${v} vs ${n}`);
  }
});

test('quantile beyond the exact set stays within 1 % relative', () => {
  const st = columnState(compile({ op: 'quantile', params: { field: 'x', q: 0.9 } }, { x: 'f64' }));
  const xs: number[] = [];
  for (let i = 0; i < 5000; i++) {
    const x = 1 + ((i * 7919) % 10007) / 10;
    xs.push(x);
    st.update(x, BASE_T + i, {});
  }
  const exact = quantileOf(0.9)(xs) as number;
  assert.ok(close(st.read(BASE_T + 5000), exact, 0.0101), `quantile ${String(st.read(BASE_T))} vs ${exact}`);
});
