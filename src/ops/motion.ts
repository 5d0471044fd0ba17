/**
 * Change-over-time ops (lifetime, O(1) memory unless noted):
 *   rate_of_change       (x - x_prev) / (t - t_prev) of the last two values with t > t_prev,
 *                        units per millisecond (the peer's unit)
 *   inter_arrival_stats  mean gap between consecutive matches, ms = (t_last - t_first) / (n - 1)
 *   delta_from_prev      x_last - x_prev
 *   trend                OLS slope of x against t (units per ms) over every value
 *   trend_residual       x_last - (intercept + slope t_last)
 *   outlier_count        values with |x - mean| > sigma * std of the values BEFORE it
 *                        (at least 5 before it and std > 0); sample std
 *   value_change_count   present values that differ from the previous present value
 *   burst_count          most matches in one sub_window-aligned slot (window-bounded or lifetime)
 * Trend uses co-moments with t shifted by the first time, so epoch-ms magnitudes
 * (~1.7e12, squared ~3e24) never cancel catastrophically.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { isNum, jsonNum, newDoubles } from './values';

export class RateOfChangeState implements StoredState {
  has: boolean;
  prev: number;
  tPrev: number;
  hasRate: boolean;
  rate: number;
  constructor() {
    this.has = false;
    this.prev = 0;
    this.tPrev = 0;
    this.hasRate = false;
    this.rate = 0;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.has && t > this.tPrev) {
      this.rate = (x - this.prev) / (t - this.tPrev);
      this.hasRate = true;
    }
    this.has = true;
    this.prev = x;
    this.tPrev = t;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.hasRate ? jsonNum(this.rate) : null;
  }
  save(): unknown {
    return [this.has ? 1 : 0, this.prev, this.tPrev, this.hasRate ? 1 : 0, this.rate];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.has = a[0] === 1;
    this.prev = a[1];
    this.tPrev = a[2];
    this.hasRate = a[3] === 1;
    this.rate = a[4];
  }
}

export class InterArrivalState implements StoredState {
  n: number;
  first: number;
  last: number;
  constructor() {
    this.n = 0;
    this.first = 0;
    this.last = 0;
  }
  update(_x: Value | undefined, t: number, _row: Row): void {
    if (this.n === 0) this.first = t;
    this.last = t;
    this.n++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.n < 2 ? null : (this.last - this.first) / (this.n - 1);
  }
  save(): unknown {
    return [this.n, this.first, this.last];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.first = a[1];
    this.last = a[2];
  }
}

export class DeltaState implements StoredState {
  n: number;
  prev: number;
  last: number;
  constructor() {
    this.n = 0;
    this.prev = 0;
    this.last = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    this.prev = this.last;
    this.last = x;
    this.n++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.n < 2 ? null : jsonNum(this.last - this.prev);
  }
  save(): unknown {
    return [this.n, this.prev, this.last];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.prev = a[1];
    this.last = a[2];
  }
}

/** trend / trend_residual: running means and co-moments of (tau = t - t0, x). */
export class TrendState implements StoredState {
  readonly residual: boolean;
  n: number;
  t0: number;
  mt: number;
  mx: number;
  ctx: number;
  ctt: number;
  lastX: number;
  lastTau: number;
  constructor(residual: boolean) {
    this.residual = residual;
    this.n = 0;
    this.t0 = 0;
    this.mt = 0;
    this.mx = 0;
    this.ctx = 0;
    this.ctt = 0;
    this.lastX = 0;
    this.lastTau = 0;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.n === 0) this.t0 = t;
    const tau = t - this.t0;
    this.n++;
    const dt = tau - this.mt;
    this.mt += dt / this.n;
    this.mx += (x - this.mx) / this.n;
    this.ctx += dt * (x - this.mx);
    this.ctt += dt * (tau - this.mt);
    this.lastX = x;
    this.lastTau = tau;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.n < 2 || !(this.ctt > 0)) return null;
    const slope = this.ctx / this.ctt;
    if (!this.residual) return jsonNum(slope);
    return jsonNum(this.lastX - this.mx - slope * (this.lastTau - this.mt));
  }
  save(): unknown {
    return [this.n, this.t0, this.mt, this.mx, this.ctx, this.ctt, this.lastX, this.lastTau];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.t0 = a[1];
    this.mt = a[2];
    this.mx = a[3];
    this.ctx = a[4];
    this.ctt = a[5];
    this.lastX = a[6];
    this.lastTau = a[7];
  }
}

/** Prior observations needed before a value can be called an outlier. */
export const OUTLIER_PRIOR_MIN = 5;

export class OutlierState implements StoredState {
  readonly sigma: number;
  n: number;
  mean: number;
  m2: number;
  outliers: number;
  constructor(sigma: number) {
    this.sigma = sigma;
    this.n = 0;
    this.mean = 0;
    this.m2 = 0;
    this.outliers = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.n >= OUTLIER_PRIOR_MIN) {
      const sd = Math.sqrt(this.m2 / (this.n - 1));
      if (sd > 0 && Math.abs(x - this.mean) > this.sigma * sd) this.outliers++;
    }
    this.n++;
    const d = x - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (x - this.mean);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.outliers;
  }
  save(): unknown {
    return [this.n, this.mean, this.m2, this.outliers];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.mean = a[1];
    this.m2 = a[2];
    this.outliers = a[3];
  }
}

/** value_change_count: present values that differ from the previous present value. */
export class ValueChangeState implements StoredState {
  /** 0 = nothing yet, 1 = string in `str`, 2 = number in `num`, 3 = boolean in `num` (0/1). */
  kind: number;
  str: string;
  num: number;
  changes: number;
  constructor() {
    this.kind = 0;
    this.str = '';
    this.num = 0;
    this.changes = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x === null || x === undefined) return;
    if (typeof x === 'string') {
      if (this.kind === 1 && this.str === x) return;
      if (this.kind !== 0) this.changes++;
      this.kind = 1;
      this.str = x;
      return;
    }
    if (typeof x === 'number' && Number.isNaN(x)) return;
    const kind = typeof x === 'number' ? 2 : 3;
    const num = typeof x === 'number' ? x : x ? 1 : 0;
    if (this.kind === kind && this.num === num) return;
    if (this.kind !== 0) this.changes++;
    this.kind = kind;
    this.num = num;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.changes;
  }
  save(): unknown {
    return [this.kind, this.str, this.num, this.changes];
  }
  restore(saved: unknown): void {
    const a = saved as [number, string, number, number];
    this.kind = a[0];
    this.str = a[1];
    this.num = a[2];
    this.changes = a[3];
  }
}

/**
 * burst_count: the most matches in one slot, slot = floor(t / sub_window).
 * Lifetime (no window): the all-time maximum (current slot count + running max).
 * Windowed: the maximum over the slots that overlap (now - window, now]; the
 * counts of non-empty slots live in a ring of at most window / sub_window + 1
 * entries ([slot, count] pairs), bounded at register time (BURST_SLOTS_MAX).
 */
export const BURST_SLOTS_MAX = 1024;

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
