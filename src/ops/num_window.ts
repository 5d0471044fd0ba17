/**
 * Sliding windows for the numeric ops (count, sum, mean, min, max, var, std,
 * rate, velocity, z_score, ratio): one class, the op chosen by `cfg.kind`, so
 * every state of every numeric windowed feature has the same shape.
 *
 *   ring (newest RING_ENTRIES_MAX events, raw)          buckets (events pushed out of the ring)
 *   buf: [t0 x0 | t1 x1 | ... ]  head -> oldest          bk: [e n sum | e n sum | ... ]  bHead -> oldest
 *        ^ power-of-two capacity, grows 2,4,..,64             ^ one slot per bucket epoch e = floor(t / bucketMs),
 *                                                               at most NUM_BUCKETS_PER_WINDOW + 1 live ones
 *
 * Why this shape: the peer folds every event into 64 fixed buckets, so a 5-minute
 * window moves in ~4.7 s steps even for an entity with three events. Here an
 * entity whose window holds at most RING_ENTRIES_MAX events is answered exactly
 * from raw (t, x) pairs. Only when more live events arrive does the oldest raw
 * event move into a bucket of width bucketMs = ceil(window / NUM_BUCKETS_PER_WINDOW).
 * A read then uses the ring (exact) plus the buckets that overlap the window, so
 * the answer is the exact aggregate of a suffix of the event sequence that holds
 * every event of the window plus, possibly, the latest events before it that are
 * at most bucketMs older than the window start: no event inside the window is
 * ever missed, and only events of the one straddling bucket can be extra. If
 * the ring's oldest event is already outside the window, every bucketed event
 * (older still) is too, and the answer is exact again. In particular the answer
 * is exact whenever at most RING_ENTRIES_MAX events fell in the last
 * window + bucketMs (an event is only bucketed when RING_ENTRIES_MAX newer events
 * arrived within one window of it).
 *
 * An event is inside the window at query time `now` iff now - t < window.
 * Times passed to update are non-decreasing; `read(now)` changes nothing.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { isNum, jsonNum, newDoubles } from './values';
import { NUM_BUCKETS_PER_WINDOW, RING_ENTRIES_MAX } from '../limits';

/** First ring allocation (entries); doubles up to RING_ENTRIES_MAX. */
const RING_ENTRIES_MIN = 2;
/** First bucket allocation (slots); grows by doubling to NUM_BUCKETS_PER_WINDOW + 1. */
const BUCKET_SLOTS_MIN = 4;

export const enum NumKind {
  Count = 0,
  Sum = 1,
  Mean = 2,
  Min = 3,
  Max = 4,
  Var = 5,
  Std = 6,
  Rate = 7,
  Velocity = 8,
  ZScore = 9,
  Ratio = 10,
}

/** What `update` needs from x. */
export const enum Input {
  /** Every matching event counts (count without field, ratio). */
  Event = 0,
  /** Events whose x is present (count with field). */
  Present = 1,
  /** Events whose x is a finite number. */
  Number = 2,
}

const EMPTY: number[] = [];

/** Per-feature constants shared by every entity's state. */
export class NumWindowCfg {
  readonly kind: NumKind;
  readonly input: Input;
  readonly windowMs: number;
  readonly bucketMs: number;
  /** Ring doubles per entry: 1 (t) or 2 (t, x). */
  readonly stride: number;
  /** Bucket doubles per slot (epoch first). */
  readonly bStride: number;
  readonly bSlotsMax: number;

  constructor(kind: NumKind, input: Input, windowMs: number) {
    this.kind = kind;
    this.input = input;
    this.windowMs = windowMs;
    this.bucketMs = Math.max(1, Math.ceil(windowMs / NUM_BUCKETS_PER_WINDOW));
    this.stride = kind === NumKind.Count || kind === NumKind.Rate ? 1 : 2;
    this.bStride = bucketStride(kind);
    // Live buckets satisfy (e + 1) * bucketMs > now - window, so at most window / bucketMs + 1
    // epochs, which is <= NUM_BUCKETS_PER_WINDOW + 1.
    this.bSlotsMax = NUM_BUCKETS_PER_WINDOW + 1;
  }
}

