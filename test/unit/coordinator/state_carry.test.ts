/**
 * State kept vs reset across registry versions (shard/state/state.ts install), as a
 * seeded property test against a naive reference:
 *
 *   A random walk of registry changes (each registered with coordinator/register.ts
 *   and installed on 1 or 4 ShardStates, like the front does) interleaved with
 *   pushes. The reference keeps the raw event list and, per table and per feature,
 *   the index of the first event it must still reflect (its "epoch"), decided by
 *   the rules of docs/registry.md, written independently of the signatures:
 *     new feature / op, param, where or window change     -> that feature restarts
 *     key change, chain change on the path                 -> the whole table restarts
 *     type change of a column a feature reads              -> that feature restarts
 *     type change of a key column                          -> the whole table restarts
 *     new field, rename of the table or of any node upstream, re-register, respelling,
 *     optional_fields / dedupe settings                    -> nothing
 *   Expected row = a fresh op state fed with exactly the events since the epoch.
 *
 * Then the same history is replayed like a restart does (WAL records replayed under
 * the version each was validated with, no renames passed; and once from a snapshot
 * taken midway): every row must equal the live one.
 */
import { pushRow, readText } from '../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { columnState } from '../ops/column_state';
import { register } from '../../../src/coordinator/register';
import { compileRegistry } from '../../../src/registry/compile';
import { shardOf } from '../../../src/registry/key';
import type { RegistryState } from '../../../src/registry/model';
import { ShardState } from '../../../src/shard/state/state';
import { restoreSnapshot, SnapshotJob } from '../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../src/shard/state/dedupe_log';

function snapshotBody(s: ShardState): Buffer {
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  return job.finish(new DedupeLog()).body;
}
import type { Row } from '../../../src/types';
import { Prng } from '../sketch/prng';

type Obj = Record<string, unknown>;
interface Feat { op: string; params: Obj }
interface TableModel { name: string; source: 'event' | 'derived'; key: string; feats: Map<string, Feat> }
interface Model {
  event: string;
  nType: 'i64' | 'f64';
  extra: string[];
  derived: string;
  threshold: number;
  tables: TableModel[];
}
interface Ev { row: Row; t: number }
type WalRec = { k: 'event'; v: number; lsn: number; ev: Ev; name: string } | { k: 'install'; v: number; lsn: number };

const USERS = ['u0', 'u1', 'u2', 'u3', 'u4'];
const CARDS = ['c0', 'c1', 'c2'];
const T0 = 1_700_000_000_000;
const OPTS = { memoryGovEnforce: true, pushValidators: false };

function nodesOf(m: Model): Obj[] {
  const fields: Record<string, string> = { user: 'str', card: 'str', amount: 'f64', n: m.nType };
  for (const x of m.extra) fields[x] = 'str';
  const nodes: Obj[] = [
    { kind: 'event', name: m.event, schema: { fields, optional_fields: ['n', ...m.extra] } },
    { kind: 'derivation', name: m.derived, output_kind: 'event', upstreams: [m.event], ops: [{ op: 'filter', expr: `amount > ${m.threshold}` }] },
  ];
  for (const t of m.tables) {
    nodes.push({ kind: 'table', name: t.name, upstreams: [t.source === 'event' ? m.event : m.derived], key: [t.key], agg: Object.fromEntries(t.feats) });
  }
  return nodes;
}

function reads(f: Feat): string[] {
  const out: string[] = [];
  if (typeof f.params.field === 'string') out.push(f.params.field);
  if (typeof f.params.where === 'string' && /\bn\b/.test(f.params.where)) out.push('n');
  if (typeof f.params.where === 'string' && /\bamount\b/.test(f.params.where)) out.push('amount');
  return out;
}

function randomFeat(rng: Prng): Feat {
  const window = ['1h', '2h', '3h'][rng.int(3)];
  const where = [undefined, undefined, 'amount > 30', 'n > 2'][rng.int(4)];
  const field = ['amount', 'n'][rng.int(2)];
  const base: Feat[] = [
    { op: 'count', params: { window } },
    { op: 'sum', params: { field, window } },
    { op: 'max', params: { field, window } },
    { op: 'mean', params: { field, window } },
  ];
  const f = base[rng.int(base.length)];
  if (where !== undefined) f.params.where = where;
  return f;
}

class World {
  model: Model;
  state: RegistryState = { version: 0, nodes: [] };
  readonly shards: ShardState[];
  readonly events: Ev[] = [];
  readonly wal: WalRec[] = [];
  readonly history = new Map<number, RegistryState>();
  /** Reference: table name -> first event index it reflects; table -> feature -> first index. */
  tableEpoch = new Map<string, number>();
  featEpoch = new Map<string, Map<string, number>>();
  lsn = 0;
  seq = 0;
  compiled: ReturnType<typeof compileRegistry> | null = null;

