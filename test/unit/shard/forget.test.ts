/**
 * Forgetting an entity on the shard side (shard/state/forget_apply.ts,
 * TableState.forget, the cold stores' erase, ShardStore's scrub), driven with
 * batches the front's own code writes (PushRoute for pushes, resolveForget and
 * PushFrameWriter.forget for forgets):
 * - hot and frozen entities go without a thaw; the disk cold store overwrites the
 *   record (the key's bytes are gone from its files), also for an entity still
 *   queued for its first write, and scans and compaction step over the overwritten
 *   record;
 * - in a batch a forget applies in its place among the pushes, answers the removed
 *   count per entry, and a forget written under another registry version is a bug
 *   answered internal_error that removes nothing;
 * - property: random pushes, forgets (one table, a list, every table, composite
 *   keys), cold sweeps, shutdown snapshots and restarts over a store read exactly as
 *   a naive recomputation from the pushes that no later forget erased;
 * - a forget while a periodic snapshot runs (one entity already captured, one not),
 *   both pushed again after it: a restart from that snapshot reads as the naive model;
 * - the snapshot after a forget is the only one kept and the WAL before it goes: no
 *   file of the shard holds the forgotten key, and a restart still lacks it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileRegistry, type CompiledRegistry } from '../../../src/registry/compile';
import type { RegistryState } from '../../../src/registry/model';
import { PushRoute } from '../../../src/front/routing';
import { resolveForget } from '../../../src/front/forget';
import { PushFrameWriter } from '../../../src/wal/push_record';
import { readNewestSnapshot } from '../../../src/wal';
import { ITEM_FORGET, ITEM_PUSH, ITEM_SNAPSHOT, type ShardBatch, type ShardInit, type ShardItem } from '../../../src/protocol/messages';
import { Shard } from '../../../src/shard/shard';
import { ShardState } from '../../../src/shard/state/state';
import { ShardStore } from '../../../src/shard/persist/store';
import { ColdFiles } from '../../../src/shard/cold/cold_files';
import { DedupeLog } from '../../../src/shard/state/dedupe_log';
import { createLogger } from '../../../src/log';
import { ThreadSampler } from '../../../src/admin/thread_stats';
import type { Row } from '../../../src/types';
import { prng } from '../../harness/prng';
import { pushRow, readText } from '../../harness/shard_feed';
import { filesHolding, until } from '../../harness/files';

const EVENT = { kind: 'event', name: 'Tx', schema: { fields: { user: 'str', merchant: 'str', amount: 'f64' }, optional_fields: [] }, cold_after: '3s' };
const USERS = { kind: 'table', name: 'Users', upstreams: ['Tx'], key: ['user'], agg: { n: { op: 'count', params: {} }, total: { op: 'sum', params: { field: 'amount', window: '1h' } } } };
const PAIRS = { kind: 'table', name: 'Pairs', upstreams: ['Tx'], key: ['user', 'merchant'], agg: { n: { op: 'count', params: {} }, last: { op: 'last', params: { field: 'amount' } } } };
const REG: RegistryState = { version: 1, nodes: [EVENT, USERS, PAIRS] };
/** Pushes are a minute old: the reads happen now, and cold_after (3 s) has passed for all of them. */
const T0 = Date.now() - 60_000;
const log = createLogger('silent');

interface Pushed { row: Row; t: number; lsn: number }
interface Erased { table: string; key: string; lsn: number }

/** The front's side for one shard: PUSH and FORGET frames written by the front's code, and a model of what was sent. */
class Feeder {
  readonly reg: CompiledRegistry = compileRegistry(REG, { memoryGovEnforce: true, pushValidators: true, features: false });
  readonly route = new PushRoute();
  readonly w = new PushFrameWriter(64);
  items: ShardItem[] = [];
  lsn = 0;
  readonly pushed: Pushed[] = [];
  readonly erased: Erased[] = [];

  push(data: Row, t: number): void {
    const plan = this.reg.events.get('Tx')!;
    const row = plan.validator!.validate(data);
    assert.equal(this.route.route(plan, row, 1), -1);
    const lsn = ++this.lsn;
    this.route.write(this.w, 0, plan, lsn, t, this.reg.version, null);
    const last = this.items[this.items.length - 1];
    if (last !== undefined && last.k === ITEM_PUSH) last.n++;
    else this.items.push({ k: ITEM_PUSH, n: 1 });
    this.pushed.push({ row, t, lsn });
  }

