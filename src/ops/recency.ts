/**
 * Recency and streak ops (no field; a "match" is an event that passed `where`,
 * or every event without one). Times are server ms.
 *   first_seen   t of the first match                         null before
 *   last_seen    t of the latest match                        null before
 *   age          now - first_seen                             null before
 *   has_seen     a match happened                             false before
 *   time_since   now - last_seen                              null before
 *   time_since_last_n  now - t of the n-th most recent match  null until n matches
 *   first_seen_in_window  now - last_seen < window            false before
 *   streak / max_streak / negative_streak: runs of matches / non-matches
 * All of them are O(1) memory except time_since_last_n (n times).
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import type { FixedOp } from './fixed';
import { newDoubles } from './values';

export const enum RecencyOut {
  FirstSeen = 0,
  LastSeen = 1,
  Age = 2,
  HasSeen = 3,
  TimeSince = 4,
  SeenInWindow = 5,
}

/** Sentinel for "no match yet" in the saved form: server times are >= 0. */
const NEVER = -1;

/**
 * first_seen, last_seen, age, has_seen, time_since, first_seen_in_window.
 * Row (fixed.ts): [first + 1, last + 1], 0 = no match yet (a zero row is empty);
 * saved as [first, last] with -1 for never.
 */
export class RecencyFixed implements FixedOp {
  readonly width = 2;
  constructor(readonly out: RecencyOut, readonly windowMs: number) {}
  update(a: Float64Array, at: number, _x: Value | undefined, t: number): void {
    if (a[at] === 0) a[at] = t + 1;
    a[at + 1] = t + 1;
  }
  miss(): void {}
  read(a: Float64Array, at: number, now: number): JsonValue {
    const seen = a[at + 1] !== 0;
    const first = a[at] - 1;
    const last = a[at + 1] - 1;
    switch (this.out) {
      case RecencyOut.FirstSeen:
        return seen ? first : null;
      case RecencyOut.LastSeen:
        return seen ? last : null;
      case RecencyOut.Age:
        return seen ? Math.max(0, now - first) : null;
      case RecencyOut.HasSeen:
        return seen;
      case RecencyOut.TimeSince:
        return seen ? Math.max(0, now - last) : null;
      case RecencyOut.SeenInWindow:
        return seen && now - last < this.windowMs;
    }
  }
  save(a: Float64Array, at: number): unknown {
    return [a[at] === 0 ? NEVER : a[at] - 1, a[at + 1] === 0 ? NEVER : a[at + 1] - 1];
  }
  load(a: Float64Array, at: number, saved: unknown): void {
    const s = saved as number[];
    a[at] = s[0] === NEVER ? 0 : s[0] + 1;
    a[at + 1] = s[1] === NEVER ? 0 : s[1] + 1;
  }
}

const EMPTY: number[] = [];

/** time_since_last_n: a ring of the last n match times. */
export class TimeSinceLastNState implements StoredState {
  readonly n: number;
  ts: number[];
  head: number;
  len: number;
  constructor(n: number) {
    this.n = n;
    this.ts = EMPTY;
    this.head = 0;
    this.len = 0;
  }
  update(_x: Value | undefined, t: number, _row: Row): void {
    if (this.len < this.n) {
      if (this.len === this.ts.length) this.grow();
      this.ts[this.len] = t;
      this.len++;
      return;
    }
    this.ts[this.head] = t;
    this.head = this.head + 1 === this.n ? 0 : this.head + 1;
  }
  private grow(): void {
    const next = Math.min(this.n, Math.max(2, this.ts.length * 2));
    const ts = newDoubles(next);
    for (let k = 0; k < this.len; k++) ts[k] = this.ts[k];
    this.ts = ts;
  }
  miss(_t: number): void {}
  read(now: number): JsonValue {
    if (this.len < this.n) return null;
    // The oldest of the last n matches is the n-th most recent.
    return Math.max(0, now - this.ts[this.head]);
  }
  save(): unknown {
    const out: number[] = [];
    for (let k = 0; k < this.len; k++) out.push(this.ts[(this.head + k) % Math.max(1, this.ts.length)]);
    return out;
  }
  restore(saved: unknown): void {
    const a = (saved as number[]).slice(-this.n);
    this.ts = a.length === 0 ? EMPTY : newDoubles(a.length);
    for (let k = 0; k < a.length; k++) this.ts[k] = a[k];
    this.head = 0;
    this.len = a.length;
    // A full ring must have exactly n slots for the overwrite arithmetic.
    if (this.len === this.n && this.ts.length !== this.n) throw new Error('time_since_last_n: bad saved state');
  }
}

export const enum StreakOut {
  Streak = 0,
  MaxStreak = 1,
  Negative = 2,
}

/** streak, max_streak, negative_streak: wantsMiss. */
export class StreakState implements StoredState {
  readonly out: StreakOut;
  run: number;
  best: number;
  neg: number;
  constructor(out: StreakOut) {
    this.out = out;
    this.run = 0;
    this.best = 0;
    this.neg = 0;
  }
  update(_x: Value | undefined, _t: number, _row: Row): void {
    this.run++;
    if (this.run > this.best) this.best = this.run;
    this.neg = 0;
  }
  miss(_t: number): void {
    this.run = 0;
    this.neg++;
  }
  read(_now: number): JsonValue {
    return this.out === StreakOut.Streak ? this.run : this.out === StreakOut.MaxStreak ? this.best : this.neg;
  }
  save(): unknown {
    return [this.run, this.best, this.neg];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.run = a[0];
    this.best = a[1];
    this.neg = a[2];
  }
}
