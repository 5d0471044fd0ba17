/**
 * Sliding windows over arbitrary values and mergeable summaries (string min/max,
 * the sketch ops, the change-over-time summaries, point lists, count tables, geo
 * paths). Same scheme as num_window.ts:
 *
 *   ring: times[] + vals[] (+ aux[], a second numeric column such as the geo ops'
 *         longitude) of the newest RING_ENTRIES_MAX events (raw, exact)
 *   buckets: epochs[] + accs[] holding the events pushed out of the ring, one
 *            accumulator (an op-specific summary, e.g. a sketch) per bucket epoch
 *
 * A read builds a fresh accumulator from the buckets that overlap the window
 * and the live raw values. Error bound (only once more than VAL_RING_ENTRIES_MAX
 * events fell in the last window + bucketMs): the answer covers a suffix of the
 * event sequence holding every event of the window plus possibly the latest ones
 * at most bucketMs = ceil(window / buckets) older, on top of the accumulator's
 * own error (e.g. a sketch's). See num_window.ts for the argument.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { newDoubles } from './values';

import { VAL_RING_ENTRIES_MAX } from '../limits';
const RING_ENTRIES_MIN = 2;
const BUCKET_SLOTS_MIN = 2;

/** What a value window needs from its op: an accumulator type A with add/merge/result. */
export interface WindowAgg<A> {
  /** Accepts x (else the event is skipped): e.g. "a finite number" for quantile. */
  accepts(x: Value | undefined): x is string | number | boolean;
  empty(): A;
  /** Empties `a` for reuse (returns it, or a new empty accumulator). */
  clear(a: A): A;
  /**
   * Adds one value of an event at time t (times arrive non-decreasing; order-aware
   * accumulators such as trend or twa use t); returns the accumulator (possibly a
   * new one, e.g. a promoted sketch).
   */
  add(a: A, v: string | number | boolean, t: number, aux: number): A;
  /**
   * `add` ignores t (the sketches, counts, string extremes): the shared rings then
   * pass 0 rather than the entry's time, which as a double would be a new heap
   * number at each call (shard/columns/ring_group.ts).
   */
  readonly timeless?: boolean;
  /**
   * With ValWindowCfg.auxField (the geo ops' longitude): whether the second column's
   * value is usable; `add` then gets it as `aux` (0 for ops without one).
   */
  acceptsAux?(y: Value | undefined): y is number;
  /** Merges `from` (events all at or after those of `into`) into `into` without changing `from`; returns the result. */
  merge(into: A, from: A): A;
  result(a: A): JsonValue;
  save(a: A): unknown;
  load(saved: unknown): A;
}

export class ValWindowCfg<A> {
  readonly agg: WindowAgg<A>;
  readonly windowMs: number;
  readonly bucketMs: number;
  readonly bSlotsMax: number;
  /** Values are numbers (quantile): the value ring is a double array, unboxed. */
  readonly numeric: boolean;
  /** A second numeric column kept per event (geo: the longitude), or null. */
  readonly auxField: string | null;
  /**
   * The accumulator reads build, reused across reads of every entity of this feature
   * (reads are synchronous and consume it at once): a read then allocates no sketch,
   * which was most of a row read's garbage.
   */
  scratch: A | null;

  constructor(agg: WindowAgg<A>, windowMs: number, buckets: number, numeric: boolean, auxField: string | null = null) {
    this.agg = agg;
    this.windowMs = windowMs;
    this.bucketMs = Math.max(1, Math.ceil(windowMs / buckets));
    this.bSlotsMax = buckets + 1;
    this.numeric = numeric;
    this.auxField = auxField;
    this.scratch = null;
  }
}

const EMPTY_T: number[] = [];
const EMPTY_V: Array<string | number | boolean> = [];