  /** A forget body as a client sends it; returns the tables and keys it names. */
  forget(body: unknown, t: number, version = this.reg.version): Array<[string, string]> {
    const plan = resolveForget(body, this.reg, 1);
    const lsn = ++this.lsn;
    assert.ok(plan.shardOf.every((s) => s === 0), 'one shard owns every key');
    this.w.forget(lsn, t, version, plan.tables.map((tp) => tp.index), plan.keys, plan.everyKey);
    this.items.push({ k: ITEM_FORGET });
    const named = plan.tables.map((tp, i): [string, string] => [tp.name, plan.keys[i]]);
    for (const [table, key] of named) this.erased.push({ table, key, lsn });
    return named;
  }

  batch(): ShardBatch {
    const b = { items: this.items, bytes: this.w.take() };
    this.items = [];
    return b;
  }

  /** The naive model: a fresh state fed, table by table, each push no later forget of its key there erased. */
  naive(): ShardState {
    const st = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    st.install(REG);
    const plan = this.reg.events.get('Tx')!;
    for (const p of this.pushed) {
      st.advance(p.t, p.lsn);
      this.route.route(plan, p.row, 1);
      plan.feeds.forEach((feed, fi) => {
        const r = this.route.rows[fi];
        const key = this.route.keys[fi];
        if (r === null || key === null) return;
        if (this.erased.some((e) => e.lsn > p.lsn && e.table === feed.table.name && e.key === key)) return;
        const ts = st.tables[feed.table.index];
        let slot = ts.hot(key);
        if (slot < 0) slot = ts.cols.add(key, p.t, 0);
        ts.cols.index.lastT[slot] = p.t;
        ts.cols.index.lastLsn[slot] = p.lsn;
        ts.cols.apply(slot, r, p.t);
      });
    }
    return st;
  }
}

const USER_KEYS = Array.from({ length: 12 }, (_, i) => `user${i}`);
const MERCHANTS = ['m0', 'm1', 'm2'];

/** Every row of both tables read now, live and naive: they must be equal. */
function assertSameRows(live: ShardState, naive: ShardState, what: string): void {
  const now = Date.now();
  for (const u of USER_KEYS) {
    assert.equal(readText(live, 'Users', u, null, now), readText(naive, 'Users', u, null, now), `${what}: Users ${u}`);
    for (const m of MERCHANTS) {
      const k = JSON.stringify([u, m]);
      assert.equal(readText(live, 'Pairs', k, null, now), readText(naive, 'Pairs', k, null, now), `${what}: Pairs ${k}`);
    }
  }
}

function shardInit(dataDir: string, memoryOnly: boolean): ShardInit {
  return {
    shardId: 0, shardCount: 1, dataDir, memoryOnly, memoryLimitBytes: 0, memoryGovEnforce: true, logLevel: 'silent', walSync: 'batch', walSyncTimeoutMs: 1000,
    walSyncIntervalMs: 5, walSegmentBytesMax: 1 << 20, faultFile: null, partitions: 0, history: [REG], current: REG,
  };
}

interface Opened { shard: Shard; state: ShardState; store: ShardStore; files: ColdFiles; close(): void }

/**
 * A shard with its store and disk cold store on `dir`, recovered from it, as
 * shard_main.ts opens one. `f`: its lsns continue above what the shard recovered,
 * as the front's do (server.ts starts them at the shards' highest).
 */
function openStored(dir: string, f?: Feeder): Opened {
  const init = shardInit(dir, false);
  const files = ColdFiles.open(join(dir, 'shard-0', 'cold'));
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true, coldFiles: files });
  const dedupe = new DedupeLog();
  const { store, info } = ShardStore.open(init, state, dedupe, log);
  if (state.registry === null) state.install(REG);
  const shard = new Shard({ init, state, dedupe, store, coldFiles: files, log, recovered: info, sampler: new ThreadSampler('test') });
  if (f !== undefined) f.lsn = Math.max(f.lsn, info.lastLsn);
  return { shard, state, store, files, close: () => { store.close(); files.close(); } };
}

