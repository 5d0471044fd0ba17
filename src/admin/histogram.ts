/**
 * A fixed-bucket latency histogram that any thread can own: observe() is a
 * bucket scan and three field increments (no allocation), and the state is plain
 * numbers, so a shard sends it to the front inside its stats as a HistogramData.
 */

/** Latency buckets, seconds: 50 us .. 2.5 s, covering an in-memory get and a stalled fsync. */
export const LATENCY_BUCKETS_S: readonly number[] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** Structured-cloneable histogram state: per-bucket (not cumulative) counts, the last one for +Inf. */
export interface HistogramData {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram {
  readonly counts = new Float64Array(LATENCY_BUCKETS_S.length + 1);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS_S.length && seconds > LATENCY_BUCKETS_S[i]) i++;
    this.counts[i]++;
    this.sum += seconds;
    this.count++;
  }

  data(): HistogramData {
    return { counts: Array.from(this.counts), sum: this.sum, count: this.count };
  }
}

export function emptyHistogram(): HistogramData {
  return { counts: new Array<number>(LATENCY_BUCKETS_S.length + 1).fill(0), sum: 0, count: 0 };
}

/** Sum of several histograms (e.g. every shard's fsync latency). */
export function mergeHistograms(parts: readonly HistogramData[]): HistogramData {
  const out = emptyHistogram();
  for (const p of parts) {
    for (let i = 0; i < out.counts.length; i++) out.counts[i] += p.counts[i] ?? 0;
    out.sum += p.sum;
    out.count += p.count;
  }
  return out;
}

/** b - a: what was observed between two readings of the same histogram. */
export function diffHistograms(b: HistogramData, a: HistogramData | undefined): HistogramData {
  if (a === undefined || a.count > b.count) return b; // no baseline, or reset since
  return { counts: b.counts.map((c, i) => c - (a.counts[i] ?? 0)), sum: b.sum - a.sum, count: b.count - a.count };
}

/**
 * The q-quantile (0..1) estimated from the buckets, interpolating linearly inside
 * the bucket that holds it (what Prometheus' histogram_quantile does); null when
 * empty. Observations above the last bound are reported as that bound.
 */
export function histogramQuantile(h: HistogramData, q: number): number | null {
  if (h.count <= 0) return null;
  const rank = q * h.count;
  let cum = 0;
  for (let i = 0; i < h.counts.length; i++) {
    const c = h.counts[i];
    if (c > 0 && cum + c >= rank) {
      if (i >= LATENCY_BUCKETS_S.length) return LATENCY_BUCKETS_S[LATENCY_BUCKETS_S.length - 1];
      const lo = i === 0 ? 0 : LATENCY_BUCKETS_S[i - 1];
      const hi = LATENCY_BUCKETS_S[i];
      return lo + (hi - lo) * Math.max(0, Math.min(1, (rank - cum) / c));
    }
    cum += c;
  }
  return LATENCY_BUCKETS_S[LATENCY_BUCKETS_S.length - 1];
}