function bucketStride(kind: NumKind): number {
  switch (kind) {
    case NumKind.Count:
    case NumKind.Rate:
    case NumKind.Min:
    case NumKind.Max:
      return 2; // [e, n] or [e, extreme]
    case NumKind.Var:
    case NumKind.Std:
    case NumKind.ZScore:
      return 4; // [e, n, mean, m2]
    default:
      return 3; // [e, n, sum] or [e, n, matched]
  }
}

/** Fold of the live part of a window, filled by NumWindowState.fold (one per cfg, reused). */
export class Fold {
  n = 0;
  sum = 0;
  ext = 0;
  mean = 0;
  m2 = 0;
  last = 0;
  exact = true;
}

/**
 * The buckets of one hot entity: a ring of slots [epoch, ...stats] in `bk`,
 * oldest at `head`. Allocated on the first eviction and dropped once every
 * bucket has expired, so a quiet entity pays nothing for it.
 */
export class NumBuckets {
  bk: number[];
  head: number;
  len: number;
  constructor(slots: number, bs: number) {
    this.bk = newDoubles(slots * bs);
    this.head = 0;
    this.len = 0;
  }
}

/**
 * A numeric window with a ring of its own, as an object per entity: for the ops
 * that cannot share the table's rings, ratio (it also counts the events that
 * fail its `where`) and outlier_count's flags (motion.ts). Every other numeric
 * window reads a shared ring (shard/columns/ring_group.ts) with the same bucket
 * part (below) and the same folds.
 */
export class NumWindowState implements StoredState {
  readonly cfg: NumWindowCfg;
  buf: number[];
  head: number;
  len: number;
  b: NumBuckets | null;

  constructor(cfg: NumWindowCfg) {
    this.cfg = cfg;
    this.buf = EMPTY;
    this.head = 0;
    this.len = 0;
    this.b = null;
  }

  update(x: Value | undefined, t: number, _row: Row): void {
    const input = this.cfg.input;
    if (input === Input.Number) {
      if (!isNum(x)) return;
      this.push(t, x);
    } else if (input === Input.Present) {
      if (x === null || x === undefined) return;
      this.push(t, 1);
    } else {
      this.push(t, 1);
    }
  }

  miss(t: number): void {
    if (this.cfg.kind === NumKind.Ratio) this.push(t, 0);
  }

  private push(t: number, v: number): void {
    const c = this.cfg;
    const cutoff = t - c.windowMs;
    this.expireRing(cutoff);
    if (this.b !== null) this.b = numExpireBuckets(this.b, c, cutoff);
    const stride = c.stride;
    let cap = stride === 1 ? this.buf.length : this.buf.length >> 1;
    if (this.len === cap) {
      if (cap < RING_ENTRIES_MAX) cap = this.growRing(cap);
      else this.evictOldest();
    }
    const i = ((this.head + this.len) & (cap - 1)) * stride;
    this.buf[i] = t;
    if (stride === 2) this.buf[i + 1] = v;
    this.len++;
  }

  /**
   * Drops raw events that no future read can see (reads come at now >= t). One
   * exception keeps the bucketed answer a clean suffix of the event sequence: an
   * expiring event of the same epoch as the newest bucket joins that bucket, so a
   * bucket never holds an older event while a newer one of its epoch was dropped.
   */
  private expireRing(cutoff: number): void {
    const c = this.cfg;
    const stride = c.stride;
    const mask = (stride === 1 ? this.buf.length : this.buf.length >> 1) - 1;
    while (this.len > 0 && this.buf[this.head * stride] <= cutoff) {
      if (this.b !== null) {
        const i = this.head * stride;
        numJoinNewest(this.b, c, this.buf[i], stride === 2 ? this.buf[i + 1] : 1);
      }
      this.head = (this.head + 1) & mask;
      this.len--;
    }
  }

