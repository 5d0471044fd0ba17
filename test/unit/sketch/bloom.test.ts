import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BloomFilter, bloomGeometry, BLOOM_DEFAULT_GEOMETRY, BLOOM_BITS_MAX } from '../../../src/ops/sketch';
import { SfError } from '../../../src/errors';
import { Prng } from './prng';

test('geometry follows m = ceil(-n ln p / ln^2 2), k = round(m/n ln 2)', () => {
  assert.deepEqual(
    { ...BLOOM_DEFAULT_GEOMETRY },
    { capacity: 1024, fpr: 0.01, bits: 9816, hashes: 7, exactMax: 153 },
  );
  for (const [n, p] of [
    [1, 0.5],
    [10, 0.1],
    [1000, 0.001],
    [100_000, 1e-6],
  ]) {
    const g = bloomGeometry(n, p);
    assert.equal(g.bits, Math.ceil((-n * Math.log(p)) / (Math.LN2 * Math.LN2)));
    assert.equal(g.hashes, Math.max(1, Math.round((g.bits / n) * Math.LN2)));
    assert.equal(g.exactMax, Math.floor(g.bits / 64));
  }
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e instanceof SfError ? e.code : 'not an SfError';
    }
    return 'no error';
  };
  assert.equal(code(() => bloomGeometry(100, 0)), 'invalid_bloom_fpr');
  assert.equal(code(() => bloomGeometry(100, 1)), 'invalid_bloom_fpr');
  assert.equal(code(() => bloomGeometry(100, NaN)), 'invalid_bloom_fpr');
  assert.equal(code(() => bloomGeometry(0, 0.01)), 'aggregation_invalid_param');
  assert.equal(code(() => bloomGeometry(1.5, 0.01)), 'aggregation_invalid_param');
  assert.equal(code(() => bloomGeometry(10_000_000, 1e-9)), 'aggregation_invalid_param');
  assert.ok(bloomGeometry(1_000_000, 0.01).bits <= BLOOM_BITS_MAX);
});

function measure(capacity: number, fpr: number, seed: number): void {
  const g = bloomGeometry(capacity, fpr);
  const rng = new Prng(seed);
  const f = new BloomFilter(g);
  const members: (string | number)[] = [];
  for (let i = 0; i < capacity; i++) {
    const v = i % 2 === 0 ? `member-${rng.int(1e9)}-${i}` : i * 1.5 + 0.25;
    members.push(v);
    f.add(v);
  }
  assert.ok(!f.isExact());
  for (const v of members) assert.ok(f.has(v), `seed ${seed}: false negative for ${v}`);
  const trials = 100_000;
  let fp = 0;
  for (let i = 0; i < trials; i++) {
    const v = i % 2 === 0 ? `other-${i}` : -i - 0.5;
    if (f.has(v)) fp++;
  }
  const rate = fp / trials;
  const slack = 3 * Math.sqrt((fpr * (1 - fpr)) / trials);
  assert.ok(rate <= 1.5 * fpr + slack, `seed ${seed} n=${capacity} p=${fpr}: measured ${rate}`);
}

test('no false negatives; measured FPR <= 1.5 x target at p = 0.01 and 0.001', () => {
  measure(1024, 0.01, 1101);
  measure(1024, 0.001, 1102);
  measure(20_000, 0.01, 1103);
  measure(20_000, 0.001, 1104);
});

test('exact list first: exact answers, switch when it would outgrow the bits', () => {
  const g = BLOOM_DEFAULT_GEOMETRY;
  const f = new BloomFilter(g);
  assert.equal(f.has('x'), false);
  assert.ok(f.bytes() < 100, 'an unused filter costs only its object');
  for (let i = 0; i < g.exactMax; i++) {
    assert.equal(f.add(i), false, 'new values were absent');
    assert.equal(f.add(i), true, 'a repeated value was present');
  }
  assert.ok(f.isExact());
  assert.equal(f.insertedCount(), g.exactMax);
  for (let i = 0; i < 10_000; i++) assert.equal(f.has(-1 - i), false, 'no false positive in exact mode');
  assert.equal(f.has(String(3)), false, 'the string "3" is not the number 3');
  const exactBytes = f.bytes();
  f.add('one more');
  assert.ok(!f.isExact());
  const bitBytes = f.bytes();
  assert.ok(exactBytes <= bitBytes + 64, `exact ${exactBytes} vs bits ${bitBytes}`);
  for (let i = 0; i < g.exactMax; i++) assert.ok(f.has(i));
  assert.ok(f.has('one more'));
  // Tiny filters go straight to bits.
  const tiny = new BloomFilter(bloomGeometry(4, 0.1));
  assert.equal(tiny.add('a'), false);
  assert.ok(!tiny.isExact() && tiny.has('a'));
});

test('save/load roundtrip in both modes and merge', () => {
  const g = bloomGeometry(500, 0.01);
  const rng = new Prng(1201);
  for (const n of [0, 10, 70, 500, 2000]) {
    const f = new BloomFilter(g);
    const vals: string[] = [];
    for (let i = 0; i < n; i++) vals.push('v' + rng.int(1e9));
    for (const v of vals) f.add(v);
    const t = BloomFilter.load(structuredClone(f.save()));
    assert.deepEqual(t.save(), f.save(), `seed 1201 n=${n}`);
    assert.equal(t.isExact(), f.isExact());
    for (const v of vals) assert.ok(t.has(v));
    for (let i = 0; i < 2000; i++) assert.equal(t.has('q' + i), f.has('q' + i));
    const shared = BloomFilter.load(f.save(), g);
    assert.equal(shared.geometry, g, 'load can share the geometry');
  }
  for (const [na, nb] of [
    [10, 10],
    [60, 60],
    [10, 400],
    [400, 10],
    [300, 300],
  ]) {
    const a = new BloomFilter(g);
    const b = new BloomFilter(g);
    const all = new BloomFilter(g);
    for (let i = 0; i < na; i++) {
      a.add('a' + i);
      all.add('a' + i);
    }
    for (let i = 0; i < nb; i++) {
      b.add('b' + i);
      all.add('b' + i);
    }
    a.merge(b);
    for (let i = 0; i < na; i++) assert.ok(a.has('a' + i));
    for (let i = 0; i < nb; i++) assert.ok(a.has('b' + i));
    assert.deepEqual(a.save().words, all.save().words, `merge ${na}+${nb} equals the filter of the union`);
    assert.deepEqual(a.save().list, all.save().list);
  }
  assert.throws(() => BloomFilter.load({ ...new BloomFilter(g).save(), bits: 7 }));
});
