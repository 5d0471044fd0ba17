/**
 * Change-over-time ops. Lifetime by default (O(1) memory); each also takes an
 * optional sliding `window` (docs/ops.md, "Windowed change-over-time ops"):
 *   rate_of_change       (x - x_prev) / (t - t_prev) of the last two values with t > t_prev,
 *                        units per millisecond (the peer's unit); windowed: both in the window
 *   inter_arrival_stats  mean gap between consecutive matches, ms = (t_last - t_first) / (n - 1)
 *   delta_from_prev      x_last - x_prev; windowed: both in the window
 *   trend                OLS slope of x against t (units per ms) over every value
 *   trend_residual       x_last - (intercept + slope t_last)
 *   outlier_count        values with |x - mean| > sigma * std of the values BEFORE it
 *                        (at least 5 before it and std > 0); sample std. Windowed: the
 *                        outliers that arrived within the window (same baseline)
 *   value_change_count   present values that differ from the previous present value
 *   burst_count          most matches in one sub_window-aligned slot (window-bounded or lifetime)
 * trend, inter_arrival_stats and value_change_count are WindowAggs (mergeable summaries
 * of a run of events in time order), so the same class serves the lifetime state
 * (ValLifeState) and the bucketed sliding window (ValWindowState). rate_of_change and
 * delta_from_prev look at the last two values only, so their window is a time check at
 * read (exact). Trend uses co-moments with t shifted by the first time, so epoch-ms
 * magnitudes (~1.7e12, squared ~3e24) never cancel catastrophically.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { RowFixedOp } from './fixed';
import { Input, NumKind, NumWindowCfg, NumWindowState } from './num_window';
import type { WindowAgg } from './val_window';
import { isNum, jsonNum, loadFields, newDoubles, saveFields } from './values';

type Scalar = string | number | boolean;

/** True when an event at `t` is still inside a window of `windowMs` at `now` (0 = lifetime). */
function inWindow(windowMs: number, t: number, now: number): boolean {
  return windowMs === 0 || now - t < windowMs;
}

export class RateOfChangeState implements StoredState {
  /** 0 = lifetime; else the value needs both events of its pair inside the window. */
  readonly windowMs: number;
  has: boolean;
  prev: number;
  tPrev: number;
  hasRate: boolean;
  rate: number;
  /** Time of the older event of the pair `rate` came from. */
  tPair: number;
  constructor(windowMs: number) {
    this.windowMs = windowMs;
    this.has = false;
    this.prev = 0;
    this.tPrev = 0;
    this.hasRate = false;
    this.rate = 0;
    this.tPair = 0;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.has && t > this.tPrev) {
      this.rate = (x - this.prev) / (t - this.tPrev);
      this.hasRate = true;
      this.tPair = this.tPrev;
    }
    this.has = true;
    this.prev = x;
    this.tPrev = t;
  }
  miss(_t: number): void {}
  /**
   * Windowed: the latest pair is the only candidate. Every later event shares the
   * pair's newer millisecond (else it would have made a newer pair), so once the
   * pair's older event has left the window no pair with Δt > 0 is left inside it.
   */
  read(now: number): JsonValue {
    return this.hasRate && inWindow(this.windowMs, this.tPair, now) ? jsonNum(this.rate) : null;
  }
  save(): unknown {
    return [this.has ? 1 : 0, this.prev, this.tPrev, this.hasRate ? 1 : 0, this.rate, this.tPair];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.has = a[0] === 1;
    this.prev = a[1];
    this.tPrev = a[2];
    this.hasRate = a[3] === 1;
    this.rate = a[4];
    this.tPair = a[5] ?? 0; // saved before windows existed: lifetime, never read
  }
}

