/**
 * Register errors of spec 2.3-2.5 / 7.2 about expressions (filter, with_columns,
 * where, validators) and aggregation specs (op names, windows, half_life,
 * sub_window, q, k, fpr, sigma, lifetime memory bounds), over real sockets.
 * Which params each op reads is in src/ops/defs.ts. Also checks that a valid
 * spec of every op in the catalogue registers and serves.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type HttpResult, type TestServer } from '../harness/server';

const TXN = {
  kind: 'event',
  name: 'Txn',
  schema: {
    fields: { user: 'str', card: 'str', amount: 'f64', n: 'i64', ok: 'bool', ts: 'datetime', lat: 'f64', lon: 'f64', blob: 'bytes' },
    optional_fields: ['n', 'ts', 'lat', 'lon', 'blob'],
  },
};

let srv: TestServer;
let version = 0;

before(async () => {
  srv = await startServer({ memoryOnly: true });
  const r = await post(srv.base, '/register', { nodes: [TXN] });
  assert.equal(r.status, 200, r.text);
  version = r.json.registry_version;
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

function assertRegError(r: HttpResult, code: string, path?: string): void {
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  if (path !== undefined) assert.equal(r.json.error.path, path, r.text);
  assert.equal(r.json.registry_version, version);
}

const table = (agg: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ kind: 'table', name: 'T', upstreams: ['Txn'], key: ['user'], agg, ...extra });
const derived = (ops: unknown[]): Record<string, unknown> => ({ kind: 'derivation', name: 'X', output_kind: 'event', upstreams: ['Txn'], ops });

/** Registers one table with feature `f` = {op, params}; expects `code` at `nodes[0].agg.f<suffix>`. */
async function expectAgg(op: string, params: Record<string, unknown> | undefined, code: string, suffix?: string): Promise<void> {
  const spec = params === undefined ? { op } : { op, params };
  const r = await post(srv.base, '/register', { nodes: [table({ f: spec })] });
  assertRegError(r, code, suffix === undefined ? undefined : `nodes[0].agg.f${suffix}`);
}

async function expectOk(nodes: unknown[]): Promise<void> {
  const r = await post(srv.base, '/register', { nodes, dry_run: true });
  assert.equal(r.status, 200, r.text);
}

// ---------------------------------------------------------------- expressions

test('unknown_field_reference: filter, with_columns, where, validators', async () => {
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'filter', expr: 'nope > 1' }])] }), 'unknown_field_reference', 'nodes[0].ops[0].expr');
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'with_columns', exprs: { x: 'amount + nope' } }])] }), 'unknown_field_reference', 'nodes[0].ops[0].exprs.x');
  await expectAgg('count', { where: 'nope > 1' }, 'unknown_field_reference', '.params.where');
  const ev = { kind: 'event', name: 'V', schema: { fields: { a: 'f64' }, optional_fields: [] }, validators: ['a > 0', 'b > 0'] };
  assertRegError(await post(srv.base, '/register', { nodes: [ev] }), 'unknown_field_reference', 'nodes[0].validators[1]');
  // A column added by with_columns is visible to later ops; a dropped one is not.
  await expectOk([derived([{ op: 'with_columns', exprs: { x: 'amount * 2' } }, { op: 'filter', expr: 'x > 1' }])]);
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'drop', fields: ['amount'] }, { op: 'filter', expr: 'amount > 1' }])] }), 'unknown_field_reference', 'nodes[0].ops[1].expr');
});

test('invalid_expression: does not parse, unknown function, wrong arity', async () => {
  for (const expr of ['amount >', 'amount = 1', "user == 'abc", 'foo(amount) > 1', 'amount > 1 )', '', 'cast(amount) > 1', 'amount in ()']) {
    assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'filter', expr }])] }), 'invalid_expression', 'nodes[0].ops[0].expr');
  }
  await expectAgg('count', { where: 'amount >' }, 'invalid_expression', '.params.where');
});

test('invalid_cast_target: a target other than str, int, float, bool', async () => {
  for (const t of ['i64', "'datetime'", 'INT', 'decimal', '1']) {
    assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'with_columns', exprs: { c: `cast(amount, ${t})` } }])] }), 'invalid_cast_target', 'nodes[0].ops[0].exprs.c');
  }
  await expectAgg('count', { where: 'cast(amount, i32) > 1' }, 'invalid_cast_target', '.params.where');
  await expectOk([derived([{ op: 'with_columns', exprs: { a: 'cast(amount, int)', b: "cast(n, 'str')", c: 'cast(user, float)', d: 'cast(n, bool)' } }])]);
});

