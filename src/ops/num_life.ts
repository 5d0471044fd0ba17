/**
 * Lifetime (`window: "forever"`) states of the core ops: constant memory per
 * entity, a fixed number of doubles. Each op is a FixedOp working on a row of a
 * Float64Array: the shard keeps one slab per feature, a row per entity slot
 * (shard/columns/solo_column.ts FixedColumn), so these states are no objects. A row
 * of zeros is the empty state. String min/max keeps a string: it stays a class.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { RowFixedOp, type FixedOp } from './fixed';
import { isNum, jsonNum } from './values';
import { zScore } from './num_window';

/** count: every matching event, or (with `field`) every matching event with a present value. Row: [n]. */
export class CountFixed implements FixedOp {
  readonly width = 1;
  constructor(readonly present: boolean) {}
  update(a: Float64Array, at: number, x: Value | undefined): void {
    if (this.present && (x === null || x === undefined)) return;
    a[at]++;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    return a[at];
  }
  save(a: Float64Array, at: number): unknown {
    return a[at];
  }
  load(a: Float64Array, at: number, saved: unknown): void {
    a[at] = saved as number;
  }
}

/** sum and mean: n and Σx in arrival order. Row: [n, sum]. */
export class SumFixed extends RowFixedOp {
  readonly width = 2;
  constructor(readonly mean: boolean) {
    super();
  }
  update(a: Float64Array, at: number, x: Value | undefined): void {
    if (!isNum(x)) return;
    a[at]++;
    a[at + 1] += x;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    const n = a[at];
    if (n === 0) return null;
    return jsonNum(this.mean ? a[at + 1] / n : a[at + 1]);
  }
}

/** min / max over numbers (i64, f64, datetime): the first extreme value wins ties. Row: [n, v]. */
export class ExtremeFixed extends RowFixedOp {
  readonly width = 2;
  constructor(readonly isMax: boolean) {
    super();
  }
  update(a: Float64Array, at: number, x: Value | undefined): void {
    if (!isNum(x)) return;
    if (a[at] === 0 || (this.isMax ? x > a[at + 1] : x < a[at + 1])) a[at + 1] = x;
    a[at]++;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    return a[at] === 0 ? null : a[at + 1];
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

/** var / std / z_score: Welford's running mean and M2; sample variance (n - 1). Row: [n, mean, m2, last]. */
export class MomentsFixed extends RowFixedOp {
  readonly width = 4;
  constructor(readonly out: MomentOut) {
    super();
  }
  update(a: Float64Array, at: number, x: Value | undefined): void {
    if (!isNum(x)) return;
    const n = ++a[at];
    const d = x - a[at + 1];
    a[at + 1] += d / n;
    a[at + 2] += d * (x - a[at + 1]);
    a[at + 3] = x;
  }
  miss(): void {}
  read(a: Float64Array, at: number): JsonValue {
    const n = a[at];
    if (this.out === MomentOut.ZScore) return zScore(n, a[at + 1], a[at + 2], a[at + 3]);
    if (n < 2) return null;
    const variance = Math.max(0, a[at + 2] / (n - 1));
    return jsonNum(this.out === MomentOut.Var ? variance : Math.sqrt(variance));
  }
}

/** ratio: matching events / every event that reached the feature (where gates the numerator). Row: [n, matched]. */
export class RatioFixed extends RowFixedOp {
  readonly width = 2;
  update(a: Float64Array, at: number): void {
    a[at]++;
    a[at + 1]++;
  }
  miss(a: Float64Array, at: number): void {
    a[at]++;
  }
  read(a: Float64Array, at: number): JsonValue {
    return a[at] === 0 ? null : a[at + 1] / a[at];
  }
}