export class DeltaState implements StoredState {
  /** 0 = lifetime; else both values must be inside the window. */
  readonly windowMs: number;
  n: number;
  prev: number;
  last: number;
  tPrev: number;
  tLast: number;
  constructor(windowMs: number) {
    this.windowMs = windowMs;
    this.n = 0;
    this.prev = 0;
    this.last = 0;
    this.tPrev = 0;
    this.tLast = 0;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!isNum(x)) return;
    this.prev = this.last;
    this.tPrev = this.tLast;
    this.last = x;
    this.tLast = t;
    this.n++;
  }
  miss(_t: number): void {}
  read(now: number): JsonValue {
    return this.n < 2 || !inWindow(this.windowMs, this.tPrev, now) ? null : jsonNum(this.last - this.prev);
  }
  save(): unknown {
    return [this.n, this.prev, this.last, this.tPrev, this.tLast];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.prev = a[1];
    this.last = a[2];
    this.tPrev = a[3] ?? 0; // saved before windows existed: lifetime, never read
    this.tLast = a[4] ?? 0;
  }
}

/** inter_arrival_stats summary of a run of events: how many, first and last time. */
export class GapAcc {
  n = 0;
  first = 0;
  last = 0;
}

/** Saved layout (that of the lifetime state before windows existed). */
const GAP_FIELDS: ReadonlyArray<keyof GapAcc> = ['n', 'first', 'last'];

export class InterArrivalAgg implements WindowAgg<GapAcc> {
  /** No field: every matching event counts (x is undefined). */
  accepts(_x: Value | undefined): _x is Scalar {
    return true;
  }
  empty(): GapAcc {
    return new GapAcc();
  }
  clear(a: GapAcc): GapAcc {
    a.n = 0;
    return a;
  }
  add(a: GapAcc, _v: Scalar, t: number): GapAcc {
    if (a.n === 0) a.first = t;
    a.last = t;
    a.n++;
    return a;
  }
  merge(into: GapAcc, from: GapAcc): GapAcc {
    if (from.n === 0) return into;
    if (into.n === 0) into.first = from.first;
    into.last = from.last;
    into.n += from.n;
    return into;
  }
  result(a: GapAcc): JsonValue {
    return gapResult(a.n, a.first, a.last);
  }
  save(a: GapAcc): unknown {
    return saveFields(a, GAP_FIELDS);
  }
  load(saved: unknown): GapAcc {
    return loadFields(new GapAcc(), GAP_FIELDS, saved as number[]);
  }
}

/** Mean gap of `n` events from `first` to `last` (null below two events). */
function gapResult(n: number, first: number, last: number): JsonValue {
  return n < 2 ? null : (last - first) / (n - 1);
}

/**
 * Lifetime inter_arrival_stats as a slab row (fixed.ts): [n, first, last], a zero
 * row before the first event. Saved as the lifetime ValLifeState of InterArrivalAgg
 * saved (null before the first event, else [n, first, last]), so snapshots and cold
 * entities of either form load into the other.
 */
export class InterArrivalFixed extends RowFixedOp {
  readonly width = 3;
  update(a: Float64Array, at: number, _x: Value | undefined, t: number): void {
    if (a[at] === 0) a[at + 1] = t;
    a[at + 2] = t;
    a[at]++;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    return gapResult(a[at], a[at + 1], a[at + 2]);
  }
  override save(a: Float64Array, at: number): unknown {
    return a[at] === 0 ? null : super.save(a, at);
  }
  override load(a: Float64Array, at: number, saved: unknown): void {
    if (saved !== null) super.load(a, at, saved);
  }
}

/** trend / trend_residual summary of a run of values: running means and co-moments of (tau = t - t0, x). */
export class TrendAcc {
  n = 0;
  t0 = 0;
  mt = 0;
  mx = 0;
  ctx = 0;
  ctt = 0;
  lastX = 0;
  lastTau = 0;
}

/** Saved layout (that of the lifetime state before windows existed). */
const TREND_FIELDS: ReadonlyArray<keyof TrendAcc> = ['n', 't0', 'mt', 'mx', 'ctx', 'ctt', 'lastX', 'lastTau'];