  constructor(readonly rng: Prng, readonly shardCount: number) {
    this.shards = Array.from({ length: shardCount }, (_, i) => new ShardState({ shardId: i, shardCount, memoryGovEnforce: true }));
    this.model = {
      event: 'Txn', nType: 'i64', extra: [], derived: 'Big', threshold: 40,
      tables: [
        { name: 'T', source: 'event', key: 'user', feats: new Map([['a', { op: 'count', params: { window: '1h' } }], ['b', { op: 'sum', params: { field: 'amount', window: '1h' } }]]) },
        { name: 'D', source: 'derived', key: 'card', feats: new Map([['c', { op: 'count', params: {} }], ['m', { op: 'max', params: { field: 'n', window: '1h' } }]]) },
      ],
    };
    this.apply(nodesOf(this.model), []);
    for (const t of this.model.tables) this.resetTable(t);
  }

  get now(): number {
    return this.events.length;
  }

  resetTable(t: TableModel): void {
    this.tableEpoch.set(t.name, this.now);
    this.featEpoch.set(t.name, new Map([...t.feats.keys()].map((f) => [f, this.now])));
  }

  /** Registers the nodes with force, installs on every shard with the register's renames (as the front does). */
  apply(nodes: Obj[], extra: Obj[]): void {
    const out = register(this.state, { nodes: [...nodes, ...extra], force: true }, { memoryGovEnforce: true });
    assert.ok(out.next !== null);
    this.state = out.next;
    this.history.set(this.state.version, this.state);
    const lsn = ++this.lsn;
    this.wal.push({ k: 'install', v: this.state.version, lsn });
    for (const s of this.shards) {
      s.install(this.state, out.renames);
      s.appliedLsn = lsn;
    }
  }

  push(): void {
    const row: Row = { user: USERS[this.rng.int(USERS.length)], card: CARDS[this.rng.int(CARDS.length)], amount: this.rng.int(100) };
    if (this.rng.int(3) > 0) row.n = this.rng.int(6);
    const ev: Ev = { row, t: T0 + this.events.length * 7 };
    this.events.push(ev);
    const lsn = ++this.lsn;
    this.wal.push({ k: 'event', v: this.state.version, lsn, ev, name: this.model.event });
    for (const s of this.shards) pushRow(s, this.model.event, row, ev.t, lsn);
  }

