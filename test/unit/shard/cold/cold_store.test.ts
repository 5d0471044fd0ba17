/**
 * The on-disk cold store (shard/cold/cold_files.ts, key_index.ts) against a Map model,
 * and the shard state on top of it: idle entities leave memory for disk and read
 * back exactly, empty ones are dropped, compaction reclaims dead space without
 * losing a live entity, snapshots carry entities read back from disk, and the
 * --memory-limit eviction takes the least recently pushed first.
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ColdFiles } from '../../../../src/shard/cold/cold_files';
import { H1, hashKey, KeyIndex, OLD_SLOT } from '../../../../src/shard/cold/key_index';
import { ShardState } from '../../../../src/shard/state/state';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import type { RegistryState } from '../../../../src/registry/model';
import { prng } from '../../../harness/prng';
import { exportPartition, importPartition } from '../../../../src/shard/persist/partition_io';
import { partitionOf } from '../../../../src/registry/key';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sf-cold-'));
}

test('key index: inserts, lookups and backward-shift deletes agree with a Map through growth and shrinking', () => {
  const rnd = prng(11);
  const idx = new KeyIndex();
  const model = new Map<string, number>();
  const confirmOf = (key: string) => (seg: number, off: number) => seg === 1 && off === model.get(key);
  for (let step = 0; step < 200_000; step++) {
    const key = `k${Math.floor(rnd() * 30_000)}`;
    hashKey(key);
    const slot = idx.find(confirmOf(key));
    assert.equal(slot >= 0, model.has(key), `step ${step}: ${key}`);
    if (slot >= 0 && rnd() < 0.6) { idx.removeAt(slot); model.delete(key); }
    else if (slot < 0) { model.set(key, step); hashKey(key); idx.insert(1, step, 10); }
    assert.equal(idx.count, model.size);
  }
  for (const [key, off] of model) { hashKey(key); assert.ok(idx.slotAt(1, off) >= 0, key); }
  // Empty it: the table shrinks back.
  const big = idx.bytes;
  for (const [key] of [...model]) { hashKey(key); idx.removeAt(idx.find(confirmOf(key))); model.delete(key); }
  assert.equal(idx.count, 0);
  assert.ok(idx.bytes < big / 8, `shrunk from ${big} to ${idx.bytes} bytes`);
});

test('key index: while a resize is under way, lookups, moves and removals reach entries in both tables, and forEach sees each once', () => {
  const idx = new KeyIndex();
  const model = new Map<string, { off: number; len: number }>();
  const confirmOf = (key: string) => (seg: number, off: number) => seg === 2 && off === model.get(key)?.off;
  const keys: string[] = [];
  let resizing = 0;
  let next = 0;
  const rnd = prng(3);
  for (let step = 0; step < 60_000; step++) {
    if (idx.resizing) resizing++;
    const r = rnd();
    if (r < 0.6 || model.size === 0) {
      const key = `key-${next++}`;
      keys.push(key);
      model.set(key, { off: 2 ** 31 + step, len: step % 1000 });
      hashKey(key);
      idx.insert(2, 2 ** 31 + step, step % 1000);
    } else {
      const at = Math.floor(rnd() * keys.length);
      const key = keys[at];
      hashKey(key);
      const slot = idx.find(confirmOf(key));
      assert.ok(slot >= 0, `step ${step}: ${key}`);
      const m = model.get(key)!;
      assert.equal(idx.len(slot), m.len);
      assert.equal(idx.off(slot), m.off, 'offsets past 2^31 come back unsigned');
      if (r < 0.8) {
        // Compaction moved the record.
        m.off = 2 ** 31 + 1_000_000 + step;
        idx.move(slot, 2, m.off, m.len + 1);
        m.len++;
      } else {
        idx.removeAt(slot);
        model.delete(key);
        keys[at] = keys[keys.length - 1];
        keys.pop();
      }
    }
    assert.equal(idx.count, model.size);
    // While a resize walks the old table, every key is found (by a disk read and by its location).
    if (idx.resizing && step % 3 === 0) {
      for (const [key, m] of model) {
        hashKey(key);
        assert.ok(idx.find(confirmOf(key)) >= 0, `step ${step}: ${key} by find`);
        assert.ok(idx.slotAt(2, m.off) >= 0, `step ${step}: ${key} by slotAt`);
      }
      let seen = 0;
      idx.forEach((seg, off) => { assert.equal(seg, 2); seen++; assert.ok(off >= 2 ** 31); });
      assert.equal(seen, model.size, 'forEach: each entry once');
    }
  }
  assert.ok(resizing > 100, `steps while a resize was under way: ${resizing}`);
});

test('key index: entries at position 0 of the new table and of the old one during a resize are found, read, moved and removed; bytes count both tables', () => {
  // hashKey's seeds are fixed: keys are picked by their home entry.
  const homeZero = (mask: number, prefix: string): string => {
    for (let i = 0; ; i++) {
      const k = `${prefix}${i}`;
      hashKey(k);
      if ((H1 & mask) === 0) return k;
    }
  };
  const idx = new KeyIndex();
  const inOld = homeZero(4095, 'old-');
  hashKey(inOld);
  idx.insert(7, 1234, 99);
  const before = idx.bytes;
  let n = 0;
  for (; !idx.resizing; n++) { hashKey(`filler-${n}`); idx.insert(1, n, 1); }
  assert.equal(before, 1024 * 20);
  assert.equal(idx.bytes, (8192 + 4096) * 20, 'both tables while the resize is under way');
  // The walk starts past an occupied entry 0, so the old table's entry 0 is moved last.
  hashKey(inOld);
  const slot = idx.find((seg, off) => seg === 7 && off === 1234);
  assert.equal(slot, OLD_SLOT, 'the old table\'s entry 0');
  assert.deepEqual([idx.seg(slot), idx.off(slot), idx.len(slot)], [7, 1234, 99]);
  idx.move(slot, 8, 4321, 98);
  assert.equal(idx.slotAt(8, 4321), OLD_SLOT);
  assert.deepEqual([idx.seg(OLD_SLOT), idx.off(OLD_SLOT), idx.len(OLD_SLOT)], [8, 4321, 98]);
  // A new key whose home in the new table is entry 0.
  const inNew = homeZero(8191, 'new-');
  hashKey(inNew);
  idx.insert(9, 5, 6);
  hashKey(inNew);
  const at0 = idx.find((seg) => seg === 9);
  assert.equal(at0, 0, 'the new table\'s entry 0');
  assert.equal(idx.off(at0), 5);
  hashKey(inOld);
  idx.removeAt(idx.slotAt(8, 4321));
  hashKey(inOld);
  assert.equal(idx.slotAt(8, 4321), -1);
  hashKey(inNew);
  assert.equal(idx.slotAt(9, 5), 0, 'still there');
  assert.equal(idx.count, n + 1);
  while (idx.resizing) { hashKey(`filler-${n}`); idx.insert(1, n++, 1); }
  assert.equal(idx.bytes, 8192 * 20);
});

test('disk cold store: set, flush, get, take, overwrite and scan agree with a Map; compaction keeps every live entity', () => {
  const dir = tempDir();
  try {
    const files = ColdFiles.open(dir, null, 64 * 1024); // small segments: many rotations and compactions
    const a = files.newStore();
    const b = files.newStore();
    const model = [new Map<string, Buffer>(), new Map<string, Buffer>()];
    const stores = [a, b];
    const rnd = prng(5);
    for (let step = 0; step < 40_000; step++) {
      const w = rnd() < 0.5 ? 0 : 1;
      const key = `key-${Math.floor(rnd() * 3000)}-é`;
      const r = rnd();
      if (r < 0.5) {
        const buf = Buffer.alloc(20 + Math.floor(rnd() * 300), step % 251);
        stores[w].set(key, buf);
        model[w].set(key, buf);
      } else if (r < 0.8) {
        assert.deepEqual(stores[w].take(key), model[w].get(key), `take ${key}`);
        model[w].delete(key);
      } else {
        assert.deepEqual(stores[w].get(key), model[w].get(key), `get ${key}`);
      }
      if (step % 97 === 0) files.flush();
      if (step % 1000 === 0) files.compactStep(32 * 1024);
      assert.equal(stores[w].size, model[w].size);
    }
    files.flush();
    for (let i = 0; i < 200; i++) files.compactStep(1 << 20);
    for (const w of [0, 1]) {
      const seen = new Map([...stores[w].entries()].map(([k, v]) => [k, Buffer.from(v)]));
      assert.deepEqual([...seen.keys()].sort(), [...model[w].keys()].sort());
      for (const [k, v] of model[w]) assert.deepEqual(seen.get(k), v);
    }
    // Dead space is bounded: live bytes at least COLD_COMPACT_LIVE_RATIO of the closed segments, give or take the active one.
    assert.ok(files.diskBytes <= files.liveBytes * 2 + 2 * 64 * 1024, `disk ${files.diskBytes} vs live ${files.liveBytes}`);
    const onDisk = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    assert.equal(onDisk, files.diskBytes);
    // A dropped table's records become dead and are reclaimed.
    a.clear();
    files.forget(a);
    for (let i = 0; i < 200; i++) files.compactStep(1 << 20);
    assert.equal(a.size, 0);
    assert.ok(files.liveBytes > 0 && files.diskBytes <= files.liveBytes * 2 + 2 * 64 * 1024);
    files.close();
    // Reopening empties the directory (a cache of the WAL and snapshots).
    ColdFiles.open(dir).close();
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const EVENT = { kind: 'event', name: 'S', schema: { fields: { sid: 'str', x: 'f64' }, optional_fields: [] }, cold_after: '3s' };
/** A session table: every feature windowed (empty 2 s after the last event). */
const SESSIONS = { kind: 'table', name: 'Sessions', upstreams: ['S'], key: ['sid'], agg: { n: { op: 'count', params: { window: '2s' } }, mx: { op: 'max', params: { field: 'x', window: '2s' } } } };
/** Same key, a lifetime feature: never empty. */
const TOTALS = { kind: 'table', name: 'Totals', upstreams: ['S'], key: ['sid'], agg: { n: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'x', window: '1h' } } } };
const REG: RegistryState = { version: 1, nodes: [EVENT, SESSIONS, TOTALS] };

