/** Property tests of histogram, hour/dow histograms, seasonal_deviation, event_type_mix, reservoir_sample. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_T, F64, I64, STR, compile, expectClose, expectEq, isNum, moments, rowOf, runOpCases } from './harness';
import { columnState } from './column_state';
import * as naive from './buffer_naive';

const DAY = 86_400_000;
/** A profile spread over days, so every hour and weekday is hit. */
const SPREAD = { sameMs: 0, burstMs: 60_000, gapMs: 3_600_000, idleMs: 3 * DAY, pBurst: 0.3, pGap: 0.6, pIdle: 0.1 };

test('histogram counts values per cell (-inf,b0) [b0,b1) ... [bn,inf)', () => {
  const edges = [-100, 0, 0.5, 250];
  const labels = ['<-100', '-100-0', '0-0.5', '0.5-250', '>=250'];
  runOpCases({
    name: 'histogram',
    spec: { op: 'histogram', params: { field: 'x', buckets: edges } },
    fields: { x: 'f64' },
    row: (rng) => ({ x: rng.chance(0.1) ? null : rng.chance(0.2) ? rng.pick(edges) : F64(rng) }),
    check: (v, evs) => expectEq(v, naive.histogram(evs, edges, labels)),
  });
});

test('hour_of_day_histogram and dow_hour_histogram count by UTC hour / weekday-hour', () => {
  runOpCases({
    name: 'hour_of_day_histogram',
    spec: { op: 'hour_of_day_histogram' },
    fields: {},
    row: () => ({}),
    profile: SPREAD,
    matchRate: 0.8,
    check: (v, evs) => expectEq(v, naive.hourHistogram(evs)),
  });
  runOpCases({
    name: 'dow_hour_histogram',
    spec: { op: 'dow_hour_histogram' },
    fields: {},
    row: () => ({}),
    profile: SPREAD,
    check: (v, evs) => expectEq(v, naive.dowHourHistogram(evs)),
  });
});

test('seasonal_deviation: z of the latest value among the values of its UTC hour', () => {
  runOpCases({
    name: 'seasonal_deviation',
    spec: { op: 'seasonal_deviation', params: { field: 'x' } },
    fields: { x: 'f64' },
    row: rowOf(F64),
    profile: SPREAD,
    check: (v, all) => {
      const evs = all.filter((e) => e.match && isNum(e.row.x));
      if (evs.length === 0) return expectEq(v, null);
      const last = evs[evs.length - 1];
      const hour = new Date(last.t).getUTCHours();
      const m = moments(evs.filter((e) => new Date(e.t).getUTCHours() === hour).map((e) => e.row.x as number));
      const variance = m.n < 2 ? 0 : m.m2 / (m.n - 1);
      return expectClose(v, variance > 0 ? ((last.row.x as number) - m.mean) / Math.sqrt(variance) : null, 1e-9);
    },
  });
});

test('event_type_mix: share of each category among events with a value', () => {
  for (const [params, allow, cap] of [
    [{}, null, 256],
    [{ max_categories: 3 }, null, 3],
    [{ categories: ['a', 'b', 'zz'] }, ['a', 'b', 'zz'], 256],
  ] as const) {
    runOpCases({
      name: `event_type_mix/${JSON.stringify(params)}`,
      spec: { op: 'event_type_mix', params: { field: 'x', ...params } },
      fields: { x: 'str' },
      row: rowOf(STR),
      check: (v, evs) => expectClose(v, naive.mix(evs, allow as string[] | null, cap), 1e-12),
    });
  }
  runOpCases({
    name: 'event_type_mix/i64',
    spec: { op: 'event_type_mix', params: { field: 'x' } },
    fields: { x: 'i64' },
    row: rowOf((r) => I64(r) % 4),
    check: (v, evs) => expectClose(v, naive.mix(evs, null, 256), 1e-12),
  });
});

test('reservoir_sample: first `samples` values, then each value kept with probability samples / seen', () => {
  runOpCases({
    name: 'reservoir_sample',
    spec: { op: 'reservoir_sample', params: { field: 'x', samples: 8 } },
    fields: { x: 'i64' },
    row: rowOf(I64),
    check: (v, evs) => {
      const xs = evs.filter((e) => e.match && e.row.x !== null).map((e) => e.row.x as number);
      const got = v as number[];
      if (xs.length <= 8) return expectEq(v, xs);
      if (got.length !== 8) return 'sample size must stay 8';
      // Every sampled value occurs in the stream at least as often as in the sample.
      for (const x of new Set(got)) {
        if (got.filter((y) => y === x).length > xs.filter((y) => y === x).length) return `value ${x} over-represented`;
      }
      return null;
    },
  });
  // Uniformity: over 2000 entities with different 100-value streams, each stream
  // position ends up in the 10-value sample ~10 % of the time (200 +- 3 sigma = 40).
  const f = compile({ op: 'reservoir_sample', params: { field: 'x', samples: 10 } }, { x: 'i64' });
  const hits = new Array<number>(100).fill(0);
  for (let e = 0; e < 2000; e++) {
    const st = columnState(f);
    for (let i = 0; i < 100; i++) st.update(e * 1000 + i, BASE_T + i, {});
    const got = st.read(BASE_T) as number[];
    assert.equal(got.length, 10);
    for (const x of got) hits[x - e * 1000]++;
  }
  for (let i = 0; i < 100; i++) assert.ok(hits[i] >= 150 && hits[i] <= 250, `position ${i} kept ${hits[i]} / 2000 times`);
});
