/**
 * Hashed fields (shard/columns/ring_group.ts): a ring field that only n_unique members
 * read holds each value's 53-bit hash instead of an interned id. These tests pin
 * what that changes (no intern entries, the layout records it in snapshots)
 * and what it must not (every count equals a naive distinct count, in the exact
 * and the bucketed regime; saves of either kind load into tables of the other).
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardState } from '../../../../src/shard/state/state';
import { TableColumns } from '../../../../src/shard/columns/table_columns';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import { hashAscii53Into, hashString53 } from '../../../../src/ops/sketch/hash';
import type { RegistryState } from '../../../../src/registry/model';
import type { Row } from '../../../../src/types';
import { prng } from '../../../harness/prng';

const W = 10_000;
const T0 = 1_000_000;

const REG: RegistryState = {
  version: 1,
  nodes: [
    { kind: 'event', name: 'E', schema: { fields: { k: 'str', u: 'str', x: 'f64', c: 'str', o: 'str' }, optional_fields: ['o'] } },
    { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: {
      users: { op: 'n_unique', params: { field: 'u', window: '10s' } },
      usersLong: { op: 'n_unique', params: { field: 'u', window: '1h' } },
      xs: { op: 'n_unique', params: { field: 'x', window: '10s' } },
      os: { op: 'n_unique', params: { field: 'o', window: '10s' } },
      cs: { op: 'n_unique', params: { field: 'c', window: '10s' } },
      topC: { op: 'top_k', params: { field: 'c', window: '10s', k: 2 } },
    } },
  ] as RegistryState['nodes'],
};

const shard = (): ShardState => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(REG);
  return s;
};

interface Ev { k: string; row: Row; t: number }

/** Events for `keys`: key a gets 300 (past the 64-entry ring: buckets), the others a few; u, x, c from small pools, o optional. */
function events(keys: readonly string[], seed: number, from = T0): Ev[] {
  const r = prng(seed);
  const out: Ev[] = [];
  let t = from;
  for (let i = 0; i < 600; i++) {
    const k = i % 2 === 0 ? keys[0] : keys[1 + Math.floor(r() * (keys.length - 1))];
    t += Math.floor(r() * 60);
    const row: Row = { k, u: `user-${Math.floor(r() * 40)}`, x: Math.floor(r() * 30) / 2, c: `c${Math.floor(r() * 5)}` };
    if (r() < 0.7) row.o = r() < 0.2 ? null : `o${Math.floor(r() * 9)}`;
    out.push({ k, row, t });
  }
  return out;
}

function feed(s: ShardState, evs: readonly Ev[], lsn0 = 0): void {
  evs.forEach((e, i) => pushRow(s, 'E', { ...e.row }, e.t, lsn0 + i + 1));
}

/** n_unique of `field` over the events of key k in (now - W, now], as the op defines it (null and absent not counted). */
function naive(evs: readonly Ev[], k: string, field: string, now: number, w = W): number {
  const seen = new Set<unknown>();
  for (const e of evs) if (e.k === k && e.t > now - w && e.t <= now && e.row[field] !== null && e.row[field] !== undefined) seen.add(e.row[field]);
  return seen.size;
}

const rows = (s: ShardState, keys: readonly string[], now: number): string[] => keys.map((k) => readText(s, 'T', k, null, now));

function bodyOf(s: ShardState): Buffer {
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  return job.finish(new DedupeLog()).body;
}

/** A shard whose T groups hold no hashed field (what a format-6 snapshot restores): laid out from its own layout minus `hashed`. */
function unhashedShard(): ShardState {
  const s = shard();
  const ts = s.tableByName('T')!;
  const meta = ts.cols.layoutMeta();
  const liveOf = ts.plan.features.map((_, i) => i);
  ts.replaceColumns(TableColumns.fromLayout(ts.plan, { groups: meta.groups.map(({ hashed: _, ...g }) => g) }, liveOf, s.interns));
  assert.equal(JSON.stringify(ts.cols.layoutMeta()).includes('hashed'), false);
  return s;
}

test('a field only n_unique reads holds hashes: recorded in the layout, no intern entries, counts equal a naive distinct count', () => {
  const s = shard();
  const keys = ['a', 'b', 'c', 'd'];
  const evs = events(keys, 5);
  feed(s, evs);
  const cols = s.tableByName('T')!.cols;
  const hashed = cols.layoutMeta().groups.flatMap((g) => g.hashed ?? []).sort();
  assert.deepEqual(hashed, ['o', 'u', 'x'], 'c is read by top_k too: interned');
  assert.equal(s.interns.get('u')?.size ?? 0, 0, 'no user id is interned');
  assert.ok((s.interns.get('c')?.size ?? 0) > 0, 'c is');
  const col = (name: string): number => cols.plan.columns.indexOf(name);
  assert.equal(cols.colInterns[col('u')] ?? null, null);
  assert.equal(cols.colHashed[col('u')], 1);
  assert.equal(cols.colHashed[col('c')], 0);
  const last = evs[evs.length - 1].t;
  for (const now of [last, last + 3_000, last + 9_000, last + 20_000]) {
    for (const k of keys) {
      const row = JSON.parse(readText(s, 'T', k, null, now));
      const want = { users: naive(evs, k, 'u', now), usersLong: naive(evs, k, 'u', now, 3_600_000), xs: naive(evs, k, 'x', now), os: naive(evs, k, 'o', now), cs: naive(evs, k, 'c', now) };
      // Key a is past its ring: its older events are bucketed, exact until their buckets reach the window's edge.
      if (k === 'a' && now > last) continue;
      assert.deepEqual({ users: row.users, usersLong: row.usersLong, xs: row.xs, os: row.os, cs: row.cs }, want, `${k} at ${now}`);
    }
  }
  // The bucketed key reads as a shard with no hashed field does (same buckets, same edge).
  const plain = unhashedShard();
  feed(plain, evs);
  for (const now of [last, last + 3_000, last + 9_000, last + 20_000]) assert.deepEqual(rows(s, keys, now), rows(plain, keys, now), `at ${now}`);
});

