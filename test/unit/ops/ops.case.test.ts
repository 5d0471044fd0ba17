/**
 * The conformance suite every op passes, whatever its semantics: for each of
 * the op-strings, windowed where the op allows it, random rows of every field
 * type (including nulls, NaN-free numbers, empty strings) and random where
 * outcomes. Checks: reads never throw and are JSON-clean and pure, a fresh
 * state reads the documented empty value, and save -> structuredClone -> load
 * gives a state that answers and continues identically (runOpCases does the
 * last three). The semantic property tests live in the family files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OP_NAMES, canonicalOp } from '../../../src/ops';
import type { JsonValue, Row } from '../../../src/types';
import { BASE_T, F64, I64, STR, compile, minimalSpec, runOpCases, type Rng } from './harness';
import { columnState, loadColumnState } from './column_state';

const FIELDS = { amount: 'f64', n: 'i64', s: 'str', b: 'bool', raw: 'bytes', at: 'datetime', lat: 'f64', lon: 'f64' } as const;

const anyRow = (rng: Rng): Row => ({
  amount: rng.chance(0.1) ? null : F64(rng),
  n: rng.chance(0.1) ? null : I64(rng),
  s: rng.chance(0.1) ? null : STR(rng),
  b: rng.chance(0.5),
  raw: 'AAEC',
  at: BASE_T + rng.int(0, 1e6),
  lat: rng.chance(0.1) ? null : 40 + rng.next(),
  lon: 2 + rng.next(),
});

/** The value /get shows for an entity whose events never reached the feature. */
const EMPTY: Record<string, JsonValue> = {
  count: 0, sum: null, mean: null, min: null, max: null, var: null, std: null, ratio: null, rate: 0, velocity: 0,
  first: null, last: null, first_n: [], last_n: [], most_recent_n: [], lag: null,
  first_seen: null, last_seen: null, age: null, has_seen: false, time_since: null, time_since_last_n: null,
  first_seen_in_window: false, streak: 0, max_streak: 0, negative_streak: 0,
  ewma: null, ewvar: null, ew_zscore: null, decayed_sum: null, decayed_count: 0, twa: null,
  rate_of_change: null, inter_arrival_stats: null, burst_count: 0, delta_from_prev: null, trend: null, trend_residual: null,
  outlier_count: 0, value_change_count: 0, z_score: null, n_unique: 0, quantile: null, top_k: [], bloom_member: false,
  entropy: 0, histogram: { '<0': 0, '0-10': 0, '10-100': 0, '>=100': 0 }, hour_of_day_histogram: new Array(24).fill(0),
  seasonal_deviation: null, event_type_mix: {}, reservoir_sample: [], geo_velocity: null, geo_distance: 0, geo_spread: null,
  distance_from_home: null,
};

const WINDOWABLE = new Set(['count', 'sum', 'mean', 'min', 'max', 'var', 'std', 'ratio', 'n_unique', 'quantile', 'top_k', 'entropy', 'z_score', 'burst_count',
  'twa', 'rate_of_change', 'inter_arrival_stats', 'delta_from_prev', 'trend', 'trend_residual', 'outlier_count', 'value_change_count',
  'first', 'last', 'first_n', 'last_n', 'most_recent_n', 'lag', 'histogram', 'hour_of_day_histogram', 'dow_hour_histogram', 'event_type_mix',
  'geo_velocity', 'geo_distance', 'geo_spread']);

test('every op reads its documented empty value before any event', () => {
  for (const op of OP_NAMES) {
    const c = canonicalOp(op) as string;
    const st = columnState(compile(minimalSpec(op), FIELDS));
    if (c === 'dow_hour_histogram') {
      const v = st.read(BASE_T) as Record<string, number>;
      assert.equal(Object.keys(v).length, 168);
      assert.equal(v['Mon-00'], 0);
      assert.equal(v['Sun-23'], 0);
      continue;
    }
    assert.ok(c in EMPTY, `no empty value listed for ${c}`);
    assert.deepEqual(st.read(BASE_T), EMPTY[c], op);
    assert.deepEqual(loadColumnState(compile(minimalSpec(op), FIELDS), structuredClone(st.save())).read(BASE_T), EMPTY[c], `${op} reloaded`);
  }
});

test('conformance: every op-string, lifetime and windowed, survives random streams and save/load', () => {
  for (const op of OP_NAMES) {
    const base = minimalSpec(op);
    const variants = [base];
    if (WINDOWABLE.has(canonicalOp(op) as string) && base.params.window === undefined) {
      variants.push({ op, params: { ...base.params, window: '5s' } });
    }
    for (const spec of variants) {
      runOpCases({
        name: `${op}${JSON.stringify(spec.params)}`,
        spec,
        fields: FIELDS,
        row: anyRow,
        matchRate: 0.7,
        seeds: 3,
        events: 250,
        windowMs: 5_000,
        check: () => null,
      });
    }
  }
});