/** The buckets of one hot entity (allocated on the first eviction, dropped when all expire). */
export class ValBuckets<A> {
  epochs: number[];
  /** Null in free slots, so an unused slot holds no sketch. */
  accs: Array<A | null>;
  head: number;
  len: number;
  /**
   * Merge of the closed buckets a read last used (every live bucket but the newest),
   * identified by their first and last epochs. Only the newest bucket ever receives
   * events (they arrive in time order), so the merge stays valid until a bucket
   * opens or expires: a read of a busy entity then merges two accumulators instead
   * of up to 64. Transient: not saved.
   */
  closed: A | null;
  closedFirst: number;
  closedLast: number;
  constructor(slots: number) {
    this.epochs = newDoubles(slots);
    this.accs = new Array<A | null>(slots).fill(null);
    this.head = 0;
    this.len = 0;
    this.closed = null;
    this.closedFirst = -1;
    this.closedLast = -1;
  }
  slot(j: number): number {
    const s = this.head + j;
    return s >= this.epochs.length ? s - this.epochs.length : s;
  }
  newest(): number {
    const last = this.head + this.len - 1;
    return last >= this.epochs.length ? last - this.epochs.length : last;
  }
  grow(slotsMax: number): void {
    const slots = this.epochs.length;
    const next = Math.min(slots * 2, slotsMax);
    const epochs = newDoubles(next);
    const accs = new Array<A | null>(next).fill(null);
    for (let k = 0; k < this.len; k++) {
      const from = (this.head + k) % slots;
      epochs[k] = this.epochs[from];
      accs[k] = this.accs[from];
    }
    this.epochs = epochs;
    this.accs = accs;
    this.head = 0;
  }
}

/**
 * A value window with a ring of its own, as an object per entity: for the geo
 * ops, whose events carry a second column (the longitude, `auxField`) that the
 * shared rings do not hold. Every other value window reads a shared ring
 * (shard/columns/ring_group.ts) with the same bucket part (below).
 */
export class ValWindowState<A> implements StoredState {
  readonly cfg: ValWindowCfg<A>;
  ts: number[];
  vs: Array<string | number | boolean>;
  /** The aux column's values, parallel to ts (empty when the op has none). */
  as: number[];
  head: number;
  len: number;
  b: ValBuckets<A> | null;

  constructor(cfg: ValWindowCfg<A>) {
    this.cfg = cfg;
    this.ts = EMPTY_T;
    this.vs = EMPTY_V;
    this.as = EMPTY_T;
    this.head = 0;
    this.len = 0;
    this.b = null;
  }

  update(x: Value | undefined, t: number, row: Row): void {
    const c = this.cfg;
    if (!c.agg.accepts(x)) return;
    let aux = 0;
    if (c.auxField !== null) {
      const y = row[c.auxField];
      if (c.agg.acceptsAux === undefined || !c.agg.acceptsAux(y)) return;
      aux = y;
    }
    this.expire(t - c.windowMs);
    let cap = this.ts.length;
    if (this.len === cap) {
      if (cap < VAL_RING_ENTRIES_MAX) cap = this.grow(cap);
      else this.evictOldest();
    }
    const i = (this.head + this.len) & (cap - 1);
    this.ts[i] = t;
    // An op without a field (inter_arrival_stats) accepts x = undefined: keep a 0 in its place.
    this.vs[i] = x === undefined ? 0 : x;
    if (c.auxField !== null) this.as[i] = aux;
    this.len++;
  }

  miss(_t: number): void {}

  /** The aux value at ring slot i (0 without an aux column). */
  private auxAt(i: number): number {
    return this.cfg.auxField === null ? 0 : this.as[i];
  }

  /** Drops expired raw values; one of the newest bucket's epoch joins it (see num_window.ts). */
  private expire(cutoff: number): void {
    const mask = this.ts.length - 1;
    while (this.len > 0 && this.ts[this.head] <= cutoff) {
      if (this.b !== null) valJoinNewest(this.b, this.cfg, this.vs[this.head], this.ts[this.head], this.auxAt(this.head));
      this.head = (this.head + 1) & mask;
      this.len--;
    }
    if (this.b !== null) this.b = valExpireBuckets(this.b, this.cfg, cutoff);
  }

