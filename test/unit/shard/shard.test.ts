/**
 * The shard's batch execution (src/shard/shard.ts) driven directly, with batches
 * built by the front's own code (PushRoute writing PUSH records into a
 * PushFrameWriter, gets resolved to indexes):
 * - PUSH records applied by the shard give the same rows as the object path
 *   (ShardState.apply: chains, keys and hashing on the shard), across derived
 *   events, filters, with_columns, where predicates and geo params, on 3 shards;
 * - gets by index: all features, a subset in the order asked, a cold key, a get
 *   resolved under another registry version;
 * - install ordering: pushes before an install apply under the old version, after
 *   it under the new one, in one batch;
 * - with a store: the frames reach the WAL as written, and a restart recovers the
 *   same rows and dedupe entries;
 * - an old data dir (EVENT records) recovers, and keeps recovering once PUSH
 *   records follow them;
 * - a periodic snapshot streams to its file between batches (which keep applying)
 *   and a restart restores from it, dedupe entries included (written in chunks); an
 *   install drops a running one, leaving no file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileRegistry, wireOf, type CompiledRegistry } from '../../../src/registry/compile';
import type { RegistryState } from '../../../src/registry/model';
import { PushRoute } from '../../../src/front/routing';
import { PushFrameWriter } from '../../../src/wal/push_record';
import { RecordEncoder, WalWriter } from '../../../src/wal';
import { ITEM_GET, ITEM_INSTALL, ITEM_PUSH, ITEM_SNAPSHOT, type GetItem, type ShardBatch, type ShardInit, type ShardItem } from '../../../src/protocol/messages';
import { Shard } from '../../../src/shard/shard';
import { ShardState } from '../../../src/shard/state/state';
import { ShardStore, type RecoveryInfo } from '../../../src/shard/persist/store';
import { RING_GROUP_WINDOWS_MAX, SNAPSHOT_DEDUPE_CHUNK_ENTRIES } from '../../../src/limits';
import { DedupeLog } from '../../../src/shard/state/dedupe_log';
import { createLogger } from '../../../src/log';
import { ThreadSampler } from '../../../src/admin/thread_stats';
import type { Row } from '../../../src/types';
import { prng } from '../../harness/prng';

const EVENT = {
  kind: 'event', name: 'Tx',
  schema: { fields: { user: 'str', card: 'str', amount: 'f64', n: 'i64', ok: 'bool', lat: 'f64', lon: 'f64', note: 'str' }, optional_fields: ['n', 'note'] },
  dedupe_key: 'note', dedupe_window: '1h',
};
const BIG = { kind: 'derivation', name: 'Big', output_kind: 'event', upstreams: ['Tx'], ops: [{ op: 'filter', expr: 'amount > 50' }, { op: 'with_columns', exprs: { double: 'amount * 2' } }] };
const USERS = {
  kind: 'table', name: 'Users', upstreams: ['Tx'], key: ['user'],
  agg: {
    n: { op: 'count', params: {} },
    total: { op: 'sum', params: { field: 'amount', window: '1h' } },
    oks: { op: 'count', params: { where: 'ok and n > 2' } },
    lastNote: { op: 'last', params: { field: 'note' } },
    spread: { op: 'geo_spread', params: { lat_field: 'lat', lon_field: 'lon' } },
  },
};
const CARDS = { kind: 'table', name: 'Cards', upstreams: ['Big'], key: ['card', 'user'], agg: { m: { op: 'max', params: { field: 'double', window: 'forever' } }, c: { op: 'count', params: {} } } };
const V1: RegistryState = { version: 1, nodes: [EVENT, BIG, USERS, CARDS] };
const V2: RegistryState = { version: 2, nodes: [EVENT, BIG, { ...USERS, agg: { ...USERS.agg, avg: { op: 'mean', params: { field: 'amount', window: 'forever' } } } }, CARDS] };
const OPTS = { memoryGovEnforce: true };
/** Recent: the shard reads gets at Date.now(), and dedupe entries expire after their window. */
const T0 = Date.now() - 60_000;

/** The front's side: a registry compiled as the front does, and one batch per shard. */
class FrontSim {
  reg: CompiledRegistry;
  readonly route = new PushRoute();
  readonly writers: PushFrameWriter[];
  readonly items: ShardItem[][];
  lsn = 0;
  constructor(state: RegistryState, readonly shards: number) {
    this.reg = compileRegistry(state, { ...OPTS, pushValidators: true, features: false });
    this.writers = Array.from({ length: shards }, () => new PushFrameWriter(64));
    this.items = Array.from({ length: shards }, () => []);
  }

  push(event: string, data: Row, t: number): { lsn: number; row: Row } {
    const plan = this.reg.events.get(event)!;
    const row = plan.validator!.validate(data);
    assert.equal(this.route.route(plan, row, this.shards), -1);
    const lsn = ++this.lsn;
    let mask = this.route.mask;
    if (mask === 0) mask = 1 << (lsn % this.shards);
    const dedupe = plan.dedupeField !== null && row[plan.dedupeField] != null ? String(row[plan.dedupeField]) : null;
    for (let s = 0; s < this.shards; s++) {
      if ((mask & (1 << s)) === 0) continue;
      this.route.write(this.writers[s], s, plan, lsn, t, this.reg.version, dedupe);
      const items = this.items[s];
      const last = items[items.length - 1];
      if (last !== undefined && last.k === ITEM_PUSH) last.n++;
      else items.push({ k: ITEM_PUSH, n: 1 });
    }
    return { lsn, row };
  }

