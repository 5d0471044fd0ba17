/**
 * Seeded random numbers for the sketch tests (mulberry32), plus the samplers they
 * need. Every test prints its seed in its assertion messages, so a failure can be
 * replayed.
 */

import { prng } from '../../harness/prng';
export class Prng {
  private readonly state: () => number;
  readonly seed: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.state = prng(this.seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.state();
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    let u = this.next();
    while (u === 0) u = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** A random string of 1..maxLen code units drawn from a small alphabet plus some non-ASCII. */
  string(maxLen: number): string {
    const len = 1 + this.int(maxLen);
    let s = '';
    for (let i = 0; i < len; i++) {
      const r = this.int(100);
      s += r < 90 ? String.fromCharCode(97 + this.int(26)) : String.fromCharCode(0x100 + this.int(0xd000));
    }
    return s;
  }
}

/** Zipf(s) sampler over ranks 0..n-1 by inverse CDF (binary search on the cumulative weights). */
export class Zipf {
  private readonly cdf: Float64Array;

  constructor(n: number, s: number) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      sum += 1 / Math.pow(i + 1, s);
      this.cdf[i] = sum;
    }
    for (let i = 0; i < n; i++) this.cdf[i] /= sum;
  }

  sample(rng: Prng): number {
    const u = rng.next();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
