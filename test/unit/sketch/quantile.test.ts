import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QuantileSketch, QuantileConfig, QUANTILE_DEFAULT_CONFIG } from '../../../src/ops/sketch';
import { Prng } from './prng';

const QS = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1];
const ALPHA = QUANTILE_DEFAULT_CONFIG.alpha;
/** Float slack on top of alpha: bucket boundaries are computed with logs. */
const EPS = 1e-9;

/** The reference definition: linear interpolation at pos = q (n - 1) over the sorted values. */
function refQuantile(sorted: Float64Array, q: number): { v: number; lo: number; hi: number; f: number } {
  const pos = q * (sorted.length - 1);
  const r = Math.floor(pos);
  const f = pos - r;
  if (f === 0) return { v: sorted[r], lo: sorted[r], hi: sorted[r], f };
  return { v: sorted[r] + (sorted[r + 1] - sorted[r]) * f, lo: sorted[r], hi: sorted[r + 1], f };
}

function sortedOf(xs: number[]): Float64Array {
  return Float64Array.from(xs).sort();
}

type Gen = (rng: Prng) => number;
const DISTRIBUTIONS: [string, Gen][] = [
  ['uniform', (r) => r.next() * 1000],
  ['lognormal', (r) => Math.exp(2 * r.normal())],
  ['normal with negatives', (r) => 100 * r.normal()],
  ['zeros and both signs', (r) => (r.next() < 0.3 ? 0 : (r.next() < 0.5 ? -1 : 1) * Math.exp(r.normal()))],
  ['small integers', (r) => r.int(50)],
  ['negative lognormal', (r) => -Math.exp(1.5 * r.normal())],
];

test('exact mode equals the sorted-array reference bit for bit', () => {
  const rng = new Prng(101);
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + rng.int(QUANTILE_DEFAULT_CONFIG.exactMax);
    const [, gen] = DISTRIBUTIONS[trial % DISTRIBUTIONS.length];
    const s = new QuantileSketch();
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const x = gen(rng);
      xs.push(x);
      s.add(x);
      if (i % 37 === 0) s.quantile(0.5); // queries in between must not disturb later answers
    }
    assert.ok(s.isExact());
    assert.equal(s.count(), n);
    const sorted = sortedOf(xs);
    for (const q of [...QS, rng.next()]) {
      assert.equal(s.quantile(q), refQuantile(sorted, q).v, `seed 101 trial ${trial} n=${n} q=${q}`);
    }
  }
  assert.ok(Number.isNaN(new QuantileSketch().quantile(0.5)), 'empty gives NaN');
});

function checkBound(s: QuantileSketch, sorted: Float64Array, q: number, label: string): void {
  const est = s.quantile(q);
  const { v, lo, hi, f } = refQuantile(sorted, q);
  const bound = ALPHA * ((1 - f) * Math.abs(lo) + f * Math.abs(hi)) + EPS * (Math.abs(lo) + Math.abs(hi));
  assert.ok(Math.abs(est - v) <= bound, `${label} q=${q}: est ${est} true ${v} bound ${bound}`);
  if (lo * hi >= 0) {
    assert.ok(Math.abs(est - v) <= ALPHA * Math.abs(v) + EPS * Math.abs(v), `${label} q=${q}: relative`);
  }
}

test('sketch mode: every quantile within alpha relative error, several distributions', () => {
  for (let d = 0; d < DISTRIBUTIONS.length; d++) {
    const [name, gen] = DISTRIBUTIONS[d];
    const seed = 200 + d;
    const rng = new Prng(seed);
    const s = new QuantileSketch();
    const xs: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const x = gen(rng);
      xs.push(x);
      s.add(x);
    }
    assert.ok(!s.isExact());
    assert.equal(s.count(), xs.length);
    const sorted = sortedOf(xs);
    for (const q of QS) checkBound(s, sorted, q, `seed ${seed} ${name}`);
    for (let i = 0; i < 200; i++) checkBound(s, sorted, rng.next(), `seed ${seed} ${name}`);
    // Right after the switch (exactMax + 1 values) the bound holds too.
    const t = new QuantileSketch();
    for (let i = 0; i <= QUANTILE_DEFAULT_CONFIG.exactMax; i++) t.add(xs[i]);
    assert.ok(!t.isExact());
    const head = sortedOf(xs.slice(0, QUANTILE_DEFAULT_CONFIG.exactMax + 1));
    for (const q of QS) checkBound(t, head, q, `seed ${seed} ${name} at the switch`);
  }
});