  install(state: RegistryState): void {
    this.reg = compileRegistry(state, { ...OPTS, pushValidators: true, features: false });
    const lsn = ++this.lsn;
    for (let s = 0; s < this.shards; s++) {
      this.writers[s].install(lsn, state.version);
      this.items[s].push({ k: ITEM_INSTALL, lsn, wire: wireOf(this.reg), renames: [] });
    }
  }

  get(s: number, table: string, key: string, features: string[] | null): void {
    const tp = this.reg.tables.get(table)!;
    const item: GetItem = { k: ITEM_GET, v: this.reg.version, t: tp.index, key, f: features === null ? null : features.map((f) => tp.featureIndex.get(f)!) };
    this.items[s].push(item);
  }

  batch(s: number): ShardBatch {
    const b = { items: this.items[s], bytes: this.writers[s].take() };
    this.items[s] = [];
    return b;
  }
}

const log = createLogger('silent');

function shardInit(shardId: number, shardCount: number, dataDir: string, memoryOnly: boolean): ShardInit {
  return {
    shardId, shardCount, dataDir, memoryOnly, memoryLimitBytes: 0, memoryGovEnforce: true, logLevel: 'silent', walSync: 'batch', walSyncTimeoutMs: 1000,
    walSyncIntervalMs: 5, walSegmentBytesMax: 1 << 20, faultFile: null, partitions: 0, history: [V1, V2], current: V1,
  };
}

function memoryShard(shardId: number, shardCount: number): { shard: Shard; state: ShardState } {
  const state = new ShardState({ shardId, shardCount, memoryGovEnforce: true });
  state.install(V1);
  const shard = new Shard({ init: shardInit(shardId, shardCount, '', true), state, dedupe: new DedupeLog(), store: null, coldFiles: null, log, recovered: { lastLsn: 0, records: 0, ms: 0 }, sampler: new ThreadSampler('test') });
  return { shard, state };
}

function randomTx(r: () => number, i: number): Row {
  const tx: Row = {
    user: `u${Math.floor(r() * 7)}é`, card: `c${Math.floor(r() * 3)}`, amount: Math.round(r() * 10_000) / 100,
    ok: r() < 0.5, lat: r() * 90, lon: r() * 180 - 90,
  };
  if (r() < 0.7) tx.n = Math.floor(r() * 5);
  if (r() < 0.3) tx.note = `note ${i}`;
  return tx;
}

test('PUSH records applied by the shard read exactly as the object path (chains, keys, hashing on the shard), 3 shards', () => {
  const r = prng(12);
  const SHARDS = 3;
  const front = new FrontSim(V1, SHARDS);
  const live = Array.from({ length: SHARDS }, (_, s) => memoryShard(s, SHARDS));
  const naive = Array.from({ length: SHARDS }, (_, s) => { const st = new ShardState({ shardId: s, shardCount: SHARDS, memoryGovEnforce: true }); st.install(V1); return st; });
  for (let batch = 0; batch < 20; batch++) {
    for (let i = 0; i < 50; i++) {
      const t = T0 + batch * 1000 + i;
      // Derived events are pushable by name too (their row feeds Cards as is).
      const event = r() < 0.8 ? 'Tx' : 'Big';
      const tx = randomTx(r, i);
      if (event === 'Big' && r() < 0.5) tx.double = r() * 100;
      const { lsn, row } = front.push(event, tx, t);
      for (const st of naive) st.apply(event, { ...row }, t, lsn);
    }
    for (let s = 0; s < SHARDS; s++) {
      const res = live[s].shard.runBatch(front.batch(s));
      for (const out of res.outs) assert.equal(out, null, 'every push applied');
    }
  }
  const now = T0 + 30_000;
  let entities = 0;
  for (let s = 0; s < SHARDS; s++) {
    for (const table of ['Users', 'Cards']) {
      const ts = live[s].state.tableByName(table)!;
      const want = naive[s].tableByName(table)!;
      assert.deepEqual(ts.cols.index.keyList().sort(), want.cols.index.keyList().sort(), `${table} keys of shard ${s}`);
      for (const key of ts.cols.index.keyList()) {
        entities++;
        assert.equal(live[s].state.read(table, key, null, now), naive[s].read(table, key, null, now), `${table} ${key}`);
      }
    }
  }
  assert.ok(entities > 20, `${entities} entities compared`);
});

