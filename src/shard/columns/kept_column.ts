/**
 * The lifetime point ops (first, last, first_n, last_n, most_recent_n, lag) for
 * every entity slot of a table: a row of 2 + cap cells per slot in one
 * Float64Array, [len, head, value 0, ..., value cap-1], the values as cells
 * (cells.ts: numbers as themselves, strings and booleans as ids of the column's
 * intern table, one reference per cell). The op's parameters are its PointAgg
 * (ops/point.ts), which the windowed forms use too; a save is the kept values
 * (oldest first; the value or null for first and last).
 *
 *   keep the newest (last, last_n, lag): a ring of cap values, the oldest at head,
 *     overwritten when full
 *   keep the oldest (first, first_n): appended until cap, then frozen
 */
import { PointOut, type PointAgg } from '../../ops/point';
import { jsonVal } from '../../ops/values';
import type { JsonValue, Value } from '../../types';
import { decodeCell, encodeCell, releaseCell } from './cells';
import { zeroRange } from '../state/entity_index';
import { grown, wordsOf } from '../../util/unaccounted';
import type { InternTable } from '../state/intern';
import type { SoloColumn } from './solo_column';

type Kept = string | number | boolean;

export class KeptColumn implements SoloColumn {
  readonly width: number;
  readonly cap: number;
  data: Float64Array;
  u32: Uint32Array;

  constructor(readonly agg: PointAgg, readonly intern: InternTable, capacity: number) {
    this.cap = agg.cap;
    this.width = 2 + agg.cap;
    this.data = new Float64Array(capacity * this.width);
    this.u32 = wordsOf(this.data);
  }

  create(slot: number): void {
    zeroRange(this.data, slot * this.width, (slot + 1) * this.width);
  }

  clear(slot: number): void {
    const at = slot * this.width;
    const len = this.data[at];
    for (let k = 0; k < len; k++) releaseCell(this.u32, at + 2 + k, this.intern);
    this.create(slot);
  }

  update(slot: number, x: Value | undefined): void {
    if (x === null || x === undefined) return;
    const at = slot * this.width;
    const d = this.data;
    const len = d[at];
    if (len < this.cap) {
      // The ring is never wrapped before it is full: head is 0 until then.
      encodeCell(d, this.u32, at + 2 + len, this.intern, x);
      d[at] = len + 1;
      return;
    }
    if (!this.agg.newest) return; // first, first_n: frozen once full
    const head = d[at + 1];
    const i = at + 2 + head;
    releaseCell(this.u32, i, this.intern);
    encodeCell(d, this.u32, i, this.intern, x);
    d[at + 1] = head + 1 === this.cap ? 0 : head + 1;
  }

  miss(): void {}

  /** The k-th kept value from the oldest. */
  #at(at: number, k: number): Kept {
    let j = this.data[at + 1] + k;
    if (j >= this.cap) j -= this.cap;
    return decodeCell(this.data, this.u32, at + 2 + j, this.intern) as Kept;
  }

  read(slot: number): JsonValue {
    const at = slot * this.width;
    const len = this.data[at];
    switch (this.agg.out) {
      case PointOut.One:
        return len === 0 ? null : jsonVal(this.#at(at, 0));
      case PointOut.All: {
        const out: JsonValue[] = new Array(len);
        for (let k = 0; k < len; k++) out[k] = jsonVal(this.#at(at, k));
        return out;
      }
      case PointOut.Lag:
        return len <= this.agg.lag ? null : jsonVal(this.#at(at, len - 1 - this.agg.lag));
    }
  }

  /** The kept values, oldest first; first and last: the value or null. */
  save(slot: number): unknown {
    const at = slot * this.width;
    const len = this.data[at];
    if (this.agg.out === PointOut.One) return len === 0 ? null : this.#at(at, 0);
    const out: Kept[] = [];
    for (let k = 0; k < len; k++) out.push(this.#at(at, k));
    return out;
  }

  load(slot: number, saved: unknown): void {
    this.clear(slot);
    if (saved === null || saved === undefined) return;
    const vals = Array.isArray(saved) ? (saved as Kept[]) : [saved as Kept];
    // The newest ones for last_n / lag, the first ones for first_n.
    const from = this.agg.newest ? Math.max(0, vals.length - this.cap) : 0;
    const to = Math.min(vals.length, from + this.cap);
    for (let k = from; k < to; k++) this.update(slot, vals[k]);
  }

  grow(capacity: number): void {
    this.data = grown(this.data, capacity * this.width);
    this.u32 = wordsOf(this.data);
  }

  /** Lifetime states remember: never empty once they exist. */
  emptyAt(): boolean {
    return false;
  }
}
