/**
 * Columnar entity state: the entity index and its free list, the
 * intern table, slab growth, and the shared rings.
 *
 * Shared-ring correctness is checked against separate computation: every
 * feature in a column of its own (test/unit/ops/column_state.ts: a ring group of
 * that feature alone, the column the op unit property tests check against naive
 * recomputation) fed the same events. A ring holds every event that reached it,
 * whether or not a feature accepts it, so a ring shared by several features and
 * windows goes through exactly the same expiries and evictions as each feature's
 * own, and the answers are identical, bucketed regime included.
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { columnState } from '../../ops/column_state';
import { EntityIndex } from '../../../../src/shard/state/entity_index';
import { InternTable } from '../../../../src/shard/state/intern';
import { ShardState } from '../../../../src/shard/state/state';
import type { OpState } from '../../../../src/ops/op';
import type { RegistryState } from '../../../../src/registry/model';
import type { Row } from '../../../../src/types';
import { prng } from '../../../harness/prng';
import { ENTITY_SLOTS_MIN, RING_GROUP_WINDOWS_MAX } from '../../../../src/limits';

test('entity index: slots are reused from the free list, storage doubles, keys and times follow their slot', () => {
  const ix = new EntityIndex();
  const grown: number[] = [];
  ix.onGrow = (cap) => grown.push(cap);
  const n = ENTITY_SLOTS_MIN * 4 + 3;
  for (let i = 0; i < n; i++) assert.equal(ix.add(`k${i}`, 1000 + i, i + 1), i);
  assert.deepEqual(grown, [ENTITY_SLOTS_MIN * 2, ENTITY_SLOTS_MIN * 4, ENTITY_SLOTS_MIN * 8]);
  assert.equal(ix.capacity, ENTITY_SLOTS_MIN * 8);
  assert.equal(ix.size, n);
  assert.equal(ix.remove('k5'), 5);
  assert.equal(ix.remove('k9'), 9);
  assert.equal(ix.remove('nope'), -1);
  assert.equal(ix.slotOf('k5'), -1);
  assert.equal(ix.size, n - 2);
  assert.equal(ix.lastT[5], 0);
  assert.equal(ix.live(9), false);
  // Last freed first; `high` does not move while free slots exist.
  assert.equal(ix.add('x', 7, 8), 9);
  assert.equal(ix.add('y', 7, 8), 5);
  assert.equal(ix.add('z', 7, 8), n);
  assert.equal(ix.slotOf('y'), 5);
  assert.equal(ix.keyOf(5), 'y');
  assert.equal(ix.lastLsn[5], 8);
  assert.equal(ix.lastT[100], 1100, 'times survive growth');
  assert.equal(ix.liveSlots().length, ix.size);
  // A programmer error (the shard crashes and recovers): the index is not usable after it.
  assert.throws(() => ix.add('y', 1, 1), /already has a slot/);
});

test('entity index: a key loaded twice (restore) gets a new slot and hands back the old one', () => {
  const ix = new EntityIndex();
  const replaced = new Int32Array(1);
  assert.equal(ix.addReplacing('a', 1, 1, replaced), 0);
  assert.equal(replaced[0], -1);
  assert.equal(ix.addReplacing('b', 1, 2, replaced), 1);
  assert.equal(ix.addReplacing('a', 5, 9, replaced), 2);
  assert.equal(replaced[0], 0, 'the older copy');
  ix.releaseSlot(0);
  assert.equal(ix.slotOf('a'), 2);
  assert.equal(ix.lastLsn[2], 9);
  assert.equal(ix.size, 2);
  assert.deepEqual(ix.liveSlots(), [1, 2]);
  assert.equal(ix.add('c', 1, 1), 0, 'the released slot is reused');
});

test('intern table: reference counted, ids reused once a value is gone, save and load keep ids', () => {
  const t = new InternTable();
  const a = t.ref('a');
  const b = t.ref('b');
  assert.equal(t.ref('a'), a);
  const yes = t.ref(true);
  assert.notEqual(t.ref('true'), yes, 'a boolean and its spelling are different values');
  assert.equal(t.size, 4);
  t.unref(a);
  assert.equal(t.value(a), 'a', 'one reference left');
  t.unref(a);
  assert.equal(t.size, 3);
  assert.equal(t.value(a), undefined);
  assert.equal(t.ref('c'), a, 'a freed id is reused');
  assert.throws(() => { t.unref(b); t.unref(b); }, /released more often/);
  const saved = t.save();
  const u = new InternTable();
  u.load(saved);
  assert.equal(u.value(a), 'c');
  assert.equal(u.value(yes), true);
  assert.equal(u.ref('c'), a);
  assert.equal(u.size, t.size);
});

test('intern table: ASCII bytes find the same id as the string (short values in the slot, long ones past the prefix), a held lookup goes with its last reference, grows and shrinks', () => {
  const t = new InternTable();
  const buf = Buffer.from('xxmerchant-7yy\u0000', 'latin1');
  const m = t.ref('merchant-7');
  assert.equal(t.idOfAscii(buf, 2, 12), m, 'the bytes of a held value find its id');
  assert.equal(t.values[m], 'merchant-7');
  assert.notEqual(t.idOfAscii(buf, 2, 11), m, 'a prefix of a value is another value');
  t.refId(t.idOfAscii(buf, 2, 11));
  const n = t.idOfAscii(buf, 2, 6);
  t.refId(n);
  assert.equal(t.values[n], 'merc', 'a new value is added by its bytes');
  assert.equal(t.ref('merc'), n, 'the string finds the id the bytes added');
  t.unref(n);
  const o = t.idOfAscii(buf, 0, 2);
  t.refId(o);
  t.unref(o);
  assert.equal(t.values[o], undefined, 'a lookup no cell took a reference of goes with the hold');
  const z = t.idOfAscii(buf, 13, 15);
  t.refId(z);
  assert.equal(t.ref('y\u0000'), z, 'a NUL byte counts: the length is part of the slot');
  assert.notEqual(t.ref('y'), z);
  assert.equal(t.ref('\u00e9t\u00e9'), t.ref('\u00e9t\u00e9'), 'a non-ASCII string is found by the string path');
  assert.equal(t.value(n), 'merc');
  // Many values: the table grows, every one stays findable by string and bytes; removing them shrinks it back.
  const ids: number[] = [];
  for (let i = 0; i < 5000; i++) ids.push(t.ref(`v${i}`));
  for (let i = 0; i < 5000; i += 7) {
    const b = Buffer.from(`v${i}`, 'latin1');
    assert.equal(t.idOfAscii(b, 0, b.length), ids[i]);
  }
  for (let i = 0; i < 5000; i += 2) t.unref(ids[i]);
  for (let i = 1; i < 5000; i += 2) assert.equal(t.ref(`v${i}`), ids[i], 'backward-shift deletion keeps every other value findable');
  for (let i = 1; i < 5000; i += 2) { t.unref(ids[i]); t.unref(ids[i]); }
  assert.equal(t.size, 6);
  assert.equal(t.ref('merchant-7'), m);
  assert.equal(t.ref(false), t.ref(false));
  assert.notEqual(t.ref(false), t.ref('false'));
});

test('intern tables share the strings they make from bytes lately, and a shared slot never answers another value', () => {
  const a = new InternTable();
  const b = new InternTable();
  // 3 x 4,000 values through two tables: more than the recent strings hold, so slots are reused by other values.
  for (let i = 0; i < 12_000; i++) {
    const s = `k${i % 4000}-${Math.floor(i / 4000)}`;
    const buf = Buffer.from(`..${s}`, 'latin1');
    const x = a.idOfAscii(buf, 2, buf.length);
    a.refId(x);
    const y = b.idOfAscii(buf, 2, buf.length);
    b.refId(y);
    assert.equal(a.values[x], s);
    assert.equal(b.values[y], s);
    assert.equal(a.ref(s), x, 'the string finds the id its bytes added');
    a.unref(x);
  }
  assert.equal(a.size, 12_000);
  assert.equal(b.size, 12_000);
  const x = a.idOfAscii(Buffer.from('k1-1', 'latin1'), 0, 4);
  assert.equal(a.values[x], 'k1-1');
});

const W = '10s';
const SHARED_AGG = {
  n: { op: 'count', params: { window: W } },
  nx: { op: 'count', params: { field: 'x', window: W } },
  s: { op: 'sum', params: { field: 'x', window: W } },
  avg: { op: 'mean', params: { field: 'x', window: W } },
  lo: { op: 'min', params: { field: 'x', window: W } },
  hi: { op: 'max', params: { field: 'x', window: W } },
  v: { op: 'var', params: { field: 'x', window: W } },
  sd: { op: 'std', params: { field: 'x', window: W } },
  z: { op: 'z_score', params: { field: 'x', window: W } },
  vel: { op: 'velocity', params: { field: 'x', window: W } },
  rate: { op: 'rate', params: { window: W } },
  q: { op: 'quantile', params: { field: 'x', q: 0.9, window: W } },
  nu: { op: 'n_unique', params: { field: 'c', window: W } },
  top: { op: 'top_k', params: { field: 'c', k: 2, window: W } },
  ent: { op: 'entropy', params: { field: 'c', window: W } },
  smax: { op: 'max', params: { field: 'c', window: W } },
  lastc: { op: 'last_n', params: { field: 'c', n: 3, window: W } },
  trend: { op: 'trend', params: { field: 'x', window: W } },
  gaps: { op: 'inter_arrival_stats', params: { window: W } },
  ratio: { op: 'ratio', params: { where: 'x > 50', window: W } },
  big: { op: 'count', params: { where: 'x > 50', window: W } },
  life: { op: 'sum', params: { field: 'x', window: 'forever' } },
  n1m: { op: 'count', params: { window: '1m' } },
  // Lifetime point ops: kept values as cells (kept_column.ts), strings interned.
  firstc: { op: 'first', params: { field: 'c' } },
  lastx: { op: 'last', params: { field: 'x' } },
  firstn: { op: 'first_n', params: { field: 'c', n: 3 } },
  lastn: { op: 'last_n', params: { field: 'c', n: 4 } },
  recent: { op: 'most_recent_n', params: { field: 'x', n: 2 } },
  lagx: { op: 'lag', params: { field: 'x', n: 2 } },
  lagc: { op: 'lag', params: { field: 'c', n: 1 } },
};

/** Windowed features over four windows: one ring per entity, each window reading its own suffix of it. */
const MULTI_AGG = {
  n1s: { op: 'count', params: { window: '1s' } },
  n10: { op: 'count', params: { window: '10s' } },
  s1s: { op: 'sum', params: { field: 'x', window: '1s' } },
  s10: { op: 'sum', params: { field: 'x', window: '10s' } },
  s1m: { op: 'sum', params: { field: 'x', window: '1m' } },
  mx1s: { op: 'max', params: { field: 'x', window: '1s' } },
  sd1m: { op: 'std', params: { field: 'x', window: '1m' } },
  q10: { op: 'quantile', params: { field: 'x', q: 0.5, window: '10s' } },
  q5m: { op: 'quantile', params: { field: 'x', q: 0.9, window: '5m' } },
  nu1s: { op: 'n_unique', params: { field: 'c', window: '1s' } },
  nu1m: { op: 'n_unique', params: { field: 'c', window: '1m' } },
  top5m: { op: 'top_k', params: { field: 'c', k: 2, window: '5m' } },
  last10: { op: 'last_n', params: { field: 'c', n: 3, window: '10s' } },
  gaps1m: { op: 'inter_arrival_stats', params: { window: '1m' } },
  rate1s: { op: 'rate', params: { window: '1s' } },
  big10: { op: 'count', params: { where: 'x > 50', window: '10s' } },
};