  /** One random registry change; updates the reference epochs by the documented rules. */
  mutate(): string {
    const m = this.model;
    const t = m.tables[this.rng.int(m.tables.length)];
    const names = [...t.feats.keys()];
    const pick = names[this.rng.int(names.length)];
    const choice = this.rng.int(13);
    let what = '';
    switch (choice) {
      case 0: {
        const name = `f${++this.seq}`;
        t.feats.set(name, randomFeat(this.rng));
        this.featEpoch.get(t.name)!.set(name, this.now);
        what = `new_agg ${t.name}.${name}`;
        break;
      }
      case 1:
        if (names.length > 1) { t.feats.delete(pick); this.featEpoch.get(t.name)!.delete(pick); }
        what = `agg_removal ${t.name}.${pick}`;
        break;
      case 2: {
        const f = t.feats.get(pick)!;
        const w = f.params.window === '1h' || f.params.window === '60m' ? '2h' : '1h';
        t.feats.set(pick, { op: f.op, params: { ...f.params, window: w } });
        this.featEpoch.get(t.name)!.set(pick, this.now);
        what = `window_change ${t.name}.${pick}`;
        break;
      }
      case 3: {
        const f = randomFeat(this.rng);
        const spelled = (x: Feat): string => JSON.stringify(x).replace('"60m"', '"1h"');
        const old = spelled(t.feats.get(pick)!);
        t.feats.set(pick, f);
        if (spelled(f) !== old) this.featEpoch.get(t.name)!.set(pick, this.now);
        what = `op change ${t.name}.${pick}`;
        break;
      }
      case 4:
        t.key = t.key === 'user' ? 'card' : 'user';
        this.resetTable(t);
        what = `key_cols_change ${t.name}`;
        break;
      case 5:
        m.extra.push(`x${++this.seq}`);
        what = 'new_field';
        break;
      case 6: {
        m.nType = m.nType === 'i64' ? 'f64' : 'i64';
        for (const tm of m.tables) for (const [fn, f] of tm.feats) if (reads(f).includes('n')) this.featEpoch.get(tm.name)!.set(fn, this.now);
        what = `type_change n -> ${m.nType}`;
        break;
      }
      case 7: {
        const old = t.name;
        t.name = `${old.replace(/_\d+$/, '')}_${++this.seq}`;
        this.tableEpoch.set(t.name, this.tableEpoch.get(old)!);
        this.featEpoch.set(t.name, this.featEpoch.get(old)!);
        this.apply(nodesOf(m).map((n) => (n.name === t.name ? { ...n, renamed_from: old } : n)), []);
        return `rename ${old} -> ${t.name}`;
      }
      case 8: {
        const old = m.event;
        m.event = `Txn_${++this.seq}`;
        this.apply(nodesOf(m).map((n) => (n.name === m.event ? { ...n, renamed_from: old } : n)), []);
        return `rename event ${old} -> ${m.event}`;
      }
      case 11: {
        const old = m.derived;
        m.derived = `Big_${++this.seq}`;
        this.apply(nodesOf(m).map((n) => (n.name === m.derived ? { ...n, renamed_from: old } : n)), []);
        return `rename derived ${old} -> ${m.derived}`;
      }
      case 12:
        // Settings no state depends on: n required <-> optional (no diff item, no force needed).
        const settings = nodesOf(m).map((n) => (n.kind === 'event' ? { ...n, schema: { fields: (n.schema as Obj).fields, optional_fields: [...m.extra] }, dedupe_key: 'card', dedupe_window: '1m' } : n));
        const dry = register(this.state, { nodes: settings, dry_run: true }, { memoryGovEnforce: true });
        assert.deepEqual(dry.body.diff, { additive: [], destructive: [] }, 'settings changes are no diff item');
        this.apply(settings, []);
        this.apply(nodesOf(m), []);
        return 'settings';
      case 9:
        m.threshold = m.threshold === 40 ? 60 : 40;
        for (const tm of m.tables) if (tm.source === 'derived') this.resetTable(tm);
        what = 'chain change';
        break;
      case 10: {
        // Same meaning, other spelling: 1h as 60m; kept.
        const f = t.feats.get(pick)!;
        if (f.params.window === '1h') t.feats.set(pick, { op: f.op, params: { ...f.params, window: '60m' } });
        else if (f.params.window === '60m') t.feats.set(pick, { op: f.op, params: { ...f.params, window: '1h' } });
        what = 'respelling';
        break;
      }
      default:
        what = 're-register';
    }
    this.apply(nodesOf(m), []);
    return what;
  }

  /** The reference row: fresh states fed with exactly the events since each epoch. */
  expected(table: TableModel, key: string): Obj {
    if (this.compiled === null || this.compiled.version !== this.state.version) this.compiled = compileRegistry(this.state, OPTS);
    const reg = this.compiled;
    const plan = reg.tables.get(table.name)!;
    const ev = reg.events.get(this.model.event)!;
    const fi = ev.feeds.findIndex((f) => f.table.name === table.name);
    const feed = ev.feeds[fi];
    const from = this.tableEpoch.get(table.name)!;
    const hits: Array<{ r: Row; t: number; i: number }> = [];
    for (let i = from; i < this.events.length; i++) {
      const r = ev.feedRows(this.events[i].row)[fi];
      if (r !== null && feed.key(r) === key) hits.push({ r, t: this.events[i].t, i });
    }
    if (hits.length === 0) return {};
    const out: Obj = {};
    for (const f of plan.features) {
      const st = columnState(f.factory);
      const since = this.featEpoch.get(table.name)!.get(f.name)!;
      for (const h of hits) {
        if (h.i < since) continue;
        const x = f.get === null ? undefined : f.get(h.r);
        if (f.where === null || f.where(h.r)) st.update(x, h.t, h.r);
        else if (f.factory.wantsMiss) st.miss(h.t);
      }
      out[f.name] = st.read(this.readTime());
    }
    return out;
  }

  readTime(): number {
    return T0 + this.events.length * 7;
  }

  row(shards: ShardState[], table: string, key: string): Obj {
    const s = shards[shardOf(key, shards.length)];
    return JSON.parse(readText(s, table, key, null, this.readTime())) as Obj;
  }

  keysOf(t: TableModel): string[] {
    return t.key === 'user' ? USERS : CARDS;
  }
}