test('the hash of an ASCII value from its bytes is the hash of its string (push_apply.ts hashes record bytes)', () => {
  const r = prng(9);
  for (let n = 0; n < 40; n++) {
    let v = '';
    for (let i = 0; i < n; i++) v += String.fromCharCode(32 + Math.floor(r() * 95));
    const b = Buffer.from(`__${v}__`, 'latin1');
    const out = new Float64Array(3);
    hashAscii53Into(b, 2, 2 + n, out, 1);
    assert.equal(out[1], hashString53(v), JSON.stringify(v));
  }
});

test('snapshots restore hashed fields as hashed, and later pushes count on as if never restored', () => {
  const keys = ['a', 'b', 'c'];
  const evs = events(keys, 7);
  const live = shard();
  feed(live, evs.slice(0, 400));
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, bodyOf(live), () => REG);
  assert.deepEqual(restored.tableByName('T')!.cols.layoutMeta(), live.tableByName('T')!.cols.layoutMeta());
  assert.equal(restored.interns.get('u')?.size ?? 0, 0);
  feed(live, evs.slice(400), 400);
  feed(restored, evs.slice(400), 400);
  const last = evs[evs.length - 1].t;
  for (const now of [last, last + 5_000, last + 12_000]) assert.deepEqual(rows(restored, keys, now), rows(live, keys, now));
});

test('saves load across layouts: values into a hashed table are hashed on load; hashes into a table of values reach its object states as hashes', () => {
  const keys = ['a', 'b', 'c'];
  const evs = events(keys, 11);
  const last = evs[evs.length - 1].t;
  // Values (a format-6 layout) into a populated table with hashed fields: planLoad maps, addMapped hashes them.
  const plain = unhashedShard();
  feed(plain, evs);
  const hashedOther = shard();
  feed(hashedOther, events(['m1', 'm2'], 3));
  restoreSnapshot(hashedOther, bodyOf(plain), () => undefined);
  for (const now of [last, last + 5_000, last + 12_000]) assert.deepEqual(rows(hashedOther, keys, now), rows(plain, keys, now), `values -> hashed at ${now}`);
  const more = events(keys, 12, last + 1);
  feed(hashedOther, more, 10_000);
  feed(plain, more, 10_000);
  const end = more[more.length - 1].t;
  for (const now of [end, end + 5_000]) assert.deepEqual(rows(hashedOther, keys, now), rows(plain, keys, now), `values -> hashed, then pushed, at ${now}`);
  // Hashes into a populated table of values: its n_unique members move to rings of their own, which hash.
  const hashed = shard();
  feed(hashed, evs);
  const plainOther = unhashedShard();
  feed(plainOther, events(['m1', 'm2'], 3));
  restoreSnapshot(plainOther, bodyOf(hashed), () => undefined);
  const read = (s: ShardState, now: number): unknown[] => keys.map((k) => {
    const row = JSON.parse(readText(s, 'T', k, null, now));
    return [row.users, row.usersLong, row.xs, row.os];
  });
  // The saved ring's hashes load into those rings as they are: the same counts, the same expiry.
  for (const now of [last, last + 3_000, last + 9_000, last + 12_000]) assert.deepEqual(read(plainOther, now), read(hashed, now), `hashes -> values at ${now}`);
  feed(plainOther, more, 10_000);
  feed(hashed, more, 10_000);
  for (const now of [end, end + 5_000]) assert.deepEqual(read(plainOther, now), read(hashed, now), `hashes -> values, then pushed, at ${now}`);
  assert.ok(plainOther.tableByName('T')!.cols.groups.some((g) => g.members.length === 1 && g.hashed[0] === 1), 'the n_unique features moved to rings of their own, which hash');
});

test('a registry change carries hashed fields as they were: the carried n_unique keeps reading hashes, a field that loses its other readers stays interned', () => {
  const table = REG.nodes[1] as { agg: Record<string, unknown> };
  const { topC: _, ...rest } = table.agg;
  const v2: RegistryState = { version: 2, nodes: [REG.nodes[0], { ...table, agg: { ...rest, s: { op: 'sum', params: { field: 'x', window: '10s' } } } }] as RegistryState['nodes'] };
  const keys = ['a', 'b', 'c'];
  const evs = events(keys, 21);
  const s = shard();
  const plain = unhashedShard();
  for (const st of [s, plain]) {
    feed(st, evs.slice(0, 300));
    st.install(v2);
    feed(st, evs.slice(300), 300);
  }
  const meta = s.tableByName('T')!.cols.layoutMeta();
  assert.deepEqual(meta.groups.flatMap((g) => g.hashed ?? []).sort(), ['o', 'u', 'x'], 'c was interned when its group was made: it stays so');
  const last = evs[evs.length - 1].t;
  for (const now of [last, last + 5_000, last + 12_000]) {
    assert.deepEqual(rows(s, keys, now), rows(plain, keys, now), `at ${now}`);
    for (const k of ['b', 'c']) assert.equal(JSON.parse(readText(s, 'T', k, null, now)).users, naive(evs, k, 'u', now), `${k} users at ${now}`);
  }
});