  private growRing(cap: number): number {
    const stride = this.cfg.stride;
    const next = cap === 0 ? RING_ENTRIES_MIN : cap * 2;
    const buf = newDoubles(next * stride);
    for (let k = 0; k < this.len; k++) {
      const from = ((this.head + k) & (cap - 1)) * stride;
      buf[k * stride] = this.buf[from];
      if (stride === 2) buf[k * stride + 1] = this.buf[from + 1];
    }
    this.buf = buf;
    this.head = 0;
    return next;
  }

  /** Moves the oldest raw event (still live: the ring is full of live events) into its bucket. */
  private evictOldest(): void {
    const stride = this.cfg.stride;
    const i = this.head * stride;
    const t = this.buf[i];
    const v = stride === 2 ? this.buf[i + 1] : 1;
    this.head = (this.head + 1) & (RING_ENTRIES_MAX - 1);
    this.len--;
    this.b = numFoldIntoBucket(this.b, this.cfg, t, v);
  }

  read(now: number): JsonValue {
    const f = FOLDS[this.cfg.kind];
    this.fold(now, f);
    return numResult(this.cfg, f);
  }

  /** Every raw event and bucket has left the window by `t` (and so for any later time): a fresh state. */
  emptyAt(t: number): boolean {
    const c = this.cfg;
    if (!(c.windowMs > 0)) return false;
    const cutoff = t - c.windowMs;
    // Any raw event, not only the newest: after a late event an older arrival is the latest.
    const mask = (c.stride === 1 ? this.buf.length : this.buf.length >> 1) - 1;
    for (let k = 0; k < this.len; k++) if (this.buf[((this.head + k) & mask) * c.stride] > cutoff) return false;
    return this.b === null || numBucketsGoneAt(this.b, c, cutoff);
  }

  /** Folds the live events at `now` into `f` (buckets first: they hold the older events). */
  fold(now: number, f: Fold): void {
    const c = this.cfg;
    const stride = c.stride;
    const cutoff = now - c.windowMs;
    const mask = (stride === 1 ? this.buf.length : this.buf.length >> 1) - 1;
    let k = 0;
    while (k < this.len && this.buf[((this.head + k) & mask) * stride] <= cutoff) k++;
    resetFold(f);
    // Buckets hold only events older than every ring event: if the oldest ring event is
    // out of the window, so is every bucketed one.
    if (k === 0 && this.len > 0 && this.b !== null) numFoldBuckets(this.b, c, cutoff, f);
    const kind = c.kind;
    for (; k < this.len; k++) {
      const i = ((this.head + k) & mask) * stride;
      const v = stride === 2 ? this.buf[i + 1] : 1;
      foldValue(f, kind, v);
    }
  }

  save(): unknown {
    return [this.linearRing(), numSaveBuckets(this.b, this.cfg)];
  }

  private linearRing(): number[] {
    const stride = this.cfg.stride;
    const mask = (stride === 1 ? this.buf.length : this.buf.length >> 1) - 1;
    const out: number[] = [];
    for (let k = 0; k < this.len; k++) {
      const i = ((this.head + k) & mask) * stride;
      out.push(this.buf[i]);
      if (stride === 2) out.push(this.buf[i + 1]);
    }
    return out;
  }

  restore(saved: unknown): void {
    const cfg = this.cfg;
    const [ring, buckets] = saved as [number[], number[]];
    const len = ring.length / cfg.stride;
    if (len > 0) {
      let cap = RING_ENTRIES_MIN;
      while (cap < len) cap *= 2;
      this.buf = newDoubles(cap * cfg.stride);
      for (let i = 0; i < ring.length; i++) this.buf[i] = ring[i];
      this.head = 0;
      this.len = len;
    }
    this.b = numLoadBuckets(buckets, cfg);
  }
}