function registry(optional: string[], agg: Record<string, unknown> = SHARED_AGG): RegistryState {
  return {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64', c: 'str' }, optional_fields: optional } },
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg } as RegistryState['nodes'][number],
    ],
  };
}

/** Feeds the same events to a ShardState and to one standalone OpState per feature and entity; compares reads. */
function compareWithSeparate(seed: number, reg: RegistryState, keys: number, events: number, gapMs: number, absent: number, backMs = 0, gap?: (rnd: () => number) => number, checkAfter: (i: number, gapMs: number) => boolean = (i) => i % 997 === 0): void {
  const rnd = prng(seed);
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  const ts = s.tableByName('T')!;
  assert.ok(ts.cols.groups.length >= 2, 'the windowed features share rings');
  const feats = ts.plan.features;
  const sep = new Map<string, OpState[]>();
  let t = 5_000_000;
  const check = (now: number): void => {
    for (const [k, states] of sep) {
      const want: Record<string, unknown> = {};
      feats.forEach((f, i) => { want[f.name] = states[i].read(now); });
      assert.deepEqual(JSON.parse(readText(s, 'T', k, null, now)), JSON.parse(JSON.stringify(want)), `seed ${seed} key ${k} at ${now}`);
    }
  };
  for (let i = 0; i < events; i++) {
    const dt = gap === undefined ? Math.floor(rnd() * gapMs) : gap(rnd);
    t += dt;
    // Late events (backMs > 0): one in ten is up to backMs older than the one before.
    const te = backMs > 0 && rnd() < 0.1 ? t - Math.floor(rnd() * backMs) : t;
    const k = `k${Math.floor(rnd() * keys)}`;
    const row: Row = { k, x: Math.round(rnd() * 100), c: `c${Math.floor(rnd() * 6)}` };
    if (rnd() < absent) row.x = null;
    if (rnd() < absent) row.c = null;
    pushRow(s, 'E', row, te, i + 1);
    let states = sep.get(k);
    if (states === undefined) sep.set(k, (states = feats.map((f) => columnState(f.factory))));
    feats.forEach((f, j) => {
      const x = f.get === null ? undefined : f.get(row);
      if (f.where === null || f.where(row)) states![j].update(x, te, row);
      else if (f.factory.wantsMiss) states![j].miss(te);
    });
    if (checkAfter(i, dt)) check(t);
  }
  for (const later of [t, t + 3_000, t + 9_999, t + 10_000, t + 70_000]) check(later);
}

test('shared rings answer exactly as separate states: every field present, bucketed regime', () => {
  // 3 keys, ~5 ms apart: hundreds of events per 10 s window, rings overflow into buckets.
  for (const seed of [1, 2]) compareWithSeparate(seed, registry([]), 3, 6000, 10, 0);
});

test('shared rings answer exactly as separate states when a full ring\'s oldest entry sits exactly at the window\'s cutoff: it expires, it is not evicted into a bucket', () => {
  // One key, pushes window / RING_ENTRIES_MAX (64) ms apart on average: once the ring is full, each push
  // finds its oldest entry at exactly t - window (outside: a window holds now - t < window). Server times
  // are whole ms, so the gaps repeat 156, 156, 156, 157 (10 s window) and 937, 938 (60 s): any 64 of them
  // in a row add up to the window exactly.
  for (const [windowMs, pattern] of [[10_000, [156, 156, 156, 157]], [60_000, [937, 938]]] as const) {
    assert.equal(pattern.reduce((a, b) => a + b, 0) * (64 / pattern.length), windowMs);
    let i = 0;
    compareWithSeparate(13, registry([]), 1, 400, 0, 0, 0, () => pattern[i++ % pattern.length], () => true);
  }
});

test('shared rings answer exactly as separate states: absent values, exact regime, slab growth', () => {
  // 3000 keys (index and pools grow many times), a few events per key and window.
  compareWithSeparate(3, registry(['x', 'c']), 3000, 12_000, 4, 0.3);
});

test('shared rings answer exactly as separate states when every value feature of a ring reads the events\' times (twa, trend, inter_arrival_stats, value_change_count) over two windows, bucketed regime', () => {
  // An entry leaving the shorter window joins its buckets with the entry's time only when a value
  // member of the ring reads it (#valTimed); every ring tested above also held time-blind sketches.
  const TIMED_AGG = {
    n: { op: 'count', params: { window: '1s' } },
    twa1: { op: 'twa', params: { field: 'x', window: '1s' } },
    twa10: { op: 'twa', params: { field: 'x', window: W } },
    trend1: { op: 'trend', params: { field: 'x', window: '1s' } },
    res10: { op: 'trend_residual', params: { field: 'x', window: W } },
    gaps1: { op: 'inter_arrival_stats', params: { window: '1s' } },
    moves10: { op: 'value_change_count', params: { field: 'c', window: W } },
    big: { op: 'count', params: { where: 'x > 50', window: W } },
  };
  compareWithSeparate(12, registry([], TIMED_AGG), 3, 6000, 10, 0);
});

test('one ring per entity over four windows answers exactly as separate states: exact and bucketed regimes, late events', () => {
  const reg = registry(['x', 'c'], MULTI_AGG);
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  const spans = s.tableByName('T')!.cols.groups.map((g) => g.windows);
  assert.deepEqual(spans, [[10_000], [1_000, 10_000, 60_000, 300_000]], 'every window shares one ring; the `where` feature has its own');
  // 2 keys ~20 ms apart: hundreds of events per minute, rings full, evictions into every window's buckets.
  compareWithSeparate(4, reg, 2, 6000, 40, 0);
  // 500 keys: a few events per key and window (the exact regime), shorter windows skipping entries the longer ones still read.
  compareWithSeparate(5, reg, 500, 8000, 60, 0.2);
  // Events up to 20 s late.
  compareWithSeparate(6, reg, 3, 5000, 50, 0, 20_000);
});

test('deferred evictions (ring_group.ts) fold as eviction did: bursts that fill the ring, pauses that expire the shorter windows, reads far apart', () => {
  const reg = registry([], MULTI_AGG);
  // Bursts ~2 ms apart fill a ring within every window, so its evictions are deferred; pauses
  // of 0.3-2 s move the 1 s window past deferred entries (a ring entry joins its buckets after
  // them), and now and then a pause past every window drops the ring. A read folds the deferred
  // entries, so reads come only after a pause (right after such a join) and every 61st push.
  const gap = (rnd: () => number): number => {
    const r = rnd();
    return r < 0.97 ? Math.floor(rnd() * 4) : r < 0.998 ? 300 + Math.floor(rnd() * 1_700) : 301_000;
  };
  const checkAfter = (i: number, dt: number): boolean => dt >= 300 || i % 61 === 0;
  for (const seed of [7, 8]) compareWithSeparate(seed, reg, 2, 6000, 0, 0, 0, gap, checkAfter);
  // Late events by up to 3 s: the newest ring entry is not always the latest.
  compareWithSeparate(9, reg, 2, 6000, 0, 0, 3_000, gap, checkAfter);
  // The case above made exact (1 s window: 8 ms buckets; t starts at a multiple of 8): events
  // 0..68 2 ms apart, so 64..68 defer the evictions of 0..4 (0 ms..8 ms) with no buckets yet;
  // event 69 comes when the 1 s window has left event 5 (10 ms), which joins the bucket of
  // event 4 (same 8 ms epoch) only once the deferred entries are folded.
  let n = 0;
  const scripted = (): number => (n++ === 0 ? 0 : n <= 69 ? 2 : 1011 - 136);
  compareWithSeparate(10, reg, 1, 70, 0, 0, 0, scripted, (i) => i === 69);
});

