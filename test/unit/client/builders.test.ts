import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AGG_ALIASES,
  AGG_OPS,
  Agg,
  StreamfeatError,
  TableClass,
  agg,
  buildNodes,
  classForm,
  col,
  derive,
  event,
  int,
  optional,
  ref,
  table,
  wireType,
} from '../../../src/client';

const Txn = event(
  'Txn',
  {
    txn_id: String,
    card_id: String,
    amount: Number,
    items: int(),
    big: BigInt,
    ok: Boolean,
    at: Date,
    blob: Buffer,
    raw: Uint8Array,
    country: optional(String),
    note: { type: 'str', optional: true },
  },
  { dedupe_key: 'txn_id', dedupe_window: '1h', keep_events_for: '30d', coldAfter: 86_400_000, validators: [col('amount').ge(0)] },
);

test('schema builder maps native types to wire types', () => {
  assert.deepEqual(Txn.toNode(), {
    kind: 'event',
    name: 'Txn',
    schema: {
      fields: {
        txn_id: 'str', card_id: 'str', amount: 'f64', items: 'i64', big: 'i64', ok: 'bool',
        at: 'datetime', blob: 'bytes', raw: 'bytes', country: 'str', note: 'str',
      },
      optional_fields: ['country', 'note'],
    },
    dedupe_key: 'txn_id',
    dedupe_window: '1h',
    keep_events_for: '30d',
    cold_after: '86400000ms',
    validators: ['(amount >= 0)'],
  });
});

test('wireType: wire names, cast-style names, other constructors coerce to str, unknown strings pass through', () => {
  for (const t of ['str', 'f64', 'i64', 'bool', 'bytes', 'datetime']) assert.equal(wireType(t), t);
  assert.equal(wireType('int'), 'i64');
  assert.equal(wireType('float'), 'f64');
  assert.equal(wireType('string'), 'str');
  assert.equal(wireType('boolean'), 'bool');
  assert.equal(wireType(Number, true), 'i64');
  assert.equal(wireType(Object), 'str');
  assert.equal(wireType(Array), 'str');
  assert.equal(wireType(Map), 'str');
  class Money {}
  assert.equal(wireType(Money), 'str');
  assert.equal(wireType(Float64Array), 'str');
  assert.equal(wireType('i32'), 'i32', 'the server answers unknown_field_type for a typo');
  const e = event('E', { a: String }, { optional: ['a'] });
  assert.deepEqual(e.toNode().schema, { fields: { a: 'str' }, optional_fields: ['a'] });
  assert.deepEqual(event('Plain', { a: String }).toNode(), { kind: 'event', name: 'Plain', schema: { fields: { a: 'str' }, optional_fields: [] } });
});

test('derived events and chains', () => {
  const big = Txn.filter(col('amount').gt(100))
    .withColumns({ amount_cents: col('amount').mul(100), tag: "'x'" })
    .select('card_id', 'amount_cents', 'tag')
    .drop(['tag'])
    .rename({ amount_cents: 'cents' })
    .as('BigTxn');
  assert.deepEqual(big.toNode(), {
    kind: 'derivation',
    name: 'BigTxn',
    output_kind: 'event',
    upstreams: ['Txn'],
    ops: [
      { op: 'filter', expr: '(amount > 100)' },
      { op: 'with_columns', exprs: { amount_cents: '(amount * 100)', tag: "'x'" } },
      { op: 'select', fields: ['card_id', 'amount_cents', 'tag'] },
      { op: 'drop', fields: ['tag'] },
      { op: 'rename', mapping: { amount_cents: 'cents' } },
    ],
  });
  // A derived event over a derived event names its direct upstream.
  const bigger = big.filter('cents > 100000').as('HugeTxn');
  assert.deepEqual(bigger.toNode().upstreams, ['BigTxn']);
  assert.deepEqual(derive('Alias', 'Txn').toNode(), { kind: 'derivation', name: 'Alias', output_kind: 'event', upstreams: ['Txn'], ops: [] });
  // Chains are immutable values: branching does not leak ops.
  const base = Txn.filter(col('ok'));
  const a = base.select('card_id');
  const b = base.drop('blob');
  assert.equal(a.ops.length, 2);
  assert.equal(b.ops.length, 2);
  assert.equal(base.ops.length, 1);
});