test('gets by index: all features, a subset in the order asked, a cold key, a get resolved under another version', () => {
  const front = new FrontSim(V1, 1);
  const { shard } = memoryShard(0, 1);
  front.push('Tx', { user: 'a', card: 'c', amount: 60, ok: true, n: 3, lat: 1, lon: 2, note: 'x' }, T0);
  front.get(0, 'Users', 'a', null);
  front.get(0, 'Users', 'a', ['total', 'n']);
  front.get(0, 'Users', 'nobody', null);
  front.get(0, 'Cards', JSON.stringify(['c', 'a']), ['c']);
  const stale: GetItem = { k: ITEM_GET, v: 7, t: 0, key: 'a', f: null };
  front.items[0].push(stale);
  const res = shard.runBatch(front.batch(0));
  assert.equal(res.outs[0], null);
  const all = JSON.parse(res.outs[1] as string);
  assert.deepEqual(Object.keys(all), ['n', 'total', 'oks', 'lastNote', 'spread']);
  assert.equal(all.n, 1);
  assert.equal(all.total, 60);
  assert.equal(all.oks, 1);
  assert.equal(all.lastNote, 'x');
  assert.equal(res.outs[2], '{"total":60,"n":1}');
  assert.equal(res.outs[3], '{}');
  assert.equal(res.outs[4], '{"c":1}');
  const err = res.outs[5] as { code: string };
  assert.equal(err.code, 'internal_error');
});

test('install ordering: in one batch, pushes before an install apply under the old version, after it under the new one', () => {
  const front = new FrontSim(V1, 1);
  const { shard, state } = memoryShard(0, 1);
  front.push('Tx', { user: 'a', card: 'c', amount: 10, ok: true, lat: 1, lon: 2 }, T0);
  front.get(0, 'Users', 'a', null);
  front.install(V2);
  front.push('Tx', { user: 'a', card: 'c', amount: 30, ok: true, lat: 1, lon: 2 }, T0 + 1);
  front.get(0, 'Users', 'a', ['n', 'avg']);
  const res = shard.runBatch(front.batch(0));
  assert.deepEqual(res.outs.slice(0, 1), [null]);
  assert.equal(JSON.parse(res.outs[1] as string).avg, undefined, 'v1 has no avg');
  assert.equal(res.outs[2], null, 'install');
  assert.equal(res.outs[3], null);
  assert.equal(res.outs[4], '{"n":2,"avg":30}', 'count carried over, the new mean saw only the push after its install');
  assert.equal(state.registryVersion, 2);
});

interface StoredShard {
  shard: Shard;
  state: ShardState;
  store: ShardStore;
  info: RecoveryInfo;
}

/** A shard with a store on `init`'s data dir, recovered from it (V1 installed when it held no registry). */
function openStored(init: ReturnType<typeof shardInit>): StoredShard {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const dedupe = new DedupeLog();
  const { store, info } = ShardStore.open(init, state, dedupe, log);
  if (state.registry === null) state.install(V1);
  return { shard: new Shard({ init, state, dedupe, store, coldFiles: null, log, recovered: info, sampler: new ThreadSampler('test') }), state, store, info };
}