test('an entity emptyAt calls empty reads as a fresh one, shared ring or standalone state: a late event as the newest, a burst in one millisecond', () => {
  const reg = registry([], MULTI_AGG);
  // Times to ask at: around every event's window ends and bucket ends, and far past them.
  const probes = (ts: number[]): number[] => {
    const out = new Set<number>();
    for (const t of ts) for (const w of [1_000, 10_000, 60_000, 300_000]) for (const d of [-1, 0, 1, 8, 79, 2_400]) out.add(t + w + d);
    return [...out].sort((a, b) => a - b);
  };
  const FAR = 1e12;
  const histories: Array<[string, Array<[number, number]>]> = [
    // The newest arrival is 40 s late: the earlier event keeps every window that holds it open.
    ['late newest', [[100_000, 1], [60_000, 2]]],
    // 128 events at one time: 64 in the ring, 64 deferred evictions (no buckets yet), which
    // read through buckets that end after the ring entries have left.
    ['burst', Array.from({ length: 128 }, (_, i): [number, number] => [200_000, i])],
    // 64 events, then 64 that are 100 s late: the ring holds only late ones and defers the
    // first 64, the latest, which keep the 5 m window open after every ring entry has left it.
    ['burst, late burst', Array.from({ length: 128 }, (_, i): [number, number] => [i < 64 ? 300_000 + i : 200_000 + i, i])],
  ];
  for (const [name, evs] of histories) {
    // A new state per probe: a read folds the deferred evictions, so emptyAt is asked first.
    const build = (): { s: ShardState; table: NonNullable<ReturnType<ShardState['tableByName']>>; solo: OpState[] } => {
      const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
      s.install(reg);
      const feats = s.tableByName('T')!.plan.features;
      const solo = feats.map((f) => columnState(f.factory));
      evs.forEach(([t, x], i) => {
        const row: Row = { k: 'a', x, c: `c${x % 5}` };
        pushRow(s, 'E', row, t, i + 1);
        feats.forEach((f, j) => { if (f.where === null || f.where(row)) solo[j].update(f.get === null ? undefined : f.get(row), t, row); });
      });
      return { s, table: s.tableByName('T')!, solo };
    };
    let empties = 0;
    let nonEmpty = 0;
    for (const t of [...probes(evs.map(([te]) => te)), FAR / 2]) {
      const { s, table, solo } = build();
      const empty = table.cols.emptyAt(table.cols.index.slotOf('a'), t);
      const now = readText(s, 'T', 'a', null, t);
      const fresh = readText(s, 'T', 'a', null, FAR);
      // Empty from t on: it reads as at the end of time, and a push at t makes what it makes of a new key.
      const row: Row = { k: 'a', x: 3, c: 'c3' };
      if (empty) {
        empties++;
        assert.equal(now, fresh, `${name}: emptyAt(${t}), the table reads as at the end of time`);
        pushRow(s, 'E', row, t, evs.length + 1);
        pushRow(s, 'E', { ...row, k: 'new' }, t, evs.length + 2);
        assert.equal(readText(s, 'T', 'a', null, t), readText(s, 'T', 'new', null, t), `${name}: emptyAt(${t}), then a push`);
      } else if (now !== fresh) nonEmpty++;
      table.plan.features.forEach((f, j) => {
        const st = solo[j];
        if (st.emptyAt === undefined || !st.emptyAt(t)) return;
        assert.deepEqual(st.read(t), st.read(FAR), `${name}: ${f.name} standalone emptyAt(${t})`);
        const x = f.get === null ? undefined : f.get(row);
        const fresh1 = columnState(f.factory);
        st.update(x, t, row);
        fresh1.update(x, t, row);
        assert.deepEqual(st.read(t), fresh1.read(t), `${name}: ${f.name} standalone emptyAt(${t}), then a push`);
      });
    }
    assert.ok(empties > 0 && nonEmpty > 0, `${name}: probes on both sides (${empties} empty, ${nonEmpty} not)`);
  }
  // The first history at 105 s: 100 s is in the 10 s window, the late 60 s follows it in the view.
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  pushRow(s, 'E', { k: 'a', x: 1, c: 'c' }, 100_000, 1);
  pushRow(s, 'E', { k: 'a', x: 2, c: 'c' }, 60_000, 2);
  assert.equal(JSON.parse(readText(s, 'T', 'a', ['n10'], 105_000)).n10, 2);
  assert.equal(s.tableByName('T')!.cols.emptyAt(s.tableByName('T')!.cols.index.slotOf('a'), 105_000), false);
});

test('a table with more windows than one ring group spans gets a ring per run of consecutive windows', () => {
  // RING_GROUP_WINDOWS_MAX + 2 distinct windows: 1 s .. 10 s.
  const agg: Record<string, unknown> = {};
  for (let w = 1; w <= RING_GROUP_WINDOWS_MAX + 2; w++) {
    agg[`n${w}`] = { op: 'count', params: { window: `${w}s` } };
    agg[`s${w}`] = { op: 'sum', params: { field: 'x', window: `${w}s` } };
  }
  const reg = registry([], agg);
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  const spans = s.tableByName('T')!.cols.groups.map((g) => g.windows.map((ms) => ms / 1000));
  assert.deepEqual(spans, [Array.from({ length: RING_GROUP_WINDOWS_MAX }, (_, i) => i + 1), [RING_GROUP_WINDOWS_MAX + 1, RING_GROUP_WINDOWS_MAX + 2]]);
  compareWithSeparate(7, reg, 2, 3000, 40, 0);
});

test('string values leave the intern table with the last ring cell that holds them', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([]));
  const ts = s.tableByName('T')!;
  for (let i = 0; i < 200; i++) pushRow(s, 'E', { k: `k${i % 7}`, x: i, c: `v${i}` }, 1000 + i, i + 1);
  const interned = ts.cols.interns.get('c')!;
  assert.ok(interned.size > 64, 'distinct values held by 7 rings');
  // One push per key, a minute later: every older cell expires (10 s and 1 m rings).
  for (let k = 0; k < 7; k++) pushRow(s, 'E', { k: `k${k}`, x: 1, c: 'last' }, 1000 + 200 + 61_000, 300 + k);
  // Interned now: what the rings still hold ('last') and what the lifetime point ops keep.
  const kept = new Set<string>(['last']);
  for (let k = 0; k < 7; k++) {
    const row = JSON.parse(readText(s, 'T', `k${k}`, ['firstc', 'firstn', 'lastn', 'lagc'], 1000 + 200 + 61_000));
    for (const v of [row.firstc, ...row.firstn, ...row.lastn, row.lagc]) if (typeof v === 'string') kept.add(v);
  }
  assert.equal(interned.size, kept.size, 'only the values rings and kept-value columns hold are interned');
  assert.ok(kept.size < 64);
  assert.deepEqual(JSON.parse(readText(s, 'T', 'k3', ['nu', 'lastc'], 1000 + 200 + 61_000)), { nu: 1, lastc: ['last'] });
  // Removing the entities (cold freeze, partition drop) releases every cell.
  for (let k = 0; k < 7; k++) assert.ok(ts.cols.remove(`k${k}`));
  assert.equal(interned.size, 0);
  assert.equal(ts.size, 0);
});

test('a feature added by a registry change starts empty while its window-mates keep their ring', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const v1 = registry([]);
  s.install(v1);
  for (let i = 0; i < 50; i++) pushRow(s, 'E', { k: 'a', x: i, c: 'c' }, 1000 + i, i + 1);
  const table = v1.nodes[1] as { agg: Record<string, unknown> };
  const v2: RegistryState = { version: 2, nodes: [v1.nodes[0], { ...table, agg: { ...table.agg, s2: { op: 'sum', params: { field: 'x', window: W } } } }] };
  s.install(v2);
  const ts = s.tableByName('T')!;
  assert.equal(ts.cols.featGroup[ts.plan.featureIndex.get('s2')!] === ts.cols.featGroup[ts.plan.featureIndex.get('s')!], false, 'not in the old ring');
  pushRow(s, 'E', { k: 'a', x: 7, c: 'c' }, 2000, 51);
  const row = JSON.parse(readText(s, 'T', 'a', ['s', 's2', 'n'], 2000));
  assert.deepEqual(row, { s: 49 * 50 / 2 + 7, s2: 7, n: 51 });
});

test('a registry change that drops kept-value features or a whole ring releases their interned values; the ones still held stay', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const agg = {
    n: { op: 'count', params: {} },
    lastc: { op: 'last', params: { field: 'c' } },
    firstn: { op: 'first_n', params: { field: 'c', n: 3 } },
    lastd: { op: 'last', params: { field: 'd' } },
    // A ring of its own (`where`) holding c values: it goes with its only feature.
    cs: { op: 'n_unique', params: { field: 'c', window: '1h', where: "d != 'zz'" } },
  };
  const v1: RegistryState = {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', c: 'str', d: 'str' }, optional_fields: [] } },
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg } as RegistryState['nodes'][number],
    ],
  };
  s.install(v1);
  for (let i = 0; i < 300; i++) pushRow(s, 'E', { k: `k${i % 40}`, c: `c${i}`, d: `d${i % 7}` }, 1000 + i, i + 1);
  const before = s.tableByName('T')!.cols.interns;
  assert.ok(before.get('c')!.size > 0 && before.get('d')!.size === 7);
  const { lastc: _a, firstn: _b, cs: _c, ...kept } = agg;
  s.install({ version: 2, nodes: [v1.nodes[0], { ...(v1.nodes[1] as object), agg: kept } as RegistryState['nodes'][number]] });
  const ts = s.tableByName('T')!;
  assert.ok(ts.cols.interns.get('c')!.size > 0, 'released after the install, in slices');
  assert.equal(s.releaseDropped(), true);
  assert.equal(ts.cols.interns.get('c')!.size, 0, 'no cell holds a value of c any more');
  assert.equal(ts.cols.interns.get('d')!.size, 7, 'lastd still holds its values');
  assert.deepEqual(JSON.parse(readText(s, 'T', 'k3', null, 2000)), { n: 8, lastd: 'd3' });
});

