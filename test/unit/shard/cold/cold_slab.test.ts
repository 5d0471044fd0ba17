/**
 * Cold entities frozen as slab bytes (cold.ts freeze, slab_chunk.ts writeFrozen):
 * a freeze and thaw keeps every value exactly (rings in the exact and bucketed
 * regimes, skip counts of a ring spanning windows, absent values, interned
 * strings, fixed, kept, exact-value and object columns); frozen entities restore
 * from a snapshot and are remapped by a layout change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pushRow, readText } from '../../../harness/shard_feed';
import { FROZEN_FORMAT, freeze, frozenClock, frozenParts, thaw } from '../../../../src/shard/cold/frozen_entity';
import { FixedColumn, ObjectColumn } from '../../../../src/shard/columns/solo_column';
import { ExactColumn } from '../../../../src/shard/columns/exact_column';
import { KeptColumn } from '../../../../src/shard/columns/kept_column';
import { ShardState, type TableState } from '../../../../src/shard/state/state';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import type { RegistryState } from '../../../../src/registry/model';
import type { Row } from '../../../../src/types';

const EVENT = {
  kind: 'event', name: 'E', cold_after: '1m',
  schema: { fields: { k: 'str', x: 'f64', c: 'str', b: 'bool' }, optional_fields: ['x', 'c', 'b'] },
};
const AGG = {
  // Lifetime: fixed rows (count, sum), kept values (last_n of a string), object states.
  n: { op: 'count', params: {} },
  sx: { op: 'sum', params: { field: 'x', window: 'forever' } },
  lastC: { op: 'last_n', params: { field: 'c', n: 3 } },
  lastX: { op: 'last_n', params: { field: 'x', n: 4 } },
  qx: { op: 'quantile', params: { field: 'x', q: 0.5, window: 'forever' } },
  topC: { op: 'top_k', params: { field: 'c', k: 2, window: 'forever' } },
  uC: { op: 'n_unique', params: { field: 'c', window: 'forever' } },
  minC: { op: 'min', params: { field: 'c', window: 'forever' } },
  // One ring group spanning two windows (skip counts), strings interned (top_k and last_n read c) and absent cells.
  n10: { op: 'count', params: { window: '10s' } },
  nx1h: { op: 'count', params: { field: 'x', window: '1h' } },
  s1h: { op: 'sum', params: { field: 'x', window: '1h' } },
  lo10: { op: 'min', params: { field: 'x', window: '10s' } },
  q1h: { op: 'quantile', params: { field: 'x', q: 0.9, window: '1h' } },
  tk1h: { op: 'top_k', params: { field: 'c', k: 2, window: '1h' } },
  u1h: { op: 'n_unique', params: { field: 'c', window: '1h' } },
  lastB: { op: 'last_n', params: { field: 'b', n: 2, window: '1h' } },
};
const REG: RegistryState = { version: 1, nodes: [EVENT, { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: AGG }] as RegistryState['nodes'] };
/** Without the lifetime ops held as objects: a frozen slab's rest is plain-encoded (no v8). */
const { qx: _q, topC: _t, uC: _u, ...LEAN_AGG } = AGG;
const LEAN: RegistryState = { version: 1, nodes: [EVENT, { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: LEAN_AGG }] as RegistryState['nodes'] };

function shard(reg: RegistryState = REG): ShardState {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  return s;
}

const T0 = 5_000_000;

/** Values the rest's plain encoding must keep exactly (the last events of a feed). */
const ODD_X = [-0, 2 ** 40 + 0.5, -(2 ** 31), 2 ** 31, Number.MAX_SAFE_INTEGER];
const ODD_C = ['', 'lone \ud800 surrogate', '\u{1F600} two units', 'ÿ latin1'];

/**
 * `events` events to key `k`, `gapMs` apart; every 3rd lacks x, every 4th c, every 5th b; c repeats,
 * one value per key; the last ones carry odd values (ODD_X, ODD_C).
 */
function feed(s: ShardState, k: string, events: number, gapMs: number, lsn0 = 0): number {
  for (let i = 0; i < events; i++) {
    const row: Record<string, unknown> = { k };
    const odd = events - 1 - i;
    if (i % 3 !== 0) row.x = odd < ODD_X.length ? ODD_X[odd] : i % 7 === 0 ? -0.5 * i : i * 1.25;
    if (i % 4 !== 0) row.c = odd < ODD_C.length ? ODD_C[odd] : i % 9 === 0 ? `only-${k}` : `c${i % 5}é`;
    if (i % 5 !== 0) row.b = i % 2 === 0;
    pushRow(s, 'E', row as Row, T0 + i * gapMs, lsn0 + i + 1);
  }
  return lsn0 + events;
}

