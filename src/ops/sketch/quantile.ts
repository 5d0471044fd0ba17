/**
 * Quantiles: exact while the sketch holds <= exactMax values (default 256), then a
 * DDSketch with relative accuracy alpha (default 1 %).
 *
 * Definition, both modes: with n values sorted ascending x_0 <= ... <= x_(n-1),
 *   pos = q * (n - 1), r = floor(pos), f = pos - r,
 *   quantile(q) = x_r + (x_(r+1) - x_r) * f       (just x_r when f = 0)
 * (linear interpolation between closest ranks; numpy's default "linear").
 * Exact mode computes it on the stored values, bit for bit.
 *
 * Sketch mode (DDSketch, Masson et al. 2019): gamma = (1 + alpha) / (1 - alpha);
 * a value x > 0 goes to bucket i = ceil(ln x / ln gamma), covering
 * (gamma^(i-1), gamma^i], represented by 2 gamma^i / (gamma + 1); negative values go
 * to a second store by |x|; zeros are counted apart. x_r is estimated as the
 * representative of the bucket holding rank r, clamped to the exact [min, max]
 * (rank 0 and rank n-1 return min and max exactly), then interpolated as above.
 *
 * Error bound (sketch mode): each estimated order statistic e_r satisfies
 * |e_r - x_r| <= alpha * |x_r| (up to float rounding, ~1e-12 relative), provided x_r
 * is not in a collapsed bucket and 1e-300 <= |x_r| <= 1e300. Hence the answer v'
 * for the true v = x_r + (x_(r+1) - x_r) f satisfies
 *   |v' - v| <= alpha * ((1 - f) |x_r| + f |x_(r+1)|),
 * which is alpha * |v| whenever x_r and x_(r+1) do not have opposite signs.
 *
 * Memory cap: each sign's store holds at most storeBucketsMax buckets (default
 * 1024 = 8 KiB of counts; with alpha = 1 % that spans a ratio gamma^1024 ~ 7.8e8
 * between the largest and smallest magnitude). Past it the buckets of the LOWEST
 * values are merged: for positives, the smallest ones; for negatives, the most
 * negative ones. High quantiles are never degraded by collapsing; a rank that lands
 * in the collapsed bucket gets that bucket's representative, clamped to [min, max].
 *
 * Non-finite inputs (NaN, +-Infinity) are ignored. Counts are exact integers up to
 * 2^53. Merge (same config) adds bucket counts; the result equals the sketch of the
 * union, bucket for bucket (see bucket_store.ts), and an exact + exact merge that
 * fits stays exact.
 */
import { strict as assert } from 'node:assert';
import { BucketStore } from './bucket_store';
import { TYPED_ARRAY_OVERHEAD_BYTES, objectBytes } from './hash_list';
import { QUANTILE_EXACT_MAX_DEFAULT, QUANTILE_STORE_BUCKETS_MAX_DEFAULT } from '../../limits';

export const QUANTILE_ALPHA_DEFAULT = 0.01;
const VALUES_CAPACITY_MIN = 8;
/** Exact-mode sorts up to this many values by insertion (no NaN here: add() drops them). */
const INSERTION_SORT_MAX = 64;
const SAVE_VERSION = 1;

/** Parameters shared by every sketch of one feature (built once, never per entity). */
export class QuantileConfig {
  readonly alpha: number;
  readonly exactMax: number;
  readonly storeBucketsMax: number;
  readonly gamma: number;
  readonly lnGamma: number;
  readonly invLnGamma: number;
  /** ln(2 / (1 + gamma)): representative = exp(i ln gamma + this). */
  readonly lnReprFactor: number;

  constructor(alpha: number, exactMax: number, storeBucketsMax: number) {
    assert(alpha > 0 && alpha < 1, 'alpha in (0,1)');
    assert(Number.isInteger(exactMax) && exactMax >= 0, 'exactMax is a non-negative integer');
    assert(Number.isInteger(storeBucketsMax) && storeBucketsMax >= 1, 'storeBucketsMax is a positive integer');
    this.alpha = alpha;
    this.exactMax = exactMax;
    this.storeBucketsMax = storeBucketsMax;
    this.gamma = (1 + alpha) / (1 - alpha);
    this.lnGamma = Math.log(this.gamma);
    this.invLnGamma = 1 / this.lnGamma;
    this.lnReprFactor = Math.log(2 / (1 + this.gamma));
    Object.freeze(this);
  }

  index(x: number): number {
    return Math.ceil(Math.log(x) * this.invLnGamma);
  }

  repr(i: number): number {
    return Math.exp(i * this.lnGamma + this.lnReprFactor);
  }
}

export const QUANTILE_DEFAULT_CONFIG = new QuantileConfig(
  QUANTILE_ALPHA_DEFAULT,
  QUANTILE_EXACT_MAX_DEFAULT,
  QUANTILE_STORE_BUCKETS_MAX_DEFAULT,
);

