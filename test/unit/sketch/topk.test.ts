import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopKSketch, topKCapacity, compareTopValues, type TopValue } from '../../../src/ops/sketch';
import { Prng, Zipf } from './prng';

function refCounts(xs: TopValue[]): Map<TopValue, number> {
  const m = new Map<TopValue, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return m;
}

function refTop(m: Map<TopValue, number>, k: number): { value: TopValue; count: number }[] {
  const all = [...m].map(([value, count]) => ({ value, count }));
  all.sort((a, b) => b.count - a.count || compareTopValues(a.value, b.value));
  return all.slice(0, k);
}

test('capacity rule and value order', () => {
  assert.equal(topKCapacity(1), 64);
  assert.equal(topKCapacity(10), 64);
  assert.equal(topKCapacity(16), 64);
  assert.equal(topKCapacity(17), 68);
  assert.equal(topKCapacity(1024), 4096);
  const vals: TopValue[] = [true, 2, 'b', false, -1.5, 'a', 10, 'B', ''];
  vals.sort(compareTopValues);
  assert.deepEqual(vals, ['', 'B', 'a', 'b', -1.5, 2, 10, false, true]);
});

test('exact mode equals the reference counts and ordering', () => {
  const rng = new Prng(701);
  for (let trial = 0; trial < 50; trial++) {
    const s = new TopKSketch(64);
    const xs: TopValue[] = [];
    const n = rng.int(2000);
    for (let i = 0; i < n; i++) {
      const r = rng.int(3);
      const v = r === 0 ? 'v' + rng.int(25) : r === 1 ? rng.int(25) : rng.int(2) === 0;
      xs.push(v);
      s.add(v);
    }
    assert.ok(s.isExact());
    assert.equal(s.count(), n);
    const ref = refCounts(xs);
    for (const k of [1, 5, 10, 64, 100]) assert.deepEqual(s.top(k), refTop(ref, k), `seed 701 trial ${trial} k=${k}`);
  }
  const t = new TopKSketch(8);
  for (const v of ['x', 1, 'x', true, 1, 'a', -0, 0, NaN]) t.add(v);
  assert.deepEqual(t.top(10), [
    { value: 'x', count: 2 },
    { value: 0, count: 2 },
    { value: 1, count: 2 },
    { value: 'a', count: 1 },
    { value: true, count: 1 },
  ]);
  assert.equal(t.count(), 8, 'NaN is ignored');
  assert.ok(Object.is(t.top(10)[1].value, 0), '-0 is stored as 0');
});

/** Every held count is >= true and over by <= `over`; every value with true count > `presence` is held. */
function checkSpaceSaving(
  s: TopKSketch,
  ref: Map<TopValue, number>,
  presence: number,
  over: number,
  label: string,
): void {
  const held = new Map(s.top(s.capacity).map((e) => [e.value, e.count]));
  for (const [v, c] of held) {
    const t = ref.get(v) ?? 0;
    assert.ok(c >= t, `${label}: ${String(v)} count ${c} under true ${t}`);
    assert.ok(c - t <= over, `${label}: ${String(v)} over by ${c - t} > ${over}`);
  }
  for (const [v, t] of ref) {
    if (t > presence) assert.ok(held.has(v), `${label}: ${String(v)} with ${t} > ${presence} is missing`);
  }
}

test('Space-Saving on a Zipf stream: heavy hitters held, overestimate <= N/C', () => {
  for (const [k, s0, distinct] of [
    [10, 1.1, 10_000],
    [10, 0.8, 50_000],
    [100, 1.2, 20_000],
  ] as const) {
    const seed = 800 + k + Math.round(s0 * 10);
    const rng = new Prng(seed);
    const zipf = new Zipf(distinct, s0);
    const c = topKCapacity(k);
    const s = new TopKSketch(c);
    const xs: TopValue[] = [];
    const n = 200_000;
    for (let i = 0; i < n; i++) {
      const r = zipf.sample(rng);
      const v = r % 3 === 0 ? r : 'item' + r;
      xs.push(v);
      s.add(v);
    }
    assert.ok(!s.isExact());
    assert.equal(s.count(), n);
    const ref = refCounts(xs);
    checkSpaceSaving(s, ref, n / c, n / c, `seed ${seed}`);
    assert.ok(s.errorBound() <= n / c, `seed ${seed}: error bound ${s.errorBound()}`);
    // The true top k of a skewed stream comes back in order.
    const got = s.top(k).map((e) => e.value);
    const want = refTop(ref, k).map((e) => e.value);
    if (s0 > 1) assert.deepEqual(got.slice(0, 5), want.slice(0, 5), `seed ${seed}: top 5`);
  }
});