/** Reads of `keys` at a few times (windows slide the same after a thaw). */
function reads(s: ShardState, keys: string[], now: number): string[] {
  return [now, now + 5_000, now + 20_000, now + 3_600_000].flatMap((t) => keys.map((k) => readText(s, 'T', k, null, t)));
}

/** Freezes every key with freeze() and thaws it back with thaw(); returns the buffers. */
function freezeThaw(s: ShardState, keys: string[], encode: (slot: number) => Buffer = (slot) => freeze(s.tableByName('T')!.cols, slot)): Buffer[] {
  const cols = s.tableByName('T')!.cols;
  const bufs = keys.map((k) => {
    const slot = cols.index.slotOf(k);
    const buf = encode(slot);
    cols.removeSlot(slot);
    return buf;
  });
  keys.forEach((k, i) => thaw(bufs[i], cols, k));
  return bufs;
}

test('the table covers every column kind and a ring group of two windows', () => {
  const cols = shard().tableByName('T')!.cols;
  assert.ok(cols.objs.some((c) => c instanceof FixedColumn), 'a fixed column');
  assert.ok(cols.objs.some((c) => c instanceof KeptColumn), 'a kept column');
  assert.ok(cols.objs.some((c) => c instanceof ObjectColumn), 'an object column');
  assert.ok(cols.objs.some((c) => c instanceof ExactColumn), 'an exact-values column');
  assert.ok(cols.groups.some((g) => g.sw > 0), 'a group with skip counts');
});

for (const [regime, events, gapMs] of [['exact', 20, 700], ['bucketed', 300, 1_000], ['empty rings, lifetime only', 5, 1_000_000]] as const) for (const reg of [REG, LEAN]) {
  test(`a frozen slab thaws to the same answers (${regime}${reg === LEAN ? ', no object columns' : ''})`, () => {
    const keys = ['a', 'b', 'ünï'];
    const s = shard(reg);
    let lsn = 0;
    for (const k of keys) lsn = feed(s, k, events + keys.indexOf(k), gapMs, lsn);
    const now = T0 + events * gapMs;
    const cols = s.tableByName('T')!.cols;
    if (regime === 'bucketed') assert.ok(cols.groups.some((g) => g.saveBuckets(cols.index.slotOf('a')) !== null), 'entries in buckets');
    if (regime === 'exact') assert.ok(cols.groups.every((g) => g.saveBuckets(cols.index.slotOf('a')) === null), 'no buckets');
    const want = reads(s, keys, now);
    const clocks = keys.map((k) => [cols.index.lastT[cols.index.slotOf(k)], cols.index.lastLsn[cols.index.slotOf(k)]]);
    // The whole state (ring entries, skip counts, buckets, saves of every column) as plain data.
    const saves = (): unknown[] => keys.map((k) => cols.save(cols.index.slotOf(k)));
    const saved = saves();
    const bufs = freezeThaw(s, keys);
    for (const b of bufs) assert.equal(b[0], FROZEN_FORMAT);
    // The rest: plain-encoded, unless object states or buckets hold more than plain arrays (then v8-serialized).
    // Lifetime sketches of at most LIFE_EXACT_VALUES_MAX values save their values ({ exactValues }): plain too.
    const plain = (reg === LEAN && regime !== 'bucketed') || regime === 'empty rings, lifetime only';
    if (plain) for (const b of bufs) assert.equal(b[1], 1, 'plain rest');
    else for (const b of bufs) assert.equal(b[1], 0, 'v8 rest');
    assert.deepEqual(saves(), saved);
    assert.deepEqual(bufs.map((b) => { const c = frozenClock(b); return [c.lastT, c.lastLsn]; }), clocks);
    assert.deepEqual(reads(s, keys, now), want);
    // Twice more (ids interned anew at each thaw), once from an unaligned copy (as read from a cold file record).
    freezeThaw(s, keys);
    const cols2 = s.tableByName('T')!.cols;
    const again = keys.map((k) => { const slot = cols2.index.slotOf(k); const b = freeze(cols2, slot); cols2.removeSlot(slot); return b; });
    keys.forEach((k, i) => {
      const unaligned = Buffer.alloc(again[i].length + 3).subarray(3);
      again[i].copy(unaligned);
      thaw(unaligned, cols2, k);
    });
    assert.deepEqual(reads(s, keys, now), want);
    // Pushes after a thaw land as on the entity that stayed hot.
    const ref = shard(reg);
    let rl = 0;
    for (const k of keys) rl = feed(ref, k, events + keys.indexOf(k), gapMs, rl);
    for (const st of [s, ref]) pushRow(st, 'E', { k: 'a', x: 3, c: 'c1é', b: true } as Row, now + 1, 10_000);
    assert.deepEqual(reads(s, keys, now + 1), reads(ref, keys, now + 1));
  });
}