test('schema_mismatch: non-bool predicates and operand type errors', async () => {
  await expectAgg('count', { where: 'amount + 1' }, 'schema_mismatch', '.params.where');
  await expectAgg('count', { where: 'user' }, 'schema_mismatch', '.params.where');
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'filter', expr: 'amount + 1' }])] }), 'schema_mismatch', 'nodes[0].ops[0].expr');
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'filter', expr: 'ok + 1 > 0' }])] }), 'schema_mismatch', 'nodes[0].ops[0].expr');
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'filter', expr: 'amount and ok' }])] }), 'schema_mismatch', 'nodes[0].ops[0].expr');
  assertRegError(await post(srv.base, '/register', { nodes: [derived([{ op: 'with_columns', exprs: { c: 'user * 2' } }])] }), 'schema_mismatch', 'nodes[0].ops[0].exprs.c');
  const ev = { kind: 'event', name: 'V', schema: { fields: { a: 'f64' }, optional_fields: [] }, validators: ['a'] };
  assertRegError(await post(srv.base, '/register', { nodes: [ev] }), 'schema_mismatch', 'nodes[0].validators[0]');
});

test('schema_mismatch and schema_propagation_failure: the field argument of an aggregation', async () => {
  await expectAgg('sum', { field: 'user', window: '1h' }, 'schema_mismatch', '.params.field');
  await expectAgg('sum', { field: 5, window: '1h' }, 'schema_mismatch', '.params.field');
  await expectAgg('sum', { window: '1h' }, 'schema_mismatch', '.params.field');
  await expectAgg('ewma', { field: 'ok', half_life: '1h' }, 'schema_mismatch', '.params.field');
  await expectAgg('sum', { field: 'nope', window: '1h' }, 'schema_propagation_failure', '.params.field');
  await expectAgg('last', { field: 'nope' }, 'schema_propagation_failure', '.params.field');
  await expectAgg('geo_distance', { lat_field: 'lat', lon_field: 'nope' }, 'schema_propagation_failure', '.params.lon_field');
});

// ---------------------------------------------------------------- aggregation specs

test('unknown_op: op-strings outside the catalogue', async () => {
  for (const op of ['nope', 'SUM', 'Count', 'median', 'sum ', '']) await expectAgg(op, {}, 'unknown_op', '.op');
});

test('aggregation_invalid_window: missing where required, malformed, or given where unsupported', async () => {
  for (const op of ['sum', 'mean', 'avg', 'min', 'max', 'var', 'variance', 'std', 'stddev']) {
    await expectAgg(op, { field: 'amount' }, 'aggregation_invalid_window', '.params.window');
  }
  for (const w of ['5x', '0s', '1w', '', '-1h', '1.5h', '1 h', 'FOREVER', 5, '99999999999d']) {
    await expectAgg('count', { window: w }, 'aggregation_invalid_window', '.params.window');
  }
  // null means "not set" (docs/registry.md): a lifetime count.
  await expectOk([table({ f: { op: 'count', params: { window: null } } })]);
  await expectAgg('rate', {}, 'aggregation_invalid_window', '.params.window');
  await expectAgg('rate', { window: 'forever' }, 'aggregation_invalid_window', '.params.window');
  await expectAgg('velocity', { field: 'amount' }, 'aggregation_invalid_window', '.params.window');
  await expectAgg('time_since', { window: '1h' }, 'aggregation_invalid_window', '.params.window');
  await expectAgg('ewma', { field: 'amount', half_life: '1h', window: '1h' }, 'aggregation_invalid_window', '.params.window');
  // Every duration unit and forever are fine where a window is allowed.
  await expectOk([table({ a: { op: 'sum', params: { field: 'amount', window: '500ms' } }, b: { op: 'sum', params: { field: 'amount', window: '30s' } }, c: { op: 'sum', params: { field: 'amount', window: '5m' } }, d: { op: 'sum', params: { field: 'amount', window: '2h' } }, e: { op: 'sum', params: { field: 'amount', window: '7d' } }, f: { op: 'sum', params: { field: 'amount', window: 'forever' } } })]);
});

test('aggregation_invalid_half_life: missing, malformed, non-positive or forever', async () => {
  for (const op of ['ewma', 'ema', 'ewvar', 'ew_zscore', 'decayed_sum']) {
    await expectAgg(op, { field: 'amount' }, 'aggregation_invalid_half_life', '.params.half_life');
  }
  await expectAgg('decayed_count', {}, 'aggregation_invalid_half_life', '.params.half_life');
  for (const h of ['forever', '0s', '-1s', 'abc', 5, '1.5h']) {
    await expectAgg('ewma', { field: 'amount', half_life: h }, 'aggregation_invalid_half_life', '.params.half_life');
  }
});