export interface QuantileSaved {
  kind: 'quantile';
  v: number;
  alpha: number;
  exactMax: number;
  storeBucketsMax: number;
  n: number;
  min: number;
  max: number;
  /** Exact mode: the values (any order). Null in sketch mode. */
  values: Float64Array | null;
  zero: number;
  posLo: number;
  pos: Float64Array | null;
  negLo: number;
  neg: Float64Array | null;
}

export class QuantileSketch {
  readonly config: QuantileConfig;
  private n: number;
  private min: number;
  private max: number;
  /** Exact mode values; `sorted` tells whether values[0..n) is ascending. */
  private values: Float64Array | null;
  private sorted: boolean;
  private sketch: boolean;
  private zero: number;
  /** Positive values by bucket; collapses its lowest buckets. */
  private pos: BucketStore | null;
  /** Negative values by bucket of |x|; collapses its highest (most negative) buckets. */
  private neg: BucketStore | null;

  constructor(config: QuantileConfig = QUANTILE_DEFAULT_CONFIG) {
    this.config = config;
    this.n = 0;
    this.min = Infinity;
    this.max = -Infinity;
    this.values = null;
    this.sorted = true;
    this.sketch = false;
    this.zero = 0;
    this.pos = null;
    this.neg = null;
  }

  /** Adds x; non-finite values are ignored. */
  add(x: number): void {
    if (!Number.isFinite(x)) return;
    if (x === 0) x = 0; // -0 as 0, so exact and sketch modes agree on it
    if (x < this.min) this.min = x;
    if (x > this.max) this.max = x;
    if (this.sketch) {
      this.sketchAdd(x, 1);
    } else if (this.n < this.config.exactMax) {
      this.exactAdd(x);
    } else {
      this.toSketch();
      this.sketchAdd(x, 1);
    }
    this.n++;
  }

  count(): number {
    return this.n;
  }

  isExact(): boolean {
    return !this.sketch;
  }

  /** The q-quantile (q in [0,1]) by the definition above; NaN when empty. */
  quantile(q: number): number {
    assert(q >= 0 && q <= 1, 'q in [0,1]');
    if (this.n === 0) return NaN;
    const pos = q * (this.n - 1);
    const r = Math.floor(pos);
    const f = pos - r;
    if (!this.sketch) {
      const a = this.sortedValues();
      return f === 0 ? a[r] : a[r] + (a[r + 1] - a[r]) * f;
    }
    const v0 = this.valueAtRank(r);
    if (f === 0) return v0;
    const v1 = this.valueAtRank(r + 1);
    return v0 + (v1 - v0) * f;
  }

  /** Back to the empty sketch, keeping the exact values' array (a reused read accumulator). */
  reset(): void {
    this.n = 0;
    this.min = Infinity;
    this.max = -Infinity;
    this.sorted = true;
    this.sketch = false;
    this.zero = 0;
    this.pos = null;
    this.neg = null;
  }

  /** Adds every value of `other` (same config; `other` is unchanged). */
  merge(other: QuantileSketch): void {
    assert(other !== this, 'merging a sketch into itself');
    assert(other.config.alpha === this.config.alpha, 'merging quantile sketches of one alpha');
    assert(other.config.storeBucketsMax === this.config.storeBucketsMax, 'merging sketches of one bucket cap');
    if (other.n === 0) return;
    if (!other.sketch) {
      const vals = other.values!;
      for (let i = 0; i < other.n; i++) this.add(vals[i]);
      return;
    }
    if (!this.sketch) this.toSketch();
    this.zero += other.zero;
    if (other.pos !== null) this.store(1).merge(other.pos);
    if (other.neg !== null) this.store(-1).merge(other.neg);
    this.n += other.n;
    if (other.min < this.min) this.min = other.min;
    if (other.max > this.max) this.max = other.max;
  }

  /** Approximate retained bytes. */
  bytes(): number {
    let b = objectBytes(10);
    if (this.values !== null) b += TYPED_ARRAY_OVERHEAD_BYTES + this.values.byteLength;
    if (this.pos !== null) b += this.pos.bytes();
    if (this.neg !== null) b += this.neg.bytes();
    return b;
  }

  save(): QuantileSaved {
    const c = this.config;
    return {
      kind: 'quantile',
      v: SAVE_VERSION,
      alpha: c.alpha,
      exactMax: c.exactMax,
      storeBucketsMax: c.storeBucketsMax,
      n: this.n,
      min: this.min,
      max: this.max,
      values: this.sketch ? null : this.values === null ? new Float64Array(0) : this.values.slice(0, this.n),
      zero: this.zero,
      posLo: this.pos === null ? 0 : this.pos.lo,
      pos: this.pos === null ? null : this.pos.saveCounts(),
      negLo: this.neg === null ? 0 : this.neg.lo,
      neg: this.neg === null ? null : this.neg.saveCounts(),
    };
  }

