/**
 * Point and buffer-of-values ops, lifetime by default (bounded by `n`), each with an
 * optional sliding window:
 *   first, last          the first / most recent present value
 *   first_n              the first n present values, arrival order, frozen once full
 *   last_n, most_recent_n  the last n present values, oldest -> newest
 *   lag                  the present value n matching events before the latest
 * PointAgg (below) describes an op: the lifetime form keeps its values per entity
 * in a slab (shard/columns/kept_column.ts), the windowed form keeps them per window
 * bucket (ring_group.ts, as a WindowAgg).
 */
import type { JsonValue, Value } from '../types';
import type { WindowAgg } from './val_window';
import { jsonVal } from './values';

type Kept = string | number | boolean;

/** What a windowed point op reads from its kept values. */
export const enum PointOut {
  /** first / last: the one kept value. */
  One = 0,
  /** first_n / last_n / most_recent_n: every kept value, oldest first. */
  All = 1,
  /** lag: the value `lag` places before the newest. */
  Lag = 2,
}

/** The kept values of a run of events (at most the op's cap). */
export class KeptAcc {
  vals: Kept[] = [];
}

/**
 * The windowed form of the point ops: each accumulator keeps the first (or the
 * last) `cap` present values of its run of events, so a window bucket holds at
 * most `cap` values and joining two runs keeps the first / last `cap` of both.
 */
export class PointAgg implements WindowAgg<KeptAcc> {
  readonly cap: number;
  /** True: keep the newest `cap` values (last, last_n, lag); false: the oldest (first, first_n). */
  readonly newest: boolean;
  readonly out: PointOut;
  readonly lag: number;
  constructor(cap: number, newest: boolean, out: PointOut, lag = 0) {
    this.cap = cap;
    this.newest = newest;
    this.out = out;
    this.lag = lag;
  }
  accepts(x: Value | undefined): x is Kept {
    return x !== null && x !== undefined;
  }
  empty(): KeptAcc {
    return new KeptAcc();
  }
  clear(a: KeptAcc): KeptAcc {
    a.vals.length = 0;
    return a;
  }
  add(a: KeptAcc, v: Kept, _t: number): KeptAcc {
    if (!this.newest) {
      if (a.vals.length < this.cap) a.vals.push(v);
      return a;
    }
    a.vals.push(v);
    if (a.vals.length > this.cap) a.vals.shift();
    return a;
  }
  merge(into: KeptAcc, from: KeptAcc): KeptAcc {
    for (const v of from.vals) this.add(into, v, 0);
    return into;
  }
  result(a: KeptAcc): JsonValue {
    const vs = a.vals;
    switch (this.out) {
      case PointOut.One:
        return vs.length === 0 ? null : jsonVal(vs[this.newest ? vs.length - 1 : 0]);
      case PointOut.All:
        return vs.map(jsonVal);
      case PointOut.Lag:
        return vs.length <= this.lag ? null : jsonVal(vs[vs.length - 1 - this.lag]);
    }
  }
  save(a: KeptAcc): unknown {
    return a.vals.slice();
  }
  load(saved: unknown): KeptAcc {
    const a = new KeptAcc();
    a.vals = (saved as Kept[]).slice();
    return a;
  }
}