test('aggregation_invalid_sub_window: missing, malformed, non-positive, not smaller than the window', async () => {
  await expectAgg('burst_count', { window: '1h' }, 'aggregation_invalid_sub_window', '.params.sub_window');
  for (const s of ['1x', '0s', 'forever', 60]) {
    await expectAgg('burst_count', { window: '1h', sub_window: s }, 'aggregation_invalid_sub_window', '.params.sub_window');
  }
  await expectAgg('burst_count', { window: '1h', sub_window: '1h' }, 'aggregation_invalid_sub_window', '.params.sub_window');
  await expectAgg('burst_count', { window: '1h', sub_window: '2h' }, 'aggregation_invalid_sub_window', '.params.sub_window');
});

test('aggregation_invalid_param: sigma out of range, bound out of range, unknown param keys', async () => {
  for (const sigma of [-1, 0, 'x']) await expectAgg('outlier_count', { field: 'amount', sigma }, 'aggregation_invalid_param', '.params.sigma');
  await expectOk([table({ f: { op: 'outlier_count', params: { field: 'amount', sigma: null } } })]); // null: the default
  for (const n of [0, 1025, 1.5, '5']) await expectAgg('last_n', { field: 'user', n }, 'aggregation_invalid_param', '.params.n');
  await expectAgg('count', { windw: '1h' }, 'aggregation_invalid_param', '.params.windw');
  await expectAgg('sum', { field: 'amount', window: '1h', q: 0.5 }, 'aggregation_invalid_param', '.params.q');
  await expectAgg('histogram', { field: 'amount', buckets: [1, 1] }, 'aggregation_invalid_param', '.params.buckets');
  await expectAgg('bloom_member', { field: 'user', capacity: 0 }, 'aggregation_invalid_param', '.params.capacity');
});

test('invalid_percentile_q: q outside (0,1)', async () => {
  for (const q of [0, 1, 1.5, -0.1, 'x']) {
    await expectAgg('quantile', { field: 'amount', q }, 'invalid_percentile_q', '.params.q');
    await expectAgg('percentile', { field: 'amount', q }, 'invalid_percentile_q', '.params.q');
  }
  await expectOk([table({ a: { op: 'quantile', params: { field: 'amount', q: 0.001 } }, b: { op: 'quantile', params: { field: 'amount', q: 0.999, window: '1h' } } })]);
});

test('invalid_top_k_k: k outside (0,1024] or not an integer; default 10', async () => {
  for (const k of [0, 1025, 2.5, -1, '10']) await expectAgg('top_k', { field: 'user', k }, 'invalid_top_k_k', '.params.k');
  await expectOk([table({ a: { op: 'top_k', params: { field: 'user', k: 1 } }, b: { op: 'top_k', params: { field: 'user', k: 1024 } }, c: { op: 'top_k', params: { field: 'user' } } })]);
});

test('invalid_bloom_fpr: fpr outside (0,1)', async () => {
  for (const fpr of [0, 1, 1.5, -0.5, 'x']) await expectAgg('bloom_member', { field: 'user', fpr }, 'invalid_bloom_fpr', '.params.fpr');
  await expectOk([table({ a: { op: 'bloom_member', params: { field: 'user', fpr: 0.001 } } })]);
});

test('window_not_supported: bloom_member takes no window, not even forever', async () => {
  await expectAgg('bloom_member', { field: 'user', window: '1h' }, 'window_not_supported', '.params.window');
  await expectAgg('bloom_member', { field: 'user', window: 'forever' }, 'window_not_supported', '.params.window');
});