test('tables: key, chain ops, features, raw specs', () => {
  const t = table('CardStats', {
    from: Txn.filter(col('ok').eq(true)),
    key: 'card_id',
    features: {
      n_1h: agg.count({ window: '1h' }),
      spend_1h: agg.sum('amount', { window: 3_600_000, where: col('amount').gt(0) }),
      avg_1h: agg.avg('amount', { window: '1h' }),
      custom: { op: 'max', params: { field: 'amount', window: '1d' } },
    },
  });
  assert.deepEqual(t.toNode(), {
    kind: 'table',
    name: 'CardStats',
    upstreams: ['Txn'],
    key: ['card_id'],
    ops: [{ op: 'filter', expr: '(ok == true)' }],
    agg: {
      n_1h: { op: 'count', params: { window: '1h' } },
      spend_1h: { op: 'sum', params: { field: 'amount', window: '3600000ms', where: '(amount > 0)' } },
      avg_1h: { op: 'mean', params: { field: 'amount', window: '1h' } },
      custom: { op: 'max', params: { field: 'amount', window: '1d' } },
    },
  });
  const composite = table('Pair', { from: 'Txn', key: ['card_id', 'country'], features: { n: agg.count() } });
  assert.deepEqual(composite.toNode(), { kind: 'table', name: 'Pair', upstreams: ['Txn'], key: ['card_id', 'country'], agg: { n: { op: 'count', params: {} } } });
});

test('every op of the catalogue has a builder, and aliases emit canonical names', () => {
  const built: Record<string, Agg> = {
    count: agg.count(), sum: agg.sum('x'), mean: agg.mean('x'), min: agg.min('x'), max: agg.max('x'),
    var: agg.var('x'), std: agg.std('x'), ratio: agg.ratio(col('ok')),
    first: agg.first('x'), last: agg.last('x'), first_n: agg.firstN('x', 3), last_n: agg.lastN('x', 3), lag: agg.lag('x'),
    first_seen: agg.firstSeen(), last_seen: agg.lastSeen(), age: agg.age(), has_seen: agg.hasSeen(), time_since: agg.timeSince(),
    time_since_last_n: agg.timeSinceLastN(3), first_seen_in_window: agg.firstSeenInWindow('1h'),
    streak: agg.streak(), max_streak: agg.maxStreak(), negative_streak: agg.negativeStreak(),
    ewma: agg.ewma('x', '5m'), ewvar: agg.ewvar('x', '5m'), ew_zscore: agg.ewZscore('x', '5m'), decayed_sum: agg.decayedSum('x', '5m'),
    decayed_count: agg.decayedCount('5m'), twa: agg.twa('x'),
    rate_of_change: agg.rateOfChange('x'), inter_arrival_stats: agg.interArrivalStats(), burst_count: agg.burstCount('10s'),
    delta_from_prev: agg.deltaFromPrev('x'), trend: agg.trend('x'), trend_residual: agg.trendResidual('x'),
    outlier_count: agg.outlierCount('x', { sigma: 2.5 }), value_change_count: agg.valueChangeCount('x'),
    velocity: agg.velocity('x', '1m'), rate: agg.rate('1m'), z_score: agg.zScore('x'),
    n_unique: agg.nUnique('x'), quantile: agg.quantile('x', 0.9), top_k: agg.topK('x', { k: 5 }),
    bloom_member: agg.bloomMember('x', { fpr: 0.01, capacity: 1000 }), entropy: agg.entropy('x', { max_categories: 64 }),
    histogram: agg.histogram('x', [1, 10, 100]), hour_of_day_histogram: agg.hourOfDayHistogram(), dow_hour_histogram: agg.dowHourHistogram(),
    seasonal_deviation: agg.seasonalDeviation('x'), event_type_mix: agg.eventTypeMix('x', { categories: ['a', 'b'] }),
    most_recent_n: agg.mostRecentN('x', 5), reservoir_sample: agg.reservoirSample('x', 8),
    geo_velocity: agg.geoVelocity({ lat_field: 'la', lon_field: 'lo' }), geo_distance: agg.geoDistance(), geo_spread: agg.geoSpread(),
    distance_from_home: agg.distanceFromHome({ samples: 50, latField: 'la', lonField: 'lo' }),
  };
  const catalogue = Object.values(AGG_OPS).flat();
  assert.deepEqual(Object.keys(built).sort(), [...catalogue].sort());
  for (const [name, a] of Object.entries(built)) assert.equal(a.op, name);
  // Positional and named params land under their wire names.
  assert.deepEqual(agg.firstN('x', 3).params, { field: 'x', n: 3 });
  assert.deepEqual(agg.lag('x').params, { field: 'x', n: 1 });
  assert.deepEqual(agg.ewma('x', '5m', { where: 'x > 0' }).params, { field: 'x', where: 'x > 0', half_life: '5m' });
  assert.deepEqual(agg.burstCount('10s', { window: '1h' }).params, { window: '1h', sub_window: '10s' });
  assert.deepEqual(agg.quantile('x', 0.9, { window: '1h' }).params, { field: 'x', window: '1h', q: 0.9 });
  assert.deepEqual(agg.distanceFromHome({ samples: 50, latField: 'la', lonField: 'lo' }).params, { samples: 50, lat_field: 'la', lon_field: 'lo' });
  assert.deepEqual(agg.entropy('x', { maxCategories: 9 }).params, { field: 'x', max_categories: 9 });
  assert.deepEqual(agg.ratio(col('s').eq('error'), { window: '5m' }).toSpec(), { op: 'ratio', params: { window: '5m', where: "(s == 'error')" } });
  assert.deepEqual(agg.decayedCount(60_000).params, { half_life: '60000ms' });
  // Aliases.
  const aliasBuilt: Record<string, Agg> = {
    avg: agg.avg('x'), variance: agg.variance('x'), stddev: agg.stddev('x'),
    count_distinct: agg.countDistinct('x'), percentile: agg.percentile('x', 0.5), ema: agg.ema('x', '1m'),
  };
  for (const [alias, a] of Object.entries(aliasBuilt)) assert.equal(a.op, AGG_ALIASES[alias]);
  assert.equal(agg.op('future_op', 'x', { window: '1h' }).toSpec().op, 'future_op');
  assert.throws(() => agg.sum('x', { window: 1.5 }), TypeError);
  assert.throws(() => agg.sum('x', { window: 0 }), TypeError);
});

