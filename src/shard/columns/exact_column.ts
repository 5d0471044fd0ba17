/**
 * The lifetime sketch ops (n_unique, quantile, top_k, entropy without a window:
 * ValLifeState over a timeless WindowAgg, ops/val_window.ts) for every entity slot
 * of a table, exact while an entity is small. As an object per entity these cost
 * ~400-800 B each from the first event (a sketch with its arrays, a Map); most
 * entities of a large table see a few events. So a slot starts as a row of
 * 1 + LIFE_EXACT_VALUES_MAX cells in one Float64Array:
 *
 *   [len, value 0, ..., value len-1]   the accepted values in arrival order, as
 *                                      cells (cells.ts: numbers as themselves,
 *                                      strings and booleans as intern ids)
 *   [PROMOTED, ...]                    the op's own ValLifeState, in `#promoted`
 *
 * A read rebuilds the op's accumulator from the values (one scratch accumulator
 * per column, cleared and refilled: the aggs are timeless, so the values in order
 * are the whole input) and answers with the op's own result: the same answer, bit
 * for bit, as the object would give, sketches included. The value that would not
 * fit turns the slot into that object, fed the kept values first.
 *
 * Saved as the op's own save (an object slot), null (no value yet) or
 * `{ exactValues: [...] }` (ExactSave, ValLifeState.restore reads it too): a slot
 * restored from a snapshot or the cold store comes back as cells, not as an object.
 */
import { isExactSave, type WindowAgg } from '../../ops/val_window';
import { strict as assert } from 'node:assert';
import type { ObjectOp, OpFactory, OpState } from '../../ops/op';
import type { JsonValue, Row, Value } from '../../types';
import { LIFE_EXACT_VALUES_MAX } from '../../limits';
import { decodeCell, encodeCell, releaseCell } from './cells';
import { zeroRange } from '../state/entity_index';
import { grown, wordsOf } from '../../util/unaccounted';
import type { InternTable } from '../state/intern';
import type { SoloColumn } from './solo_column';

/** `len` of a slot whose state is an object. */
const PROMOTED = -1;
const WIDTH = 1 + LIFE_EXACT_VALUES_MAX;

export class ExactColumn implements SoloColumn {
  readonly width = WIDTH;
  data: Float64Array;
  u32: Uint32Array;
  /** Slots past LIFE_EXACT_VALUES_MAX values: few, so a Map rather than an array as long as the table. */
  readonly #promoted = new Map<number, OpState>();
  #scratch: unknown;

  /** The op's object form (ValLifeState over `agg`): what a slot becomes past LIFE_EXACT_VALUES_MAX values. */
  readonly #object: ObjectOp;

  constructor(factory: OpFactory, readonly agg: WindowAgg<unknown>, readonly intern: InternTable, capacity: number) {
    assert(factory.object !== null, 'a lifetime sketch op has an object form');
    this.#object = factory.object;
    this.data = new Float64Array(capacity * WIDTH);
    this.u32 = wordsOf(this.data);
    this.#scratch = agg.empty();
  }

  /** Slots whose state is an object (tests, stats). */
  get promotedCount(): number {
    return this.#promoted.size;
  }

  /** A fresh slot: every caller hands over a slot that was never used or was cleared when its entity left. */
  create(slot: number): void {
    zeroRange(this.data, slot * WIDTH, (slot + 1) * WIDTH);
  }

  clear(slot: number): void {
    const at = slot * WIDTH;
    const len = this.data[at];
    if (len === PROMOTED) this.#promoted.delete(slot);
    else for (let k = 0; k < len; k++) releaseCell(this.u32, at + 1 + k, this.intern);
    zeroRange(this.data, at, at + WIDTH);
  }

  update(slot: number, x: Value | undefined, t: number, row: Row): void {
    const at = slot * WIDTH;
    const len = this.data[at];
    if (len === PROMOTED) {
      (this.#promoted.get(slot) as OpState).update(x, t, row);
      return;
    }
    // ValLifeState.update's own test: a value it would skip is not kept either.
    if (!this.agg.accepts(x)) return;
    const v = x === undefined ? 0 : x;
    if (len < LIFE_EXACT_VALUES_MAX && (typeof v !== 'object' || v === null)) {
      encodeCell(this.data, this.u32, at + 1 + len, this.intern, v);
      this.data[at] = len + 1;
      return;
    }
    this.#promote(slot).update(x, t, row);
  }

  /** The slot's state as the op's object, fed its kept values in order; the cells give their references back. */
  #promote(slot: number): OpState {
    const at = slot * WIDTH;
    const len = this.data[at];
    const st = this.#object.create();
    for (let k = 0; k < len; k++) {
      // Timeless aggs: ValLifeState passes t on to an add that ignores it, and reads nothing else of the row.
      st.update(decodeCell(this.data, this.u32, at + 1 + k, this.intern), 0, EMPTY_ROW);
      releaseCell(this.u32, at + 1 + k, this.intern);
    }
    zeroRange(this.data, at, at + WIDTH);
    this.data[at] = PROMOTED;
    this.#promoted.set(slot, st);
    return st;
  }

  miss(): void {}

  read(slot: number, now: number): JsonValue {
    const at = slot * WIDTH;
    const len = this.data[at];
    if (len === PROMOTED) return (this.#promoted.get(slot) as OpState).read(now);
    const agg = this.agg;
    let acc = agg.clear(this.#scratch);
    for (let k = 0; k < len; k++) acc = agg.add(acc, decodeCell(this.data, this.u32, at + 1 + k, this.intern) as string | number | boolean, 0, 0);
    this.#scratch = acc;
    return agg.result(acc);
  }

  save(slot: number): unknown {
    const at = slot * WIDTH;
    const len = this.data[at];
    if (len === PROMOTED) return (this.#promoted.get(slot) as OpState).save();
    // ValLifeState.save of a state that accepted nothing.
    if (len === 0) return null;
    const exactValues: Array<Value | undefined> = new Array(len);
    for (let k = 0; k < len; k++) exactValues[k] = decodeCell(this.data, this.u32, at + 1 + k, this.intern);
    return { exactValues };
  }

  load(slot: number, saved: unknown): void {
    this.clear(slot);
    if (saved === null || saved === undefined) return;
    if (isExactSave(saved) && saved.exactValues.length <= LIFE_EXACT_VALUES_MAX) {
      const at = slot * WIDTH;
      const vals = saved.exactValues;
      for (let k = 0; k < vals.length; k++) encodeCell(this.data, this.u32, at + 1 + k, this.intern, vals[k] as Value | undefined);
      this.data[at] = vals.length;
      return;
    }
    // A sketch's own save (a state past its exact values).
    this.data[slot * WIDTH] = PROMOTED;
    this.#promoted.set(slot, this.#object.load(saved));
  }

  grow(capacity: number): void {
    this.data = grown(this.data, capacity * WIDTH);
    this.u32 = wordsOf(this.data);
  }

  /** Lifetime states remember: never empty once they exist (ValLifeState has no emptyAt). */
  emptyAt(): boolean {
    return false;
  }
}

const EMPTY_ROW: Row = {};
