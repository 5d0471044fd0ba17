/**
 * Exponential decay ops (half_life h in ms, lambda = ln 2 / h). Lifetime state,
 * O(1) memory. With dt = t - t_last (ms) and alpha = 1 - e^(-lambda dt):
 *
 *   ewma           first x sets m = x; then m = alpha x + (1 - alpha) m if dt > 0,
 *                  m = (x + m) / 2 if dt = 0 (same ms).             As of the last event.
 *   ewvar          first x: mean = x, s = 0; then a = alpha (0.5 if dt = 0),
 *                  d = x - mean, mean += a d, s = (1 - a)(s + a d^2).  Output s (>= 0).
 *   ew_zscore      (x_last - mean) / sqrt(s) with mean, s of ewvar; null while s = 0.
 *   decayed_sum    S = S 2^(-dt/h) + x; READ decayed to the query time: S 2^(-(now - t_last)/h).
 *   decayed_count  the same with +1 per match.
 *   twa            time-weighted average of the step function "x holds until the next
 *                  event": sum(x_i (t_(i+1) - t_i)) / (t_last - t_first); the last value
 *                  while no time has elapsed. The open interval up to now is not counted.
 *                  twa is a mergeable summary (TwaAgg), so it also takes a sliding window:
 *                  the same formula over the values inside it (val_window.ts).
 *
 * ewvar: the peer writes m2 = (1 - a) m2 + a d (x - mean'); since x - mean' = (1 - a) d
 * this is the same quantity, (1 - a)(m2 + a d^2) (Finch, "Incremental calculation of
 * weighted mean and variance", 2009).
 */
import type { JsonValue, Value } from '../types';
import { RowFixedOp } from './fixed';
import type { WindowAgg } from './val_window';
import { isNum, jsonNum, loadFields, saveFields } from './values';

export const enum EwOut {
  Ewma = 0,
  Ewvar = 1,
  EwZ = 2,
}

/** Weight of the new value when two events share a millisecond (dt = 0). */
const SAME_MS_ALPHA = 0.5;

/** ewma / ewvar / ew_zscore. Row (fixed.ts): [n, mean, s, tLast, last]. */
export class EwFixed extends RowFixedOp {
  readonly width = 5;
  readonly lambda: number;
  constructor(readonly out: EwOut, halfLifeMs: number) {
    super();
    this.lambda = Math.LN2 / halfLifeMs;
  }
  update(a: Float64Array, at: number, x: Value | undefined, t: number): void {
    if (!isNum(x)) return;
    a[at + 4] = x;
    if (a[at] === 0) {
      a[at] = 1;
      a[at + 1] = x;
      a[at + 2] = 0;
      a[at + 3] = t;
      return;
    }
    a[at]++;
    const dt = t - a[at + 3];
    const w = dt > 0 ? -Math.expm1(-this.lambda * dt) : SAME_MS_ALPHA;
    const d = x - a[at + 1];
    a[at + 1] += w * d;
    a[at + 2] = (1 - w) * (a[at + 2] + w * d * d);
    if (dt > 0) a[at + 3] = t;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    if (a[at] === 0) return null;
    if (this.out === EwOut.Ewma) return jsonNum(a[at + 1]);
    if (this.out === EwOut.Ewvar) return jsonNum(Math.max(0, a[at + 2]));
    if (!(a[at + 2] > 0)) return null;
    return jsonNum((a[at + 4] - a[at + 1]) / Math.sqrt(a[at + 2]));
  }
}

/** decayed_sum / decayed_count: forward-decayed total, read decayed to the query time. Row: [n, total, tLast]. */
export class DecayedFixed extends RowFixedOp {
  readonly width = 3;
  constructor(readonly count: boolean, readonly halfLifeMs: number) {
    super();
  }
  update(a: Float64Array, at: number, x: Value | undefined, t: number): void {
    let v = 1;
    if (!this.count) {
      if (!isNum(x)) return;
      v = x;
    }
    if (a[at] === 0) a[at + 1] = v;
    else a[at + 1] = a[at + 1] * Math.pow(2, -Math.max(0, t - a[at + 2]) / this.halfLifeMs) + v;
    a[at]++;
    a[at + 2] = t;
  }
  miss(): void {}
  read(a: Float64Array, at: number, now: number): JsonValue {
    if (a[at] === 0) return this.count ? 0 : null;
    return jsonNum(a[at + 1] * Math.pow(2, -Math.max(0, now - a[at + 2]) / this.halfLifeMs));
  }
}

/** twa: time-weighted average of the value as a step function between events. */
/**
 * twa summary of a run of values: Σ x_i·(t_(i+1) − t_i) (`area`) over its span
 * t_last − t_first (`span`), the last value and time. Times are non-decreasing, so
 * the first time is tPrev − span and a later run merges with one extra step.
 */
export class TwaAcc {
  n = 0;
  area = 0;
  span = 0;
  prev = 0;
  tPrev = 0;
}

/** Saved layout (that of the lifetime state before windows existed). */
const TWA_FIELDS: ReadonlyArray<keyof TwaAcc> = ['n', 'area', 'span', 'prev', 'tPrev'];

export class TwaAgg implements WindowAgg<TwaAcc> {
  accepts(x: Value | undefined): x is number {
    return isNum(x);
  }
  empty(): TwaAcc {
    return new TwaAcc();
  }
  clear(a: TwaAcc): TwaAcc {
    a.n = 0;
    a.area = 0;
    a.span = 0;
    return a;
  }
  add(a: TwaAcc, v: string | number | boolean, t: number): TwaAcc {
    if (a.n > 0) step(a, t);
    a.n++;
    a.prev = v as number;
    a.tPrev = t;
    return a;
  }
  merge(into: TwaAcc, from: TwaAcc): TwaAcc {
    if (from.n === 0) return into;
    if (into.n > 0) step(into, from.tPrev - from.span);
    into.area += from.area;
    into.span += from.span;
    into.n += from.n;
    into.prev = from.prev;
    into.tPrev = from.tPrev;
    return into;
  }
  result(a: TwaAcc): JsonValue {
    if (a.n === 0) return null;
    return jsonNum(a.span === 0 ? a.prev : a.area / a.span);
  }
  save(a: TwaAcc): unknown {
    return saveFields(a, TWA_FIELDS);
  }
  load(saved: unknown): TwaAcc {
    return loadFields(new TwaAcc(), TWA_FIELDS, saved as number[]);
  }
}

/** The last value holds from a.tPrev to t (nothing when they share a millisecond). */
function step(a: TwaAcc, t: number): void {
  const dt = t - a.tPrev;
  if (dt > 0) {
    a.area += a.prev * dt;
    a.span += dt;
  }
}
