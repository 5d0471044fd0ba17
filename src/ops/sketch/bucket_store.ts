/**
 * A dense, growable array of bucket counts for one sign of a DDSketch, capped at
 * `bucketsMax` buckets with collapsing at one end.
 *
 *   counts[j] = count of bucket index (offset + j)
 *   [offset ......... lo ======== hi ......... offset + counts.length)
 *                     ^ lowest and highest non-empty bucket
 *
 * The array covers [lo, hi] plus up to STORE_CHUNK spare buckets and is reallocated
 * (in steps of STORE_CHUNK) only when a new index falls outside. When hi - lo + 1
 * would pass bucketsMax, the buckets at the collapsing end are summed into the last
 * kept one: `collapseLow` keeps [hi - bucketsMax + 1, hi], otherwise [lo, lo +
 * bucketsMax - 1] is kept.
 *
 * The final counts depend only on the multiset of indices added, not on their
 * order (everything beyond the final cut ends in the cut bucket), so a merge of two
 * stores equals the store of the union.
 */
import { strict as assert } from 'node:assert';
import { TYPED_ARRAY_OVERHEAD_BYTES, objectBytes } from './hash_list';

/** Growth step of the counts array, in buckets (256 bytes). */
const STORE_CHUNK = 32;

export class BucketStore {
  counts: Float64Array | null;
  /** Bucket index of counts[0]. */
  offset: number;
  lo: number;
  hi: number;
  total: number;
  readonly collapseLow: boolean;
  readonly bucketsMax: number;

  constructor(collapseLow: boolean, bucketsMax: number) {
    assert(Number.isInteger(bucketsMax) && bucketsMax >= 1, 'bucketsMax is a positive integer');
    this.counts = null;
    this.offset = 0;
    this.lo = 0;
    this.hi = 0;
    this.total = 0;
    this.collapseLow = collapseLow;
    this.bucketsMax = bucketsMax;
  }

  add(i: number, c: number): void {
    if (i >= this.lo && i <= this.hi && this.total !== 0) {
      // Fast path: inside the current range.
      this.counts![i - this.offset] += c;
      this.total += c;
      return;
    }
    if (this.total === 0) {
      this.cover(i, i);
      this.lo = i;
      this.hi = i;
    } else {
      i = this.extend(i);
    }
    this.counts![i - this.offset] += c;
    this.total += c;
  }

  /**
   * Widens [lo, hi] to take index `i`, collapsing past bucketsMax. Returns the
   * index that receives the count (i itself, or the cut bucket).
   */
  private extend(i: number): number {
    let newLo = i < this.lo ? i : this.lo;
    let newHi = i > this.hi ? i : this.hi;
    if (newHi - newLo + 1 > this.bucketsMax) {
      if (this.collapseLow) {
        newLo = newHi - this.bucketsMax + 1;
        if (i < newLo) i = newLo;
      } else {
        newHi = newLo + this.bucketsMax - 1;
        if (i > newHi) i = newHi;
      }
    }
    const folded = this.foldOutside(newLo, newHi);
    this.cover(newLo, newHi);
    this.lo = newLo;
    this.hi = newHi;
    if (folded > 0) this.counts![(this.collapseLow ? newLo : newHi) - this.offset] += folded;
    return i;
  }

  /** Zeroes the counts outside [newLo, newHi] and returns their sum. */
  private foldOutside(newLo: number, newHi: number): number {
    const a = this.counts!;
    let sum = 0;
    for (let j = this.lo; j < newLo && j <= this.hi; j++) {
      sum += a[j - this.offset];
      a[j - this.offset] = 0;
    }
    for (let j = this.hi; j > newHi && j >= this.lo; j--) {
      sum += a[j - this.offset];
      a[j - this.offset] = 0;
    }
    return sum;
  }

  /** Makes the array cover [from, to], keeping the counts it holds there. */
  private cover(from: number, to: number): void {
    const old = this.counts;
    if (old !== null && from >= this.offset && to < this.offset + old.length) return;
    const span = to - from + 1;
    const len = Math.ceil(span / STORE_CHUNK) * STORE_CHUNK + STORE_CHUNK;
    // Spare room goes on the side we grow towards; a first array is centred.
    let offset: number;
    if (old === null) offset = from - ((len - span) >> 1);
    else if (to >= this.offset + old.length) offset = from;
    else offset = to - len + 1;
    const next = new Float64Array(len);
    if (old !== null) {
      const a = Math.max(this.offset, offset);
      const b = Math.min(this.offset + old.length, offset + len);
      if (a < b) next.set(old.subarray(a - this.offset, b - this.offset), a - offset);
    }
    this.counts = next;
    this.offset = offset;
  }

  /** Bucket index holding the r-th smallest index (0-based, r < total). */
  indexAtRank(r: number): number {
    const a = this.counts!;
    let cum = 0;
    for (let j = this.lo; j < this.hi; j++) {
      cum += a[j - this.offset];
      if (cum > r) return j;
    }
    return this.hi;
  }

  /** Bucket index holding the r-th largest index (0-based, r < total). */
  indexAtRankDesc(r: number): number {
    const a = this.counts!;
    let cum = 0;
    for (let j = this.hi; j > this.lo; j--) {
      cum += a[j - this.offset];
      if (cum > r) return j;
    }
    return this.lo;
  }

  /** Adds every bucket of `other`, starting from the end that is never collapsed. */
  merge(other: BucketStore): void {
    if (other.total === 0) return;
    const a = other.counts!;
    if (this.collapseLow) {
      for (let j = other.hi; j >= other.lo; j--) if (a[j - other.offset] !== 0) this.add(j, a[j - other.offset]);
    } else {
      for (let j = other.lo; j <= other.hi; j++) if (a[j - other.offset] !== 0) this.add(j, a[j - other.offset]);
    }
  }

  /** Counts of lo..hi (a copy), or null when empty. */
  saveCounts(): Float64Array | null {
    if (this.total === 0) return null;
    return this.counts!.slice(this.lo - this.offset, this.hi - this.offset + 1);
  }

  /** Inverse of saveCounts: `counts[0]` is bucket `lo`. */
  loadCounts(lo: number, counts: Float64Array | null): void {
    if (counts === null) return;
    assert(counts instanceof Float64Array && counts.length >= 1 && counts.length <= this.bucketsMax, 'saved buckets');
    assert(Number.isSafeInteger(lo), 'saved bucket offset');
    let total = 0;
    for (let j = 0; j < counts.length; j++) {
      assert(counts[j] >= 0 && Number.isSafeInteger(counts[j]), 'saved bucket count');
      total += counts[j];
    }
    assert(counts[0] > 0 && counts[counts.length - 1] > 0, 'saved buckets end on non-empty ones');
    this.cover(lo, lo + counts.length - 1);
    this.counts!.set(counts, lo - this.offset);
    this.lo = lo;
    this.hi = lo + counts.length - 1;
    this.total = total;
  }

  bytes(): number {
    return objectBytes(7) + (this.counts === null ? 0 : TYPED_ARRAY_OVERHEAD_BYTES + this.counts.byteLength);
  }
}
