/**
 * String (and boolean) values of one table column, interned so that shared
 * rings (ring_group.ts) hold numbers: a ring cell holds the value's id.
 *
 * Reference counted: every ring cell holding an id is one reference. A value
 * whose last cell leaves (expired, evicted into a bucket, entity frozen or
 * dropped) is removed and its id reused, so the table holds exactly the values
 * some ring still holds and cannot grow without bound under churn. Buckets and
 * sketches keep the values themselves, not ids (they outlive the ring cells).
 */
import { strict as assert } from 'node:assert';

export type Interned = string | boolean;

const IDS_MIN = 16;

export class InternTable {
  readonly #ids = new Map<Interned, number>();
  /** Value per id (undefined for a free id). */
  values: Array<Interned | undefined> = [];
  refs = new Int32Array(IDS_MIN);
  #free: number[] = [];

  get size(): number {
    return this.#ids.size;
  }

  /** The id of `v`, with one more reference. */
  ref(v: Interned): number {
    let id = this.#ids.get(v);
    if (id === undefined) {
      id = this.#free.length > 0 ? (this.#free.pop() as number) : this.values.length;
      if (id >= this.refs.length) {
        const r = new Int32Array(this.refs.length * 2);
        r.set(this.refs);
        this.refs = r;
      }
      this.#ids.set(v, id);
      this.values[id] = v;
    }
    this.refs[id]++;
    return id;
  }

  /** Drops one reference of `id`; the value goes when none is left. */
  unref(id: number): void {
    assert(this.refs[id] > 0, 'intern id released more often than referenced');
    if (--this.refs[id] > 0) return;
    this.#ids.delete(this.values[id] as Interned);
    this.values[id] = undefined;
    this.#free.push(id);
  }

  value(id: number): Interned {
    return this.values[id] as Interned;
  }

  /** The table as saved in a slab snapshot: values by id (null for free ids) and their counts. */
  save(): { values: Array<Interned | null>; refs: Int32Array } {
    const values = this.values.map((v) => (v === undefined ? null : v));
    return { values, refs: this.refs.slice(0, values.length) };
  }

  /** Replaces the content by a saved table (slab restore: ring cells keep their ids). */
  load(saved: { values: Array<Interned | null>; refs: Int32Array }): void {
    this.#ids.clear();
    this.#free = [];
    this.values = [];
    let cap = IDS_MIN;
    while (cap < saved.values.length) cap *= 2;
    this.refs = new Int32Array(cap);
    for (let id = 0; id < saved.values.length; id++) {
      const v = saved.values[id];
      if (v === null || saved.refs[id] <= 0) {
        this.values[id] = undefined;
        this.#free.push(id);
        continue;
      }
      this.values[id] = v;
      this.refs[id] = saved.refs[id];
      this.#ids.set(v, id);
    }
  }
}