export class TrendAgg implements WindowAgg<TrendAcc> {
  readonly residual: boolean;
  constructor(residual: boolean) {
    this.residual = residual;
  }
  accepts(x: Value | undefined): x is number {
    return isNum(x);
  }
  empty(): TrendAcc {
    return new TrendAcc();
  }
  clear(a: TrendAcc): TrendAcc {
    a.n = 0;
    a.mt = 0;
    a.mx = 0;
    a.ctx = 0;
    a.ctt = 0;
    return a;
  }
  add(a: TrendAcc, v: Scalar, t: number): TrendAcc {
    const x = v as number;
    if (a.n === 0) a.t0 = t;
    const tau = t - a.t0;
    a.n++;
    const dt = tau - a.mt;
    a.mt += dt / a.n;
    a.mx += (x - a.mx) / a.n;
    a.ctx += dt * (x - a.mx);
    a.ctt += dt * (tau - a.mt);
    a.lastX = x;
    a.lastTau = tau;
    return a;
  }
  /** Chan et al.'s pairwise update of the means and co-moments, `from` re-based on into.t0. */
  merge(into: TrendAcc, from: TrendAcc): TrendAcc {
    if (from.n === 0) return into;
    if (into.n === 0) {
      // Field by field, not through saveFields: reads merge here, and must not allocate.
      into.t0 = from.t0;
      into.mt = from.mt;
      into.mx = from.mx;
      into.ctx = from.ctx;
      into.ctt = from.ctt;
      into.n = from.n;
      into.lastX = from.lastX;
      into.lastTau = from.lastTau;
      return into;
    }
    const shift = from.t0 - into.t0;
    const n = into.n + from.n;
    const dt = from.mt + shift - into.mt;
    const dx = from.mx - into.mx;
    const w = (into.n * from.n) / n;
    into.ctx += from.ctx + dt * dx * w;
    into.ctt += from.ctt + dt * dt * w;
    into.mt += (dt * from.n) / n;
    into.mx += (dx * from.n) / n;
    into.n = n;
    into.lastX = from.lastX;
    into.lastTau = from.lastTau + shift;
    return into;
  }
  result(a: TrendAcc): JsonValue {
    if (a.n < 2 || !(a.ctt > 0)) return null;
    const slope = a.ctx / a.ctt;
    if (!this.residual) return jsonNum(slope);
    return jsonNum(a.lastX - a.mx - slope * (a.lastTau - a.mt));
  }
  save(a: TrendAcc): unknown {
    return saveFields(a, TREND_FIELDS);
  }
  load(saved: unknown): TrendAcc {
    return loadFields(new TrendAcc(), TREND_FIELDS, saved as number[]);
  }
}

/** Prior observations needed before a value can be called an outlier. */
export const OUTLIER_PRIOR_MIN = 5;

/**
 * outlier_count. Each value is judged when it arrives, against the mean and sample
 * std of every value before it (lifetime Welford, as the peer). Windowed, the
 * judged outliers go into a count window (num_window.ts), so the value is the
 * number of outliers that arrived within the window, with that window's error bound.
 */
export class OutlierState implements StoredState {
  readonly sigma: number;
  n: number;
  mean: number;
  m2: number;
  outliers: number;
  /** Times of the outliers, windowed (null = lifetime). */
  readonly flags: NumWindowState | null;
  constructor(sigma: number, flagsCfg: NumWindowCfg | null) {
    this.sigma = sigma;
    this.n = 0;
    this.mean = 0;
    this.m2 = 0;
    this.outliers = 0;
    this.flags = flagsCfg === null ? null : new NumWindowState(flagsCfg);
  }
  update(x: Value | undefined, t: number, row: Row): void {
    if (!isNum(x)) return;
    if (this.n >= OUTLIER_PRIOR_MIN) {
      const sd = Math.sqrt(this.m2 / (this.n - 1));
      if (sd > 0 && Math.abs(x - this.mean) > this.sigma * sd) {
        this.outliers++;
        if (this.flags !== null) this.flags.update(x, t, row);
      }
    }
    this.n++;
    const d = x - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (x - this.mean);
  }
  miss(_t: number): void {}
  read(now: number): JsonValue {
    return this.flags === null ? this.outliers : this.flags.read(now);
  }
  save(): unknown {
    const a: unknown[] = [this.n, this.mean, this.m2, this.outliers];
    if (this.flags !== null) a.push(this.flags.save());
    return a;
  }
  restore(saved: unknown): void {
    const a = saved as [number, number, number, number, unknown?];
    this.n = a[0];
    this.mean = a[1];
    this.m2 = a[2];
    this.outliers = a[3];
    if (this.flags !== null && a[4] !== undefined) this.flags.restore(a[4]);
  }
}