  private grow(cap: number): number {
    const next = cap === 0 ? RING_ENTRIES_MIN : cap * 2;
    const ts = newDoubles(next);
    const vs: Array<string | number | boolean> = this.cfg.numeric ? newDoubles(next) : new Array(next).fill(0);
    const as = this.cfg.auxField === null ? EMPTY_T : newDoubles(next);
    for (let k = 0; k < this.len; k++) {
      const from = (this.head + k) & (cap - 1);
      ts[k] = this.ts[from];
      vs[k] = this.vs[from];
      if (as !== EMPTY_T) as[k] = this.as[from];
    }
    this.ts = ts;
    this.vs = vs;
    this.as = as;
    this.head = 0;
    return next;
  }

  private evictOldest(): void {
    const t = this.ts[this.head];
    const v = this.vs[this.head];
    const aux = this.auxAt(this.head);
    this.head = (this.head + 1) & (VAL_RING_ENTRIES_MAX - 1);
    this.len--;
    this.b = valFoldIntoBucket(this.b, this.cfg, v, t, aux);
  }

  /** The accumulator of the live window at `now` (the cfg's scratch: consume it before the next read; the state is unchanged). */
  accumulate(now: number): A {
    const c = this.cfg;
    const cutoff = now - c.windowMs;
    const mask = this.ts.length - 1;
    let k = 0;
    while (k < this.len && this.ts[(this.head + k) & mask] <= cutoff) k++;
    const scratch = valScratch(c);
    let acc = scratch;
    // Buckets only hold events older than the ring's: skip them when its oldest has expired.
    if (k === 0 && this.len > 0 && this.b !== null) acc = valMergeBuckets(this.b, c, cutoff, acc);
    for (; k < this.len; k++) {
      const i = (this.head + k) & mask;
      acc = c.agg.add(acc, this.vs[i], this.ts[i], this.auxAt(i));
    }
    valKeepScratch(c, acc, scratch);
    return acc;
  }

  read(now: number): JsonValue {
    return this.cfg.agg.result(this.accumulate(now));
  }

  /** Every raw value and bucket has left the window by `t` (and so for any later time): a fresh state. */
  emptyAt(t: number): boolean {
    const c = this.cfg;
    if (!(c.windowMs > 0)) return false;
    const cutoff = t - c.windowMs;
    // Any raw value, not only the newest: after a late event an older arrival is the latest.
    const mask = this.ts.length - 1;
    for (let k = 0; k < this.len; k++) if (this.ts[(this.head + k) & mask] > cutoff) return false;
    return this.b === null || valBucketsGoneAt(this.b, c, cutoff);
  }

  save(): unknown {
    const mask = this.ts.length - 1;
    const ts: number[] = [];
    const vs: Array<string | number | boolean> = [];
    const as: number[] = [];
    for (let k = 0; k < this.len; k++) {
      const i = (this.head + k) & mask;
      ts.push(this.ts[i]);
      vs.push(this.vs[i]);
      if (this.cfg.auxField !== null) as.push(this.as[i]);
    }
    const [be, ba] = valSaveBuckets(this.b, this.cfg);
    // The aux column only when the op has one: other ops keep their saved layout.
    return this.cfg.auxField === null ? [ts, vs, be, ba] : [ts, vs, be, ba, as];
  }

  restore(saved: unknown): void {
    const c = this.cfg;
    const [ts, vs, be, ba, as] = saved as [number[], Array<string | number | boolean>, number[], unknown[], number[]?];
    if (ts.length > 0) {
      let cap = RING_ENTRIES_MIN;
      while (cap < ts.length) cap *= 2;
      this.ts = newDoubles(cap);
      this.vs = c.numeric ? newDoubles(cap) : new Array(cap).fill(0);
      if (c.auxField !== null) this.as = newDoubles(cap);
      for (let k = 0; k < ts.length; k++) {
        this.ts[k] = ts[k];
        this.vs[k] = vs[k];
        if (c.auxField !== null) this.as[k] = as === undefined ? 0 : as[k];
      }
      this.head = 0;
      this.len = ts.length;
    }
    this.b = valLoadBuckets(be, ba, c);
  }
}

/*
 * The bucket part of a value window, shared by the shard's rings
 * (shard/columns/ring_group.ts) and ValWindowState (a ring of its own): the functions take the buckets
 * (null: none) and return them, since they are dropped once all have expired.
 */

