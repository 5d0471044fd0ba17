/**
 * The windowed forms of the change-over-time ops against a naive recomputation
 * from the raw events of the window (windowCheck: exact while at most 64 relevant
 * events fell in the last W + bucketMs, else the aggregate of a suffix that holds
 * the whole window plus at most bucketMs before it). runOpCases reads at later
 * idle times too (eviction as time passes), and its odd seeds are dense streams
 * that push entities into the bucketed regime; it also saves / reloads states.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldType, JsonValue } from '../../../src/types';
import { F64, I64, STR, close, compile, expectClose, isNum, rowOf, runOpCases, windowCheck, type Ev, type Rng, type WindowSpec } from './harness';
import { columnState } from './column_state';
import * as naive from './motion_naive';

const RING = 64;
const BUCKETS = 128;
const WINDOWS = [10_000, 1_000, 3_600_000];

const valueEv = (e: Ev): boolean => e.match && isNum(e.row.x);

function spec(windowMs: number, relevant: (e: Ev) => boolean, agg: (evs: readonly Ev[]) => JsonValue, tol: number): WindowSpec {
  return {
    windowMs,
    buckets: BUCKETS,
    ringMax: RING,
    relevant,
    agg,
    eqExact: (a, b) => close(a, b, tol),
    eqBucketed: (a, b) => close(a, b, tol),
  };
}

interface Case {
  op: string;
  params?: Record<string, unknown>;
  type?: FieldType;
  gen?: (rng: Rng) => JsonValue;
  relevant?: (e: Ev) => boolean;
  agg: (evs: readonly Ev[]) => JsonValue;
  tol?: number;
}

function windowed(c: Case): void {
  for (const windowMs of WINDOWS) {
    const params = { ...(c.params ?? { field: 'x' }), window: `${windowMs}ms` };
    const w = spec(windowMs, c.relevant ?? valueEv, c.agg, c.tol ?? 1e-9);
    test(`${c.op} ${JSON.stringify(params)} matches a naive recomputation of the window`, () => {
      runOpCases({
        name: `${c.op}/${windowMs}`,
        spec: { op: c.op, params },
        fields: { x: c.type ?? 'f64' },
        row: rowOf((c.gen ?? F64) as (rng: Rng) => number),
        windowMs,
        matchRate: 0.9,
        check: (v, evs, now) => windowCheck(w, v, evs, now),
      });
    });
  }
}

windowed({ op: 'trend', agg: naive.trend, tol: 1e-6 });
windowed({ op: 'trend_residual', agg: naive.trendResidual, tol: 1e-6 });
windowed({ op: 'twa', agg: naive.twa, tol: 1e-7 });
windowed({ op: 'inter_arrival_stats', params: {}, relevant: (e) => e.match, agg: naive.interArrival });
for (const [type, gen] of [['str', STR], ['i64', (r: Rng) => I64(r) % 3], ['bool', (r: Rng) => r.chance(0.7)]] as const) {
  windowed({
    op: 'value_change_count',
    type,
    gen,
    relevant: (e) => e.match && e.row.x !== null,
    agg: naive.valueChanges,
  });
}

// outlier_count: each value is judged at arrival against every value before it; the
// window counts the judged outliers that arrived within it (a count window).
for (const sigma of [1, 2.5]) {
  for (const windowMs of WINDOWS) {
    test(`outlier_count sigma=${sigma} window=${windowMs}ms counts the outliers of the window`, () => {
      runOpCases({
        name: `outlier_count/${sigma}/${windowMs}`,
        spec: { op: 'outlier_count', params: { field: 'x', sigma, window: `${windowMs}ms` } },
        fields: { x: 'f64' },
        row: rowOf(F64),
        windowMs,
        matchRate: 0.9,
        check: (v, evs, now) => {
          const flagged = new Set(naive.outliers(evs.filter(valueEv), sigma));
          return windowCheck(spec(windowMs, (e) => flagged.has(e), (l) => l.length, 0), v, evs, now);
        },
      });
    });
  }
}

// rate_of_change / delta_from_prev: the lifetime formula over the values inside the
// window, exact at any event rate (only the last pair matters).
for (const [op, agg] of [['rate_of_change', naive.rateOfChange], ['delta_from_prev', naive.deltaFromPrev]] as const) {
  for (const windowMs of WINDOWS) {
    test(`${op} window=${windowMs}ms is the lifetime formula over the values of the window (exact)`, () => {
      runOpCases({
        name: `${op}/${windowMs}`,
        spec: { op, params: { field: 'x', window: `${windowMs}ms` } },
        fields: { x: 'f64' },
        row: rowOf(F64),
        windowMs,
        matchRate: 0.9,
        check: (v, evs, now) => expectClose(v, agg(evs.filter((e) => valueEv(e) && now - e.t < windowMs))),
      });
    });
  }
}

test('window "forever" is the lifetime form (same value as no window)', () => {
  for (const op of ['trend', 'trend_residual', 'twa', 'rate_of_change', 'delta_from_prev', 'outlier_count', 'value_change_count']) {
    for (const params of [{ field: 'x' }, { field: 'x', window: 'forever' }]) {
      runOpCases({
        name: `${op}${JSON.stringify(params)}`,
        spec: { op, params },
        fields: { x: 'f64' },
        row: rowOf(F64),
        seeds: 4,
        check: (v, evs) => {
          const vs = evs.filter(valueEv);
          const expected: Record<string, JsonValue> = {
            trend: naive.trend(vs),
            trend_residual: naive.trendResidual(vs),
            twa: naive.twa(vs),
            rate_of_change: naive.rateOfChange(vs),
            delta_from_prev: naive.deltaFromPrev(vs),
            outlier_count: naive.outliers(vs, 3).length,
            value_change_count: naive.valueChanges(vs),
          };
          return expectClose(v, expected[op], 1e-6);
        },
      });
    }
  }
});

test('a window slides: values leave it as time passes, and an idle entity reads empty', () => {
  const W = 1_000;
  const t0 = 1_700_000_000_000;
  const fields = { x: 'f64' } as const;
  const ops: Array<[string, JsonValue[]]> = [
    // values 1, 3, 6 at t0, t0+400, t0+800; reads at t0+900, t0+1300 (first gone), t0+2000 (all gone)
    ['trend', [5 / 800, 3 / 400, null]],
    ['twa', [(1 * 400 + 3 * 400) / 800, 3, null]],
    ['rate_of_change', [3 / 400, 3 / 400, null]],
    ['delta_from_prev', [3, 3, null]],
    ['value_change_count', [2, 1, 0]],
  ];
  for (const [op, want] of ops) {
    const st = columnState(compile({ op, params: { field: 'x', window: `${W}ms` } }, fields));
    st.update(1, t0, { x: 1 });
    st.update(3, t0 + 400, { x: 3 });
    st.update(6, t0 + 800, { x: 6 });
    const got = [st.read(t0 + 900), st.read(t0 + 1300), st.read(t0 + 2000)];
    got.forEach((g, i) => assert.ok(close(g, want[i], 1e-12), `${op} read ${i}: got ${g}, want ${want[i]}`));
  }
  const ia = columnState(compile({ op: 'inter_arrival_stats', params: { window: `${W}ms` } }, {}));
  for (const t of [t0, t0 + 100, t0 + 700]) ia.update(undefined, t, {});
  assert.deepEqual([ia.read(t0 + 900), ia.read(t0 + 1050), ia.read(t0 + 1600), ia.read(t0 + 1700)], [350, 600, null, null]);
});