/** Replays the WAL records with lsn > `after` into `shards`, the way shard/persist/store.ts does after a restart. */
function replay(shards: ShardState[], w: World, after: number): void {
  for (const r of w.wal) {
    if (r.lsn <= after) continue;
    for (const s of shards) {
      if (r.k === 'install') s.install(w.history.get(r.v)!);
      else {
        if (r.v !== s.registryVersion) s.install(w.history.get(r.v)!);
        pushRow(s, r.name, r.ev.row, r.ev.t, r.lsn);
      }
    }
  }
}

function fresh(n: number): ShardState[] {
  return Array.from({ length: n }, (_, i) => new ShardState({ shardId: i, shardCount: n, memoryGovEnforce: true }));
}

for (const shardCount of [1, 4]) {
  test(`state kept vs reset per aggregation: random walks against a reference, ${shardCount} shard(s), and replay after restart`, () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rng = new Prng(seed * 7919 + shardCount);
      const w = new World(rng, shardCount);
      const trail: string[] = [];
      let snap: { images: Buffer[]; lsn: number; version: number } | null = null;
      for (let step = 0; step < 30; step++) {
        const pushes = 3 + rng.int(12);
        for (let i = 0; i < pushes; i++) w.push();
        trail.push(w.mutate());
        if (step === 14) snap = { images: w.shards.map((s) => snapshotBody(s)), lsn: w.lsn, version: w.state.version };
        for (const t of w.model.tables) {
          for (const key of w.keysOf(t)) {
            assert.deepEqual(w.row(w.shards, t.name, key), w.expected(t, key),
              `seed ${seed}, step ${step}, table ${t.name}, key ${key}; changes: ${trail.join('; ')}`);
          }
        }
      }
      // Restart without a snapshot: the whole WAL replays under the recorded versions.
      const replayed = fresh(shardCount);
      replay(replayed, w, 0);
      // Restart from the midway snapshot, then the WAL after it.
      const restored = fresh(shardCount);
      restored.forEach((s, i) => restoreSnapshot(s, snap!.images[i], (v) => w.history.get(v)));
      replay(restored, w, snap!.lsn);
      for (const t of w.model.tables) {
        for (const key of w.keysOf(t)) {
          const live = w.row(w.shards, t.name, key);
          assert.deepEqual(w.row(replayed, t.name, key), live, `seed ${seed}: WAL replay of ${t.name}/${key}; changes: ${trail.join('; ')}`);
          assert.deepEqual(w.row(restored, t.name, key), live, `seed ${seed}: snapshot + WAL of ${t.name}/${key}; changes: ${trail.join('; ')}`);
        }
      }
    }
  });
}

test('type change of a key column restarts the whole table; of an unread column, nothing', () => {
  const ev = (card: string, n: string): Obj => ({ kind: 'event', name: 'E', schema: { fields: { user: 'str', card, n }, optional_fields: ['n'] } });
  const tbl = { kind: 'table', name: 'K', upstreams: ['E'], key: ['card'], agg: { c: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'n', window: '1h' } } } };
  const s = fresh(1)[0];
  let st = register({ version: 0, nodes: [] }, { nodes: [ev('str', 'i64'), tbl] }, { memoryGovEnforce: true }).next!;
  s.install(st);
  pushRow(s, 'E', { user: 'a', card: '7', n: 2 }, T0, 1);
  const now = T0 + 1;
  assert.deepEqual(JSON.parse(readText(s, 'K', '7', null, now)), { c: 1, s: 2 });
  // Retype `user` (not read by K): nothing restarts.
  st = register(st, { nodes: [{ ...ev('str', 'i64'), schema: { fields: { user: 'i64', card: 'str', n: 'i64' }, optional_fields: ['n'] } }], force: true }, { memoryGovEnforce: true }).next!;
  s.install(st);
  assert.deepEqual(JSON.parse(readText(s, 'K', '7', null, now)), { c: 1, s: 2 });
  // Retype `n` (read by s only): s restarts, c keeps.
  st = register(st, { nodes: [{ ...ev('str', 'f64'), schema: { fields: { user: 'i64', card: 'str', n: 'f64' }, optional_fields: ['n'] } }], force: true }, { memoryGovEnforce: true }).next!;
  s.install(st);
  assert.deepEqual(JSON.parse(readText(s, 'K', '7', null, now)), { c: 1, s: null }, 'an empty windowed sum reads null');
  // Retype the key column: the whole table restarts.
  st = register(st, { nodes: [{ ...ev('i64', 'f64'), schema: { fields: { user: 'i64', card: 'i64', n: 'f64' }, optional_fields: ['n'] } }], force: true }, { memoryGovEnforce: true }).next!;
  s.install(st);
  assert.deepEqual(JSON.parse(readText(s, 'K', '7', null, now)), {});
});