/** The event's time as a double for the ...At forms when the caller holds it as a number. */
const EVENT_T = new Float64Array(1);

/** An expiring raw value of the newest bucket's epoch joins it. */
export function valJoinNewest<A>(b: ValBuckets<A>, c: ValWindowCfg<A>, v: string | number | boolean, t: number, aux: number): void {
  EVENT_T[0] = t;
  valJoinAt(b, c, v, EVENT_T, 0, t, aux);
}

/**
 * valJoinNewest of an event whose time is `times[ti]` (its bucket epoch) and that
 * the accumulator's add gets as `t` (0 for a timeless agg: the shared rings pass
 * their pool and the cell, no boxed time).
 */
export function valJoinAt<A>(b: ValBuckets<A>, c: ValWindowCfg<A>, v: string | number | boolean, times: Float64Array, ti: number, t: number, aux: number): void {
  const last = b.newest();
  if (b.epochs[last] === Math.floor(times[ti] / c.bucketMs)) b.accs[last] = c.agg.add(b.accs[last] as A, v, t, aux);
}

/** No bucket can reach a read whose window starts after `cutoff` (see numBucketsGoneAt). */
export function valBucketsGoneAt<A>(b: ValBuckets<A>, c: ValWindowCfg<A>, cutoff: number): boolean {
  return b.len === 0 || (b.epochs[b.newest()] + 1) * c.bucketMs <= cutoff;
}

/** When the oldest bucket stops counting: valExpireBuckets drops nothing for a cutoff below it. */
export function valOldestEnd<A>(b: ValBuckets<A>, c: ValWindowCfg<A>): number {
  return (b.epochs[b.head] + 1) * c.bucketMs;
}

/** Drops expired buckets; null once none is left. */
export function valExpireBuckets<A>(b: ValBuckets<A>, c: ValWindowCfg<A>, cutoff: number): ValBuckets<A> | null {
  const slots = b.epochs.length;
  while (b.len > 0 && (b.epochs[b.head] + 1) * c.bucketMs <= cutoff) {
    b.accs[b.head] = null;
    b.head = b.head + 1 === slots ? 0 : b.head + 1;
    b.len--;
  }
  return b.len === 0 ? null : b;
}

/** Folds a raw value pushed out of a full ring (still live) into its bucket. */
export function valFoldIntoBucket<A>(bIn: ValBuckets<A> | null, c: ValWindowCfg<A>, v: string | number | boolean, t: number, aux: number): ValBuckets<A> {
  EVENT_T[0] = t;
  return valFoldAt(bIn, c, v, EVENT_T, 0, t, aux);
}

/** valFoldIntoBucket of an event whose time is `times[ti]`, given to add as `t` (see valJoinAt). */
export function valFoldAt<A>(bIn: ValBuckets<A> | null, c: ValWindowCfg<A>, v: string | number | boolean, times: Float64Array, ti: number, t: number, aux: number): ValBuckets<A> {
  const e = Math.floor(times[ti] / c.bucketMs);
  let b = bIn;
  if (b === null) b = new ValBuckets<A>(BUCKET_SLOTS_MIN);
  else {
    const last = b.newest();
    if (b.epochs[last] === e) {
      b.accs[last] = c.agg.add(b.accs[last] as A, v, t, aux);
      return b;
    }
  }
  if (b.len === b.epochs.length) {
    if (b.epochs.length < c.bSlotsMax) b.grow(c.bSlotsMax);
    else {
      // Unreachable (the oldest slot has expired, see num_window.ts); bounds memory anyway.
      b.accs[b.head] = null;
      b.head = b.head + 1 === b.epochs.length ? 0 : b.head + 1;
      b.len--;
    }
  }
  const slots = b.epochs.length;
  let s = b.head + b.len;
  if (s >= slots) s -= slots;
  b.epochs[s] = e;
  b.accs[s] = c.agg.add(c.agg.empty(), v, t, aux);
  b.len++;
  return b;
}

/** The cfg's reusable read accumulator, emptied. */
export function valScratch<A>(c: ValWindowCfg<A>): A {
  return c.scratch === null ? c.agg.empty() : c.agg.clear(c.scratch);
}