test('joins, unions and class-form tables throw their client-side codes', () => {
  const codeOf = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof StreamfeatError);
      assert.equal(e.status, 0);
      assert.ok(e.isClientSide);
      return e.code;
    }
    assert.fail('did not throw');
  };
  const t = table('T', { from: Txn, key: 'card_id', features: { n: agg.count() } });
  assert.equal(codeOf(() => Txn.join(t)), 'joins_not_supported');
  assert.equal(codeOf(() => Txn.filter('ok').join(Txn)), 'joins_not_supported');
  assert.equal(codeOf(() => t.join(t)), 'joins_not_supported');
  assert.equal(codeOf(() => Txn.union(Txn)), 'unions_not_supported_in_v0');
  assert.equal(codeOf(() => t.union(t)), 'unions_not_supported_in_v0');
  assert.equal(codeOf(() => classForm()), 'svc_table_class_form_not_supported');
  class CardStats extends TableClass {}
  assert.equal(codeOf(() => new CardStats()), 'svc_table_class_form_not_supported');
  assert.equal(codeOf(() => buildNodes([CardStats as never])), 'svc_table_class_form_not_supported');
  assert.equal(codeOf(() => buildNodes([Txn.filter('ok') as never])), 'invalid_descriptor');
  // @ts-expect-error -- Txn has no column `a` (and a chain is not registrable either)
  assert.equal(codeOf(() => buildNodes(Txn.select('a'))), 'invalid_descriptor');
  assert.equal(codeOf(() => buildNodes([ref('Txn')])), 'invalid_descriptor');
  assert.equal(codeOf(() => buildNodes([42 as never])), 'invalid_descriptor');
  try {
    buildNodes([Txn, Txn.filter('ok')]);
  } catch (e) {
    assert.equal((e as StreamfeatError).path, 'nodes[1]');
  }
});

test('register payload: upstreams first, each node once, raw nodes untouched', () => {
  const big = Txn.filter(col('amount').gt(100)).as('BigTxn');
  const stats = table('BigStats', { from: big.select('card_id', 'amount'), key: 'card_id', features: { n: agg.count() } });
  const other = table('CardStats', { from: Txn, key: 'card_id', features: { n: agg.count() } });
  const rawNode = { kind: 'event', name: 'Raw', schema: { fields: { a: 'str' }, optional_fields: [] } };
  const nodes = buildNodes([stats, other, rawNode, Txn]);
  assert.deepEqual(
    nodes.map((n) => (n as { name: string }).name),
    ['Txn', 'BigTxn', 'BigStats', 'CardStats', 'Raw'],
  );
  assert.equal(nodes[4], rawNode, 'raw nodes are passed through as the same object');
  assert.deepEqual((nodes[2] as { ops: unknown }).ops, [{ op: 'select', fields: ['card_id', 'amount'] }]);
  // A table over ref() sends only the table.
  const onRef = table('RefStats', { from: ref('Txn').filter('ok'), key: 'card_id', features: { n: agg.count() } });
  assert.deepEqual(buildNodes(onRef).map((n) => (n as { name: string }).name), ['RefStats']);
  // Two different definitions under one name are both sent (the server reports duplicate_name).
  const txn2 = event('Txn', { x: String });
  assert.equal(buildNodes([Txn, txn2]).length, 2);
  assert.equal(buildNodes([Txn, event('Txn', Txn.fields, Txn.settings)]).length, 1);
  // A whole register body (as read from a file) is unwrapped.
  assert.deepEqual(buildNodes({ nodes: [rawNode, other] }), [rawNode, Txn.toNode(), other.toNode()]);
});