test('with a store: the batch frames are the WAL; a restart recovers the same rows and dedupe entries', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-shard-unit-'));
  try {
    const init = shardInit(0, 1, dir, false);
    const open = (): StoredShard => openStored(init);
    const first = open();
    const front = new FrontSim(V1, 1);
    const r = prng(5);
    for (let b = 0; b < 5; b++) {
      for (let i = 0; i < 40; i++) front.push('Tx', randomTx(r, b * 100 + i), T0 + b * 100 + i);
      if (b === 2) front.install(V2);
      const res = first.shard.runBatch(front.batch(0));
      assert.equal(res.walError, null, 'the batch was written');
    }
    const now = Date.now();
    const keys = first.state.tableByName('Users')!.cols.index.keyList();
    const rows = keys.map((k) => first.state.read('Users', k, null, now));
    const hello = first.shard.hello();
    assert.ok(hello.dedupe.length > 10, 'dedupe values recorded');
    first.store.close();
    const second = open();
    assert.equal(second.info.lastLsn, front.lsn);
    assert.equal(second.state.registryVersion, 2);
    assert.deepEqual(keys.map((k) => second.state.read('Users', k, null, now)), rows);
    assert.deepEqual(second.shard.hello().dedupe, hello.dedupe, 'dedupe entries survive, same lsn, version and time');
    // Server time at boot starts at or after this (docs/time.md): the newest push time replayed.
    assert.equal(hello.lastTimeMs, T0 + 4 * 100 + 39);
    assert.equal(second.shard.hello().lastTimeMs, T0 + 4 * 100 + 39, 'the newest push time comes back from the WAL');
    second.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with a store: replay after a snapshot starts at the WAL batch the snapshot recorded, and recovers the same rows', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-shard-resume-'));
  try {
    const init = shardInit(0, 1, dir, false);
    const open = (): StoredShard => openStored(init);
    const first = open();
    const front = new FrontSim(V1, 1);
    const r = prng(31);
    const batch = (from: number): void => {
      for (let i = from; i < from + 50; i++) front.push('Tx', { ...randomTx(r, i), user: `user${i % 70}` }, T0 + i);
      assert.equal(first.shard.runBatch(front.batch(0)).walError ?? null, null);
    };
    for (let b = 0; b < 4; b++) batch(b * 50);
    first.store.snapshotNow(first.state, new DedupeLog());
    const snapLsn = front.lsn;
    for (let b = 4; b < 7; b++) batch(b * 50);
    const now = Date.now();
    const keys = first.state.tableByName('Users')!.cols.index.keyList();
    const rows = keys.map((k) => first.state.read('Users', k, null, now));
    first.store.close();
    const second = open();
    assert.equal(second.info.snapshotLsn, snapLsn);
    assert.equal(second.info.records, 150, 'only the records after the snapshot are replayed');
    assert.ok(second.info.resumeSkippedBytes > 0, 'the segment was read from the recorded batch on');
    assert.deepEqual(keys.map((k) => second.state.read('Users', k, null, now)), rows);
    // A shutdown snapshot right after recovery (nothing appended yet) resumes at the last record recovery read.
    second.store.snapshotNow(second.state, new DedupeLog());
    second.store.close();
    const third = open();
    assert.equal(third.info.snapshotLsn, front.lsn);
    assert.equal(third.info.records, 0);
    assert.ok(third.info.resumeSkippedBytes > second.info.resumeSkippedBytes, 'read from the last record on');
    assert.deepEqual(keys.map((k) => third.state.read('Users', k, null, now)), rows);
    third.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an old data dir: EVENT records (the envelope text) replay, then the PUSH records written after the upgrade', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-shard-legacy-'));
  try {
    const init = shardInit(0, 1, dir, false);
    const r = prng(9);
    const txs = Array.from({ length: 60 }, (_, i) => randomTx(r, i));
    // What a build before PUSH records wrote: the envelope as received, per push.
    const wal = WalWriter.open(join(dir, 'shard-0', 'wal'), { segmentBytesMax: 1 << 20, nextLsnHint: 1 });
    const enc = new RecordEncoder();
    for (let i = 0; i < 30; i++) enc.event(i + 1, T0 + i, 1, 'Tx', JSON.stringify({ event: 'Tx', data: txs[i] }));
    wal.appendStaged(enc);
    wal.sync();
    wal.close();
    const naive = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    naive.install(V1);
    for (let i = 0; i < 60; i++) naive.apply('Tx', { ...txs[i] }, T0 + i, i + 1);
    const open = (): { shard: Shard; state: ShardState; store: ShardStore } => {
      const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
      const { store, info } = ShardStore.open(init, state, new DedupeLog(), log);
      if (state.registry === null) state.install(V1);
      return { shard: new Shard({ init, state, dedupe: new DedupeLog(), store, coldFiles: null, log, recovered: info, sampler: new ThreadSampler('test') }), state, store };
    };
    const upgraded = open();
    assert.equal(upgraded.state.appliedLsn, 30, 'the old records replayed');
    const front = new FrontSim(V1, 1);
    front.lsn = 30;
    for (let i = 30; i < 60; i++) front.push('Tx', txs[i], T0 + i);
    assert.equal(upgraded.shard.runBatch(front.batch(0)).walError, null);
    upgraded.store.close();
    const restarted = open();
    const now = Date.now();
    const keys = naive.tableByName('Users')!.cols.index.keyList();
    for (const k of keys) assert.equal(restarted.state.read('Users', k, null, now), naive.read('Users', k, null, now), k);
    restarted.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with a store: a periodic snapshot streams to its file while batches apply; an install drops a running one; a restart restores from it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-shard-snap-'));
  try {
    const init = shardInit(0, 1, dir, false);
    const snaps = join(dir, 'shard-0', 'snapshots');
    const open = (): { shard: Shard; state: ShardState; store: ShardStore; info: { snapshotLsn: number; records: number } } => {
      const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
      const dedupe = new DedupeLog();
      const { store, info } = ShardStore.open(init, state, dedupe, log);
      if (state.registry === null) state.install(V1);
      return { shard: new Shard({ init, state, dedupe, store, coldFiles: null, log, recovered: info, sampler: new ThreadSampler('test') }), state, store, info };
    };
    const until = async (what: string, ok: () => boolean): Promise<void> => {
      for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(ok(), what);
    };
    const first = open();
    const front = new FrontSim(V1, 1);
    const r = prng(21);
    for (let i = 0; i < 3000; i++) front.push('Tx', { ...randomTx(r, i), user: `user${i % 1500}` }, T0 + i);
    assert.equal(first.shard.runBatch(front.batch(0)).walError ?? null, null);
    // A job started, then an install in the same batch: the job is dropped before its first slice.
    front.items[0].push({ k: ITEM_SNAPSHOT, sync: false });
    front.install(V2);
    assert.equal(first.shard.runBatch(front.batch(0)).walError ?? null, null);
    await until('the dropped job left no file', () => readdirSync(snaps).length === 0);
    // The next one runs to the end while batches keep coming between its slices.
    front.items[0].push({ k: ITEM_SNAPSHOT, sync: false });
    const snapLsn = front.lsn;
    assert.equal(first.shard.runBatch(front.batch(0)).walError ?? null, null);
    for (let b = 0; b < 5; b++) {
      for (let i = 0; i < 50; i++) front.push('Tx', { ...randomTx(r, 5000 + b * 50 + i), user: `user${i}` }, T0 + 5000 + b * 50 + i);
      assert.equal(first.shard.runBatch(front.batch(0)).walError ?? null, null);
      await new Promise((res) => setImmediate(res));
    }
    await until('the snapshot file landed', () => readdirSync(snaps).some((n) => n.endsWith('.snap')));
    assert.deepEqual(readdirSync(snaps), [`${String(snapLsn).padStart(20, '0')}.snap`], 'one file, no tmp left');
    const now = Date.now();
    const keys = first.state.tableByName('Users')!.cols.index.keyList();
    const rows = keys.map((k) => first.state.read('Users', k, null, now));
    const dedupe = first.shard.hello().dedupe;
    assert.ok(dedupe.length > SNAPSHOT_DEDUPE_CHUNK_ENTRIES, `dedupe entries span more than one chunk: ${dedupe.length}`);
    first.store.close();
    const second = open();
    assert.equal(second.info.snapshotLsn, snapLsn, 'restored from the snapshot');
    assert.deepEqual(second.shard.hello().dedupe, dedupe, 'dedupe entries written in chunks come back, in order');
    assert.ok(second.info.records < front.lsn - snapLsn + 10, 'only the WAL after it replayed');
    assert.deepEqual(keys.map((k) => second.state.read('Users', k, null, now)), rows);
    second.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** One shard of `state` fed by PUSH records (front, shard, its state `live`) and a state fed the same rows by the object path (`naive`). */
function recordAndObjectPaths(state: RegistryState): { front: FrontSim; live: ShardState; shard: Shard; naive: ShardState } {
  const front = new FrontSim(state, 1);
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(state);
  const shard = new Shard({ init: { ...shardInit(0, 1, '', true), history: [state], current: state }, state: live, dedupe: new DedupeLog(), store: null, coldFiles: null, log, recovered: { lastLsn: 0, records: 0, ms: 0 }, sampler: new ThreadSampler('test') });
  const naive = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  naive.install(state);
  return { front, live, shard, naive };
}

/** Asserts that both states hold the same keys of `tables` and read the same rows at `now`; returns the entities compared. */
function assertSameRows(live: ShardState, naive: ShardState, tables: readonly string[], now: number): number {
  let entities = 0;
  for (const table of tables) {
    const keys = live.tableByName(table)!.cols.index.keyList().sort();
    assert.deepEqual(keys, naive.tableByName(table)!.cols.index.keyList().sort(), `${table} keys`);
    for (const key of keys) {
      entities++;
      assert.equal(live.read(table, key, null, now), naive.read(table, key, null, now), `${table} ${key}`);
    }
  }
  return entities;
}

test('PUSH records: string columns only ring cells read reach them by id alone (the row field is left undefined), and read as the object path; a where or a kept value still reads the string', () => {
  const ev = { kind: 'event', name: 'Pay', schema: { fields: { user: 'str', card: 'str', merchant: 'str', amount: 'f64' }, optional_fields: [] } };
  const ringOnly = { kind: 'table', name: 'RingOnly', upstreams: ['Pay'], key: ['user'], agg: {
    merchants: { op: 'n_unique', params: { field: 'merchant', window: '5s' } },
    cards: { op: 'top_k', params: { field: 'card', window: '5s', k: 2 } },
    cardsLong: { op: 'n_unique', params: { field: 'card', window: '1h' } },
    spend: { op: 'sum', params: { field: 'amount', window: '5s' } },
  } };
  const withWhere = { kind: 'table', name: 'WithWhere', upstreams: ['Pay'], key: ['card'], agg: {
    merchants: { op: 'n_unique', params: { field: 'merchant', window: '5s' } },
    atM1: { op: 'count', params: { where: 'merchant == "m1-long-merchant-name"', window: '5s' } },
  } };
  const withKept = { kind: 'table', name: 'WithKept', upstreams: ['Pay'], key: ['merchant'], agg: {
    users: { op: 'n_unique', params: { field: 'user', window: '5s' } },
    lastUser: { op: 'last', params: { field: 'user' } },
    seen: { op: 'bloom_member', params: { field: 'user', capacity: 64 } },
  } };
  const state: RegistryState = { version: 1, nodes: [ev, ringOnly, withWhere, withKept] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  const r = prng(34);
  // Short and long (past the 8-unit prefix) values, a few non-ASCII ones (looked up by string, not by bytes).
  const merchants = ['m0', 'm1-long-merchant-name', 'm2', 'märchen', 'm4-also-quite-long'];
  for (let batch = 0; batch < 20; batch++) {
    for (let i = 0; i < 40; i++) {
      const t = T0 + batch * 1000 + i;
      const pay: Row = { user: `u${Math.floor(r() * 6)}`, card: `c${Math.floor(r() * 4)}`, merchant: merchants[Math.floor(r() * merchants.length)], amount: Math.round(r() * 1000) / 10 };
      const { lsn, row } = front.push('Pay', pay, t);
      naive.apply('Pay', { ...row }, t, lsn);
    }
    for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null, 'every push applied');
  }
  const cols = (name: string): Record<string, number> => {
    const c = live.tableByName(name)!.cols;
    return Object.fromEntries(c.plan.columns.map((col, j) => [col, c.rowReads()[j]]));
  };
  assert.deepEqual(cols('RingOnly'), { merchant: 0, card: 0, amount: 0 }, 'ring cells alone read RingOnly\'s columns');
  assert.deepEqual(cols('WithWhere'), { merchant: 1 }, 'a where may read any column');
  assert.deepEqual(cols('WithKept'), { user: 1 }, 'a kept value and a bloom filter read their input field');
  const entities = assertSameRows(live, naive, ['RingOnly', 'WithWhere', 'WithKept'], T0 + 20_500);
  assert.ok(entities >= 10, `${entities} entities compared`);
});

test('PUSH records: a column that one ring holds as hashes and another as interned ids (more windows than a ring spans) is counted by both, also as the table\'s first column', () => {
  const ev = { kind: 'event', name: 'Pay', schema: { fields: { user: 'str', merchant: 'str' }, optional_fields: [] } };
  // Nine windows: the first RING_GROUP_WINDOWS_MAX (n_unique only: hashed cells) in one ring, the ninth
  // (top_k: interned ids) in another. push_apply.ts then interns the column (one ring needs ids) and the
  // hashing ring takes each value from the intern table: the row field is left undefined.
  const agg: Record<string, unknown> = {};
  for (let w = 1; w <= RING_GROUP_WINDOWS_MAX; w++) agg[`nu${w}`] = { op: 'n_unique', params: { field: 'merchant', window: `${w}s` } };
  agg.top = { op: 'top_k', params: { field: 'merchant', window: `${RING_GROUP_WINDOWS_MAX + 1}s`, k: 2 } };
  const table = { kind: 'table', name: 'Users', upstreams: ['Pay'], key: ['user'], agg };
  const state: RegistryState = { version: 1, nodes: [ev, table] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  const cols = live.tableByName('Users')!.cols;
  assert.deepEqual(cols.groups.map((g) => [g.windows.length, g.hashed[0]]), [[RING_GROUP_WINDOWS_MAX, 1], [1, 0]], 'one hashing ring, one interning ring');
  assert.deepEqual([cols.plan.columns, cols.colHashed[0], cols.rowReads()[0]], [['merchant'], 0, 0]);
  const r = prng(35);
  for (let batch = 0; batch < 10; batch++) {
    for (let i = 0; i < 40; i++) {
      const t = T0 + batch * 700 + i * 10;
      const { lsn, row } = front.push('Pay', { user: `u${Math.floor(r() * 3)}`, merchant: `m${Math.floor(r() * 7)}` }, t);
      naive.apply('Pay', { ...row }, t, lsn);
    }
    for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null, 'every push applied');
    assertSameRows(live, naive, ['Users'], T0 + batch * 700 + 400);
  }
  const row = JSON.parse(live.read('Users', 'u0', null, T0 + 7_000));
  assert.ok(row.nu8 > 1, `the hashing ring counts values: ${JSON.stringify(row)}`);
});

test('PUSH records: every column of a wide table reaches the row field its features read (the generated column setter), as the object path', () => {
  // Seven columns of every kind a feed carries, read by ring members (numbers without
  // an intern id, interned strings), slab rows, kept values and a where; a setter that
  // confused two columns would answer differently from the object path.
  const ev = { kind: 'event', name: 'W', schema: { fields: { k: 'str', a: 'f64', b: 'f64', c: 'str', d: 'i64', e: 'str', f: 'bool', g: 'f64' }, optional_fields: ['b', 'e'] } };
  const wide = { kind: 'table', name: 'Wide', upstreams: ['W'], key: ['k'], agg: {
    sa: { op: 'sum', params: { field: 'a', window: '10s' } },
    mb: { op: 'max', params: { field: 'b', window: '10s' } },
    nc: { op: 'n_unique', params: { field: 'c', window: '10s' } },
    ld: { op: 'last', params: { field: 'd' } },
    le: { op: 'last_n', params: { field: 'e', n: 2 } },
    cf: { op: 'count', params: { where: 'f and g > 10', window: '10s' } },
    eg: { op: 'ewma', params: { field: 'g', half_life: '5s' } },
    sg: { op: 'sum', params: { field: 'g', window: '1h' } },
  } };
  const other = { kind: 'table', name: 'ByC', upstreams: ['W'], key: ['c'], agg: {
    sg: { op: 'sum', params: { field: 'g', window: '10s' } },
    ke: { op: 'top_k', params: { field: 'k', window: '10s', k: 2 } },
  } };
  const state: RegistryState = { version: 1, nodes: [ev, wide, other] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  const r = prng(56);
  for (let batch = 0; batch < 15; batch++) {
    for (let i = 0; i < 40; i++) {
      const t = T0 + batch * 1000 + i;
      const w: Row = { k: `k${Math.floor(r() * 5)}`, a: Math.round(r() * 1000) / 10, c: `c${Math.floor(r() * 3)}`, d: Math.floor(r() * 50), f: r() < 0.5, g: Math.round(r() * 200) / 10 };
      if (r() < 0.7) w.b = -Math.round(r() * 100);
      if (r() < 0.7) w.e = `e${Math.floor(r() * 9)}`;
      const { lsn, row } = front.push('W', w, t);
      naive.apply('W', { ...row }, t, lsn);
    }
    for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null, 'every push applied');
  }
  const entities = assertSameRows(live, naive, ['Wide', 'ByC'], T0 + 15_500);
  assert.ok(entities >= 6, `${entities} entities compared`);
});

test('PUSH records: f64 values that differ only in one byte or only in their low word, one after another, read as the object path (the applier reuses the last number only for the same 8 bytes)', () => {
  const ev = { kind: 'event', name: 'F', schema: { fields: { k: 'str', a: 'f64', b: 'f64' }, optional_fields: ['b'] } };
  const tbl = { kind: 'table', name: 'Fs', upstreams: ['F'], key: ['k'], agg: {
    la: { op: 'last_n', params: { field: 'a', n: 40 } },
    lb: { op: 'last_n', params: { field: 'b', n: 40 } },
    sa: { op: 'sum', params: { field: 'a', window: '1h' } },
  } };
  const state: RegistryState = { version: 1, nodes: [ev, tbl] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  // Neighbours of a value in each of its 8 bytes, and values whose high word is the same (they differ below 2^-20 of it).
  const base = new DataView(new ArrayBuffer(8));
  const values: number[] = [];
  for (const x of [1234.5678, 0.1, 3e9 + 0.25]) {
    for (let byte = 0; byte < 8; byte++) {
      base.setFloat64(0, x, true);
      values.push(x);
      base.setUint8(byte, base.getUint8(byte) ^ (byte === 7 ? 0x01 : 0x10));
      values.push(base.getFloat64(0, true));
    }
    base.setFloat64(0, x, true);
    base.setUint32(0, base.getUint32(0, true) + 1, true);
    values.push(x, base.getFloat64(0, true), x);
  }
  let i = 0;
  for (const v of values) {
    const t = T0 + i++;
    // `b` carries `a`'s value in every other record: the same 8 bytes twice in one record reuse the number.
    const f: Row = { k: `k${i % 2}`, a: v };
    if (i % 2 === 0) f.b = v;
    const { lsn, row } = front.push('F', f, t);
    naive.apply('F', { ...row }, t, lsn);
  }
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null, 'every push applied');
  assertSameRows(live, naive, ['Fs'], T0 + 1000);
  const got = JSON.parse(live.read('Fs', 'k0', null, T0 + 1000)) as { la: number[] };
  assert.deepEqual(got.la, values.filter((_, j) => (j + 1) % 2 === 0).slice(-40), 'last_n holds the exact values pushed');
});

test('PUSH records: an interned value leaves its table once the last cell holding it has gone, the first value (id 0) too', () => {
  const ev = { kind: 'event', name: 'S', schema: { fields: { k: 'str', m: 'str' }, optional_fields: [] } };
  const tbl = { kind: 'table', name: 'Ss', upstreams: ['S'], key: ['k'], agg: { tm: { op: 'top_k', params: { field: 'm', window: '1s', k: 3 } } } };
  const state: RegistryState = { version: 1, nodes: [ev, tbl] as RegistryState['nodes'] };
  const { front, live, shard } = recordAndObjectPaths(state);
  const interns = (): number => live.tableByName('Ss')!.cols.colInterns.reduce((a, it) => a + (it === null ? 0 : it.size), 0);
  front.push('S', { k: 'a', m: 'first' }, T0);
  front.push('S', { k: 'a', m: 'second' }, T0 + 1);
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null);
  assert.equal(interns(), 2, 'two values held by ring cells');
  // Two windows later both cells have expired: only the new value is held.
  front.push('S', { k: 'a', m: 'third' }, T0 + 2500);
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null);
  assert.equal(interns(), 1, 'the expired values (ids 0 and 1) left the intern table');
  assert.deepEqual(JSON.parse(live.read('Ss', 'a', null, T0 + 2500)).tm.map((e: { value: string }) => e.value), ['third']);
});