/** Resets a fold before folding a window into it. */
export function resetFold(f: Fold): void {
  f.n = 0;
  f.sum = 0;
  f.mean = 0;
  f.m2 = 0;
  f.ext = 0;
  f.last = 0;
  f.exact = true;
}

/** The feature value of a folded window. */
export function numResult(c: NumWindowCfg, f: Fold): JsonValue {
  switch (c.kind) {
    case NumKind.Count:
      return f.n;
    case NumKind.Rate:
      return f.n / (c.windowMs / 1000);
    case NumKind.Sum:
      return f.n === 0 ? null : jsonNum(f.sum);
    case NumKind.Velocity:
      return f.n === 0 ? 0 : jsonNum(f.sum / (c.windowMs / 1000));
    case NumKind.Mean:
      return f.n === 0 ? null : jsonNum(f.sum / f.n);
    case NumKind.Min:
    case NumKind.Max:
      return f.n === 0 ? null : f.ext;
    case NumKind.Var:
      return f.n < 2 ? null : jsonNum(Math.max(0, f.m2 / (f.n - 1)));
    case NumKind.Std:
      return f.n < 2 ? null : jsonNum(Math.sqrt(Math.max(0, f.m2 / (f.n - 1))));
    case NumKind.ZScore:
      return zScore(f.n, f.mean, f.m2, f.last);
    case NumKind.Ratio:
      return f.n === 0 ? null : f.sum / f.n;
  }
}

/**
 * The bucket part of a window, shared by the shard's rings (shard/columns/ring_group.ts,
 * one ring read by several features) and NumWindowState (a ring of its own):
 * the functions below take the buckets (null: none) and return them, since they
 * are dropped once every bucket has expired.
 */

/** No bucket can reach a read whose window starts after `cutoff` (a bucket not yet expired could still be merged: the straddling one). */
export function numBucketsGoneAt(b: NumBuckets, c: NumWindowCfg, cutoff: number): boolean {
  return b.len === 0 || (b.bk[newestSlot(b, c.bStride)] + 1) * c.bucketMs <= cutoff;
}

/** When the oldest bucket stops counting: numExpireBuckets drops nothing for a cutoff below it. */
export function numOldestEnd(b: NumBuckets, c: NumWindowCfg): number {
  return (b.bk[b.head * c.bStride] + 1) * c.bucketMs;
}

/** Drops buckets that no read at or after `cutoff + window` can see; null once none is left. */
export function numExpireBuckets(b: NumBuckets, c: NumWindowCfg, cutoff: number): NumBuckets | null {
  const bs = c.bStride;
  const slots = b.bk.length / bs;
  while (b.len > 0 && (b.bk[b.head * bs] + 1) * c.bucketMs <= cutoff) {
    b.head = b.head + 1 === slots ? 0 : b.head + 1;
    b.len--;
  }
  // The entity calmed down: give the bucket memory back.
  return b.len === 0 ? null : b;
}

/**
 * The event's t and value for the ...Cell functions when the caller holds them as
 * doubles. The Cell forms take them by index into a Float64Array (the shared
 * rings pass their pool and the entry's cells): a double passed to a call that
 * is not inlined is boxed into a heap number, two per member per eviction.
 */
const EVENT = new Float64Array(2);

/** An expiring raw event of the newest bucket's epoch joins it (keeps the bucketed part a suffix of the events). */
export function numJoinNewest(b: NumBuckets, c: NumWindowCfg, t: number, v: number): void {
  EVENT[0] = t;
  EVENT[1] = v;
  numJoinCell(b, c, EVENT, 0, 1);
}

/** numJoinNewest of the event whose t is `cells[ti]` and value `cells[vi]` (1 when vi < 0). */
export function numJoinCell(b: NumBuckets, c: NumWindowCfg, cells: Float64Array, ti: number, vi: number): void {
  const j = newestSlot(b, c.bStride);
  if (b.bk[j] === Math.floor(cells[ti] / c.bucketMs)) addToBucket(b.bk, j, c.kind, vi < 0 ? 1 : cells[vi]);
}