  /** Inverse of save(). Pass the feature's config to share it; else it is rebuilt from the data. */
  static load(data: unknown, config?: QuantileConfig): QuantileSketch {
    const d = data as QuantileSaved;
    assert(d !== null && typeof d === 'object' && d.kind === 'quantile', 'saved quantile state');
    assert(d.v === SAVE_VERSION, 'saved quantile version');
    let c = config;
    if (c === undefined) {
      const dc = QUANTILE_DEFAULT_CONFIG;
      const same = d.alpha === dc.alpha && d.exactMax === dc.exactMax && d.storeBucketsMax === dc.storeBucketsMax;
      c = same ? dc : new QuantileConfig(d.alpha, d.exactMax, d.storeBucketsMax);
    }
    assert(c.alpha === d.alpha && c.storeBucketsMax === d.storeBucketsMax, 'config matches the saved one');
    assert(c.exactMax === d.exactMax, 'exactMax matches the saved one');
    assert(Number.isSafeInteger(d.n) && d.n >= 0, 'saved count');
    const s = new QuantileSketch(c);
    s.n = d.n;
    s.min = d.min;
    s.max = d.max;
    if (d.values !== null) {
      assert(d.values instanceof Float64Array && d.values.length === d.n && d.n <= c.exactMax, 'saved values');
      if (d.n > 0) {
        s.values = new Float64Array(Math.max(VALUES_CAPACITY_MIN, d.n));
        s.values.set(d.values);
        s.sorted = false;
      }
      return s;
    }
    s.sketch = true;
    assert(Number.isSafeInteger(d.zero) && d.zero >= 0, 'saved zero count');
    s.zero = d.zero;
    if (d.pos !== null) s.store(1).loadCounts(d.posLo, d.pos);
    if (d.neg !== null) s.store(-1).loadCounts(d.negLo, d.neg);
    const total = s.zero + (s.pos === null ? 0 : s.pos.total) + (s.neg === null ? 0 : s.neg.total);
    assert(total === s.n, 'saved buckets add up to the count');
    return s;
  }

  clone(): QuantileSketch {
    return QuantileSketch.load(this.save(), this.config);
  }

  private exactAdd(x: number): void {
    let a = this.values;
    if (a === null || this.n === a.length) {
      const cap = a === null ? VALUES_CAPACITY_MIN : a.length * 2;
      const next = new Float64Array(Math.min(Math.max(cap, VALUES_CAPACITY_MIN), Math.max(this.config.exactMax, 1)));
      if (a !== null) next.set(a.subarray(0, this.n));
      a = this.values = next;
    }
    if (this.sorted && this.n > 0 && x < a[this.n - 1]) this.sorted = false;
    a[this.n] = x;
  }

  /** values[0..n) in ascending order (sorted in place once; the array may be longer than n). */
  private sortedValues(): Float64Array {
    const a = this.values!;
    const n = this.n;
    if (!this.sorted) {
      // Small windows are the common read (a fresh accumulator per /get): an insertion
      // sort in place avoids the subarray view and the builtin sort's setup.
      if (n <= INSERTION_SORT_MAX) {
        for (let i = 1; i < n; i++) {
          const x = a[i];
          let j = i - 1;
          while (j >= 0 && a[j] > x) {
            a[j + 1] = a[j];
            j--;
          }
          a[j + 1] = x;
        }
      } else {
        a.subarray(0, n).sort();
      }
      this.sorted = true;
    }
    return a;
  }

  /** Moves the exact values into buckets and frees them. */
  private toSketch(): void {
    this.sketch = true;
    const vals = this.values;
    if (vals !== null) for (let i = 0; i < this.n; i++) this.sketchAdd(vals[i], 1);
    this.values = null;
    this.sorted = true;
  }

  private store(sign: number): BucketStore {
    if (sign > 0) {
      if (this.pos === null) this.pos = new BucketStore(true, this.config.storeBucketsMax);
      return this.pos;
    }
    if (this.neg === null) this.neg = new BucketStore(false, this.config.storeBucketsMax);
    return this.neg;
  }

  private sketchAdd(x: number, c: number): void {
    if (x > 0) this.store(1).add(this.config.index(x), c);
    else if (x < 0) this.store(-1).add(this.config.index(-x), c);
    else this.zero += c;
  }

  /** Estimated x_r (0-based rank) in sketch mode, clamped to [min, max]. */
  private valueAtRank(r: number): number {
    if (r === 0) return this.min;
    if (r === this.n - 1) return this.max;
    let v: number;
    const negTotal = this.neg === null ? 0 : this.neg.total;
    if (r < negTotal) {
      // Ascending values are descending magnitudes in the negative store.
      v = -this.config.repr(this.neg!.indexAtRankDesc(r));
    } else if (r < negTotal + this.zero) {
      v = 0;
    } else {
      v = this.config.repr(this.pos!.indexAtRank(r - negTotal - this.zero));
    }
    return v < this.min ? this.min : v > this.max ? this.max : v;
  }
}
