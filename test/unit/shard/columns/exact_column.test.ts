/**
 * Lifetime sketch ops kept as exact values (shard/columns/exact_column.ts): every answer
 * equals the op's own state (its object form, which the sketch unit tests check
 * against naive recomputation) fed the same events, before, at and past
 * LIFE_EXACT_VALUES_MAX values; saves round-trip through snapshots and the cold
 * store as cells; intern references are given back.
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { columnState } from '../../ops/column_state';
import { ShardState } from '../../../../src/shard/state/state';
import { ExactColumn } from '../../../../src/shard/columns/exact_column';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import { LIFE_EXACT_VALUES_MAX } from '../../../../src/limits';
import type { OpState } from '../../../../src/ops/op';
import type { RegistryState } from '../../../../src/registry/model';
import type { Row } from '../../../../src/types';
import { prng } from '../../../harness/prng';

const AGG = {
  nu: { op: 'n_unique', params: { field: 'c' } },
  nux: { op: 'n_unique', params: { field: 'x' } },
  q: { op: 'quantile', params: { field: 'x', q: 0.9 } },
  med: { op: 'quantile', params: { field: 'x', q: 0.5 } },
  top: { op: 'top_k', params: { field: 'c', k: 2 } },
  topb: { op: 'top_k', params: { field: 'b', k: 2 } },
  ent: { op: 'entropy', params: { field: 'c' } },
  n: { op: 'count', params: {} },
};
const EXACT_FEATURES = ['nu', 'nux', 'q', 'med', 'top', 'topb', 'ent'];

function registry(): RegistryState {
  return {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64', c: 'str', b: 'bool' }, optional_fields: ['x', 'c', 'b'] } },
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: AGG } as RegistryState['nodes'][number],
    ],
  };
}

function shard(): ShardState {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry());
  return s;
}

function rowOf(rnd: () => number, k: string): Row {
  const row: Row = { k };
  if (rnd() < 0.85) row.x = rnd() < 0.2 ? -0 : Math.round(rnd() * 1000) / 8;
  if (rnd() < 0.85) row.c = `c${Math.floor(rnd() * 5)}`;
  if (rnd() < 0.5) row.b = rnd() < 0.5;
  return row;
}

function bodyOf(s: ShardState): Buffer {
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  return job.finish(new DedupeLog()).body;
}

test('every lifetime sketch op holds its values as cells: each answer equals the op\'s own state, below, at and past the exact capacity', () => {
  for (const seed of [1, 2, 3]) {
    const rnd = prng(seed);
    const s = shard();
    const ts = s.tableByName('T')!;
    const feats = ts.plan.features;
    for (const name of EXACT_FEATURES) assert.ok(ts.cols.objs[feats.findIndex((f) => f.name === name)] instanceof ExactColumn, name);
    const sep = new Map<string, OpState[]>();
    const check = (): void => {
      for (const [k, states] of sep) {
        const want: Record<string, unknown> = {};
        feats.forEach((f, i) => { want[f.name] = states[i].read(0); });
        assert.deepEqual(JSON.parse(readText(s, 'T', k, null, 0)), JSON.parse(JSON.stringify(want)), `seed ${seed} key ${k}`);
      }
    };
    // Keys with 0..3x the capacity of events each.
    for (let i = 0; i < 40 * LIFE_EXACT_VALUES_MAX; i++) {
      const k = `k${Math.floor(rnd() * 12)}`;
      const row = rowOf(rnd, k);
      pushRow(s, 'E', row, 1_000 + i, i + 1);
      let states = sep.get(k);
      // A sketch op's own object form; the others (a count) in their columns.
      if (states === undefined) sep.set(k, (states = feats.map((f) => (f.factory.exact != null ? f.factory.object!.create() : columnState(f.factory)))));
      feats.forEach((f, j) => states![j].update(f.get === null ? undefined : f.get(row), 1_000 + i, row));
      if (i % 7 === 0) check();
    }
    check();
  }
});

test('exact values: promotion at the value past the capacity, saves as values or as the sketch, and the op\'s own loader reads both', () => {
  const s = shard();
  const ts = s.tableByName('T')!;
  const fi = ts.plan.features.findIndex((f) => f.name === 'top');
  const col = ts.cols.objs[fi] as ExactColumn;
  const intern = col.intern;
  for (let i = 0; i < LIFE_EXACT_VALUES_MAX; i++) pushRow(s, 'E', { k: 'a', c: `v${i % 3}` }, 1_000 + i, i + 1);
  const slot = ts.cols.index.slotOf('a');
  assert.deepEqual(col.save(slot), { exactValues: Array.from({ length: LIFE_EXACT_VALUES_MAX }, (_, i) => `v${i % 3}`) });
  assert.equal(col.promotedCount, 0);
  // The restore of a ValLifeState from the values answers as the column does.
  const fromValues = ts.plan.features[fi].factory.object!.load(col.save(slot));
  assert.deepEqual(fromValues.read(0), col.read(slot, 0));
  pushRow(s, 'E', { k: 'a', c: 'v9' }, 2_000, LIFE_EXACT_VALUES_MAX + 1);
  assert.equal(col.promotedCount, 1, 'one more value: the op\'s object');
  const saved = col.save(slot) as { kind: string };
  assert.equal(saved.kind, 'top_k', 'saved as the sketch');
  // c is interned for the column only while cells hold it; the promoted state holds strings itself.
  assert.equal(intern.size, 0, 'the cells gave their references back');
  // Empty: a key with events that carry no c.
  pushRow(s, 'E', { k: 'e', x: 1 }, 3_000, LIFE_EXACT_VALUES_MAX + 2);
  assert.equal(col.save(ts.cols.index.slotOf('e')), null, 'no value accepted: null, as ValLifeState saves it');
});

test('exact values survive a snapshot and a cold freeze as cells, with the same answers; entities leaving give every intern reference back', () => {
  const rnd = prng(11);
  const s = shard();
  const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
  for (let i = 0; i < 150; i++) pushRow(s, 'E', rowOf(rnd, keys[Math.floor(rnd() * keys.length)]), 1_000 + i, i + 1);
  const rows = keys.map((k) => readText(s, 'T', k, null, 0));
  const ts = s.tableByName('T')!;
  const cols = ts.plan.features.map((f, i) => [f.name, ts.cols.objs[i]] as const).filter(([, c]) => c instanceof ExactColumn) as Array<readonly [string, ExactColumn]>;
  const promoted = cols.map(([, c]) => c.promotedCount);
  assert.ok(promoted.some((n) => n > 0) && promoted.some((n, i) => n < ts.cols.index.size && cols[i][0] !== 'nux'), 'both kinds of slot');

  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, bodyOf(s), () => registry());
  assert.deepEqual(keys.map((k) => readText(restored, 'T', k, null, 0)), rows, 'restored from a snapshot');
  const rt = restored.tableByName('T')!;
  assert.deepEqual(cols.map(([name]) => (rt.cols.objs[rt.plan.features.findIndex((f) => f.name === name)] as ExactColumn).promotedCount), promoted,
    'slots held as values come back as values');

  for (const k of keys) assert.equal(ts.evict(ts.cols.index.slotOf(k), 10_000), false, `${k} frozen`);
  assert.equal(ts.cols.index.size, 0);
  for (const [name, c] of cols) {
    assert.equal(c.promotedCount, 0, `${name}: no object left`);
    assert.equal(c.intern.size, 0, `${name}: every reference given back`);
  }
  assert.deepEqual(keys.map((k) => readText(s, 'T', k, null, 0)), rows, 'thawed from the cold store');
  assert.deepEqual(cols.map(([, c]) => c.promotedCount), promoted);
});

test('a registry change that drops a lifetime sketch gives its interned values back', () => {
  const s = shard();
  for (let i = 0; i < 20; i++) pushRow(s, 'E', { k: `k${i}`, c: `only-${i}` }, 1_000 + i, i + 1);
  const ts = s.tableByName('T')!;
  const intern = (ts.cols.objs[ts.plan.features.findIndex((f) => f.name === 'nu')] as ExactColumn).intern;
  assert.equal(intern.size, 20);
  const next = registry();
  next.version = 2;
  const agg = { ...AGG } as Record<string, unknown>;
  for (const name of ['nu', 'top', 'ent']) delete agg[name];
  (next.nodes[1] as { agg: unknown }).agg = agg;
  s.install(next);
  s.releaseDropped(Number.POSITIVE_INFINITY);
  assert.equal(intern.size, 0);
  assert.deepEqual(JSON.parse(readText(s, 'T', 'k3', null, 0)), { nux: 0, q: null, med: null, topb: [], n: 1 });
});