test('merge: exact merges stay exact; Space-Saving merges keep the documented bounds', () => {
  const rng = new Prng(901);
  // Exact + exact that fits.
  const a = new TopKSketch(64);
  const b = new TopKSketch(64);
  const xs: TopValue[] = [];
  for (let i = 0; i < 3000; i++) {
    const v = 'v' + rng.int(40);
    xs.push(v);
    (i % 2 === 0 ? a : b).add(v);
  }
  a.merge(b);
  assert.ok(a.isExact());
  assert.deepEqual(a.top(64), refTop(refCounts(xs), 64));
  // Exact + exact that does not fit, and inexact + inexact.
  for (const [parts, distinct] of [
    [2, 100],
    [2, 20_000],
    [4, 20_000],
  ] as const) {
    const seed = 910 + parts + distinct;
    const r = new Prng(seed);
    const zipf = new Zipf(distinct, 1.05);
    const c = 64;
    const pieces: TopKSketch[] = [];
    for (let p = 0; p < parts; p++) pieces.push(new TopKSketch(c));
    const all: TopValue[] = [];
    const n = 100_000;
    for (let i = 0; i < n; i++) {
      const v = zipf.sample(r);
      all.push(v);
      pieces[r.int(parts)].add(v);
    }
    const before = pieces[1].save();
    const acc = pieces[0];
    for (let p = 1; p < parts; p++) acc.merge(pieces[p]);
    assert.deepEqual(pieces[1].save(), before, 'merge leaves its argument unchanged');
    assert.equal(acc.count(), n);
    const ref = refCounts(all);
    const presence = parts === 2 ? (2 * n) / c : n; // bound documented for one merge of two summaries
    checkSpaceSaving(acc, ref, presence, n / c, `seed ${seed}`);
    // The merged summary keeps working as a Space-Saving summary.
    for (let i = 0; i < 10_000; i++) {
      const v = zipf.sample(r);
      all.push(v);
      acc.add(v);
    }
    const ref2 = refCounts(all);
    checkSpaceSaving(acc, ref2, Infinity, (2 * all.length) / c, `seed ${seed} after more adds`);
  }
});

test('save/load roundtrip: same answers, same future, structured-cloneable', () => {
  const rng = new Prng(1001);
  const zipf = new Zipf(5000, 1.0);
  for (const n of [0, 10, 500, 50_000]) {
    const s = new TopKSketch(64);
    for (let i = 0; i < n; i++) {
      const r = zipf.sample(rng);
      s.add(r % 2 === 0 ? r : 's' + r);
    }
    const t = TopKSketch.load(structuredClone(s.save()));
    assert.deepEqual(t.top(64), s.top(64), `seed 1001 n=${n}`);
    assert.equal(t.isExact(), s.isExact());
    assert.equal(t.count(), s.count());
    for (let i = 0; i < 5000; i++) {
      const v = zipf.sample(rng);
      s.add(v);
      t.add(v);
    }
    assert.deepEqual(t.top(64), s.top(64), `seed 1001 n=${n} after more`);
    assert.deepEqual(t.save(), s.save());
  }
  const bad = new TopKSketch(4);
  for (const v of ['a', 'b', 'c', 'd', 'e', 'e']) bad.add(v);
  const saved = bad.save();
  assert.throws(() => TopKSketch.load({ ...saved, values: ['a', 'a', 'b', 'c'] }));
  assert.throws(() => TopKSketch.load({ ...saved, counts: new Float64Array([9, 1, 1, 1]) }), /heap/);
});

test('bytes grow with held values and stop at the capacity', () => {
  const s = new TopKSketch(64);
  assert.ok(s.bytes() < 100);
  // Same-length strings, so that only the structure can grow.
  for (let i = 0; i < 64; i++) s.add('value-' + (100 + i));
  assert.ok(s.isExact());
  const full = s.bytes();
  for (let i = 0; i < 10_000; i++) s.add('value-' + (100 + (i % 900)));
  assert.ok(!s.isExact());
  // Leaving exact mode adds only the error array (64 doubles and one typed-array overhead).
  assert.ok(s.bytes() <= full + 64 * 8 + 200, `${s.bytes()} vs ${full}`);
});
