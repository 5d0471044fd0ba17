/**
 * Latency histogram in integer microseconds: exact below 128 us, then 64
 * sub-buckets per power of two (under 1.6% error), like HdrHistogram with two
 * significant digits. Fixed size, no allocation per record, mergeable across
 * processes (counts travel as a plain array).
 */

const SUB_BITS = 7;
const SUB_COUNT = 1 << SUB_BITS; // 128 exact buckets
const HALF_SUB = SUB_COUNT >> 1; // 64 sub-buckets per doubling above that
/** Highest recordable value is 2^31 - 1 us (~36 min); larger values clamp. */
const MSB_MAX = 30;
const BUCKETS = SUB_COUNT + (MSB_MAX - SUB_BITS + 1) * HALF_SUB;
const VALUE_MAX_US = 2 ** 31 - 1;

function indexOf(v: number): number {
  if (v < SUB_COUNT) return v;
  const msb = 31 - Math.clz32(v);
  const shift = msb - (SUB_BITS - 1);
  return SUB_COUNT + (msb - SUB_BITS) * HALF_SUB + ((v >>> shift) - HALF_SUB);
}

/** The highest value that lands in bucket i (reports are conservative). */
function highestOf(i: number): number {
  if (i < SUB_COUNT) return i;
  const j = i - SUB_COUNT;
  const msb = SUB_BITS + Math.floor(j / HALF_SUB);
  const shift = msb - (SUB_BITS - 1);
  const lower = ((j % HALF_SUB) + HALF_SUB) << shift;
  return lower + (1 << shift) - 1;
}

export interface HistSummary {
  count: number;
  /** microseconds */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export class Histogram {
  readonly counts: Float64Array;
  count: number;
  max: number;
  sum: number;

  constructor() {
    this.counts = new Float64Array(BUCKETS);
    this.count = 0;
    this.max = 0;
    this.sum = 0;
  }

  /** Records one value in microseconds (fractions are rounded). */
  record(us: number): void {
    let v = Math.round(us);
    if (!(v >= 0)) v = 0;
    if (v > VALUE_MAX_US) v = VALUE_MAX_US;
    this.counts[indexOf(v)]++;
    this.count++;
    this.sum += v;
    if (v > this.max) this.max = v;
  }

  /** Value at quantile q in [0, 1], in microseconds; 0 when empty. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const target = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= target) return Math.min(highestOf(i), this.max);
    }
    return this.max;
  }

  merge(o: Histogram | HistJson): void {
    const c = o.counts;
    for (let i = 0; i < BUCKETS; i++) this.counts[i] += c[i];
    this.count += o.count;
    this.sum += o.sum;
    if (o.max > this.max) this.max = o.max;
  }

  summary(): HistSummary {
    return {
      count: this.count,
      p50: this.quantile(0.5),
      p99: this.quantile(0.99),
      p999: this.quantile(0.999),
      max: this.max,
      mean: this.count === 0 ? 0 : this.sum / this.count,
    };
  }

  toJSON(): HistJson {
    return { counts: Array.from(this.counts), count: this.count, max: this.max, sum: this.sum };
  }

  static from(j: HistJson): Histogram {
    const h = new Histogram();
    h.merge(j);
    return h;
  }
}

/** A histogram as it crosses process boundaries (IPC is JSON). */
export interface HistJson {
  counts: ArrayLike<number>;
  count: number;
  max: number;
  sum: number;
}