test('collapsing keeps the cap and only degrades the lowest values', () => {
  const cap = 100;
  const config = new QuantileConfig(ALPHA, 16, cap);
  for (const sign of [1, -1]) {
    const seed = sign > 0 ? 301 : 302;
    const rng = new Prng(seed);
    const s = new QuantileSketch(config);
    const xs: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const x = sign * Math.exp(0.5 * rng.normal());
      xs.push(x);
      s.add(x);
    }
    const saved = s.save();
    const buckets = sign > 0 ? saved.pos! : saved.neg!;
    assert.ok(buckets.length <= cap, `seed ${seed}: ${buckets.length} buckets`);
    const sorted = sortedOf(xs);
    // Magnitudes kept exactly: within cap - 1 buckets of the extreme that is never collapsed.
    const gamma = config.gamma;
    const top = sign > 0 ? sorted[sorted.length - 1] : -sorted[sorted.length - 1];
    const keptBelow = sign > 0 ? top / Math.pow(gamma, cap - 2) : 0;
    const keptAbove = sign > 0 ? Infinity : top * Math.pow(gamma, cap - 2);
    let checked = 0;
    for (let i = 0; i <= 1000; i++) {
      const q = i / 1000;
      const { lo, hi } = refQuantile(sorted, q);
      const est = s.quantile(q);
      assert.ok(est >= sorted[0] && est <= sorted[sorted.length - 1], `seed ${seed} q=${q}: clamped`);
      const inKept = (x: number) => Math.abs(x) > keptBelow && Math.abs(x) < keptAbove;
      if (inKept(lo) && inKept(hi)) {
        checkBound(s, sorted, q, `seed ${seed} collapsed sketch`);
        checked++;
      }
    }
    assert.ok(checked > 300 && checked < 1000, `seed ${seed}: ${checked} quantiles in the kept range`);
    checkBound(s, sorted, 0.99, `seed ${seed} top quantile`);
  }
});

test('merge equals the sketch of the union (exact and sketch modes, with collapsing)', () => {
  const configs = [QUANTILE_DEFAULT_CONFIG, new QuantileConfig(ALPHA, 16, 48)];
  for (let c = 0; c < configs.length; c++) {
    const config = configs[c];
    for (const [parts, n] of [
      [2, 100],
      [2, 200],
      [3, 5000],
      [8, 20_000],
    ] as const) {
      const seed = 400 + c * 10 + parts;
      const rng = new Prng(seed);
      const whole = new QuantileSketch(config);
      const pieces: QuantileSketch[] = [];
      for (let p = 0; p < parts; p++) pieces.push(new QuantileSketch(config));
      const xs: number[] = [];
      for (let i = 0; i < n; i++) {
        const x = rng.next() < 0.1 ? 0 : (rng.next() < 0.3 ? -1 : 1) * Math.exp(2.5 * rng.normal());
        xs.push(x);
        whole.add(x);
        pieces[rng.int(parts)].add(x);
      }
      const acc = new QuantileSketch(config);
      for (const p of pieces) acc.merge(p);
      assert.equal(acc.count(), whole.count());
      assert.equal(acc.isExact(), whole.isExact(), `seed ${seed}`);
      for (const q of QS) assert.equal(acc.quantile(q), whole.quantile(q), `seed ${seed} q=${q}`);
      if (!whole.isExact()) assert.deepEqual(acc.save(), whole.save(), `seed ${seed}: same buckets`);
      // Merging a sketch into an exact one and the reverse.
      const left = pieces[0].clone();
      for (let p = 1; p < parts; p++) left.merge(pieces[p]);
      for (const q of QS) assert.equal(left.quantile(q), whole.quantile(q), `seed ${seed} q=${q} (left fold)`);
    }
  }
});

test('save/load roundtrip: same answers, same future, structured-cloneable', () => {
  const rng = new Prng(501);
  for (const n of [0, 1, 100, 256, 257, 10_000]) {
    const s = new QuantileSketch();
    for (let i = 0; i < n; i++) s.add(rng.normal() * 50);
    const t = QuantileSketch.load(structuredClone(s.save()));
    assert.equal(t.count(), s.count());
    assert.equal(t.isExact(), s.isExact());
    for (const q of QS) assert.ok(Object.is(t.quantile(q), s.quantile(q)), `seed 501 n=${n} q=${q}`);
    for (let i = 0; i < 500; i++) {
      const x = rng.normal() * 1e6;
      s.add(x);
      t.add(x);
    }
    for (const q of QS) assert.equal(t.quantile(q), s.quantile(q), `seed 501 n=${n} q=${q} after more`);
  }
  const custom = new QuantileSketch(new QuantileConfig(0.02, 10, 100));
  for (let i = 0; i < 1000; i++) custom.add(i);
  const back = QuantileSketch.load(custom.save());
  assert.equal(back.config.alpha, 0.02);
  assert.equal(back.quantile(0.5), custom.quantile(0.5));
  assert.throws(() => QuantileSketch.load({ ...custom.save(), n: 5 }));
});

test('non-finite values are ignored and -0 counts as 0', () => {
  const s = new QuantileSketch();
  s.add(NaN);
  s.add(Infinity);
  s.add(-Infinity);
  assert.equal(s.count(), 0);
  s.add(-0);
  assert.ok(Object.is(s.quantile(0.5), 0));
});

test('bytes: small when empty and in exact mode, bounded at the cap', () => {
  const s = new QuantileSketch();
  assert.ok(s.bytes() < 150);
  for (let i = 0; i < 256; i++) s.add(i);
  assert.ok(s.bytes() < 2048 + 400, `exact ${s.bytes()}`);
  const rng = new Prng(601);
  for (let i = 0; i < 100_000; i++) s.add((rng.next() < 0.5 ? -1 : 1) * Math.exp(20 * rng.normal()));
  const cap = 2 * (QUANTILE_DEFAULT_CONFIG.storeBucketsMax + 64) * 8 + 600;
  assert.ok(s.bytes() <= cap, `full ${s.bytes()} <= ${cap}`);
});