/** Config of outlier_count's windowed flag count. */
export function outlierFlagsCfg(windowMs: number): NumWindowCfg | null {
  return windowMs === 0 ? null : new NumWindowCfg(NumKind.Count, Input.Event, windowMs);
}

/**
 * value_change_count summary of a run of present values: the changes inside it,
 * its first and last value. A value is held as (kind, str, num) so each field keeps
 * one JS type: kind 0 = none, 1 = string in str, 2 = number in num, 3 = boolean in num (0/1).
 */
export class ChangeAcc {
  changes = 0;
  fKind = 0;
  fStr = '';
  fNum = 0;
  kind = 0;
  str = '';
  num = 0;
}

function kindOf(v: Scalar): number {
  return typeof v === 'string' ? 1 : typeof v === 'number' ? 2 : 3;
}

export class ValueChangeAgg implements WindowAgg<ChangeAcc> {
  /** Present values; NaN is no value (it equals nothing, not even itself). */
  accepts(x: Value | undefined): x is Scalar {
    return x !== null && x !== undefined && !(typeof x === 'number' && Number.isNaN(x));
  }
  empty(): ChangeAcc {
    return new ChangeAcc();
  }
  clear(a: ChangeAcc): ChangeAcc {
    a.changes = 0;
    a.fKind = 0;
    a.kind = 0;
    return a;
  }
  add(a: ChangeAcc, v: Scalar, _t: number): ChangeAcc {
    const kind = kindOf(v);
    const str = typeof v === 'string' ? v : '';
    const num = typeof v === 'number' ? v : v === true ? 1 : 0;
    if (a.kind === 0) {
      a.fKind = kind;
      a.fStr = str;
      a.fNum = num;
    } else if (a.kind !== kind || a.str !== str || a.num !== num) a.changes++;
    a.kind = kind;
    a.str = str;
    a.num = num;
    return a;
  }
  merge(into: ChangeAcc, from: ChangeAcc): ChangeAcc {
    if (from.kind === 0) return into;
    if (into.kind === 0) {
      into.fKind = from.fKind;
      into.fStr = from.fStr;
      into.fNum = from.fNum;
    } else if (into.kind !== from.fKind || into.str !== from.fStr || into.num !== from.fNum) into.changes++;
    into.changes += from.changes;
    into.kind = from.kind;
    into.str = from.str;
    into.num = from.num;
    return into;
  }
  result(a: ChangeAcc): JsonValue {
    return a.changes;
  }
  /** Last value first: the layout of the lifetime state saved before windows existed. */
  save(a: ChangeAcc): unknown {
    return [a.kind, a.str, a.num, a.changes, a.fKind, a.fStr, a.fNum];
  }
  load(saved: unknown): ChangeAcc {
    const s = saved as [number, string, number, number, number?, string?, number?];
    const a = new ChangeAcc();
    a.kind = s[0];
    // Older saves kept the other slot's stale content: clear it, comparisons read both.
    a.str = s[0] === 1 ? s[1] : '';
    a.num = s[0] === 1 ? 0 : s[2];
    a.changes = s[3];
    // Older lifetime saves have no first value; a lifetime state never merges, so any stands.
    a.fKind = s[4] ?? s[0];
    a.fStr = s[5] ?? s[1];
    a.fNum = s[6] ?? s[2];
    return a;
  }
}