/** After a read: keep only an accumulator the read owns (never a bucket's or the closed-merge cache). */
export function valKeepScratch<A>(c: ValWindowCfg<A>, acc: A, scratch: A): void {
  c.scratch = acc === scratch ? acc : null;
}

/** Merges the buckets overlapping the window (ending after `cutoff`) into `acc`. */
export function valMergeBuckets<A>(b: ValBuckets<A>, c: ValWindowCfg<A>, cutoff: number, accIn: A): A {
  let acc = accIn;
  // Buckets are in epoch order: the ones overlapping the window are a suffix [j0, len).
  let j0 = 0;
  while (j0 < b.len && (b.epochs[b.slot(j0)] + 1) * c.bucketMs <= cutoff) j0++;
  const newest = b.len - 1;
  if (j0 < newest) {
    const first = b.epochs[b.slot(j0)];
    const last = b.epochs[b.slot(newest - 1)];
    if (b.closed === null || b.closedFirst !== first || b.closedLast !== last) {
      let m = c.agg.empty();
      for (let j = j0; j < newest; j++) m = c.agg.merge(m, b.accs[b.slot(j)] as A);
      b.closed = m;
      b.closedFirst = first;
      b.closedLast = last;
    }
    acc = c.agg.merge(acc, b.closed);
  }
  if (j0 <= newest) acc = c.agg.merge(acc, b.accs[b.slot(newest)] as A);
  return acc;
}

/** The buckets as saved: epochs and saved accumulators, oldest first. */
export function valSaveBuckets<A>(b: ValBuckets<A> | null, c: ValWindowCfg<A>): [number[], unknown[]] {
  const be: number[] = [];
  const ba: unknown[] = [];
  if (b !== null) {
    for (let k = 0; k < b.len; k++) {
      const s = (b.head + k) % b.epochs.length;
      be.push(b.epochs[s]);
      ba.push(c.agg.save(b.accs[s] as A));
    }
  }
  return [be, ba];
}

/** Inverse of valSaveBuckets. */
export function valLoadBuckets<A>(be: readonly number[], ba: readonly unknown[], c: ValWindowCfg<A>): ValBuckets<A> | null {
  if (be.length === 0) return null;
  let slots = BUCKET_SLOTS_MIN;
  while (slots < be.length) slots = Math.min(slots * 2, c.bSlotsMax);
  const b = new ValBuckets<A>(slots);
  for (let k = 0; k < be.length; k++) {
    b.epochs[k] = be[k];
    b.accs[k] = c.agg.load(ba[k]);
  }
  b.len = be.length;
  return b;
}

/** A lifetime (`forever`) state over the same accumulator: one accumulator, made on first use. */
export class ValLifeState<A> implements StoredState {
  readonly agg: WindowAgg<A>;
  acc: A | null;
  constructor(agg: WindowAgg<A>) {
    this.agg = agg;
    this.acc = null;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!this.agg.accepts(x)) return;
    this.acc = this.agg.add(this.acc === null ? this.agg.empty() : this.acc, x === undefined ? 0 : x, t, 0);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.agg.result(this.acc === null ? this.agg.empty() : this.acc);
  }
  save(): unknown {
    return this.acc === null ? null : this.agg.save(this.acc);
  }
  restore(saved: unknown): void {
    if (isExactSave(saved)) {
      // The values a slab column kept (shard/columns/exact_column.ts), in arrival order.
      let acc: A | null = null;
      for (const v of saved.exactValues) acc = this.agg.add(acc === null ? this.agg.empty() : acc, v, 0, 0);
      this.acc = acc;
      return;
    }
    this.acc = saved === null ? null : this.agg.load(saved);
  }
}

/**
 * The save of a lifetime value op held as its accepted values (shard/columns/exact_column.ts):
 * replayed through the agg, they give the state back exactly (timeless aggs only).
 * No agg's own save is an object with this key.
 */
export interface ExactSave {
  exactValues: Array<string | number | boolean>;
}

export function isExactSave(saved: unknown): saved is ExactSave {
  return typeof saved === 'object' && saved !== null && Array.isArray((saved as ExactSave).exactValues);
}