test('PUSH records: string columns without an intern table (read by a where, a bloom filter or a lifetime op only) read as the object path', () => {
  const ev = { kind: 'event', name: 'P', schema: { fields: { k: 'str', w: 'str', bl: 'str', fs: 'str', x: 'f64' }, optional_fields: [] } };
  const tbl = { kind: 'table', name: 'Ps', upstreams: ['P'], key: ['k'], agg: {
    hits: { op: 'count', params: { where: 'w == "yes"' } },
    seen: { op: 'bloom_member', params: { field: 'bl', capacity: 64 } },
    firsts: { op: 'first', params: { field: 'fs' } },
    sx: { op: 'sum', params: { field: 'x', window: '10s' } },
  } };
  const state: RegistryState = { version: 1, nodes: [ev, tbl] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  const r = prng(78);
  for (let i = 0; i < 200; i++) {
    const t = T0 + i;
    const p: Row = { k: `k${Math.floor(r() * 4)}`, w: r() < 0.5 ? 'yes' : 'no', bl: `b${Math.floor(r() * 9)}`, fs: `f${i}`, x: i };
    const { lsn, row } = front.push('P', p, t);
    naive.apply('P', { ...row }, t, lsn);
  }
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null, 'every push applied');
  assert.ok(live.tableByName('Ps')!.cols.colInterns.some((it) => it === null), 'some string column has no intern table');
  assert.equal(assertSameRows(live, naive, ['Ps'], T0 + 500), 4);
});