/**
 * burst_count: the most matches in one slot, slot = floor(t / sub_window).
 * Lifetime (no window): the all-time maximum (current slot count + running max).
 * Windowed: the maximum over the slots that overlap (now - window, now]; the
 * counts of non-empty slots live in a ring of at most window / sub_window + 1
 * entries ([slot, count] pairs), bounded at register time (BURST_SLOTS_MAX).
 */

const EMPTY: number[] = [];

export class BurstState implements StoredState {
  readonly subMs: number;
  /** 0 = lifetime. */
  readonly windowMs: number;
  slot: number;
  cnt: number;
  best: number;
  ring: number[];
  head: number;
  len: number;
  constructor(subMs: number, windowMs: number) {
    this.subMs = subMs;
    this.windowMs = windowMs;
    this.slot = -1;
    this.cnt = 0;
    this.best = 0;
    this.ring = EMPTY;
    this.head = 0;
    this.len = 0;
  }
  update(_x: Value | undefined, t: number, _row: Row): void {
    const s = Math.floor(t / this.subMs);
    if (this.windowMs === 0) {
      if (s !== this.slot) {
        this.slot = s;
        this.cnt = 0;
      }
      this.cnt++;
      if (this.cnt > this.best) this.best = this.cnt;
      return;
    }
    this.windowedAdd(s, t);
  }
  private windowedAdd(s: number, t: number): void {
    const slots = this.ring.length >> 1;
    const cutoff = t - this.windowMs;
    while (this.len > 0 && (this.ring[this.head * 2] + 1) * this.subMs <= cutoff) {
      this.head = this.head + 1 === slots ? 0 : this.head + 1;
      this.len--;
    }
    if (this.len > 0) {
      let last = this.head + this.len - 1;
      if (last >= slots) last -= slots;
      if (this.ring[last * 2] === s) {
        this.ring[last * 2 + 1]++;
        return;
      }
    }
    let size = slots;
    if (this.len === slots) size = this.grow(slots);
    if (this.len === size) {
      // Unreachable (live slots <= window / sub_window + 1); keeps the ring consistent anyway.
      this.head = this.head + 1 === size ? 0 : this.head + 1;
      this.len--;
    }
    let i = this.head + this.len;
    if (i >= size) i -= size;
    this.ring[i * 2] = s;
    this.ring[i * 2 + 1] = 1;
    this.len++;
  }
  private grow(slots: number): number {
    const max = Math.floor(this.windowMs / this.subMs) + 2;
    const next = Math.min(max, slots === 0 ? 2 : slots * 2);
    const ring = newDoubles(next * 2);
    for (let k = 0; k < this.len; k++) {
      let from = this.head + k;
      if (from >= slots) from -= slots;
      ring[k * 2] = this.ring[from * 2];
      ring[k * 2 + 1] = this.ring[from * 2 + 1];
    }
    this.ring = ring;
    this.head = 0;
    return next;
  }
  miss(_t: number): void {}
  read(now: number): JsonValue {
    if (this.windowMs === 0) return this.best;
    const slots = this.ring.length >> 1;
    const cutoff = now - this.windowMs;
    let best = 0;
    for (let k = 0; k < this.len; k++) {
      let i = this.head + k;
      if (i >= slots) i -= slots;
      if ((this.ring[i * 2] + 1) * this.subMs <= cutoff) continue;
      if (this.ring[i * 2 + 1] > best) best = this.ring[i * 2 + 1];
    }
    return best;
  }
  save(): unknown {
    const slots = this.ring.length >> 1;
    const r: number[] = [];
    for (let k = 0; k < this.len; k++) {
      const i = (this.head + k) % slots;
      r.push(this.ring[i * 2], this.ring[i * 2 + 1]);
    }
    return [this.slot, this.cnt, this.best, r];
  }
  restore(saved: unknown): void {
    const a = saved as [number, number, number, number[]];
    this.slot = a[0];
    this.cnt = a[1];
    this.best = a[2];
    const r = a[3];
    if (r.length > 0) {
      this.ring = newDoubles(r.length);
      for (let k = 0; k < r.length; k++) this.ring[k] = r[k];
      this.head = 0;
      this.len = r.length >> 1;
    }
  }
}