/** Folds a raw event pushed out of a full ring (still live) into its bucket. */
export function numFoldIntoBucket(bIn: NumBuckets | null, c: NumWindowCfg, t: number, v: number): NumBuckets {
  EVENT[0] = t;
  EVENT[1] = v;
  return numFoldCell(bIn, c, EVENT, 0, 1);
}

/** numFoldIntoBucket of the event whose t is `cells[ti]` and value `cells[vi]` (1 when vi < 0). */
export function numFoldCell(bIn: NumBuckets | null, c: NumWindowCfg, cells: Float64Array, ti: number, vi: number): NumBuckets {
  const v = vi < 0 ? 1 : cells[vi];
  const e = Math.floor(cells[ti] / c.bucketMs);
  const bs = c.bStride;
  let b = bIn;
  if (b === null) b = new NumBuckets(BUCKET_SLOTS_MIN, bs);
  else {
    const j = newestSlot(b, bs);
    if (b.bk[j] === e) {
      addToBucket(b.bk, j, c.kind, v);
      return b;
    }
  }
  let slots = b.bk.length / bs;
  if (b.len === slots) {
    if (slots < c.bSlotsMax) slots = growBuckets(b, slots, bs, c.bSlotsMax);
    else {
      // Unreachable by the bound above (the oldest slot has expired); kept as a guard so
      // memory can never grow past bSlotsMax.
      b.head = b.head + 1 === slots ? 0 : b.head + 1;
      b.len--;
    }
  }
  const slot = b.head + b.len;
  const j = (slot >= slots ? slot - slots : slot) * bs;
  b.bk[j] = e;
  initBucket(b.bk, j, c.kind, v);
  b.len++;
  return b;
}

/** Merges the buckets overlapping the window (ending after `cutoff`) into `f`. */
export function numFoldBuckets(b: NumBuckets, c: NumWindowCfg, cutoff: number, f: Fold): void {
  const bs = c.bStride;
  const slots = b.bk.length / bs;
  const kind = c.kind;
  for (let k = 0; k < b.len; k++) {
    let s = b.head + k;
    if (s >= slots) s -= slots;
    const j = s * bs;
    if ((b.bk[j] + 1) * c.bucketMs <= cutoff) continue;
    f.exact = false;
    mergeBucket(f, kind, b.bk, j);
  }
}

/** The buckets as saved (oldest first, bStride numbers each). */
export function numSaveBuckets(b: NumBuckets | null, c: NumWindowCfg): number[] {
  const out: number[] = [];
  if (b === null) return out;
  const bs = c.bStride;
  const slots = b.bk.length / bs;
  for (let k = 0; k < b.len; k++) {
    let s = b.head + k;
    if (s >= slots) s -= slots;
    for (let f = 0; f < bs; f++) out.push(b.bk[s * bs + f]);
  }
  return out;
}

/** Inverse of numSaveBuckets. */
export function numLoadBuckets(buckets: readonly number[], c: NumWindowCfg): NumBuckets | null {
  const bLen = buckets.length / c.bStride;
  if (bLen === 0) return null;
  let slots = BUCKET_SLOTS_MIN;
  while (slots < bLen) slots = Math.min(slots * 2, c.bSlotsMax);
  const b = new NumBuckets(slots, c.bStride);
  for (let i = 0; i < buckets.length; i++) b.bk[i] = buckets[i];
  b.len = bLen;
  return b;
}

/** Offset in bk of the newest bucket (b.len > 0). */
function newestSlot(b: NumBuckets, bs: number): number {
  const slots = b.bk.length / bs;
  const last = b.head + b.len - 1;
  return (last >= slots ? last - slots : last) * bs;
}

function growBuckets(b: NumBuckets, slots: number, bs: number, slotsMax: number): number {
  const next = Math.min(slots * 2, slotsMax);
  const bk = newDoubles(next * bs);
  for (let k = 0; k < b.len; k++) {
    let from = b.head + k;
    if (from >= slots) from -= slots;
    for (let f = 0; f < bs; f++) bk[k * bs + f] = b.bk[from * bs + f];
  }
  b.bk = bk;
  b.head = 0;
  return next;
}

