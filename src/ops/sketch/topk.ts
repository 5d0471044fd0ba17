/**
 * Most frequent values (top_k): exact counts while at most `capacity` distinct
 * values have been seen, then Space-Saving (Metwally, Agrawal, El Abbadi 2005)
 * with `capacity` counters.
 *
 * Capacity: C = max(64, 4k) by default (`topKCapacity(k)`), so k = 10 keeps 64
 * counters and k = 1024 keeps 4096. Memory starts at nothing and grows with the
 * number of distinct values up to C counters (values array + Float64Array counts
 * + a Map value -> slot; an error array is added only once counters are evicted).
 *
 * Guarantees after N adds without merges, once past the exact mode:
 *   - every reported count overestimates the true count, by at most its recorded
 *     error, which is at most the smallest counter, which is at most N / C;
 *   - any value whose true count exceeds N / C is held (so it is in top(C)).
 * In exact mode (isExact()) every count is exact.
 *
 * Merge (approximate, after Agarwal et al., "Mergeable summaries", 2012): a value
 * held by both summaries gets the sum of counts and errors; a value held by only
 * one gets, added to its count and error, the other summary's bound on any value it
 * does not hold (its smallest counter once past exact mode, else 0). The C largest
 * counts are kept. After merging two summaries of N_a and N_b adds: counts still
 * never underestimate; a value's overestimate is at most
 * N_a / C + N_b / C = N / C; any value with true count > 2N / C is held. Exact +
 * exact merges whose union fits in C stay exact. In a fold acc.merge(b1),
 * acc.merge(b2), ... counts never underestimate, and a value's overestimate is at
 * most the sum, over the steps, of the smallest counter of the side that did not
 * hold it (tests: 4-way folds of Zipf streams stayed within N / C). Adds after a
 * merge follow Space-Saving again; their errors are at most the smallest counter,
 * itself at most (sum of counts) / C <= 2N / C.
 *
 * Ordering of top(k): count descending, then value ascending where strings come
 * before numbers before booleans; strings compare by UTF-16 code units, numbers
 * numerically, false before true. NaN is ignored by add(); -0 is counted as 0.
 */
import { strict as assert } from 'node:assert';
import { TYPED_ARRAY_OVERHEAD_BYTES, objectBytes } from './hash_list';

export type TopValue = string | number | boolean;

export interface TopEntry {
  value: TopValue;
  count: number;
}

export const TOP_K_CAPACITY_MIN = 64;
export const TOP_K_CAPACITY_PER_K = 4;
const COUNTS_CAPACITY_MIN = 8;
/**
 * Rough V8 cost of one Map entry: key, value and chain words plus the bucket
 * array and the slack of a power-of-two table holding deleted entries (measured).
 */
const MAP_ENTRY_BYTES = 48;
/** Rough V8 cost of a string header (the characters are added, one byte each, word-aligned). */
const STRING_HEADER_BYTES = 16;
/** A number that is not a small integer is boxed in a HeapNumber. */
const HEAP_NUMBER_BYTES = 16;
const SAVE_VERSION = 1;

/** Counter count for a given k: max(64, 4k). */
export function topKCapacity(k: number): number {
  return Math.max(TOP_K_CAPACITY_MIN, TOP_K_CAPACITY_PER_K * k);
}

function typeRank(v: TopValue): number {
  return typeof v === 'string' ? 0 : typeof v === 'number' ? 1 : 2;
}

