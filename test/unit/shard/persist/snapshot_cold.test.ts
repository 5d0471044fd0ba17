/**
 * Fuzzy snapshots and cold entities, on ShardState directly:
 * - a snapshot whose slices interleave with pushes, restored and followed by a
 *   WAL replay from its start LSN, equals the live state (per-entity lastLsn skip);
 * - frozen (cold) entities read exactly as hot ones, thaw on push, and survive a
 *   snapshot; a registry change of their table's layout thaws and remaps them.
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardState } from '../../../../src/shard/state/state';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import type { RegistryState } from '../../../../src/registry/model';
import { prng } from '../../../harness/prng';

const EVENT = { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64' }, optional_fields: [] }, cold_after: '1m' };
const TABLE = {
  kind: 'table', name: 'T', upstreams: ['E'], key: ['k'],
  agg: {
    n: { op: 'count', params: {} },
    s: { op: 'sum', params: { field: 'x', window: '1h' } },
    last: { op: 'last_n', params: { field: 'x', n: 3 } },
  },
};
const V1: RegistryState = { version: 1, nodes: [EVENT, TABLE] };
/** Windowed change-over-time, point, count-table and geo forms (their ring + bucket state must round-trip too). */
const W = { field: 'x', window: '10s' };
const WINDOWED_TABLE = {
  ...TABLE,
  agg: {
    trend: { op: 'trend', params: W },
    resid: { op: 'trend_residual', params: W },
    twa: { op: 'twa', params: W },
    roc: { op: 'rate_of_change', params: W },
    delta: { op: 'delta_from_prev', params: W },
    gaps: { op: 'inter_arrival_stats', params: { window: '10s' } },
    changes: { op: 'value_change_count', params: W },
    outliers: { op: 'outlier_count', params: { ...W, sigma: 1 } },
    bursts: { op: 'burst_count', params: { sub_window: '100ms', window: '10s' } },
    lastN: { op: 'last_n', params: { ...W, n: 3 } },
    mix: { op: 'event_type_mix', params: W },
    // x in 0..100 as both coordinates: points with x > 90 are skipped (invalid latitude).
    path: { op: 'geo_distance', params: { lat_field: 'x', lon_field: 'x', window: '10s' } },
  },
};
const VW: RegistryState = { version: 1, nodes: [EVENT, WINDOWED_TABLE] };

interface Ev { lsn: number; t: number; k: string; x: number }

function shard(reg: RegistryState = V1): ShardState {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  return s;
}

function rows(s: ShardState, keys: string[], now: number): string[] {
  return keys.map((k) => readText(s, 'T', k, null, now));
}


// The windowed registry uses few keys, so entities hold more than 64 events per
// window (the bucketed regime) when the snapshot is taken.
for (const [seed, reg, nKeys] of [[1, V1, 3000], [2, V1, 3000], [3, V1, 3000], [4, VW, 40], [5, VW, 400]] as const) {
  test(`a snapshot taken in slices while pushes continue restores exactly (seed ${seed}${reg === VW ? ', windowed ops' : ''})`, () => {
    const rnd = prng(seed);
    const keys = Array.from({ length: nKeys }, (_, i) => `k${i}`);
    const live = shard(reg);
    const log: Ev[] = [];
    let lsn = 0;
    let t = 1_000_000;
    const push = (): void => {
      const e = { lsn: ++lsn, t: (t += 1 + Math.floor(rnd() * 5)), k: keys[Math.floor(rnd() * keys.length)], x: Math.round(rnd() * 100) };
      log.push(e);
      pushRow(live, 'E', { k: e.k, x: e.x }, e.t, e.lsn);
    };
    for (let i = 0; i < 5000; i++) push();
    // Freeze some entities so that both the cold and the hot phase have work.
    const hot = rows(live, keys, t + 5_000);
    live.sweepCold(t + 61_000, 700);
    assert.ok(live.coldCount() > 0);
    if (reg === VW) {
      assert.deepEqual(rows(live, keys, t + 5_000), hot, 'frozen entities answer as they did hot');
      live.sweepCold(t + 61_000, 700);
    }
    const job = new SnapshotJob(live);
    // Tiny slices; between slices, more pushes (including to already captured keys).
    while (!job.step(0.05)) for (let i = 0; i < 40; i++) push();
    const body = job.finish(new DedupeLog()).body;
    for (let i = 0; i < 500; i++) push();
    const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    const { startLsn } = restoreSnapshot(restored, body, (v) => (v === 1 ? reg : undefined));
    for (const e of log) if (e.lsn > startLsn) pushRow(restored, 'E', { k: e.k, x: e.x }, e.t, e.lsn);
    assert.deepEqual(rows(restored, keys, t), rows(live, keys, t));
    // Later reads too: the windows slide identically (values leave as time passes).
    for (const later of [t + 3_000, t + 9_000, t + 20_000]) assert.deepEqual(rows(restored, keys, later), rows(live, keys, later));
    assert.equal(restored.appliedLsn, live.appliedLsn);
  });
}

test('cold entities read like hot ones, thaw on push, and survive a snapshot and a layout change', () => {
  const s = shard();
  for (let i = 0; i < 100; i++) pushRow(s, 'E', { k: `k${i % 10}`, x: i }, 1000 + i, i + 1);
  const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
  const now = 1000 + 30 * 60_000;
  const before = rows(s, keys, now);
  assert.equal(s.sweepCold(1000 + 59_000), 0, 'nothing is idle for 1m yet');
  assert.equal(s.sweepCold(1000 + 61_000 + 100), 10, 'every entity idle past cold_after is frozen');
  assert.equal(s.coldCount(), 10);
  assert.deepEqual(rows(s, keys, now), before, 'frozen entities answer exactly as before');
  // A read thaws; a push thaws and applies.
  assert.equal(s.coldCount(), 0, 'reads moved them back to hot memory');
  s.sweepCold(now + 61_000);
  pushRow(s, 'E', { k: 'k3', x: 1000 }, now + 61_001, 101);
  const k3 = JSON.parse(readText(s, 'T', 'k3', null, now + 61_001));
  assert.equal(k3.n, 11, 'lifetime count kept across freeze and thaw');
  assert.deepEqual(k3.last, [83, 93, 1000]);
  // Snapshot with cold entities, restore: identical rows.
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  const body = job.finish(new DedupeLog()).body;
  const r = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(r, body, (v) => (v === 1 ? V1 : undefined));
  assert.equal(r.coldCount(), 9, 'frozen entities restore frozen');
  assert.deepEqual(rows(r, keys, now + 61_001), rows(s, keys, now + 61_001));
  // A new feature changes the layout: frozen entities are thawed and remapped, old features kept.
  s.sweepCold(now + 200_000);
  const v2: RegistryState = { version: 2, nodes: [EVENT, { ...TABLE, agg: { ...TABLE.agg, mx: { op: 'max', params: { field: 'x', window: '1h' } } } }] };
  s.install(v2);
  const k5 = JSON.parse(readText(s, 'T', 'k5', null, now + 200_000));
  assert.equal(k5.n, 10);
  assert.equal(k5.mx, null, 'the new feature starts empty');
});