test('PUSH records: a record written under another registry version than the installed one is refused (internal_error) and changes nothing', () => {
  const { front, live, shard } = recordAndObjectPaths(V1);
  front.push('Tx', { user: 'u1', card: 'c1', amount: 5, ok: true, lat: 1, lon: 2 }, T0);
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null);
  const before = live.read('Users', 'u1', null, T0 + 10);
  live.install(V2);
  // Written under v1 without the install item in between (a front bug): the shard must not decode it with v2's layout.
  front.push('Tx', { user: 'u1', card: 'c1', amount: 7, ok: true, lat: 1, lon: 2 }, T0 + 1);
  front.push('Tx', { user: 'u2', card: 'c1', amount: 7, ok: true, lat: 1, lon: 2 }, T0 + 2);
  const outs = shard.runBatch(front.batch(0)).outs;
  assert.equal(outs.length, 1);
  const errs = outs[0] as Array<{ code: string } | null>;
  assert.ok(Array.isArray(errs) && errs.length === 2 && errs.every((e) => e !== null && e.code === 'internal_error'), JSON.stringify(outs));
  const after = JSON.parse(live.read('Users', 'u1', null, T0 + 10)) as Record<string, unknown>;
  for (const [f, v] of Object.entries(JSON.parse(before) as Record<string, unknown>)) assert.deepEqual(after[f], v, f);
  assert.equal(live.tableByName('Users')!.holds('u2'), false);
});