test('unbounded_op_in_lifetime_mode: buffer ops without their bound', async () => {
  await expectAgg('last_n', { field: 'user' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('first_n', { field: 'user' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('most_recent_n', { field: 'user' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('lag', { field: 'amount' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('time_since_last_n', {}, 'unbounded_op_in_lifetime_mode');
  await expectAgg('reservoir_sample', { field: 'amount' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('histogram', { field: 'amount' }, 'unbounded_op_in_lifetime_mode');
  await expectAgg('last_n', { field: 'user', window: 'forever' }, 'unbounded_op_in_lifetime_mode');
  await expectOk([table({ a: { op: 'last_n', params: { field: 'user', n: 5 } }, b: { op: 'lag', params: { field: 'amount', n: 1 } } })]);
});

test('unbounded_op_in_lifetime_mode is off with SERVICE_MEMORY_GOV_ENFORCE=0', async () => {
  const loose = await startServer({ memoryOnly: true, env: { SERVICE_MEMORY_GOV_ENFORCE: '0' } });
  try {
    const nodes = [TXN, table({ l: { op: 'last_n', params: { field: 'user' } }, h: { op: 'histogram', params: { field: 'amount' } }, g: { op: 'lag', params: { field: 'amount' } } })];
    const r = await post(loose.base, '/register', { nodes });
    assert.equal(r.status, 200, r.text);
    const p = await post(loose.base, '/push', { event: 'Txn', data: { user: 'u', card: 'c', amount: 1, ok: true } });
    assert.equal(p.status, 200, p.text);
    const g = await post(loose.base, '/get', { table: 'T', key: 'u', features: ['l'] });
    assert.deepEqual(g.json, { l: ['u'] });
    // Other checks still apply.
    const bad = await post(loose.base, '/register', { nodes: [table({ s: { op: 'sum', params: { field: 'amount' } } }, { name: 'T2' })] });
    assert.equal(bad.json.error.code, 'aggregation_invalid_window');
  } finally {
    await loose.stop();
    loose.cleanup();
  }
});

test('every op of the catalogue registers with valid params and serves a row', async () => {
  const a = (field?: string, params: Record<string, unknown> = {}): Record<string, unknown> => (field === undefined ? params : { field, ...params });
  const specs: Record<string, { op: string; params: Record<string, unknown> }> = {};
  const add = (op: string, params: Record<string, unknown>): void => { specs[`f_${op}`] = { op, params }; };
  add('count', {});
  for (const op of ['sum', 'mean', 'avg', 'min', 'max', 'var', 'variance', 'std', 'stddev']) add(op, a('amount', { window: '1h' }));
  add('ratio', {});
  add('rate', { window: '5m' });
  add('velocity', a('amount', { window: '5m' }));
  add('first', a('user'));
  add('last', a('user'));
  for (const op of ['first_n', 'last_n', 'most_recent_n']) add(op, a('user', { n: 3 }));
  add('lag', a('amount', { n: 1 }));
  for (const op of ['first_seen', 'last_seen', 'age', 'has_seen', 'time_since', 'streak', 'max_streak', 'negative_streak', 'inter_arrival_stats', 'hour_of_day_histogram', 'dow_hour_histogram']) add(op, {});
  add('time_since_last_n', { n: 3 });
  add('first_seen_in_window', { window: '1h' });
  for (const op of ['ewma', 'ema', 'ewvar', 'ew_zscore', 'decayed_sum']) add(op, a('amount', { half_life: '10m' }));
  add('decayed_count', { half_life: '10m' });
  for (const op of ['twa', 'rate_of_change', 'delta_from_prev', 'trend', 'trend_residual', 'z_score', 'seasonal_deviation']) add(op, a('amount'));
  add('burst_count', { window: '1h', sub_window: '1m' });
  add('outlier_count', a('amount', { sigma: 2 }));
  for (const op of ['value_change_count', 'n_unique', 'count_distinct', 'entropy', 'event_type_mix']) add(op, a('user'));
  add('quantile', a('amount', { q: 0.9 }));
  add('percentile', a('amount', { q: 0.5 }));
  add('top_k', a('user', { k: 5 }));
  add('bloom_member', a('user', { fpr: 0.01 }));
  add('histogram', a('amount', { buckets: [0, 10, 100] }));
  add('reservoir_sample', a('amount', { samples: 10 }));
  for (const op of ['geo_velocity', 'geo_distance', 'geo_spread', 'distance_from_home']) add(op, { lat_field: 'lat', lon_field: 'lon' });
  const r = await post(srv.base, '/register', { nodes: [table(specs, { name: 'AllOps' })] });
  assert.equal(r.status, 200, r.text);
  version = r.json.registry_version;
  for (let i = 0; i < 3; i++) {
    const p = await post(srv.base, '/push', { event: 'Txn', data: { user: 'u', card: 'c', amount: 1 + i, ok: i % 2 === 0, lat: 48.85, lon: 2.35 } });
    assert.equal(p.status, 200, p.text);
  }
  const g = await post(srv.base, '/get', { table: 'AllOps', key: 'u' });
  assert.equal(g.status, 200, g.text);
  assert.deepEqual(Object.keys(g.json).sort(), Object.keys(specs).sort(), 'every feature has a value for a warm key');
  assert.equal(g.json.f_count, 3);
  assert.equal(g.json.f_sum, 6);
  assert.deepEqual((await get(srv.base, '/registry')).json.registry_version, version);
});