test('hot and frozen entities are forgotten without a thaw; the disk cold store overwrites the record, also one still queued', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-forget-cold-'));
  try {
    const files = ColdFiles.open(dir, null, 16 * 1024);
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true, coldFiles: files });
    s.install(REG);
    const keys = Array.from({ length: 400 }, (_, i) => `cu${i}#`);
    keys.forEach((u, i) => pushRow(s, 'Tx', { user: u, merchant: 'm0', amount: i }, T0 + i, i + 1));
    const users = s.tableByName('Users')!;
    const now = Date.now();
    const before = keys.map((k) => readText(s, 'Users', k, null, now));
    assert.ok(s.sweepCold(now) >= 800, 'both tables went cold');
    assert.equal(users.size, 0);
    assert.ok(filesHolding(dir, 'cu42#').length > 0, 'the frozen records (Users and Pairs) are in segment files');
    const thawed = s.counters.thawed;
    assert.equal(users.forget('cu42#'), true);
    assert.equal(s.tableByName('Pairs')!.forget('["cu42#","m0"]'), true);
    assert.equal(s.counters.thawed, thawed, 'not thawed to be removed');
    assert.equal(users.holds('cu42#'), false);
    assert.deepEqual(filesHolding(dir, 'cu42#'), [], 'their bytes were overwritten in place');
    assert.equal(files.stats.scrubbed, 2);
    assert.equal(users.forget('cu42#'), false, 'a second forget finds nothing');
    assert.equal(readText(s, 'Users', 'cu42#', null, now), '{}');
    // A scan and compaction step over the overwritten record; every other entity reads back exactly.
    assert.equal([...users.cold.keys()].length, keys.length - 1);
    for (let i = 0; i < 50; i++) files.compactStep(1 << 20);
    keys.forEach((k, i) => { if (i !== 42) assert.equal(readText(s, 'Users', k, null, now), before[i], k); });
    // Hot: removed at once; the other table's entity of the same user is untouched.
    pushRow(s, 'Tx', { user: 'hot-user', merchant: 'm1', amount: 5 }, T0 + 500, 501);
    assert.equal(users.forget('hot-user'), true);
    assert.equal(readText(s, 'Users', 'hot-user', null, now), '{}');
    assert.equal(JSON.parse(readText(s, 'Pairs', '["hot-user","m1"]', null, now)).n, 1);
    // Frozen but still queued for its first write: written, then overwritten; nothing of it stays on disk.
    pushRow(s, 'Tx', { user: 'queued-user', merchant: 'm1', amount: 7 }, T0 + 600, 601);
    users.evict(users.cols.index.slotOf('queued-user'), now);
    assert.equal(users.holds('queued-user'), true);
    assert.equal(users.forget('queued-user'), true);
    files.flush();
    assert.deepEqual(filesHolding(dir, 'queued-user'), []);
    assert.equal(users.holds('queued-user'), false);
    files.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Memory-only mode: the frozen entity is dropped from the in-memory cold store.
  const mem = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  mem.install(REG);
  pushRow(mem, 'Tx', { user: 'm-user', merchant: 'm0', amount: 1 }, T0, 1);
  mem.sweepCold(Date.now());
  const mu = mem.tableByName('Users')!;
  assert.equal(mu.cold.size, 1);
  assert.equal(mu.forget('m-user'), true);
  assert.equal(mu.cold.size, 0);
  assert.equal(mem.counters.thawed, 0);
});