/** The value order of top(k) ties: strings < numbers < booleans, then natural order. */
export function compareTopValues(a: TopValue, b: TopValue): number {
  const ta = typeRank(a);
  const tb = typeRank(b);
  if (ta !== tb) return ta - tb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function valueBytes(v: TopValue): number {
  if (typeof v === 'string') return STRING_HEADER_BYTES + ((v.length + 7) & ~7);
  if (typeof v === 'number') return (v | 0) === v ? 0 : HEAP_NUMBER_BYTES;
  return 0;
}

export interface TopKSaved {
  kind: 'top_k';
  v: number;
  capacity: number;
  n: number;
  exact: boolean;
  /** Slot order (a min-heap by count once not exact). */
  values: TopValue[];
  counts: Float64Array;
  errs: Float64Array | null;
}

export class TopKSketch {
  readonly capacity: number;
  private n: number;
  private exact: boolean;
  private size: number;
  private values: TopValue[] | null;
  private counts: Float64Array | null;
  /** Per-slot overestimate bound; null while exact. */
  private errs: Float64Array | null;
  private index: Map<TopValue, number> | null;

  constructor(capacity: number) {
    assert(Number.isInteger(capacity) && capacity >= 1, 'top_k capacity is a positive integer');
    this.capacity = capacity;
    this.n = 0;
    this.exact = true;
    this.size = 0;
    this.values = null;
    this.counts = null;
    this.errs = null;
    this.index = null;
  }

  add(v: TopValue): void {
    if (typeof v === 'number') {
      if (v !== v) return;
      if (v === 0) v = 0;
    }
    this.n++;
    if (this.index !== null) {
      const i = this.index.get(v);
      if (i !== undefined) {
        this.counts![i]++;
        if (!this.exact) this.siftDown(i);
        return;
      }
    }
    if (this.size < this.capacity) {
      this.append(v, 1);
      return;
    }
    if (this.exact) this.toSpaceSaving();
    this.replaceMin(v);
  }

  /** Number of values added (NaN excluded). */
  count(): number {
    return this.n;
  }

  isExact(): boolean {
    return this.exact;
  }

  /** Largest recorded overestimate among held counts (0 while exact; <= N / C). */
  errorBound(): number {
    if (this.exact) return 0;
    let e = 0;
    const errs = this.errs!;
    for (let i = 0; i < this.size; i++) if (errs[i] > e) e = errs[i];
    return e;
  }

  /** The k most frequent values, count descending then value ascending. */
  top(k: number): TopEntry[] {
    const size = this.size;
    if (size === 0 || k <= 0) return [];
    const values = this.values!;
    const counts = this.counts!;
    const order = new Array<number>(size);
    for (let i = 0; i < size; i++) order[i] = i;
    order.sort((a, b) => counts[b] - counts[a] || compareTopValues(values[a], values[b]));
    const m = Math.min(k, size);
    const out = new Array<TopEntry>(m);
    for (let j = 0; j < m; j++) out[j] = { value: values[order[j]], count: counts[order[j]] };
    return out;
  }

  /** Back to the empty summary, keeping its arrays and index (a reused read accumulator). */
  reset(): void {
    this.n = 0;
    this.exact = true;
    this.size = 0;
    this.errs = null;
    if (this.values !== null) this.values.length = 0;
    this.index?.clear();
  }

  /** Merges `other` (same capacity) into this summary; `other` is unchanged. */
  merge(other: TopKSketch): void {
    assert(other !== this, 'merging a sketch into itself');
    assert(other.capacity === this.capacity, 'merging top_k summaries of one capacity');
    if (other.size === 0) return;
    const pad = TopKSketch.combine(this, other);
    this.n += other.n;
    const keep = pad.values.length <= this.capacity;
    const exact = keep && this.exact && other.exact;
    let order = pad.order;
    if (!keep) {
      order.sort((a, b) => pad.counts[b] - pad.counts[a] || compareTopValues(pad.values[a], pad.values[b]));
      order = order.slice(0, this.capacity);
    }
    this.rebuild(order, pad.values, pad.counts, exact ? null : pad.errs);
  }

  /** Approximate retained bytes (walks the held values). */
  bytes(): number {
    let b = objectBytes(8);
    if (this.counts !== null) b += TYPED_ARRAY_OVERHEAD_BYTES + this.counts.byteLength;
    if (this.errs !== null) b += TYPED_ARRAY_OVERHEAD_BYTES + this.errs.byteLength;
    if (this.values !== null) {
      b += objectBytes(2) + 8 * this.values.length;
      for (let i = 0; i < this.size; i++) b += valueBytes(this.values[i]);
    }
    if (this.index !== null) b += objectBytes(4) + MAP_ENTRY_BYTES * this.size;
    return b;
  }

  save(): TopKSaved {
    return {
      kind: 'top_k',
      v: SAVE_VERSION,
      capacity: this.capacity,
      n: this.n,
      exact: this.exact,
      values: this.values === null ? [] : this.values.slice(0, this.size),
      counts: this.counts === null ? new Float64Array(0) : this.counts.slice(0, this.size),
      errs: this.errs === null ? null : this.errs.slice(0, this.size),
    };
  }

  static load(data: unknown): TopKSketch {
    const d = data as TopKSaved;
    assert(d !== null && typeof d === 'object' && d.kind === 'top_k' && d.v === SAVE_VERSION, 'saved top_k state');
    assert(Number.isSafeInteger(d.n) && d.n >= 0, 'saved top_k count');
    const s = new TopKSketch(d.capacity);
    const size = d.values.length;
    assert(Array.isArray(d.values) && d.counts instanceof Float64Array && d.counts.length === size, 'saved slots');
    assert(size <= s.capacity, 'saved slots within capacity');
    assert(d.exact === (d.errs === null), 'saved errors exist exactly when not exact');
    assert(d.exact || size === s.capacity, 'an inexact summary is full');
    s.n = d.n;
    const order = new Array<number>(size);
    for (let i = 0; i < size; i++) order[i] = i;
    s.rebuild(order, d.values, d.counts, d.errs, false);
    assert(size === 0 || s.index!.size === size, 'saved values are distinct');
    for (let i = 0; i < size; i++) {
      const t = typeof d.values[i];
      assert(t === 'string' || t === 'number' || t === 'boolean', 'saved value type');
      assert(d.counts[i] >= 1 && Number.isSafeInteger(d.counts[i]), 'saved counts');
      if (!d.exact) assert(i === 0 || d.counts[(i - 1) >> 1] <= d.counts[i], 'saved heap order');
    }
    return s;
  }

  clone(): TopKSketch {
    return TopKSketch.load(this.save());
  }

  private append(v: TopValue, c: number): void {
    if (this.index === null) {
      this.index = new Map();
      this.values = [];
    }
    let counts = this.counts;
    if (counts === null || this.size === counts.length) {
      const cap = counts === null ? COUNTS_CAPACITY_MIN : counts.length * 2;
      const next = new Float64Array(Math.min(Math.max(cap, COUNTS_CAPACITY_MIN), this.capacity));
      if (counts !== null) next.set(counts.subarray(0, this.size));
      counts = this.counts = next;
    }
    this.values!.push(v);
    counts[this.size] = c;
    this.index.set(v, this.size);
    this.size++;
  }

  /** Leaves exact mode: allocates the error array and heap-orders the slots by count. */
  private toSpaceSaving(): void {
    this.exact = false;
    this.errs = new Float64Array(this.counts!.length);
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** Space-Saving replacement: the smallest counter takes the new value. */
  private replaceMin(v: TopValue): void {
    const values = this.values!;
    const m = this.counts![0];
    this.index!.delete(values[0]);
    values[0] = v;
    this.counts![0] = m + 1;
    this.errs![0] = m;
    this.index!.set(v, 0);
    this.siftDown(0);
  }

  /** Min-heap sift-down by count; keeps the Map of slots in step. */
  private siftDown(i: number): void {
    const values = this.values!;
    const counts = this.counts!;
    const errs = this.errs!;
    const index = this.index!;
    const size = this.size;
    const v = values[i];
    const c = counts[i];
    const e = errs[i];
    let moved = false;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const r = l + 1;
      const child = r < size && counts[r] < counts[l] ? r : l;
      if (counts[child] >= c) break;
      values[i] = values[child];
      counts[i] = counts[child];
      errs[i] = errs[child];
      index.set(values[i], i);
      i = child;
      moved = true;
    }
    if (!moved) return;
    values[i] = v;
    counts[i] = c;
    errs[i] = e;
    index.set(v, i);
  }

  /** Replaces every slot with `order`-selected entries of the given arrays. */
  private rebuild(
    order: number[],
    values: TopValue[],
    counts: Float64Array,
    errs: Float64Array | null,
    heapify = true,
  ): void {
    const size = order.length;
    this.size = 0;
    this.values = null;
    this.counts = null;
    this.errs = null;
    this.index = null;
    this.exact = errs === null;
    if (size === 0) return;
    const cap = this.exact ? Math.min(this.capacity, Math.max(COUNTS_CAPACITY_MIN, size)) : this.capacity;
    const nv = new Array<TopValue>(size);
    const nc = new Float64Array(cap);
    const ne = errs === null ? null : new Float64Array(cap);
    const index = new Map<TopValue, number>();
    for (let j = 0; j < size; j++) {
      const i = order[j];
      nv[j] = values[i];
      nc[j] = counts[i];
      if (ne !== null) ne[j] = errs![i];
      index.set(values[i], j);
    }
    this.values = nv;
    this.counts = nc;
    this.errs = ne;
    this.index = index;
    this.size = size;
    if (!this.exact && heapify) for (let i = (size >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** Union of the counters of a and b with the padding of the merge rule above. */
  private static combine(a: TopKSketch, b: TopKSketch): Combined {
    const ua = a.unheldBound();
    const ub = b.unheldBound();
    const total = a.size + b.size;
    const values: TopValue[] = [];
    const counts = new Float64Array(total);
    const errs = new Float64Array(total);
    const av = a.values === null ? [] : a.values;
    const bv = b.values!;
    const bc = b.counts!;
    const taken = new Uint8Array(b.size);
    for (let i = 0; i < a.size; i++) {
      const v = av[i];
      const j = b.index!.get(v);
      const k = values.length;
      values.push(v);
      if (j === undefined) {
        counts[k] = a.counts![i] + ub;
        errs[k] = (a.errs === null ? 0 : a.errs[i]) + ub;
      } else {
        counts[k] = a.counts![i] + bc[j];
        errs[k] = (a.errs === null ? 0 : a.errs[i]) + (b.errs === null ? 0 : b.errs[j]);
        taken[j] = 1;
      }
    }
    for (let j = 0; j < b.size; j++) {
      if (taken[j] === 1) continue;
      const k = values.length;
      values.push(bv[j]);
      counts[k] = bc[j] + ua;
      errs[k] = (b.errs === null ? 0 : b.errs[j]) + ua;
    }
    const order = new Array<number>(values.length);
    for (let i = 0; i < values.length; i++) order[i] = i;
    return { values, counts: counts.subarray(0, values.length), errs: errs.subarray(0, values.length), order };
  }

  /** Bound on the true count of any value this summary does not hold: 0 while exact, else the smallest counter. */
  private unheldBound(): number {
    return this.exact || this.size === 0 ? 0 : this.counts![0];
  }
}

interface Combined {
  values: TopValue[];
  counts: Float64Array;
  errs: Float64Array;
  order: number[];
}