function shardOn(files: ColdFiles | null): ShardState {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true, coldFiles: files });
  s.install(REG);
  return s;
}

test('shard state: idle entities go to disk and read back exactly; empty ones are dropped and read as {}', () => {
  const dir = tempDir();
  try {
    const files = ColdFiles.open(dir);
    const s = shardOn(files);
    const mem = shardOn(null);
    let lsn = 0;
    const t0 = 1_000_000;
    for (let i = 0; i < 3000; i++) for (const st of [s, mem]) pushRow(st, 'S', { sid: `s${i % 1000}`, x: i }, t0 + i, lsn + 1 + i);
    lsn += 3000;
    const keys = Array.from({ length: 1000 }, (_, i) => `s${i}`);
    const read = (st: ShardState, table: string, now: number): string[] => keys.map((k) => readText(st, table, k, null, now));
    const later = t0 + 3000 + 10_000;
    const totalsBefore = read(s, 'Totals', later);
    const sessionsBefore = read(s, 'Sessions', later);
    assert.ok(sessionsBefore.every((r) => r === '{"n":0,"mx":null}'), 'the windows are empty 10 s later');
    const out = s.sweepCold(later);
    assert.equal(out, 2000, 'every idle entity of both tables left hot memory');
    assert.equal(s.counters.dropped, 1000, 'the session rows (all windows empty) were dropped');
    assert.equal(s.counters.frozen, 1000, 'the totals rows were frozen to disk');
    assert.equal(s.tableByName('Totals')!.size, 0);
    assert.equal(s.tableByName('Sessions')!.cold.size, 0, 'nothing of the dropped rows is kept');
    assert.ok(files.liveBytes > 0);
    assert.ok(s.tableByName('Totals')!.cold.memoryBytes() < 1000 * 64, `index ${s.tableByName('Totals')!.cold.memoryBytes()} B for 1000 cold entities`);
    // Snapshot while cold: the entities come back from disk into the snapshot.
    const job = new SnapshotJob(s);
    job.step(Number.POSITIVE_INFINITY);
    const body = job.finish(new DedupeLog()).body;
    // A registry change of the Totals layout (a feature added) remaps the cold entities on disk, one at a time.
    const v2: RegistryState = { version: 2, nodes: [EVENT, SESSIONS, { ...TOTALS, agg: { ...TOTALS.agg, mx: { op: 'max', params: { field: 'x', window: '1h' } } } }] };
    s.install(v2);
    const totals = s.tableByName('Totals')!;
    assert.equal(totals.size, 0, 'still cold after the layout change');
    assert.equal(totals.cold.size, 1000);
    const remapped = read(s, 'Totals', later).map((r) => JSON.parse(r) as Record<string, unknown>);
    remapped.forEach((r, i) => {
      assert.equal(r.mx, null, 'the new feature starts empty');
      assert.deepEqual({ n: r.n, s: r.s }, JSON.parse(totalsBefore[i]), 'kept features keep their values');
    });
    for (let i = 0; i < 200; i++) files.compactStep(1 << 20);
    assert.ok(files.diskBytes <= files.liveBytes * 2 + 2 * 8 * 1024 * 1024, 'the old layout\'s records are reclaimed');
    s.install({ ...REG, version: 3 });
    s.sweepCold(later);
    const thawed0 = s.counters.thawed;
    assert.deepEqual(read(s, 'Totals', later), totalsBefore, 'read back exactly from disk');
    assert.equal(s.counters.thawed - thawed0, 1000);
    // A dropped key answers {} (as a key never pushed), and starts fresh on its next push.
    assert.deepEqual(read(s, 'Sessions', later), keys.map(() => '{}'));
    pushRow(s, 'S', { sid: 's7', x: 5 }, later, ++lsn);
    pushRow(mem, 'S', { sid: 's7', x: 5 }, later, lsn);
    assert.equal(readText(s, 'Sessions', 's7', null, later), readText(mem, 'Sessions', 's7', null, later), 'a new push after a drop: same as if the entity had stayed');
    assert.equal(readText(s, 'Totals', 's7', null, later), readText(mem, 'Totals', 's7', null, later));
    // Restore the snapshot into a shard with its own cold files: frozen entities go straight to disk.
    const dir2 = tempDir();
    try {
      const files2 = ColdFiles.open(dir2);
      const r = shardOn(files2);
      restoreSnapshot(r, body, (v) => (v === 1 ? REG : undefined));
      assert.equal(r.tableByName('Totals')!.cold.size, 1000);
      assert.equal(r.tableByName('Totals')!.size, 0);
      assert.deepEqual(read(r, 'Totals', later), totalsBefore);
      files2.close();
    } finally {
      rmSync(dir2, { recursive: true, force: true });
    }
    files.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('memory-limit eviction takes the least recently pushed first; refuseNew refuses only new entities', () => {
  const dir = tempDir();
  try {
    const files = ColdFiles.open(dir);
    const s = shardOn(files);
    for (let i = 0; i < 1000; i++) pushRow(s, 'S', { sid: `s${i}`, x: i }, 1_000 + i * 10, i + 1);
    const out = s.evictColdest(0.3, 20_000);
    // Both tables: 300 each; the Sessions ones are empty by then (dropped), the Totals ones frozen.
    assert.equal(out, 600);
    const totals = s.tableByName('Totals')!;
    assert.equal(totals.cold.size, 300);
    for (let i = 0; i < 300; i++) assert.ok(totals.cols.index.slotOf(`s${i}`) < 0, `s${i} (oldest) evicted`);
    for (let i = 300; i < 1000; i++) assert.ok(totals.cols.index.slotOf(`s${i}`) >= 0, `s${i} kept hot`);
    s.refuseNew = true;
    assert.throws(() => pushRow(s, 'S', { sid: 'new', x: 1 }, 30_000, 2000), (e: { code?: string }) => e.code === 'memory_limit_exceeded');
    assert.equal(readText(s, 'Totals', 'new', null, 30_000), '{}', 'nothing of the refused push was applied');
    // s5 is cold in Totals and was dropped from Sessions: Sessions would get a new entity, so it is refused too.
    assert.throws(() => pushRow(s, 'S', { sid: 's5', x: 1 }, 30_000, 2001), (e: { code?: string }) => e.code === 'memory_limit_exceeded');
    pushRow(s, 'S', { sid: 's999', x: 1 }, 30_000, 2002);
    assert.equal(JSON.parse(readText(s, 'Totals', 's999', null, 30_000)).n, 2, 'an existing entity keeps updating');
    assert.equal(s.counters.refused, 2);
    files.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cluster partition export and import carry entities that are cold on disk', () => {
  const P = 4;
  const dirs = [tempDir(), tempDir()];
  try {
    const [fa, fb] = dirs.map((d) => ColdFiles.open(d));
    const mk = (files: ColdFiles): ShardState => {
      const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true, partitions: P, coldFiles: files });
      s.install(REG);
      return s;
    };
    const a = mk(fa);
    const b = mk(fb);
    const keys = Array.from({ length: 400 }, (_, i) => `k${i}`);
    keys.forEach((sid, i) => pushRow(a, 'S', { sid, x: i }, 1_000 + i, i + 1));
    a.sweepCold(100_000);
    assert.equal(a.tableByName('Totals')!.size, 0);
    assert.equal(a.tableByName('Totals')!.cold.size, keys.length, 'every Totals entity is on disk');
    const p = partitionOf(keys[0], P);
    const mine = keys.filter((k) => partitionOf(k, P) === p);
    const out = exportPartition(a, p);
    assert.equal(out.entities, mine.length, 'the export holds the partition\'s cold entities');
    assert.equal(importPartition(b, p, [out.body]), mine.length);
    for (const k of mine) assert.equal(readText(b, 'Totals', k, null, 100_000), readText(a, 'Totals', k, null, 100_000), k);
    fa.close();
    fb.close();
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});
