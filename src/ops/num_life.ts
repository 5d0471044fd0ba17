/**
 * Lifetime (`window: "forever"`) states of the core ops: constant memory per
 * entity. One small class per shape, each field holding one kind of value for
 * its whole life (a double field never sees a string), so V8 keeps doubles in
 * mutable boxes and an update allocates nothing.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { isNum, jsonNum } from './values';
import { zScore } from './num_window';

/** count: every matching event, or (with `field`) every matching event with a present value. */
export class CountLife implements StoredState {
  readonly present: boolean;
  n: number;
  constructor(present: boolean) {
    this.present = present;
    this.n = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (this.present && (x === null || x === undefined)) return;
    this.n++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.n;
  }
  save(): unknown {
    return this.n;
  }
  restore(saved: unknown): void {
    this.n = saved as number;
  }
}

/** sum and mean: n and Σx in arrival order. */
export class SumLife implements StoredState {
  readonly mean: boolean;
  n: number;
  sum: number;
  constructor(mean: boolean) {
    this.mean = mean;
    this.n = 0;
    this.sum = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    this.n++;
    this.sum += x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.n === 0) return null;
    return jsonNum(this.mean ? this.sum / this.n : this.sum);
  }
  save(): unknown {
    return [this.n, this.sum];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.sum = a[1];
  }
}

/** min / max over numbers (i64, f64, datetime): the first extreme value wins ties. */
export class ExtremeLife implements StoredState {
  readonly isMax: boolean;
  n: number;
  v: number;
  constructor(isMax: boolean) {
    this.isMax = isMax;
    this.n = 0;
    this.v = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.n === 0 || (this.isMax ? x > this.v : x < this.v)) this.v = x;
    this.n++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.n === 0 ? null : this.v;
  }
  save(): unknown {
    return [this.n, this.v];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.v = a[1];
  }
}

/** min / max over strings (lexicographic by UTF-16 code units, as JS `<`). */
export class StrExtremeLife implements StoredState {
  readonly isMax: boolean;
  v: string | null;
  constructor(isMax: boolean) {
    this.isMax = isMax;
    this.v = null;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (typeof x !== 'string') return;
    if (this.v === null || (this.isMax ? x > this.v : x < this.v)) this.v = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.v;
  }
  save(): unknown {
    return this.v;
  }
  restore(saved: unknown): void {
    this.v = saved as string | null;
  }
}

export const enum MomentOut {
  Var = 0,
  Std = 1,
  ZScore = 2,
}

/** var / std / z_score: Welford's running mean and M2; sample variance (n - 1). */
export class MomentsLife implements StoredState {
  readonly out: MomentOut;
  n: number;
  mean: number;
  m2: number;
  last: number;
  constructor(out: MomentOut) {
    this.out = out;
    this.n = 0;
    this.mean = 0;
    this.m2 = 0;
    this.last = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    this.n++;
    const d = x - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (x - this.mean);
    this.last = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.out === MomentOut.ZScore) return zScore(this.n, this.mean, this.m2, this.last);
    if (this.n < 2) return null;
    const variance = Math.max(0, this.m2 / (this.n - 1));
    return jsonNum(this.out === MomentOut.Var ? variance : Math.sqrt(variance));
  }
  save(): unknown {
    return [this.n, this.mean, this.m2, this.last];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.mean = a[1];
    this.m2 = a[2];
    this.last = a[3];
  }
}

/** ratio: matching events / every event that reached the feature (where gates the numerator). */
export class RatioLife implements StoredState {
  n: number;
  matched: number;
  constructor() {
    this.n = 0;
    this.matched = 0;
  }
  update(_x: Value | undefined, _t: number, _row: Row): void {
    this.n++;
    this.matched++;
  }
  miss(_t: number): void {
    this.n++;
  }
  read(_now: number): JsonValue {
    return this.n === 0 ? null : this.matched / this.n;
  }
  save(): unknown {
    return [this.n, this.matched];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.matched = a[1];
  }
}