test('frozenParts of a frozen slab is the entity save of its columns (TableColumns.save), with its clock', () => {
  const s = shard();
  feed(s, 'a', 200, 500);
  const ts = s.tableByName('T')!;
  const cols = ts.cols;
  const slot = cols.index.slotOf('a');
  const want = { lastT: cols.index.lastT[slot], lastLsn: cols.index.lastLsn[slot], saved: cols.save(slot) };
  const feats = ts.plan.features;
  const slab = frozenParts(freeze(cols, slot), (i) => feats[i].factory.fixed ?? null);
  assert.deepEqual(slab, want);
});

/** Snapshot of `s` restored into a fresh shard (identity: frozen buffers stay frozen) and into a populated one (mapped). */
function viaSnapshot(s: ShardState, keys: string[], now: number, want: string[]): void {
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  const body = job.finish(new DedupeLog()).body;
  const fresh = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(fresh, body, (v) => (v === 1 ? REG : undefined));
  assert.equal(fresh.coldCount(), keys.length, 'restored frozen');
  assert.deepEqual(reads(fresh, keys, now), want, 'fresh restore');
  // A populated table of another layout (its own ring groups): each frozen entity is mapped.
  const other: RegistryState = { version: 1, nodes: [EVENT, { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { ...AGG, extra: { op: 'max', params: { field: 'x', window: '1h' } } } }] as RegistryState['nodes'] };
  const populated = shard(other);
  pushRow(populated, 'E', { k: 'zz', x: 1 } as Row, T0, 1);
  restoreSnapshot(populated, body, () => undefined);
  const strip = (rows: string[]): unknown[] => rows.map((r) => { const o = JSON.parse(r) as Record<string, unknown>; delete o.extra; return o; });
  assert.deepEqual(strip(reads(populated, keys, now)), strip(want), 'mapped into another layout');
}

/** Four entities (a, b exact rings; c, d bucketed) frozen into the cold store. */
function mixedCold(): { keys: string[]; s: ShardState; ts: TableState; now: number; want: string[] } {
  const keys = ['a', 'b', 'c', 'd'];
  const s = shard();
  let lsn = 0;
  for (const k of keys) lsn = feed(s, k, k < 'c' ? 30 : 150, 900, lsn);
  const now = T0 + 150 * 900;
  const want = reads(s, keys, now);
  const ts = s.tableByName('T')!;
  for (const k of keys) {
    const slot = ts.cols.index.slotOf(k);
    ts.cold.set(k, freeze(ts.cols, slot));
    ts.cols.removeSlot(slot);
  }
  return { keys, s, ts, now, want };
}

test('snapshots carry frozen entities; they restore and map', () => {
  const { keys, s, now, want } = mixedCold();
  viaSnapshot(s, keys, now, want);
  assert.deepEqual(reads(s, keys, now), want);
});

test('a layout change remaps cold entities (carryOver), and re-freezes them', () => {
  const { keys, s, now, want } = mixedCold();
  const { sx: _dropped, ...kept } = AGG;
  const v2: RegistryState = { version: 2, nodes: [EVENT, { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { ...kept, mx: { op: 'max', params: { field: 'x', window: '1h' } } } }] as RegistryState['nodes'] };
  s.install(v2);
  const ts2 = s.tableByName('T')!;
  assert.equal(ts2.cold.size, keys.length, 'still cold');
  for (const [, buf] of ts2.cold.entries()) assert.equal(buf[0], FROZEN_FORMAT, 're-frozen');
  const strip = (rows: string[]): unknown[] => rows.map((r) => { const o = JSON.parse(r) as Record<string, unknown>; delete o.sx; delete o.mx; return o; });
  const got = reads(s, keys, now);
  assert.deepEqual(strip(got), strip(want));
  assert.ok(got.every((r) => !('sx' in JSON.parse(r))), 'the dropped feature is gone');
});