export const FOLDS: Fold[] = [];
for (let k = 0; k <= NumKind.Ratio; k++) FOLDS.push(new Fold());

function initBucket(bk: number[], j: number, kind: NumKind, v: number): void {
  switch (kind) {
    case NumKind.Min:
    case NumKind.Max:
      bk[j + 1] = v;
      return;
    case NumKind.Count:
    case NumKind.Rate:
      bk[j + 1] = 1;
      return;
    case NumKind.Var:
    case NumKind.Std:
    case NumKind.ZScore:
      bk[j + 1] = 1;
      bk[j + 2] = v;
      bk[j + 3] = 0;
      return;
    default:
      bk[j + 1] = 1;
      bk[j + 2] = v;
  }
}

function addToBucket(bk: number[], j: number, kind: NumKind, v: number): void {
  switch (kind) {
    case NumKind.Min:
      if (v < bk[j + 1]) bk[j + 1] = v;
      return;
    case NumKind.Max:
      if (v > bk[j + 1]) bk[j + 1] = v;
      return;
    case NumKind.Count:
    case NumKind.Rate:
      bk[j + 1] += 1;
      return;
    case NumKind.Var:
    case NumKind.Std:
    case NumKind.ZScore: {
      // Welford's update, numerically stable.
      const n = bk[j + 1] + 1;
      const d = v - bk[j + 2];
      bk[j + 1] = n;
      bk[j + 2] += d / n;
      bk[j + 3] += d * (v - bk[j + 2]);
      return;
    }
    default:
      bk[j + 1] += 1;
      bk[j + 2] += v;
  }
}

/** Adds one raw value to the fold (Welford for the moments, in arrival order). */
export function foldValue(f: Fold, kind: NumKind, v: number): void {
  switch (kind) {
    case NumKind.Min:
      if (f.n === 0 || v < f.ext) f.ext = v;
      f.n++;
      return;
    case NumKind.Max:
      if (f.n === 0 || v > f.ext) f.ext = v;
      f.n++;
      return;
    case NumKind.Var:
    case NumKind.Std:
    case NumKind.ZScore: {
      f.n++;
      const d = v - f.mean;
      f.mean += d / f.n;
      f.m2 += d * (v - f.mean);
      f.last = v;
      return;
    }
    default:
      f.n++;
      f.sum += v;
  }
}

/** Merges a bucket into the fold (Chan et al. pairwise update for the moments). */
function mergeBucket(f: Fold, kind: NumKind, bk: number[], j: number): void {
  switch (kind) {
    case NumKind.Min:
      if (f.n === 0 || bk[j + 1] < f.ext) f.ext = bk[j + 1];
      f.n++;
      return;
    case NumKind.Max:
      if (f.n === 0 || bk[j + 1] > f.ext) f.ext = bk[j + 1];
      f.n++;
      return;
    case NumKind.Count:
    case NumKind.Rate:
      f.n += bk[j + 1];
      return;
    case NumKind.Var:
    case NumKind.Std:
    case NumKind.ZScore: {
      const nb = bk[j + 1];
      const n = f.n + nb;
      const d = bk[j + 2] - f.mean;
      f.mean += (d * nb) / n;
      f.m2 += bk[j + 3] + (d * d * f.n * nb) / n;
      f.n = n;
      return;
    }
    default:
      f.n += bk[j + 1];
      f.sum += bk[j + 2];
  }
}

/** (last - mean) / sample std; null with fewer than 2 values or no spread. */
export function zScore(n: number, mean: number, m2: number, last: number): number | null {
  if (n < 2) return null;
  const variance = m2 / (n - 1);
  if (!(variance > 0)) return null;
  return jsonNum((last - mean) / Math.sqrt(variance));
}