test('PUSH records while new entities are refused (--memory-only over --memory-limit): a record reaching only held entities applies, one reaching a new entity in any feed is refused whole', () => {
  // Two tables (two feeds per record, each with several values): the look-ahead must walk every feed's key and values.
  const ev = { kind: 'event', name: 'R', schema: { fields: { u: 'str', c: 'str', x: 'f64', m: 'str' }, optional_fields: [] } };
  const byU = { kind: 'table', name: 'ByU', upstreams: ['R'], key: ['u'], agg: { n: { op: 'count', params: {} }, sx: { op: 'sum', params: { field: 'x', window: '1h' } }, nm: { op: 'n_unique', params: { field: 'm', window: '1h' } } } };
  const byC = { kind: 'table', name: 'ByC', upstreams: ['R'], key: ['c'], agg: { n: { op: 'count', params: {} }, lm: { op: 'last', params: { field: 'm' } } } };
  const state: RegistryState = { version: 1, nodes: [ev, byU, byC] as RegistryState['nodes'] };
  const { front, live, shard, naive } = recordAndObjectPaths(state);
  let t = T0;
  const push = (u: string, c: string): void => {
    const { lsn, row } = front.push('R', { u, c, x: 2.5, m: `m-${u}-${c}` }, ++t);
    try { naive.apply('R', { ...row }, t, lsn); } catch (e) { if ((e as { code?: string }).code !== 'memory_limit_exceeded') throw e; }
  };
  push('u1', 'c1');
  push('u2', 'c2');
  for (const out of shard.runBatch(front.batch(0)).outs) assert.equal(out, null);
  live.refuseNew = true;
  naive.refuseNew = true;
  push('u1', 'c2'); // both held: applies
  push('u3', 'c1'); // new user: refused
  push('u2', 'c3'); // new card (second feed): refused
  push('u2', 'c1'); // both held: applies
  const outs = shard.runBatch(front.batch(0)).outs;
  const errs = outs[0] as Array<{ code: string } | null>;
  assert.deepEqual(errs.map((e) => (e === null ? null : e.code)), [null, 'memory_limit_exceeded', 'memory_limit_exceeded', null]);
  assert.equal(live.tableByName('ByU')!.holds('u3'), false);
  assert.equal(live.tableByName('ByC')!.holds('c3'), false);
  assertSameRows(live, naive, ['ByU', 'ByC'], t + 1);
  assert.equal(JSON.parse(live.read('ByU', 'u2', null, t + 1)).n, 2, 'the refused record did not reach its held entity either');
});

test('an old-format EVENT record (envelope text, replayed from an old data dir) is applied and records its dedupe value; one without a value records none', () => {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(V1);
  const dedupe = new DedupeLog();
  const tx = (note?: string): string => JSON.stringify({ event: 'Tx', data: { user: 'u1', card: 'c1', amount: 60, ok: true, lat: 1, lon: 2, ...(note === undefined ? {} : { note }) } });
  assert.ok(state.applyText('Tx', tx('n-1'), T0, 7, 1, dedupe));
  assert.ok(state.applyText('Tx', tx(), T0 + 1, 8, 1, dedupe));
  assert.deepEqual(dedupe.entries(T0 + 2), [['Tx', 'n-1', 7, 1, T0]]);
  assert.deepEqual(JSON.parse(state.read('Users', 'u1', ['n', 'lastNote'], T0 + 2)), { n: 2, lastNote: 'n-1' });
  assert.equal(state.applyText('Nope', tx(), T0 + 2, 9, 1, dedupe), false, 'an event this registry lacks is not applied');
});
