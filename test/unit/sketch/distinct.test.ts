import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DistinctSketch, DISTINCT_EXACT_MAX, HLL_STANDARD_ERROR } from '../../../src/ops/sketch';
import { Prng } from './prng';

const SIGMAS = 4;

function relErr(est: number, truth: number): number {
  return truth === 0 ? est : Math.abs(est - truth) / truth;
}

test('exact mode counts exactly up to the switch', () => {
  const rng = new Prng(11);
  const s = new DistinctSketch();
  const ref = new Set<string | number | boolean>();
  assert.equal(s.count(), 0);
  while (ref.size < DISTINCT_EXACT_MAX) {
    const r = rng.int(3);
    const v = r === 0 ? rng.int(400) : r === 1 ? 's' + rng.int(400) : rng.int(2) === 0;
    s.add(v);
    ref.add(v);
    assert.equal(s.count(), ref.size, `seed 11 at ${ref.size}`);
    assert.ok(s.isExact());
  }
  // "5" and 5 are different values.
  const t = new DistinctSketch();
  t.add('5');
  t.add(5);
  t.add(5);
  t.add(-0);
  t.add(0);
  assert.equal(t.count(), 3);
  s.add('a value never seen before');
  assert.ok(!s.isExact(), 'one more distinct value switches to HLL');
});

test('HLL relative error within 4 standard errors from 0 to 100k (strings and numbers)', () => {
  const checkpoints = new Set<number>([0, 1, 2, 10, 100, 511, 512, 513, 600, 1000, 2000, 3000, 5000, 8000, 10_000]);
  for (let c = 10_000; c <= 100_000; c += 5_000) checkpoints.add(c);
  for (let c = 513; c < 10_000; c += 331) checkpoints.add(c);
  for (const kind of ['string', 'number'] as const) {
    const seed = kind === 'string' ? 21 : 22;
    const rng = new Prng(seed);
    const s = new DistinctSketch();
    let worst = 0;
    for (let n = 0; n <= 100_000; n++) {
      if (checkpoints.has(n)) {
        const e = relErr(s.count(), n);
        worst = Math.max(worst, e);
        assert.ok(e <= SIGMAS * HLL_STANDARD_ERROR, `seed ${seed} ${kind}: n=${n} est=${s.count()}`);
      }
      // Each value is new; duplicates are re-added to check idempotence.
      const v = kind === 'string' ? `k${n}-${rng.int(1e9)}` : n * 7919 + 0.5;
      s.add(v);
      if (n % 10 === 0) s.add(v);
    }
    assert.ok(worst < 0.05, `worst relative error ${worst}`);
  }
});

test('many independent sketches: mean error near 0, spread near the standard error', () => {
  const rng = new Prng(31);
  const n = 20_000;
  const errs: number[] = [];
  for (let r = 0; r < 20; r++) {
    const s = new DistinctSketch();
    const salt = rng.int(1e9);
    for (let i = 0; i < n; i++) s.add(`${salt}:${i}`);
    errs.push((s.count() - n) / n);
  }
  const mean = errs.reduce((a, b) => a + b, 0) / errs.length;
  const sd = Math.sqrt(errs.reduce((a, b) => a + (b - mean) * (b - mean), 0) / (errs.length - 1));
  assert.ok(Math.abs(mean) < 2 * HLL_STANDARD_ERROR, `seed 31: mean relative error ${mean}`);
  assert.ok(sd < 2 * HLL_STANDARD_ERROR, `seed 31: sd of relative error ${sd}`);
});

function build(values: (string | number)[]): DistinctSketch {
  const s = new DistinctSketch();
  for (const v of values) s.add(v);
  return s;
}

test('merge equals the sketch of the union, register for register', () => {
  const rng = new Prng(41);
  const cases: [number, number, number][] = [
    // [only in a, only in b, in both]
    [0, 0, 0],
    [10, 0, 0],
    [0, 10, 5],
    [100, 100, 100],
    [300, 250, 0],
    [200, 5000, 100],
    [5000, 200, 100],
    [20_000, 30_000, 10_000],
  ];
  for (const [na, nb, nab] of cases) {
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < na; i++) a.push('a' + rng.int(1e12));
    for (let i = 0; i < nb; i++) b.push('b' + rng.int(1e12));
    for (let i = 0; i < nab; i++) {
      const v = 'c' + rng.int(1e12);
      a.push(v);
      b.push(v);
    }
    const sa = build(a);
    const sb = build(b);
    const sbBefore = sb.save();
    const union = build([...a, ...b]);
    sa.merge(sb);
    assert.equal(sa.count(), union.count(), `seed 41 case ${na},${nb},${nab}`);
    assert.equal(sa.isExact(), union.isExact());
    assert.deepEqual(sa.registers(), union.registers());
    assert.deepEqual(sa.save(), union.save());
    assert.deepEqual(sb.save(), sbBefore, 'merge leaves its argument unchanged');
  }
});

test('save/load roundtrip: same answers, same future, structured-cloneable', () => {
  const rng = new Prng(51);
  for (const n of [0, 1, 300, DISTINCT_EXACT_MAX, DISTINCT_EXACT_MAX + 1, 40_000]) {
    const s = new DistinctSketch();
    for (let i = 0; i < n; i++) s.add(rng.int(1e12));
    const saved = structuredClone(s.save());
    const t = DistinctSketch.load(saved);
    assert.equal(t.count(), s.count(), `seed 51 n=${n}`);
    assert.equal(t.isExact(), s.isExact());
    assert.deepEqual(t.save(), s.save());
    for (let i = 0; i < 1000; i++) {
      const v = 'more' + i;
      s.add(v);
      t.add(v);
    }
    assert.equal(t.count(), s.count());
    assert.deepEqual(t.registers(), s.registers());
    const c = s.clone();
    assert.deepEqual(c.save(), s.save());
  }
  assert.throws(() => DistinctSketch.load({ kind: 'n_unique', v: 1, p: 14, hashes: null, regs: null }));
  const unsorted = new Float64Array([3, 2]);
  assert.throws(() => DistinctSketch.load({ kind: 'n_unique', v: 1, p: 12, hashes: unsorted, regs: null }));
});

test('bytes: small when empty, never above the HLL size', () => {
  const s = new DistinctSketch();
  const empty = s.bytes();
  assert.ok(empty < 100, `empty ${empty}`);
  let prev = empty;
  let maxExact = 0;
  for (let i = 0; i < 5000; i++) {
    s.add(i);
    const b = s.bytes();
    if (s.isExact()) maxExact = Math.max(maxExact, b);
    assert.ok(b >= prev || !s.isExact());
    prev = b;
  }
  const hll = s.bytes();
  // The exact list may pass the registers by its own small object header, no more.
  assert.ok(maxExact <= hll + 64, `exact ${maxExact} <= hll ${hll} + 64`);
  assert.ok(hll < 4096 + 400, `hll ${hll}`);
});