test('tables of a shard share an intern table per column name; a table that goes gives its references back', () => {
  const event = { kind: 'event', name: 'E', schema: { fields: { k: 'str', u: 'str', m: 'str', x: 'f64' }, optional_fields: [] } };
  // top_k reads m too: the rings intern it (a field only n_unique reads holds hashes, no intern references: tested below).
  const topM = { op: 'top_k', params: { field: 'm', window: '1h', k: 2 } };
  const byUser = { kind: 'table', name: 'U', upstreams: ['E'], key: ['u'], agg: { ms: { op: 'n_unique', params: { field: 'm', window: '1h' } }, tm: topM, lastm: { op: 'last', params: { field: 'm' } } } };
  const byKey = { kind: 'table', name: 'K', upstreams: ['E'], key: ['k'], agg: { ms: { op: 'n_unique', params: { field: 'm', window: '1h' } }, tm: topM, s: { op: 'sum', params: { field: 'x', window: '1h' } } } };
  const sumOnly = { kind: 'table', name: 'X', upstreams: ['E'], key: ['k'], agg: { s: { op: 'sum', params: { field: 'x', window: '1h' } } } };
  const v1 = { version: 1, nodes: [event, byUser, byKey, sumOnly] } as RegistryState;
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(v1);
  const u = s.tableByName('U')!;
  const k = s.tableByName('K')!;
  const x = s.tableByName('X')!;
  assert.equal(u.cols.interns.get('m'), k.cols.interns.get('m'), 'one intern table for column m');
  const mAt = (t: typeof u): number => t.plan.columns.indexOf('m');
  assert.equal(x.cols.colInterns[mAt(x)] ?? null, null, 'a table that holds no m values looks none up');
  for (let i = 0; i < 200; i++) pushRow(s, 'E', { k: `k${i % 10}`, u: `u${i % 7}`, m: `m${i}`, x: i }, 1000 + i, i + 1);
  const m = u.cols.interns.get('m')!;
  assert.equal(m.size, 200, 'each value once, whichever tables hold it');
  const before = JSON.parse(readText(s, 'K', 'k3', null, 2000));
  // U goes: its rings and kept values give their references back (in slices, after the install); K's stay.
  s.install({ version: 2, nodes: [event, byKey, sumOnly] } as RegistryState);
  assert.equal(s.releaseDropped(), true);
  assert.equal(m.size, 200, 'K still holds every value');
  assert.deepEqual(JSON.parse(readText(s, 'K', 'k3', null, 2000)), before);
  // K's key changes: a new table, the old one's references go; nothing holds m any more.
  s.install({ version: 3, nodes: [event, { ...byKey, key: ['u'] }, sumOnly] } as RegistryState);
  assert.equal(m.size, 200, 'not released inside the install');
  assert.equal(s.releaseDropped(), true);
  assert.equal(m.size, 0);
  pushRow(s, 'E', { k: 'k1', u: 'u1', m: 'again', x: 1 }, 3000, 201);
  assert.equal(s.tableByName('K')!.cols.interns.get('m')!.size, 1);
  const row = JSON.parse(readText(s, 'K', 'u1', null, 3000));
  assert.deepEqual([row.ms, row.s], [1, 1]);
});

test('a dropped table is released in slices: a deadline already passed still moves 256 slots a call', () => {
  const event = { kind: 'event', name: 'E', schema: { fields: { k: 'str', m: 'str' }, optional_fields: [] } };
  const t = { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { lastm: { op: 'last', params: { field: 'm' } } } };
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install({ version: 1, nodes: [event, t] } as RegistryState);
  for (let i = 0; i < 1000; i++) pushRow(s, 'E', { k: `k${i}`, m: `m${i}` }, 1000 + i, i + 1);
  const m = s.tableByName('T')!.cols.interns.get('m')!;
  s.install({ version: 2, nodes: [event] } as RegistryState);
  assert.equal(m.size, 1000);
  const left: number[] = [];
  while (!s.releaseDropped(0)) left.push(m.size);
  assert.deepEqual(left, [744, 488, 232], 'four slices of 256 slots');
  assert.equal(m.size, 0);
  // The cold sweep runs the release first (it is what the shard calls between batches).
  s.install({ version: 3, nodes: [event, t] } as RegistryState);
  pushRow(s, 'E', { k: 'a', m: 'x' }, 5000, 1001);
  s.install({ version: 4, nodes: [event] } as RegistryState);
  assert.equal(m.size, 1);
  s.sweepCold(Date.now());
  assert.equal(m.size, 0);
});

// ---------------------------------------------------------------- snapshots of columns

import { deserialize, serialize } from 'node:v8';
import { restoreSnapshot, SnapshotJob, SNAPSHOT_FORMAT } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';

/**
 * Windowed features over one hour, so nothing expires: a count, a sum and a last_n of c
 * (ring cells holding interned ids). fillRing gives an entity `n` events 1 ms apart from
 * `t0`, each with its own string (`${key}-c${i}`).
 */
const ONE_RING_AGG = {
  n: { op: 'count', params: { window: '1h' } },
  sx: { op: 'sum', params: { field: 'x', window: '1h' } },
  lc: { op: 'last_n', params: { field: 'c', n: 4, window: '1h' } },
};

function fillRing(s: ShardState, k: string, n: number, t0: number): void {
  for (let i = 0; i < n; i++) pushRow(s, 'E', { k, x: i + 1, c: `${k}-c${i}` }, t0 + i, s.appliedLsn + 1);
}

function feed(s: ShardState, keys: string[], n: number, seed: number, t0 = 1_000_000): number {
  const rnd = prng(seed);
  let t = t0;
  for (let i = 0; i < n; i++) {
    t += Math.floor(rnd() * 20);
    pushRow(s, 'E', { k: keys[Math.floor(rnd() * keys.length)], x: Math.round(rnd() * 100), c: `c${Math.floor(rnd() * 9)}` }, t, s.appliedLsn + 1);
  }
  return t;
}

function bodyOf(s: ShardState): Buffer {
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  return job.finish(new DedupeLog()).body;
}

function frame(chunk: unknown): Buffer {
  const b = serialize(chunk);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(b.length, 0);
  return Buffer.concat([len, b]);
}

const rowsOf = (s: ShardState, keys: string[], now: number): string[] => keys.map((k) => readText(s, 'T', k, null, now));

test('deferred evictions are in snapshots and cold freezes, and give their strings back: a hot key restored, thawed, removed', () => {
  const reg = registry([], MULTI_AGG);
  const mk = (): ShardState => {
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    s.install(reg);
    return s;
  };
  const t0 = 1_000_000;
  // 1 ms apart, every string new: 64 events in the ring, the rest deferred evictions.
  const feedH = (s: ShardState, from: number, to: number): void => {
    for (let i = from; i < to; i++) pushRow(s, 'E', { k: 'h', x: i % 97, c: `v${i}` }, t0 + i, i + 1);
  };
  const pending = (s: ShardState): number => {
    const cols = s.tableByName('T')!.cols;
    return cols.groups.reduce((n, g) => n + g.pend[cols.index.slotOf('h')], 0);
  };
  const times = [t0 + 99, t0 + 600, t0 + 1_050, t0 + 10_010, t0 + 60_040, t0 + 300_050];
  const reads = (s: ShardState): string[] => times.map((t) => readText(s, 'T', 'h', null, t));
  const ref = mk();
  feedH(ref, 0, 100);
  const want = reads(ref);
  feedH(ref, 100, 200);
  const wantLater = reads(ref);

  // A snapshot while entries are deferred, restored: the same reads, and the same after more pushes.
  const s = mk();
  feedH(s, 0, 100);
  assert.ok(pending(s) > 0, 'the case under test: deferred entries at the snapshot');
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  const restored = mk();
  restoreSnapshot(restored, job.finish(new DedupeLog()).body, () => reg);
  assert.deepEqual(reads(restored), want);
  feedH(restored, 100, 200);
  assert.deepEqual(reads(restored), wantLater);

  // Frozen into the cold store while entries are deferred, thawed by a read.
  const c = mk();
  feedH(c, 0, 100);
  assert.ok(pending(c) > 0);
  const tc = c.tableByName('T')!;
  assert.equal(tc.evict(tc.cols.index.slotOf('h'), t0 + 100), false, 'frozen, not dropped');
  assert.equal(tc.cols.index.slotOf('h'), -1);
  assert.deepEqual(reads(c), want);

  // Removed while entries are deferred: every string they held leaves the intern table.
  const r = mk();
  feedH(r, 0, 100);
  assert.ok(pending(r) > 0);
  const interned = r.tableByName('T')!.cols.interns.get('c')!;
  assert.ok(interned.size >= 100, 'the ring and the deferred entries hold every value');
  assert.ok(r.tableByName('T')!.cols.remove('h'));
  assert.equal(interned.size, 0);
});

test('an entity frozen and thawed again takes a ring block between live ones without touching them (rings that fill their blocks, interned values)', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([], ONE_RING_AGG));
  const ts = s.tableByName('T')!;
  const keys = ['m0', 'm1', 'm2', 'm3', 'm4'];
  // 4 entries each (class 2): every ring fills its block, side by side in the class's pool. Odd ms
  // of today's epoch: the times' low words are not zero, so a word copied one past a ring shows.
  const t0 = 1_700_000_000_001;
  keys.forEach((k, j) => fillRing(s, k, 4, t0 + 10 * j));
  const now = t0 + 100;
  const before = keys.map((k) => readText(s, 'T', k, null, now));
  for (const k of ['m2', 'm0']) {
    assert.equal(ts.evict(ts.cols.index.slotOf(k), now), false, `${k} frozen, not dropped`);
    assert.equal(ts.cols.index.slotOf(k), -1);
    // The read thaws it into a free block of its class: the one it left, before a live ring (free blocks are reused last-freed first).
    assert.deepEqual(keys.map((key) => readText(s, 'T', key, null, now)), before, `after ${k} came back`);
  }
});