test('in a batch a forget applies in its place among the pushes and answers per entry; one under another version removes nothing', () => {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(REG);
  const shard = new Shard({ init: shardInit('', true), state, dedupe: new DedupeLog(), store: null, coldFiles: null, log, recovered: { lastLsn: 0, records: 0, ms: 0 }, sampler: new ThreadSampler('test') });
  const f = new Feeder();
  f.push({ user: 'user1', merchant: 'm0', amount: 1 }, T0);
  f.push({ user: 'user1', merchant: 'm1', amount: 2 }, T0 + 1);
  assert.deepEqual(f.forget({ tables: '*', key: 'user1' }, T0 + 2), [['Users', 'user1']], 'a scalar reaches the one-field table only');
  assert.deepEqual(f.forget({ table: 'Pairs', key: ['user1', 'm1'] }, T0 + 3), [['Pairs', '["user1","m1"]']]);
  f.push({ user: 'user1', merchant: 'm1', amount: 9 }, T0 + 4);
  f.forget({ tables: ['Users', 'Users'], key: 'user5' }, T0 + 5);
  const res = shard.runBatch(f.batch());
  assert.deepEqual(res.outs, [null, '1', '1', null, '0']);
  const now = Date.now();
  assert.deepEqual(JSON.parse(readText(state, 'Users', 'user1', null, now)), { n: 1, total: 9 }, 'the push after the forget counts from zero');
  assert.deepEqual(JSON.parse(readText(state, 'Pairs', '["user1","m1"]', null, now)), { n: 1, last: 9 });
  assert.deepEqual(JSON.parse(readText(state, 'Pairs', '["user1","m0"]', null, now)), { n: 1, last: 1 }, 'another entity of the same user stays');
  assertSameRows(state, f.naive(), 'after the batch');
  assert.equal(state.appliedLsn, f.lsn, 'a forget advances the applied lsn (a snapshot becomes due)');
  // Written under a version the shard does not have: a bug, answered internal_error; nothing removed.
  f.forget({ table: 'Pairs', key: ['user1', 'm0'] }, T0 + 6, 99);
  f.erased.pop();
  const bad = shard.runBatch(f.batch());
  assert.equal((bad.outs[0] as { code: string }).code, 'internal_error');
  assertSameRows(state, f.naive(), 'after the refused forget');
});

