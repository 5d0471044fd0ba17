/**
 * Point and buffer-of-values ops, all lifetime (bounded by `n`):
 *   first, last          the first / most recent present value
 *   first_n              the first n present values, arrival order, frozen once full
 *   last_n, most_recent_n  the last n present values, oldest -> newest
 *   lag                  the present value n matching events before the latest
 * Values are kept as they arrived (a reference to the row's value: no allocation).
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
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