test('a snapshot body of another format is refused by number; this format restores', () => {
  const reg = registry([]);
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(reg);
  const keys = ['a', 'b', 'c'];
  const t = feed(live, keys, 400, 9);
  const body = bodyOf(live);
  const metaBytes = body.readUInt32LE(0);
  const meta = deserialize(body.subarray(4, 4 + metaBytes)) as { format: number };
  assert.equal(meta.format, SNAPSHOT_FORMAT);
  for (const format of [0, 2, 8, SNAPSHOT_FORMAT + 1]) {
    const other = Buffer.concat([frame({ ...meta, format }), body.subarray(4 + metaBytes)]);
    assert.throws(() => restoreSnapshot(new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true }), other, () => reg),
      new RegExp(`snapshot format ${format} is not readable by this build \\(it reads format ${SNAPSHOT_FORMAT}\\)`));
  }
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, body, () => reg);
  for (const now of [t, t + 5_000, t + 30_000]) assert.deepEqual(rowsOf(restored, keys, now), rowsOf(live, keys, now));
});

test('a snapshot restores the layout it was taken with (rings split by a registry change), or maps into a populated table', () => {
  const v1 = registry([]);
  const table = v1.nodes[1] as { agg: Record<string, unknown> };
  const v2: RegistryState = { version: 2, nodes: [v1.nodes[0], { ...table, agg: { ...table.agg, s2: { op: 'sum', params: { field: 'x', window: W } } } }] };
  const reg = (v: number): RegistryState | undefined => (v === 1 ? v1 : v === 2 ? v2 : undefined);
  const keys = ['a', 'b', 'c', 'd'];
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(v1);
  feed(live, keys, 300, 4);
  live.install(v2);
  const t = feed(live, keys, 300, 5, 2_000_000);
  const body = bodyOf(live);
  // Recovery: an empty shard takes the snapshot's layout; rows and later windows match.
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, body, reg);
  assert.equal(restored.tableByName('T')!.cols.groups.length, live.tableByName('T')!.cols.groups.length);
  for (const now of [t, t + 4_000, t + 9_000]) assert.deepEqual(rowsOf(restored, keys, now), rowsOf(live, keys, now));
  // A populated shard laid out afresh under v2 (its own keys): the imported entities map into it.
  const other = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  other.install(v2);
  const mine = ['m1', 'm2'];
  feed(other, mine, 200, 6, 2_000_000);
  const before = rowsOf(other, mine, t);
  restoreSnapshot(other, body, () => undefined);
  for (const now of [t, t + 4_000, t + 9_000]) assert.deepEqual(rowsOf(other, keys, now), rowsOf(live, keys, now));
  assert.deepEqual(rowsOf(other, mine, t), before, 'the table\'s own entities are unchanged');
});

test('a snapshot of raw slab chunks restores the rows; the restored rings keep sliding like the live ones', () => {
  const reg = registry(['x']);
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(reg);
  const keys = ['a', 'b', 'c', 'd', 'e'];
  const t = feed(live, keys, 900, 12);
  const ts = live.tableByName('T')!;
  const body = bodyOf(live);
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, body, () => reg);
  for (const now of [t, t + 5_000, t + 30_000]) assert.deepEqual(rowsOf(restored, keys, now), rowsOf(live, keys, now));
  const t2 = feed(restored, keys, 200, 13, t);
  const reference = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  reference.install(reg);
  feed(reference, keys, 900, 12);
  feed(reference, keys, 200, 13, t);
  assert.deepEqual(rowsOf(restored, keys, t2), rowsOf(reference, keys, t2));
  assert.equal(restored.tableByName('T')!.cols.interns.get('c')!.size, ts.cols.interns.get('c')!.size, 'intern counts rebuilt from the cells');
});

import { encodeSlab, loadSlab, RAW_SLAB_TAG } from '../../../../src/shard/persist/slab_chunk';

test('slab chunks: a key loaded twice keeps the later copy, and the older one leaves nothing behind', () => {
  const reg = registry([]);
  const mk = (): ShardState => {
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    s.install(reg);
    return s;
  };
  const a = mk();
  const b = mk();
  feed(a, ['k1', 'k2'], 50, 21);
  const t = feed(b, ['k1', 'k3'], 80, 22);
  const chunkOf = (s: ShardState) => {
    const ts = s.tableByName('T')!;
    return encodeSlab(ts.cols, 0, ts.cols.index.liveSlots());
  };
  const c = mk();
  const cols = c.tableByName('T')!.cols;
  assert.equal(loadSlab(cols, chunkOf(a), null, () => {}), 2);
  assert.equal(loadSlab(cols, chunkOf(b), null, () => {}), 2);
  assert.equal(c.tableByName('T')!.size, 3);
  for (const k of ['k1', 'k3']) assert.equal(readText(c, 'T', k, null, t), readText(b, 'T', k, null, t));
  assert.equal(readText(c, 'T', 'k2', null, t), readText(a, 'T', 'k2', null, t));
  // The replaced copy's intern references went with it: removing everything empties the tables.
  for (const k of ['k1', 'k2', 'k3']) cols.remove(k);
  for (const table of cols.interns.values()) assert.equal(table.size, 0);
});