test('property: pushes, forgets, cold sweeps, snapshots and restarts over a store read as a naive recomputation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-forget-prop-'));
  try {
    let s = openStored(dir);
    const f = new Feeder();
    const r = prng(17);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
    let t = T0;
    let checks = 0;
    for (let step = 0; step < 1500; step++) {
      const x = r();
      const user = pick(USER_KEYS);
      if (x < 0.72) f.push({ user, merchant: pick(MERCHANTS), amount: Math.round(r() * 1000) / 10 }, ++t);
      else if (x < 0.80) f.forget(r() < 0.5 ? { table: 'Users', key: user } : { table: 'Pairs', key: [user, pick(MERCHANTS)] }, ++t);
      else if (x < 0.84) f.forget({ tables: '*', key: r() < 0.5 ? user : [user, pick(MERCHANTS)] }, ++t);
      else if (x < 0.86) f.forget({ tables: ['Users', 'Users'], key: user }, ++t);
      const y = r();
      if (r() < 0.15 || y < 0.04 || step === 1499) {
        const res = s.shard.runBatch(f.batch());
        assert.equal(res.walError ?? null, null);
      }
      if (y < 0.02) s.state.sweepCold(Date.now());
      else if (y < 0.03) s.store.snapshotNow(s.state, new DedupeLog());
      else if (y < 0.04) {
        s.close();
        s = openStored(dir, f);
        assertSameRows(s.state, f.naive(), `after the restart at step ${step}`);
        checks++;
      }
    }
    assertSameRows(s.state, f.naive(), 'at the end');
    s.close();
    s = openStored(dir);
    assertSameRows(s.state, f.naive(), 'after the last restart');
    assert.ok(checks >= 5, `${checks} restarts checked`);
    assert.ok(f.erased.length > 100, `${f.erased.length} entities forgotten`);
    s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a forget while a periodic snapshot runs (one entity captured, one not), both pushed again: a restart from that snapshot reads as the model', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-forget-fuzzy-'));
  try {
    let s = openStored(dir);
    const f = new Feeder();
    const users = Array.from({ length: 2000 }, (_, i) => `fz${i}`);
    users.forEach((u, i) => f.push({ user: u, merchant: 'm0', amount: i }, T0 + i));
    assert.equal(s.shard.runBatch(f.batch()).walError, null);
    const index = s.state.tableByName('Users')!.cols.index;
    const captured = index.keyOf(0);
    const notYet = index.keyOf(index.high - 1);
    const job = s.store.beginSnapshot(s.state)!;
    while (job.entities === 0) job.step(0.001);
    assert.ok(job.entities < users.length, `the job stopped after ${job.entities} entities`);
    f.forget({ tables: '*', key: captured }, T0 + 3000);
    f.forget({ table: 'Users', key: notYet }, T0 + 3001);
    f.forget({ table: 'Pairs', key: [notYet, 'm0'] }, T0 + 3002);
    f.push({ user: captured, merchant: 'm1', amount: 1000 }, T0 + 3003);
    f.push({ user: notYet, merchant: 'm0', amount: 2000 }, T0 + 3004);
    assert.deepEqual(s.shard.runBatch(f.batch()).outs, ['1', '1', '1', null]);
    job.step(Number.POSITIVE_INFINITY);
    await s.store.writeJob(job, s.state, new DedupeLog());
    const compare = (st: ShardState, what: string): void => {
      const naive = f.naive();
      const now = Date.now();
      for (const u of users) {
        assert.equal(readText(st, 'Users', u, null, now), readText(naive, 'Users', u, null, now), `${what}: Users ${u}`);
        for (const m of ['m0', 'm1']) assert.equal(readText(st, 'Pairs', JSON.stringify([u, m]), null, now), readText(naive, 'Pairs', JSON.stringify([u, m]), null, now), `${what}: Pairs ${u} ${m}`);
      }
    };
    compare(s.state, 'live');
    assert.deepEqual(JSON.parse(readText(s.state, 'Users', notYet, null, Date.now())), { n: 1, total: 2000 });
    s.close();
    s = openStored(dir);
    assert.equal(s.store.snapshotStats.lastSuccessMs > 0, true);
    compare(s.state, 'restored from the fuzzy snapshot, the forgets and pushes after it replayed');
    s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the snapshot after a forget is the only one kept and the WAL before it goes: no file of the shard holds the key; a restart lacks it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-forget-scrub-'));
  try {
    const shardDir = join(dir, 'shard-0');
    const snaps = join(shardDir, 'snapshots');
    let s = openStored(dir);
    const f = new Feeder();
    const round = (from: number): void => {
      for (let i = 0; i < 50; i++) f.push({ user: USER_KEYS[i % USER_KEYS.length], merchant: MERCHANTS[i % 3], amount: from + i }, T0 + from + i);
      f.push({ user: 'erase-me', merchant: 'm0', amount: from }, T0 + from + 50);
      assert.equal(s.shard.runBatch(f.batch()).walError, null);
    };
    round(0);
    s.store.snapshotNow(s.state, new DedupeLog());
    round(100);
    s.store.snapshotNow(s.state, new DedupeLog());
    round(200);
    assert.equal(readdirSync(snaps).length, 2, 'two snapshots kept, as usual');
    assert.ok(filesHolding(join(shardDir, 'wal'), 'erase-me').length > 0, 'the pushes of the entity are in the WAL');
    f.forget({ tables: '*', key: 'erase-me' }, T0 + 300);
    f.forget({ table: 'Pairs', key: ['erase-me', 'm0'] }, T0 + 301);
    assert.deepEqual(s.shard.runBatch(f.batch()).outs, ['1', '1']);
    // The periodic snapshot (a job between batches) after the forget.
    f.items.push({ k: ITEM_SNAPSHOT, sync: false });
    assert.equal(s.shard.runBatch(f.batch()).walError ?? null, null);
    const name = `${String(f.lsn).padStart(20, '0')}.snap`;
    await until('the snapshot after the forget replaced the older ones', () => (readdirSync(snaps).join() === name ? true : undefined));
    await until('the WAL segments before it are gone', () => (filesHolding(join(shardDir, 'wal'), 'erase-me').length === 0 ? true : undefined));
    assert.ok(!readNewestSnapshot(snaps)!.body.includes(Buffer.from('erase-me')), 'the snapshot does not hold it');
    assert.deepEqual(filesHolding(shardDir, 'erase-me'), [], 'no file of the shard holds the key');
    assertSameRows(s.state, f.naive(), 'live');
    s.close();
    s = openStored(dir, f);
    assert.equal(readText(s.state, 'Users', 'erase-me', null, Date.now()), '{}');
    assertSameRows(s.state, f.naive(), 'after a restart');
    // Later snapshots keep two again.
    round(400);
    s.store.snapshotNow(s.state, new DedupeLog());
    assert.equal(readdirSync(snaps).length, 2);
    s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
