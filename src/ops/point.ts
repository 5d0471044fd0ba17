/**
 * Point and buffer-of-values ops, lifetime by default (bounded by `n`), each with an
 * optional sliding window (PointAgg below: the same answer over the window's values):
 *   first, last          the first / most recent present value
 *   first_n              the first n present values, arrival order, frozen once full
 *   last_n, most_recent_n  the last n present values, oldest -> newest
 *   lag                  the present value n matching events before the latest
 * Values are kept as they arrived (a reference to the row's value: no allocation).
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import type { WindowAgg } from './val_window';
import { jsonVal } from './values';

type Kept = string | number | boolean;

export class FirstState implements StoredState {
  v: Kept | null;
  constructor() {
    this.v = null;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (this.v === null && x !== null && x !== undefined) this.v = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return jsonVal(this.v);
  }
  save(): unknown {
    return this.v;
  }
  restore(saved: unknown): void {
    this.v = saved as Kept | null;
  }
}

export class LastState implements StoredState {
  v: Kept | null;
  constructor() {
    this.v = null;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x !== null && x !== undefined) this.v = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return jsonVal(this.v);
  }
  save(): unknown {
    return this.v;
  }
  restore(saved: unknown): void {
    this.v = saved as Kept | null;
  }
}

const EMPTY: Kept[] = [];

export class FirstNState implements StoredState {
  readonly n: number;
  vals: Kept[];
  constructor(n: number) {
    this.n = n;
    this.vals = EMPTY;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x === null || x === undefined || this.vals.length >= this.n) return;
    if (this.vals === EMPTY) this.vals = [];
    this.vals.push(x);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.vals.map(jsonVal);
  }
  save(): unknown {
    return this.vals.slice();
  }
  restore(saved: unknown): void {
    const a = saved as Kept[];
    this.vals = a.length === 0 ? EMPTY : a.slice(0, this.n);
  }
}

/**
 * last_n / most_recent_n (lag < 0): the last n present values, oldest first.
 * lag (lag = n >= 1): with values v_1..v_m (v_m newest), v_(m-n); null while m <= n,
 * keeping a ring of n + 1 values.
 * The ring grows by doubling up to its cap, so an entity with two values holds
 * two slots, not n.
 */
export class LastNState implements StoredState {
  readonly cap: number;
  readonly lag: number;
  buf: Kept[];
  head: number;
  len: number;
  constructor(n: number, lag: boolean) {
    this.cap = lag ? n + 1 : n;
    this.lag = lag ? n : -1;
    this.buf = EMPTY;
    this.head = 0;
    this.len = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x === null || x === undefined) return;
    const size = this.buf.length;
    if (this.len < size) {
      let i = this.head + this.len;
      if (i >= size) i -= size;
      this.buf[i] = x;
      this.len++;
      return;
    }
    if (size < this.cap) {
      const next = Math.min(this.cap, size === 0 ? 2 : size * 2);
      const buf: Kept[] = new Array<Kept>(next).fill(0);
      for (let k = 0; k < this.len; k++) buf[k] = this.at(k);
      buf[this.len] = x;
      this.buf = buf;
      this.head = 0;
      this.len++;
      return;
    }
    // Full at cap: overwrite the oldest.
    this.buf[this.head] = x;
    this.head = this.head + 1 === size ? 0 : this.head + 1;
  }
  /** k-th value from the oldest (0 = oldest). */
  private at(k: number): Kept {
    let i = this.head + k;
    if (i >= this.buf.length) i -= this.buf.length;
    return this.buf[i];
  }
  private toArray(): Kept[] {
    const out: Kept[] = [];
    for (let k = 0; k < this.len; k++) out.push(this.at(k));
    return out;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.lag < 0) return this.toArray().map(jsonVal);
    if (this.len <= this.lag) return null;
    return jsonVal(this.at(this.len - 1 - this.lag));
  }
  save(): unknown {
    return this.toArray();
  }
  restore(saved: unknown): void {
    const vals = saved as Kept[];
    const keep = vals.slice(Math.max(0, vals.length - this.cap));
    this.buf = keep.length === 0 ? EMPTY : keep;
    this.head = 0;
    this.len = keep.length;
  }
}

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