test('a raw slab chunk lays the arrays out raw, aligned in the body, with the skip counts of groups spanning windows', () => {
  const reg = registry(['x']);
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(reg);
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}é`);
  // ~10 ms apart over 40 keys: each key's ring holds events of the last minute, some past 10 s (skipped by that window).
  const t = feed(live, keys, 8_000, 31);
  const ts = live.tableByName('T')!;
  const g = ts.cols.groups.find((x) => x.windows.length > 1)!;
  assert.deepEqual(g.windows, [10_000, 60_000]);
  assert.ok(ts.cols.index.liveSlots().some((s) => g.skip[s * g.sw] > 0), 'some entity has entries only the 1 m window reads');
  const body5 = bodyOf(live);
  // The hot chunk is raw (its tag, not v8's 0xFF), and its doubles start 8-aligned in the body.
  const at = 4 + body5.readUInt32LE(0) + 4;
  assert.equal(body5[at], RAW_SLAB_TAG);
  const pad = body5.readUInt32LE(at + 24);
  const n = body5.readUInt32LE(at + 8);
  const G = body5.readUInt32LE(at + 12);
  const C = body5.readUInt32LE(at + 16);
  assert.equal(n, keys.length);
  assert.equal((at + 28 + 4 * (2 * G + C) + pad) % 8, 0);
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, body5, () => reg);
  for (const now of [t, t + 5_000, t + 30_000, t + 65_000]) assert.deepEqual(rowsOf(restored, keys, now), rowsOf(live, keys, now));
  // Raw chunks decode from a body at any byte offset (a cluster import's buffer): doubles are copied when unaligned.
  const shifted = Buffer.alloc(body5.length + 3);
  body5.copy(shifted, 3);
  const again = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(again, shifted.subarray(3), () => reg);
  assert.deepEqual(rowsOf(again, keys, t), rowsOf(live, keys, t));
  // Restored skip counts go on expiring as the live ones: the same events afterwards, the same answers.
  const t2 = feed(live, keys, 500, 32, t);
  feed(restored, keys, 500, 32, t);
  for (const now of [t2, t2 + 10_000]) assert.deepEqual(rowsOf(restored, keys, now), rowsOf(live, keys, now));
});

test('bloom_member in pooled blocks answers and saves like the object form, through the list, class moves, bits, slot reuse and loads', async () => {
  const { BloomColumn } = await import('../../../../src/shard/columns/bloom_column');
  const { BloomMemberState } = await import('../../../../src/ops/sketch_ops');
  const { bloomGeometry } = await import('../../../../src/ops/sketch/bloom');
  const rnd = prng(17);
  // exactMax 0 (bits at once), 38 (the fraud workload's capacity 256), 153 (the default).
  for (const [capacity, fpr] of [[3, 0.5], [256, 0.01], [1024, 0.01]] as const) {
    const g = bloomGeometry(capacity, fpr);
    const col = new BloomColumn(g, 4);
    const SLOTS = 12;
    col.grow(SLOTS);
    let objs: InstanceType<typeof BloomMemberState>[] = [];
    for (let s = 0; s < SLOTS; s++) { col.create(s); objs.push(new BloomMemberState(g)); }
    for (let i = 0; i < 6000; i++) {
      const s = Math.floor(rnd() * SLOTS);
      const r = rnd();
      const x = r < 0.05 ? null : r < 0.1 ? Math.floor(rnd() * 5) : r < 0.12 ? rnd() < 0.5 : `m${Math.floor(rnd() * (s + 1) * 40)}`;
      col.update(s, x);
      objs[s].update(x, i, {});
      assert.equal(col.read(s), objs[s].read(i), `slot ${s} event ${i}`);
      if (i % 500 === 499) {
        for (let k = 0; k < SLOTS; k++) assert.deepEqual(col.save(k), objs[k].save(), `save of slot ${k}`);
        // Reuse a slot (entity left), load another from the object form's save and the column's own.
        const gone = Math.floor(rnd() * SLOTS);
        col.clear(gone);
        col.create(gone);
        objs[gone] = new BloomMemberState(g);
        const from = Math.floor(rnd() * SLOTS);
        const to = (from + 1) % SLOTS;
        col.load(to, objs[from].save());
        objs[to] = new BloomMemberState(g);
        objs[to].restore(objs[from].save());
        assert.deepEqual(col.save(to), col.save(from));
      }
    }
    assert.ok(col.poolBytes > 0);
    objs = [];
  }
});

test('window-mates dropped by a registry change take their buckets along; the others answer as if never grouped with them', () => {
  // Bucketed regime (hundreds of events per 10 s window): every member holds buckets when the
  // registry drops some of them (RingGroup.keepMembers), and again when pushes continue.
  const v1 = registry([]);
  const table = v1.nodes[1] as { agg: Record<string, unknown> };
  const dropped = new Set(['n', 'lo', 'q', 'nu', 'smax']);
  const agg2 = Object.fromEntries(Object.entries(table.agg).filter(([name]) => !dropped.has(name)));
  const v2: RegistryState = { version: 2, nodes: [v1.nodes[0], { ...table, agg: agg2 }] };
  const a = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const b = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  a.install(v1);
  b.install({ ...v2, version: 1 });
  const keys = ['a', 'b', 'c'];
  let t = 0;
  for (const s of [a, b]) t = feed(s, keys, 3000, 11);
  a.install(v2);
  assert.deepEqual(rowsOf(a, keys, t), rowsOf(b, keys, t));
  let t2 = 0;
  for (const s of [a, b]) t2 = feed(s, keys, 3000, 12, t);
  for (const now of [t2, t2 + 5_000, t2 + 10_000, t2 + 61_000]) assert.deepEqual(rowsOf(a, keys, now), rowsOf(b, keys, now));
  // Once every bucket has expired, the slots hand their bucket records back, as if never grouped (a record
  // the change left counted as busy would never go: memory, not answers).
  const t3 = t2 + 120_000;
  // x > 50: the push reaches the ring of the `where` features too.
  for (const s of [a, b]) for (const k of keys) pushRow(s, 'E', { k, x: 99, c: 'c0' }, t3, s.appliedLsn + 1);
  for (const [name, s] of [['a', a], ['b', b]] as const) {
    const cols = s.tableByName('T')!.cols;
    for (const k of keys) cols.groups.forEach((g, gi) => assert.equal(g.rec[cols.index.slotOf(k)], 0, `${name} ${k} group ${gi} (${g.windows}; ${g.members.length} members): no bucket record left`));
  }
});

test('a registry change that drops the only members holding buckets hands the slot\'s bucket record back at once', () => {
  // 200 events over 40 s: the ring (64 entries) evicts events older than 10 s, which only the 1m
  // count still holds (its buckets). Dropping it leaves the slot no bucket: the record goes at the
  // change (RingGroup.keepMembers), not when some later push finds it empty.
  const agg = { n10: { op: 'count', params: { window: '10s' } }, s10: { op: 'sum', params: { field: 'x', window: '10s' } } };
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([], { ...agg, n1m: { op: 'count', params: { window: '1m' } } }));
  for (let i = 0; i < 200; i++) pushRow(s, 'E', { k: 'a', x: i, c: 'c' }, 1_000 + i * 200, i + 1);
  const cols = s.tableByName('T')!.cols;
  const slot = cols.index.slotOf('a');
  assert.equal(cols.groups[0].rec[slot], 1, 'the 1m count holds buckets (record 0)');
  const before = JSON.parse(readText(s, 'T', 'a', null, 40_800)) as Record<string, number>;
  s.install({ ...registry([], agg), version: 2 });
  assert.equal(s.tableByName('T')!.cols.groups[0].rec[slot], 0, 'no bucket record left');
  assert.deepEqual(JSON.parse(readText(s, 'T', 'a', null, 40_800)), { n10: before.n10, s10: before.s10 });
});

test('each push expires exactly the ring entries its window has left: their strings leave the intern table', () => {
  const reg: RegistryState = {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64', c: 'str' }, optional_fields: [] } },
      // top_k: its cells intern c (an n_unique alone would hold hashes).
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { top: { op: 'top_k', params: { field: 'c', window: W, k: 3 } } } },
    ],
  };
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  const interned = s.tableByName('T')!.cols.interns.get('c')!;
  // Irregular gaps around the 10 s window (and around the ring's 4,096 ms bound on its oldest entry).
  const times: number[] = [];
  let t = 1_000_000;
  for (let i = 0; i < 80; i++) times.push((t += [1000, 1000, 700, 1300, 4096, 1, 2500, 999, 3000, 1000, 9999, 10_001][i % 12]));
  times.forEach((ti, i) => {
    pushRow(s, 'E', { k: 'a', x: i, c: `v${i}` }, ti, i + 1);
    const live = times.slice(0, i + 1).filter((tj) => ti - tj < 10_000).length;
    assert.equal(interned.size, live, `after push ${i} at ${ti}`);
  });
});

test('a slot reused from the free list starts with empty solo columns (slab rows, kept values) and empty rings', () => {
  const reg: RegistryState = {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64', c: 'str' }, optional_fields: [] } },
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: {
        ew: { op: 'ewma', params: { field: 'x', half_life: '1h' } },
        first: { op: 'first_seen' },
        life: { op: 'sum', params: { field: 'x', window: 'forever' } },
        lastc: { op: 'last_n', params: { field: 'c', n: 3 } },
        lastx: { op: 'last', params: { field: 'x' } },
        win: { op: 'sum', params: { field: 'x', window: '1h' } },
      } },
    ],
  };
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(reg);
  const fresh = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  fresh.install(reg);
  const cols = s.tableByName('T')!.cols;
  const t = 9_000_000;
  for (let i = 0; i < 5; i++) pushRow(s, 'E', { k: 'old', x: 100 + i, c: `c${i}` }, t + i, i + 1);
  const slot = cols.index.slotOf('old');
  assert.ok(cols.remove('old'));
  pushRow(s, 'E', { k: 'new', x: 7, c: 'z' }, t + 10, 6);
  assert.equal(cols.index.slotOf('new'), slot, 'the freed slot is reused');
  pushRow(fresh, 'E', { k: 'new', x: 7, c: 'z' }, t + 10, 6);
  assert.equal(readText(s, 'T', 'new', null, t + 20), readText(fresh, 'T', 'new', null, t + 20), 'nothing of the old entity shows');
});

test('a push skips the expiry walk only when it would move nothing: every window\'s skip count is what a walk at every push leaves, and a push to one entity leaves its neighbour\'s as they were', () => {
  // With times in order, a window's skip count after a push at t is the number of ring entries at
  // or before t - window (the walk stops at the first one after). RingGroup keeps a per-slot due
  // time and skips the walk before it; a due time too late would leave a count short. Two keys in
  // adjacent slots: 'a' fills its ring and evicts, and neither may move the other's counts.
  const reg = registry([], MULTI_AGG);
  for (const [seed, every] of [[11, 1], [12, 13]]) {
    const rnd = prng(seed);
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    s.install(reg);
    const cols = s.tableByName('T')!.cols;
    const g = cols.groups.find((x) => x.windows.length === 4)!;
    const skips = new Uint8Array(g.sw);
    const lastT = new Map<string, number>();
    let t = 8_000_000;
    for (let i = 0; i < 5000; i++) {
      // Bursts that fill the ring, gaps around each window's length, now and then a pause past all.
      const r = rnd();
      t += r < 0.6 ? Math.floor(rnd() * 4) : r < 0.9 ? Math.floor(rnd() * 400) : r < 0.99 ? 900 + Math.floor(rnd() * 12_000) : 290_000 + Math.floor(rnd() * 20_000);
      const k = rnd() < 0.8 ? 'a' : 'b';
      pushRow(s, 'E', { k, x: i % 50, c: `c${i % 5}` }, t, i + 1);
      lastT.set(k, t);
      if (i % every !== 0) continue;
      for (const [key, at] of lastT) {
        const slot = cols.index.slotOf(key);
        g.exportSkips(slot, skips, 0);
        const ring = g.save(slot)[0];
        for (let w = 0; w < g.sw; w++) {
          let want = 0;
          for (let e = 0; e < ring.length; e += g.stride) if ((ring[e] as number) <= at - g.windows[w]) want++;
          assert.equal(skips[w], want, `seed ${seed} push ${i} key ${key} window ${g.windows[w]} ms`);
        }
      }
    }
    assert.equal(cols.index.slotOf('b'), cols.index.slotOf('a') + 1, 'the two keys are neighbours');
  }
});

test('a grouped feature moved to a ring of its own (detachMember, as a load of another layout does) answers as it did: counts of a field that is sometimes absent, sums, sketches; bucketed and exact regimes', () => {
  const agg = {
    nx: { op: 'count', params: { field: 'x', window: '10s' } },
    nc: { op: 'count', params: { field: 'c', window: '1m' } },
    n: { op: 'count', params: { window: '10s' } },
    sx: { op: 'sum', params: { field: 'x', window: '1m' } },
    mx: { op: 'mean', params: { field: 'x', window: '10s' } },
    uc: { op: 'n_unique', params: { field: 'c', window: '1m' } },
    top: { op: 'top_k', params: { field: 'c', k: 2, window: '10s' } },
  };
  // 4,000 events: hundreds per key and window, so rings overflow into buckets; 24: a few per key,
  // no buckets (a member's saved buckets are null). A third of the values are absent.
  for (const events of [4000, 24]) {
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    s.install(registry(['x', 'c'], agg));
    const rnd = prng(77);
    const keys = ['a', 'b', 'c', 'd'];
    let t = 1_000_000;
    for (let i = 0; i < events; i++) {
      t += Math.floor(rnd() * 30);
      const row: Row = { k: keys[Math.floor(rnd() * keys.length)], x: rnd() < 0.35 ? null : Math.round(rnd() * 100), c: rnd() < 0.35 ? null : `c${Math.floor(rnd() * 7)}` };
      pushRow(s, 'E', row, t, s.appliedLsn + 1);
    }
    const ts = s.tableByName('T')!;
    const reads = (): unknown[] => [t, t + 4_000, t + 30_000].map((now) => keys.map((k) => JSON.parse(readText(s, 'T', k, null, now))));
    const before = reads();
    assert.ok(ts.cols.groups.length > 0);
    const shared = ts.cols.groups.length;
    for (const f of ts.plan.features) if (ts.cols.featGroup[f.index]!.members.length > 1) ts.cols.detachMember(f.index);
    assert.ok(shared < ts.plan.features.length);
    assert.equal(ts.cols.groups.length, ts.plan.features.length, 'every feature has a ring of its own');
    assert.deepEqual(reads(), before, `${events} events`);
    if (events > 24) assert.ok((before[0] as Array<Record<string, number>>).every((r) => r.nx < r.n), 'some events lacked x: the field counts are below the event counts');
  }
});

test('a ring saved and loaded again, or restored from a snapshot, takes the smallest block class that holds it (a full class of 2^k entries, and one more)', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const reg = registry([], { n: { op: 'count', params: { window: '1h' } }, sx: { op: 'sum', params: { field: 'x', window: '1h' } } });
  s.install(reg);
  const ts = s.tableByName('T')!;
  const g = ts.cols.groups[0];
  let lsn = 0;
  for (const n of [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33]) {
    const k = `key-${n}`;
    for (let i = 0; i < n; i++) pushRow(s, 'E', { k, x: i, c: 'c' }, 1_000_000 + i, ++lsn);
    const slot = ts.cols.index.slotOf(k);
    assert.equal(g.len[slot], n);
    const cls = g.cls[slot];
    const saved = g.save(slot);
    g.clear(slot);
    g.load(slot, saved);
    assert.equal(g.len[slot], n);
    assert.equal(g.cls[slot], cls, `${n} entries: the class the pushes grew it to`);
    assert.ok(n <= 1 << g.cls[slot] && (g.cls[slot] === 1 || n > 1 << (g.cls[slot] - 1)), `${n} entries in class ${g.cls[slot]}: the smallest that holds them`);
    assert.deepEqual(JSON.parse(readText(s, 'T', k, null, 1_000_100)), { n, sx: (n * (n - 1)) / 2 });
  }
  // A snapshot's raw slab chunks go in through importSlot: the same classes.
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  restoreSnapshot(restored, bodyOf(s), () => reg);
  const rts = restored.tableByName('T')!;
  for (const k of ts.cols.index.keyList()) {
    assert.equal(rts.cols.groups[0].cls[rts.cols.index.slotOf(k)], g.cls[ts.cols.index.slotOf(k)], `${k} restored`);
    assert.equal(readText(restored, 'T', k, null, 1_000_100), readText(s, 'T', k, null, 1_000_100));
  }
});

/**
 * A live shard under MULTI_AGG fed events ~60 ms apart over ~90 s by `push`: the 1 s and 10 s
 * windows have skipped entries the 1 m and 5 m windows still hold. `push` feeds any shards given
 * the same events; `now()` is the time of the last one.
 */
function multiWindowLive(seed: number): { v1: RegistryState; keys: string[]; live: ShardState; push: (s: ShardState[], n: number) => void; now: () => number } {
  const v1 = registry([], MULTI_AGG);
  const keys = ['a', 'b', 'c'];
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(v1);
  const rnd = prng(seed);
  let t = 1_000_000;
  const push = (s: ShardState[], n: number): void => {
    for (let i = 0; i < n; i++) {
      t += Math.floor(rnd() * 120);
      const row: Row = { k: keys[Math.floor(rnd() * keys.length)], x: Math.round(rnd() * 100), c: `c${Math.floor(rnd() * 5)}` };
      for (const x of s) pushRow(x, 'E', row, t, x.appliedLsn + 1);
    }
  };
  push([live], 1500);
  return { v1, keys, live, push, now: () => t };
}

test('a snapshot of rings spanning several windows maps into a changed layout with their skip counts: later pushes and reads agree with the live shard', () => {
  const { v1, keys, live, push, now } = multiWindowLive(21);
  const table = v1.nodes[1] as { agg: Record<string, unknown> };
  // One more lifetime feature: the layout differs, so the restore maps each save (TableColumns.addMapped).
  const v2: RegistryState = { version: 2, nodes: [v1.nodes[0], { ...table, agg: { ...table.agg, life2: { op: 'count' } } }] };
  const g = live.tableByName('T')!.cols.groups.find((x) => x.sw > 0)!;
  assert.ok(keys.some((k) => g.skip[live.tableByName('T')!.cols.index.slotOf(k) * g.sw] > 0), 'a shorter window skips entries');
  const body = bodyOf(live);
  const other = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  other.install(v2);
  restoreSnapshot(other, body, () => undefined);
  const common = (s: ShardState, now: number): unknown[] => keys.map((k) => { const r = JSON.parse(readText(s, 'T', k, null, now)) as Record<string, unknown>; delete r.life2; return r; });
  assert.deepEqual(common(other, now()), common(live, now()));
  // The next pushes walk the restored rings and fold into the restored buckets: answers stay the live shard's.
  push([live, other], 400);
  const t = now();
  for (const at of [t, t + 700, t + 5_000, t + 30_000]) assert.deepEqual(common(other, at), common(live, at), `at ${at}`);
});

test('a snapshot maps into a layout whose ring spans as many windows but other ones: the changed features start empty and then count their own window, as after a live registry change', () => {
  // v1's ring spans 1s and 1m, v2's 10s and 1m. The table restored into has no entities, so it
  // takes the snapshot's layout (TableColumns.fromLayout) less the features whose window changed:
  // those start empty (docs/registry.md), on restore as on install; the 1m count keeps its events.
  const agg = (short: string): Record<string, unknown> => ({
    n: { op: 'count', params: { window: short } },
    s: { op: 'sum', params: { field: 'x', window: short } },
    n1m: { op: 'count', params: { window: '1m' } },
  });
  const v1 = registry([], agg('1s'));
  const v2: RegistryState = { ...registry([], agg('10s')), version: 2 };
  const keys = ['a', 'b', 'c'];
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(v1);
  // ~1.5 s of events, ~50 an entity (the exact regime).
  const t = feed(live, keys, 150, 8);
  const counts = (s: ShardState, now: number): { n: number; n1m: number } => JSON.parse(readText(s, 'T', keys[0], null, now)) as { n: number; n1m: number };
  const before = counts(live, t);
  assert.ok(before.n > 0 && before.n < before.n1m, `1s holds some of the events: ${JSON.stringify(before)}`);
  const body = bodyOf(live);
  live.install(v2);
  const other = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  other.install(v2);
  restoreSnapshot(other, body, () => undefined);
  const now = counts(other, t);
  assert.deepEqual([now.n, now.n1m], [0, before.n1m], 'the 10s count starts empty, the 1m count keeps its events');
  for (const at of [t, t + 5_000, t + 20_000, t + 70_000]) assert.deepEqual(rowsOf(other, keys, at), rowsOf(live, keys, at), `at ${at}`);
  // Later pushes: the 10s features count them over 10s (not 1s), in both shards alike.
  const t2 = feed(other, keys, 150, 9, t + 2_000);
  feed(live, keys, 150, 9, t + 2_000);
  const after = counts(other, t2);
  assert.ok(after.n > 0 && after.n < after.n1m, `the 10s count has the new events only: ${JSON.stringify(after)}`);
  for (const at of [t2, t2 + 900, t2 + 5_000, t2 + 20_000]) assert.deepEqual(rowsOf(other, keys, at), rowsOf(live, keys, at), `after more pushes, at ${at}`);
});

test('a snapshot of rings spanning several windows restores into the same layout with their skip counts, byte for byte: reads before and after later pushes agree with the live shard', () => {
  const { v1, keys, live, push, now } = multiWindowLive(22);
  const other = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  other.install(v1);
  // The same layout: the chunk's bytes go back as they are (slab_chunk.ts loadRings), skip counts included.
  restoreSnapshot(other, bodyOf(live), () => undefined);
  const skips = (s: ShardState): number[][] => {
    const cols = s.tableByName('T')!.cols;
    return cols.groups.filter((g) => g.sw > 0).map((g) => keys.flatMap((k) => Array.from(g.skip.subarray(cols.index.slotOf(k) * g.sw, (cols.index.slotOf(k) + 1) * g.sw))));
  };
  assert.ok(skips(live).flat().some((n) => n > 0), 'a shorter window skips entries');
  assert.deepEqual(skips(other), skips(live), 'skip counts restored');
  const t = now();
  for (const at of [t, t + 700, t + 5_000]) assert.deepEqual(rowsOf(other, keys, at), rowsOf(live, keys, at), `restored, at ${at}`);
  push([live, other], 400);
  assert.deepEqual(skips(other), skips(live), 'skip counts after later pushes');
  const t2 = now();
  for (const at of [t2, t2 + 700, t2 + 5_000, t2 + 30_000]) assert.deepEqual(rowsOf(other, keys, at), rowsOf(live, keys, at), `after pushes, at ${at}`);
});

test('a snapshot imported into a live shard (a partition import) fills freed ring blocks without touching the live rings beside them', () => {
  // last_n of c: ring cells holding interned ids, which an import renumbers into the live table's ids.
  const reg = registry([], ONE_RING_AGG);
  const live = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  live.install(reg);
  const ts = live.tableByName('T')!;
  const g = ts.cols.groups[0];
  // Rings that fill their blocks exactly (4 entries: class 2), side by side in the class's pool.
  const mine = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'];
  const t0 = 1_700_000_000_000;
  mine.forEach((k, i) => fillRing(live, k, 4, t0 + 10 * i));
  for (const k of mine) assert.equal(g.len[ts.cols.index.slotOf(k)], 1 << g.cls[ts.cols.index.slotOf(k)], `${k} fills its block`);
  // Every other one leaves: free blocks between live ones.
  for (const k of ['m0', 'm2', 'm4']) assert.ok(ts.cols.remove(k));
  const kept = ['m1', 'm3', 'm5'];
  const before = kept.map((k) => g.save(ts.cols.index.slotOf(k)));
  const readsBefore = kept.map((k) => readText(live, 'T', k, null, t0 + 1_000_100));
  // A snapshot of other entities with full rings of the same class, imported into the live table.
  const src = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  src.install(reg);
  const theirs = ['p0', 'p1', 'p2', 'p3'];
  // Odd ms: the times' low words are not zero, so a word copied one past a ring shows.
  theirs.forEach((k, i) => fillRing(src, k, 4, t0 + 1_000_001 + 10 * i));
  restoreSnapshot(live, bodyOf(src), () => undefined);
  assert.deepEqual(kept.map((k) => g.save(ts.cols.index.slotOf(k))), before, 'the live rings are unchanged');
  assert.deepEqual(kept.map((k) => readText(live, 'T', k, null, t0 + 1_000_100)), readsBefore, 'the live entities answer as before');
  for (const k of [...theirs, ...kept]) {
    const lc = JSON.parse(readText(live, 'T', k, null, t0 + 1_000_100)).lc as string[];
    assert.deepEqual([...lc].sort(), [0, 1, 2, 3].map((i) => `${k}-c${i}`), `${k}: its own values`);
  }
  for (const k of theirs) assert.equal(readText(live, 'T', k, null, t0 + 1_000_100), readText(src, 'T', k, null, t0 + 1_000_100));
});

test('absent values survive a cold freeze and a snapshot as absent (not NaN): counts of a field and its other readers answer as before', () => {
  const reg = registry(['x', 'c'], SHARED_AGG);
  const mk = (): ShardState => {
    const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    s.install(reg);
    return s;
  };
  const t0 = 2_000_000;
  // Every third event lacks x, every fourth lacks c: the ring holds absent cells beside values.
  const feed = (s: ShardState): void => {
    for (let i = 0; i < 12; i++) {
      const row: Record<string, unknown> = { k: 'h' };
      if (i % 3 !== 0) row.x = i * 1.5;
      if (i % 4 !== 0) row.c = `c${i % 5}`;
      pushRow(s, 'E', row as Row, t0 + i * 100, i + 1);
    }
  };
  const now = t0 + 1_500;
  const ref = mk();
  feed(ref);
  const want = readText(ref, 'T', 'h', null, now);
  assert.equal((JSON.parse(want) as { nx: number }).nx, 8, 'the 4 events without x are not counted');

  const c = mk();
  feed(c);
  const tc = c.tableByName('T')!;
  assert.equal(tc.evict(tc.cols.index.slotOf('h'), now), false, 'frozen, not dropped');
  assert.equal(readText(c, 'T', 'h', null, now), want, 'thawed from the cold store');

  const s = mk();
  feed(s);
  const job = new SnapshotJob(s);
  job.step(Number.POSITIVE_INFINITY);
  const restored = mk();
  const body = job.finish(new DedupeLog()).body;
  restoreSnapshot(restored, body, () => reg);
  assert.equal(readText(restored, 'T', 'h', null, now), want, 'restored from a snapshot');
  // Into a registry with one more feature: the snapshot's cells are decoded and mapped entity by entity (slab_chunk.ts slabSaves).
  const reg2 = { ...registry(['x', 'c'], { ...SHARED_AGG, extra: { op: 'count', params: { window: '1h' } } }), version: 2 };
  const mapped = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  mapped.install(reg2);
  // No registry for the snapshot's version: the installed one stays.
  restoreSnapshot(mapped, body, () => undefined);
  const got = JSON.parse(readText(mapped, 'T', 'h', null, now)) as Record<string, unknown>;
  delete got.extra;
  assert.deepEqual(got, JSON.parse(want), 'mapped into another layout');
});

test('an entity that leaves (removed, frozen) hands back its bucket record without touching the record after it, which another entity holds', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([], ONE_RING_AGG));
  const cols = s.tableByName('T')!.cols;
  const keys = ['a', 'b', 'c'];
  // 200 events each, 1 ms apart in a 1h window: past the ring, so each entity holds buckets.
  keys.forEach((k, j) => fillRing(s, k, 200, 1_000_000 + 1_000 * j));
  const now = 1_010_000;
  const before = keys.map((k) => readText(s, 'T', k, null, now));
  const g = cols.groups[0];
  const recs = keys.map((k) => g.rec[cols.index.slotOf(k)]);
  assert.deepEqual(recs, [1, 2, 3], 'the case under test: adjacent bucket records, in key order');
  assert.ok(cols.remove('a'));
  assert.deepEqual(['b', 'c'].map((k) => readText(s, 'T', k, null, now)), before.slice(1), 'after a left');
  // The freed record goes to the next entity that needs one; its neighbours still answer as before.
  fillRing(s, 'd', 200, 1_005_000);
  assert.equal(g.rec[cols.index.slotOf('d')], 1);
  const d = readText(s, 'T', 'd', null, now);
  const ts = s.tableByName('T')!;
  assert.equal(ts.evict(cols.index.slotOf('b'), now), false, 'b frozen, not dropped');
  assert.deepEqual(['c', 'd'].map((k) => readText(s, 'T', k, null, now)), [before[2], d], 'after b left');
  assert.equal(readText(s, 'T', 'b', null, now), before[1], 'b thawed');
});

test('an entity thawed from the cold store takes a ring block only for the rings that hold entries (a `where` that never passed leaves its ring empty)', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([]));
  const ts = s.tableByName('T')!;
  const cols = ts.cols;
  // x <= 50 only: the `x > 50` features' ring never takes an entry; the others hold three.
  for (let i = 0; i < 3; i++) pushRow(s, 'E', { k: 'a', x: 10 + i, c: 'c' }, 1_000_000 + i, s.appliedLsn + 1);
  const classes = (): number[] => cols.groups.map((g) => g.cls[cols.index.slotOf('a')]);
  const before = classes();
  assert.ok(before.includes(0) && before.some((c) => c > 0), 'the case under test: an empty ring beside filled ones');
  const now = 1_000_010;
  const row = readText(s, 'T', 'a', null, now);
  assert.equal(ts.evict(cols.index.slotOf('a'), now), false, 'frozen, not dropped');
  assert.equal(readText(s, 'T', 'a', null, now), row, 'thawed by the read');
  assert.deepEqual(classes(), before);
});

test('a ring exported into a slab chunk lists the interned values its string cells hold, and nothing for its number cells', () => {
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([]));
  const cols = s.tableByName('T')!.cols;
  // Numbers of many low words (x / 7), three strings.
  for (let i = 0; i < 40; i++) pushRow(s, 'E', { k: 'a', x: (i * 13) / 7, c: `v${i % 3}` }, 1_000_000 + i, s.appliedLsn + 1);
  const slot = cols.index.slotOf('a');
  const g = cols.groups.find((grp) => grp.fields.includes('x') && grp.fields.includes('c'))!;
  const ids = g.fields.map(() => new Map<number, unknown>());
  const out = new Uint32Array(g.len[slot] * g.stride * 2);
  assert.equal(g.exportSlot(slot, out, 0, ids as Parameters<typeof g.exportSlot>[3]), 40);
  assert.equal(ids[g.fields.indexOf('x')].size, 0, 'number cells hold no ids');
  assert.deepEqual([...ids[g.fields.indexOf('c')].values()].sort(), ['v0', 'v1', 'v2']);
});

test('bloom_member bit arrays past GROW_IN_PLACE_BYTES_MIN: blocks taken after the pool grew in place are written and read through a view of the grown length', async () => {
  const { BloomColumn } = await import('../../../../src/shard/columns/bloom_column');
  const { BloomMemberState } = await import('../../../../src/ops/sketch_ops');
  const { bloomGeometry } = await import('../../../../src/ops/sketch/bloom');
  const { GROW_IN_PLACE_BYTES_MIN } = await import('../../../../src/limits');
  // 1,024 values at 1%: 153 exact hashes, then ~1.2 KB of bits per entity. The bits pool passes 1 MiB
  // at ~850 entities, moves onto a growable buffer, then doubles in place.
  const g = bloomGeometry(1024, 0.01);
  const col = new BloomColumn(g, 4);
  const SLOTS = 2000;
  col.grow(SLOTS);
  const objs = Array.from({ length: SLOTS }, () => new BloomMemberState(g));
  for (let s = 0; s < SLOTS; s++) {
    col.create(s);
    // Past the exact list: each entity switches to bits, taking the pool's next block.
    for (let i = 0; i <= g.exactMax; i++) {
      col.update(s, `v${s}-${i}`);
      objs[s].update(`v${s}-${i}`, i, {});
    }
  }
  assert.ok(col.poolBytes > 2 * GROW_IN_PLACE_BYTES_MIN, `the case under test: ${col.poolBytes} B of pooled bits`);
  for (let s = 0; s < SLOTS; s++) {
    assert.equal(col.read(s), objs[s].read(0), `slot ${s}`);
    assert.deepEqual(col.save(s), objs[s].save(), `save of slot ${s}`);
  }
});

test('lifetime ops get the typed column of their form: fixed doubles, pooled bloom bits, kept cells; only ops without one are objects', async () => {
  const { FixedColumn, ObjectColumn } = await import('../../../../src/shard/columns/solo_column');
  const { BloomColumn } = await import('../../../../src/shard/columns/bloom_column');
  const { KeptColumn } = await import('../../../../src/shard/columns/kept_column');
  const s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(registry([], {
    n: { op: 'count', params: {} },
    life: { op: 'sum', params: { field: 'x', window: 'forever' } },
    seen: { op: 'bloom_member', params: { field: 'c', fpr: 0.01 } },
    firstc: { op: 'first', params: { field: 'c' } },
    w: { op: 'count', params: { window: W } },
  }));
  const cols = s.tableByName('T')!.cols;
  const kinds = Object.fromEntries(s.tableByName('T')!.plan.features.map((f, i) => {
    const col = cols.objs[i];
    const kind = col === null ? 'ring' : col instanceof FixedColumn ? 'fixed' : col instanceof BloomColumn ? 'bloom' : col instanceof KeptColumn ? 'kept' : col instanceof ObjectColumn ? 'object' : 'other';
    return [f.name, kind];
  }));
  assert.deepEqual(kinds, { n: 'fixed', life: 'fixed', seen: 'bloom', firstc: 'kept', w: 'ring' });
});
