/** Register-time validation of aggregation specs: every error code, paths, the op list, signatures. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SfError, type ErrorCode } from '../../../src/errors';
import { aggSignature, canonicalOp, compileAgg, OP_NAMES, parseDuration } from '../../../src/ops';
import type { FieldMap } from '../../../src/types';
import { minimalSpec } from './harness';
import { columnState } from './column_state';

const FIELDS: FieldMap = { amount: 'f64', n: 'i64', s: 'str', b: 'bool', raw: 'bytes', at: 'datetime', lat: 'f64', lon: 'f64' };

function compileWith(spec: unknown, enforce = true): ReturnType<typeof compileAgg> {
  return compileAgg(spec, { fields: FIELDS, path: 'nodes[3].agg.feat', memoryGovEnforce: enforce });
}

function rejects(spec: unknown, code: ErrorCode, path?: string, enforce = true): void {
  assert.throws(
    () => compileWith(spec, enforce),
    (err: unknown) => {
      assert.ok(err instanceof SfError, `expected SfError, got ${String(err)}`);
      assert.equal(err.code, code, `spec ${JSON.stringify(spec)}: ${err.message}`);
      if (path !== undefined) assert.equal(err.detail.path, path);
      return true;
    },
  );
}

test('the catalogue has at least 53 op-strings including every spec name and alias', () => {
  assert.ok(OP_NAMES.length >= 53, `${OP_NAMES.length} op-strings`);
  assert.equal(new Set(OP_NAMES).size, OP_NAMES.length);
  const spec = 'count sum min max lag first_n last_n mean avg var variance std stddev n_unique count_distinct quantile percentile ewma ewvar ew_zscore decayed_sum decayed_count top_k bloom_member outlier_count burst_count velocity rate';
  const peer = 'ratio first last first_seen last_seen age has_seen time_since time_since_last_n streak max_streak negative_streak first_seen_in_window ema twa rate_of_change inter_arrival_stats delta_from_prev trend trend_residual value_change_count z_score entropy histogram hour_of_day_histogram dow_hour_histogram seasonal_deviation event_type_mix most_recent_n reservoir_sample geo_velocity geo_distance geo_spread distance_from_home';
  for (const name of `${spec} ${peer}`.split(' ')) assert.ok(OP_NAMES.includes(name), name);
  assert.equal(OP_NAMES.length, 62);
});

test('canonicalOp resolves aliases and rejects unknown names', () => {
  assert.equal(canonicalOp('avg'), 'mean');
  assert.equal(canonicalOp('variance'), 'var');
  assert.equal(canonicalOp('stddev'), 'std');
  assert.equal(canonicalOp('count_distinct'), 'n_unique');
  assert.equal(canonicalOp('percentile'), 'quantile');
  assert.equal(canonicalOp('ema'), 'ewma');
  assert.equal(canonicalOp('sum'), 'sum');
  assert.equal(canonicalOp('median'), null);
  assert.equal(canonicalOp('toString'), null);
  assert.equal(canonicalOp('__proto__'), null);
  for (const n of OP_NAMES) assert.equal(compileWith(minimalSpec(n)).op, canonicalOp(n));
});

test('parseDuration follows \\d+(ms|s|m|h|d), positive only', () => {
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('5m'), 300_000);
  assert.equal(parseDuration('2h'), 7_200_000);
  assert.equal(parseDuration('1d'), 86_400_000);
  for (const bad of ['0s', '0ms', 'forever', '5', '5 m', '-5m', '1.5h', '5M', '', 'm', 5, null, undefined, '99999999999d']) {
    assert.equal(parseDuration(bad), null, String(bad));
  }
});

test('unknown op-strings give unknown_op at .op; malformed specs give invalid_registration', () => {
  rejects({ op: 'median', params: { field: 'amount' } }, 'unknown_op', 'nodes[3].agg.feat.op');
  rejects({ op: 'AVG', params: { field: 'amount', window: '1m' } }, 'unknown_op');
  rejects({ op: 'constructor' }, 'unknown_op');
  rejects('sum', 'invalid_registration', 'nodes[3].agg.feat');
  rejects({ params: {} }, 'invalid_registration', 'nodes[3].agg.feat.op');
  rejects({ op: 'count', params: [] }, 'invalid_registration', 'nodes[3].agg.feat.params');
  rejects({ op: 'count', params: 'x' }, 'invalid_registration');
  assert.equal(compileWith({ op: 'count' }).op, 'count');
});

test('required windows (spec 2.4): sum, mean/avg, min, max, var/variance, std/stddev', () => {
  for (const op of ['sum', 'mean', 'avg', 'min', 'max', 'var', 'variance', 'std', 'stddev']) {
    rejects({ op, params: { field: 'amount' } }, 'aggregation_invalid_window', 'nodes[3].agg.feat.params.window');
    assert.equal(compileWith({ op, params: { field: 'amount', window: 'forever' } }).op, canonicalOp(op));
    assert.equal(compileWith({ op, params: { field: 'amount', window: '15m' } }).op, canonicalOp(op));
  }
});

test('malformed windows give aggregation_invalid_window', () => {
  for (const window of ['5x', '0s', '', '1.5h', 5, null, true, 'FOREVER', '-1m']) {
    rejects({ op: 'count', params: { window } }, 'aggregation_invalid_window', 'nodes[3].agg.feat.params.window');
  }
  rejects({ op: 'rate' }, 'aggregation_invalid_window');
  rejects({ op: 'rate', params: { window: 'forever' } }, 'aggregation_invalid_window');
  rejects({ op: 'velocity', params: { field: 'amount', window: 'forever' } }, 'aggregation_invalid_window');
  rejects({ op: 'first_seen_in_window' }, 'aggregation_invalid_window');
  rejects({ op: 'first_seen_in_window', params: { window: 'forever' } }, 'aggregation_invalid_window');
});

test('lifetime-only ops reject a finite window (aggregation_invalid_window) but accept "forever"', () => {
  const lifetime = ['first_seen', 'last_seen', 'age', 'has_seen', 'time_since',
    'time_since_last_n', 'streak', 'max_streak', 'negative_streak',
    'seasonal_deviation', 'reservoir_sample', 'distance_from_home', 'ewma', 'ema', 'ewvar', 'ew_zscore', 'decayed_sum', 'decayed_count'];
  for (const op of lifetime) {
    const spec = minimalSpec(op);
    rejects({ op, params: { ...spec.params, window: '1h' } }, 'aggregation_invalid_window', 'nodes[3].agg.feat.params.window');
    assert.equal(compileWith({ op, params: { ...spec.params, window: 'forever' } }).op, canonicalOp(op));
  }
});

test('bloom_member takes no window at all: window_not_supported', () => {
  rejects({ op: 'bloom_member', params: { field: 's', window: '1h' } }, 'window_not_supported', 'nodes[3].agg.feat.params.window');
  rejects({ op: 'bloom_member', params: { field: 's', window: 'forever' } }, 'window_not_supported');
});

test('half_life: missing, malformed, non-positive or forever -> aggregation_invalid_half_life', () => {
  for (const op of ['ewma', 'ema', 'ewvar', 'ew_zscore', 'decayed_sum', 'decayed_count']) {
    const field = op === 'decayed_count' ? {} : { field: 'amount' };
    rejects({ op, params: field }, 'aggregation_invalid_half_life', 'nodes[3].agg.feat.params.half_life');
    for (const half_life of ['forever', '0s', '10', 10, 'abc']) {
      rejects({ op, params: { ...field, half_life } }, 'aggregation_invalid_half_life');
    }
  }
});

test('sub_window: missing, malformed, not smaller than window, or too fine -> aggregation_invalid_sub_window', () => {
  rejects({ op: 'burst_count' }, 'aggregation_invalid_sub_window', 'nodes[3].agg.feat.params.sub_window');
  rejects({ op: 'burst_count', params: { sub_window: '0s' } }, 'aggregation_invalid_sub_window');
  rejects({ op: 'burst_count', params: { sub_window: 'forever' } }, 'aggregation_invalid_sub_window');
  rejects({ op: 'burst_count', params: { sub_window: '1m', window: '1m' } }, 'aggregation_invalid_sub_window');
  rejects({ op: 'burst_count', params: { sub_window: '2m', window: '1m' } }, 'aggregation_invalid_sub_window');
  rejects({ op: 'burst_count', params: { sub_window: '1ms', window: '1h' } }, 'aggregation_invalid_sub_window');
  assert.equal(compileWith({ op: 'burst_count', params: { sub_window: '10s', window: '1h' } }).op, 'burst_count');
});

test('q, k, fpr have their own codes', () => {
  for (const q of [0, 1, 1.5, -0.1, '0.5', null, Number.NaN]) {
    rejects({ op: 'quantile', params: { field: 'amount', q } }, 'invalid_percentile_q', 'nodes[3].agg.feat.params.q');
    rejects({ op: 'percentile', params: { field: 'amount', q } }, 'invalid_percentile_q');
  }
  for (const k of [0, 1025, 2.5, -1, '10']) rejects({ op: 'top_k', params: { field: 's', k } }, 'invalid_top_k_k', 'nodes[3].agg.feat.params.k');
  assert.equal(compileWith({ op: 'top_k', params: { field: 's', k: 1024 } }).op, 'top_k');
  for (const fpr of [0, 1, -0.1, 2, '0.01']) {
    rejects({ op: 'bloom_member', params: { field: 's', fpr } }, 'invalid_bloom_fpr', 'nodes[3].agg.feat.params.fpr');
    rejects({ op: 'bloom_member', params: { field: 's', target_fpr: fpr } }, 'invalid_bloom_fpr');
  }
});

test('other out-of-range parameters give aggregation_invalid_param', () => {
  const bad: Array<[unknown, string]> = [
    [{ op: 'first_n', params: { field: 's', n: 0 } }, 'n'],
    [{ op: 'last_n', params: { field: 's', n: 1025 } }, 'n'],
    [{ op: 'lag', params: { field: 's', n: 1.5 } }, 'n'],
    [{ op: 'time_since_last_n', params: { n: '3' } }, 'n'],
    [{ op: 'outlier_count', params: { field: 'amount', sigma: 0 } }, 'sigma'],
    [{ op: 'outlier_count', params: { field: 'amount', sigma: -1 } }, 'sigma'],
    [{ op: 'reservoir_sample', params: { field: 's', samples: 0 } }, 'samples'],
    [{ op: 'distance_from_home', params: { samples: 5000 } }, 'samples'],
    [{ op: 'histogram', params: { field: 'amount', buckets: [1, 1] } }, 'buckets'],
    [{ op: 'histogram', params: { field: 'amount', buckets: [2, 1] } }, 'buckets'],
    [{ op: 'histogram', params: { field: 'amount', buckets: 'x' } }, 'buckets'],
    [{ op: 'histogram', params: { field: 'amount', buckets: [1, 'a'] } }, 'buckets'],
    [{ op: 'bloom_member', params: { field: 's', capacity: 0 } }, 'capacity'],
    [{ op: 'bloom_member', params: { field: 's', expected_n: 1.5 } }, 'expected_n'],
    [{ op: 'entropy', params: { field: 's', max_categories: 0 } }, 'max_categories'],
    [{ op: 'event_type_mix', params: { field: 's', categories: [] } }, 'categories'],
    [{ op: 'event_type_mix', params: { field: 's', categories: [1] } }, 'categories'],
    [{ op: 'count', params: { windw: '1h' } }, 'windw'],
    [{ op: 'sum', params: { field: 'amount', window: '1m', q: 0.5 } }, 'q'],
  ];
  for (const [spec, key] of bad) rejects(spec, 'aggregation_invalid_param', `nodes[3].agg.feat.params.${key}`);
});

test('where (compiled by the registry) and the peer SDK keys precision / baseline_window are accepted', () => {
  assert.equal(compileWith({ op: 'count', params: { where: 'amount > 1' } }).op, 'count');
  assert.equal(compileWith({ op: 'z_score', params: { field: 'amount', baseline_window: '1h', precision: 12 } }).op, 'z_score');
});

test('bounded lifetime mode: a buffer op without its bound -> unbounded_op_in_lifetime_mode (unless disabled)', () => {
  const specs: unknown[] = [
    { op: 'first_n', params: { field: 's' } },
    { op: 'last_n', params: { field: 's' } },
    { op: 'lag', params: { field: 's' } },
    { op: 'most_recent_n', params: { field: 's' } },
    { op: 'time_since_last_n' },
    { op: 'reservoir_sample', params: { field: 's' } },
    { op: 'histogram', params: { field: 'amount' } },
    { op: 'histogram', params: { field: 'amount', buckets: [] } },
    { op: 'last_n', params: { field: 's', window: 'forever' } },
  ];
  for (const spec of specs) {
    rejects(spec, 'unbounded_op_in_lifetime_mode', 'nodes[3].agg.feat');
    const f = compileWith(spec, false);
    const st = columnState(f);
    for (let i = 0; i < 50; i++) st.update(f.field === 'amount' ? i : `v${i}`, 1_700_000_000_000 + i, {});
    assert.doesNotThrow(() => JSON.stringify(st.read(1_700_000_000_100)));
  }
  // reservoir_sample accepts k as the size (peer compatibility).
  assert.equal(compileWith({ op: 'reservoir_sample', params: { field: 's', k: 4 } }).op, 'reservoir_sample');
});

test('field checks: not a string -> schema_mismatch, unknown column -> schema_propagation_failure, wrong type -> schema_mismatch', () => {
  rejects({ op: 'sum', params: { window: '1m' } }, 'schema_mismatch', 'nodes[3].agg.feat.params.field');
  rejects({ op: 'sum', params: { field: 5, window: '1m' } }, 'schema_mismatch', 'nodes[3].agg.feat.params.field');
  rejects({ op: 'sum', params: { field: 'nope', window: '1m' } }, 'schema_propagation_failure', 'nodes[3].agg.feat.params.field');
  for (const field of ['s', 'b', 'raw', 'at']) rejects({ op: 'sum', params: { field, window: '1m' } }, 'schema_mismatch');
  for (const field of ['b', 'raw']) rejects({ op: 'max', params: { field, window: '1m' } }, 'schema_mismatch');
  for (const field of ['amount', 'n', 's', 'at']) assert.equal(compileWith({ op: 'min', params: { field, window: '1m' } }).field, field);
  rejects({ op: 'quantile', params: { field: 's' } }, 'schema_mismatch');
  rejects({ op: 'ewma', params: { field: 'b', half_life: '1s' } }, 'schema_mismatch');
  rejects({ op: 'geo_distance', params: { lat_field: 's' } }, 'schema_mismatch', 'nodes[3].agg.feat.params.lat_field');
  rejects({ op: 'geo_distance', params: { lon: 'missing' } }, 'schema_propagation_failure', 'nodes[3].agg.feat.params.lon');
  assert.throws(() => compileAgg({ op: 'geo_spread' }, { fields: { x: 'f64' }, path: 'p', memoryGovEnforce: true }), SfError);
  for (const field of ['s', 'b', 'raw', 'at', 'n']) assert.equal(compileWith({ op: 'n_unique', params: { field } }).field, field);
});

test('factories expose canonical op, field and wantsMiss', () => {
  assert.equal(compileWith({ op: 'avg', params: { field: 'amount', window: '1h' } }).op, 'mean');
  assert.equal(compileWith({ op: 'count' }).field, null);
  assert.equal(compileWith({ op: 'count', params: { field: 's' } }).field, 's');
  assert.equal(compileWith({ op: 'geo_spread' }).field, 'lat');
  for (const op of OP_NAMES) {
    const f = compileWith(minimalSpec(op));
    const c = canonicalOp(op);
    assert.equal(f.wantsMiss, c === 'ratio' || c === 'streak' || c === 'max_streak' || c === 'negative_streak', op);
  }
});

test('aggSignature normalizes aliases, durations and defaults, and separates real differences', () => {
  const same: Array<[unknown, unknown]> = [
    [{ op: 'avg', params: { field: 'x', window: '60s' } }, { op: 'mean', params: { window: '1m', field: 'x' } }],
    [{ op: 'top_k', params: { field: 'x' } }, { op: 'top_k', params: { field: 'x', k: 10 } }],
    [{ op: 'count' }, { op: 'count', params: { window: 'forever' } }],
    [{ op: 'quantile', params: { field: 'x' } }, { op: 'percentile', params: { field: 'x', q: 0.5 } }],
    [{ op: 'bloom_member', params: { field: 'x', expected_n: 1024 } }, { op: 'bloom_member', params: { field: 'x', target_fpr: 0.01 } }],
    [{ op: 'ema', params: { field: 'x', half_life: '1h' } }, { op: 'ewma', params: { field: 'x', half_life: '60m' } }],
    [{ op: 'count', params: { where: ' a > 1 ' } }, { op: 'count', params: { where: 'a > 1', precision: 3 } }],
  ];
  for (const [a, b] of same) assert.equal(aggSignature(a), aggSignature(b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  const differ: Array<[unknown, unknown]> = [
    [{ op: 'sum', params: { field: 'x', window: '1m' } }, { op: 'sum', params: { field: 'x', window: '2m' } }],
    [{ op: 'sum', params: { field: 'x', window: '1m' } }, { op: 'sum', params: { field: 'y', window: '1m' } }],
    [{ op: 'sum', params: { field: 'x', window: '1m' } }, { op: 'mean', params: { field: 'x', window: '1m' } }],
    [{ op: 'count', params: { where: 'a > 1' } }, { op: 'count', params: { where: 'a > 2' } }],
    [{ op: 'count' }, { op: 'count', params: { window: '1h' } }],
    [{ op: 'top_k', params: { field: 'x', k: 3 } }, { op: 'top_k', params: { field: 'x', k: 4 } }],
  ];
  for (const [a, b] of differ) assert.notEqual(aggSignature(a), aggSignature(b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  assert.equal(typeof aggSignature('junk'), 'string');
});
