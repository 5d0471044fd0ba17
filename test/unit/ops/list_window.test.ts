/**
 * The windowed forms of the point ops (first, last, first_n, last_n,
 * most_recent_n, lag) and the count-table ops (histogram, hour_of_day_histogram,
 * dow_hour_histogram, event_type_mix) against a naive recomputation from the raw
 * events of the window (windowCheck; B = 64 buckets, 64 raw events). runOpCases
 * reads at later idle times (eviction), drives dense streams on odd seeds (the
 * bucketed regime) and saves / reloads states along the way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldType, JsonValue } from '../../../src/types';
import { F64, I64, STR, compile, deepClose, rowOf, runOpCases, windowCheck, type Ev, type Rng, type RowGen } from './harness';
import { columnState } from './column_state';
import * as naive from './buffer_naive';

const WINDOWS = [10_000, 1_000, 3_600_000];
const HOUR = 3_600_000;

interface Case {
  name: string;
  op: string;
  params: Record<string, unknown>;
  type?: FieldType;
  row: RowGen;
  relevant: (e: Ev) => boolean;
  agg: (evs: readonly Ev[]) => JsonValue;
  windows?: number[];
  tol?: number;
}

function windowed(c: Case): void {
  for (const windowMs of c.windows ?? WINDOWS) {
    test(`${c.name} window=${windowMs}ms matches a naive recomputation of the window`, () => {
      const tol = c.tol ?? 0;
      const spec = {
        windowMs,
        buckets: 64,
        ringMax: 64,
        relevant: c.relevant,
        agg: c.agg,
        eqExact: (a: JsonValue, b: JsonValue) => deepClose(a, b, tol),
        eqBucketed: (a: JsonValue, b: JsonValue) => deepClose(a, b, tol),
      };
      runOpCases({
        name: `${c.name}/${windowMs}`,
        spec: { op: c.op, params: { ...c.params, window: `${windowMs}ms` } },
        fields: c.type === undefined ? { x: 'str' } : { x: c.type },
        row: c.row,
        windowMs,
        matchRate: 0.85,
        check: (v, evs, now) => windowCheck(spec, v, evs, now),
      });
    });
  }
}

const hasValue = (e: Ev): boolean => e.match && e.row.x !== null && e.row.x !== undefined;
const last = <T>(a: T[]): T | null => (a.length === 0 ? null : a[a.length - 1]);

windowed({ name: 'first', op: 'first', params: { field: 'x' }, row: rowOf(STR, 0.2), relevant: hasValue, agg: (evs) => naive.present(evs)[0] ?? null });
windowed({ name: 'last', op: 'last', params: { field: 'x' }, type: 'i64', row: rowOf(I64, 0.2), relevant: hasValue, agg: (evs) => last(naive.present(evs)) });
for (const n of [1, 3, 100]) {
  windowed({ name: `first_n/${n}`, op: 'first_n', params: { field: 'x', n }, row: rowOf(STR, 0.2), relevant: hasValue, agg: (evs) => naive.present(evs).slice(0, n) });
  windowed({ name: `last_n/${n}`, op: 'last_n', params: { field: 'x', n }, type: 'f64', row: rowOf(F64, 0.2), relevant: hasValue, agg: (evs) => naive.present(evs).slice(-n) });
  windowed({ name: `most_recent_n/${n}`, op: 'most_recent_n', params: { field: 'x', n }, row: rowOf(STR, 0.2), relevant: hasValue, agg: (evs) => naive.present(evs).slice(-n) });
  windowed({
    name: `lag/${n}`,
    op: 'lag',
    params: { field: 'x', n },
    type: 'i64',
    row: rowOf(I64, 0.2),
    relevant: hasValue,
    agg: (evs) => {
      const vs = naive.present(evs);
      return vs.length <= n ? null : vs[vs.length - 1 - n];
    },
  });
}

const EDGES = [-100, 0, 0.5, 250];
const LABELS = ['<-100', '-100-0', '0-0.5', '0.5-250', '>=250'];
windowed({
  name: 'histogram',
  op: 'histogram',
  params: { field: 'x', buckets: EDGES },
  type: 'f64',
  row: (rng) => ({ x: rng.chance(0.1) ? null : rng.chance(0.2) ? rng.pick(EDGES) : F64(rng) }),
  relevant: (e) => e.match && typeof e.row.x === 'number',
  agg: (evs) => naive.histogram(evs, EDGES, LABELS),
});
// Windows of hours and days, so events fall in several hours / weekdays.
const noRow: RowGen = () => ({});
windowed({ name: 'hour_of_day_histogram', op: 'hour_of_day_histogram', params: {}, row: noRow, relevant: (e) => e.match, agg: naive.hourHistogram, windows: [HOUR, 6 * HOUR] });
windowed({ name: 'dow_hour_histogram', op: 'dow_hour_histogram', params: {}, row: noRow, relevant: (e) => e.match, agg: naive.dowHourHistogram, windows: [HOUR, 48 * HOUR] });
windowed({
  name: 'event_type_mix{"categories":["a","b","zz"]}',
  op: 'event_type_mix',
  params: { field: 'x', categories: ['a', 'b', 'zz'] },
  row: rowOf(STR),
  relevant: hasValue,
  agg: (evs) => naive.mix(evs, ['a', 'b', 'zz'], 256),
  tol: 1e-12,
});
// Past max_categories the kept categories depend on arrival order, and each bucket
// applies the cap to its own events: exact while the ring answers alone; bucketed,
// at most `cap` categories, shares never above the uncapped share of the suffix,
// and the denominator (every value) exact.
for (const windowMs of WINDOWS) {
  test(`event_type_mix max_categories=3 window=${windowMs}ms: exact from the ring, bounded when bucketed`, () => {
    const cap = 3;
    runOpCases({
      name: `event_type_mix/cap/${windowMs}`,
      spec: { op: 'event_type_mix', params: { field: 'x', max_categories: cap, window: `${windowMs}ms` } },
      fields: { x: 'str' },
      row: rowOf(STR),
      windowMs,
      matchRate: 0.85,
      check: (v, evs, now) =>
        windowCheck(
          {
            windowMs,
            buckets: 64,
            ringMax: 64,
            relevant: hasValue,
            agg: (l) => ({ capped: naive.mix(l, null, cap), all: naive.mix(l, null, Infinity) }),
            eqExact: (a, b) => deepClose(a, (b as Record<string, JsonValue>).capped, 1e-12),
            eqBucketed: (a, b) => {
              const all = (b as Record<string, Record<string, number>>).all;
              const got = a as Record<string, number>;
              const keys = Object.keys(got);
              return keys.length <= cap && keys.length >= Math.min(cap, Object.keys(all).length) && keys.every((k) => got[k] <= all[k] + 1e-12);
            },
          },
          v,
          evs,
          now,
        ),
    });
  });
}
windowed({
  name: 'event_type_mix/i64',
  op: 'event_type_mix',
  params: { field: 'x' },
  type: 'i64',
  row: rowOf((r: Rng) => I64(r) % 4),
  relevant: hasValue,
  agg: (evs) => naive.mix(evs, null, 256),
  tol: 1e-12,
});

test('register: windowed point ops still need n (aggregation_invalid_param); a windowed histogram may omit buckets', () => {
  for (const op of ['first_n', 'last_n', 'most_recent_n', 'lag']) {
    assert.throws(() => compile({ op, params: { field: 'x', window: '1m' } }, { x: 'str' }), (e: { code?: string }) => e.code === 'aggregation_invalid_param', op);
  }
  const h = columnState(compile({ op: 'histogram', params: { field: 'x', window: '1m' } }, { x: 'f64' }));
  h.update(5, 1_700_000_000_000, { x: 5 });
  assert.deepEqual(h.read(1_700_000_000_000), { all: 1 });
  assert.deepEqual(h.read(1_700_000_060_000), { all: 0 }, 'the value left the window');
});
