/**
 * String (and boolean) values of one table column, interned so that shared
 * rings (ring_group.ts) and kept-value columns hold numbers: a cell holds the
 * value's id.
 *
 * Reference counted: every cell holding an id is one reference. A value whose
 * last cell leaves (expired, evicted into a bucket, entity frozen or dropped) is
 * removed and its id reused, so the table holds exactly the values some cell
 * still holds and cannot grow without bound under churn. Buckets and sketches
 * keep the values themselves, not ids (they outlive the cells).
 *
 * The lookup is an open-addressing table (linear probing, backward-shift
 * deletion, no tombstones) of (hash, id + 1) pairs in one Int32Array, so a probe
 * reads one cache line before it touches a value; the hash is over UTF-16 code
 * units, so an ASCII string in a PUSH record can be looked up from its bytes
 * (idOfAscii) without making a string: a value seen before costs no allocation,
 * and the row gets the table's own string (issue 12: cheaper interning). A
 * Map<string, id> cost a fresh string per record value plus a hash-table walk
 * that missed the cache on tables of 10^5-10^6 values (bench/RESULTS.md).
 *
 * `ref(v)` first compares `v` with the value of the last lookup (`===`, a pointer
 * compare for the table's own string): the push path looks a value up by its
 * bytes once per feed, then each cell that stores it takes its reference there.
 * A value added by a lookup holds no reference until a cell takes one; `settle()`
 * removes those no cell took (a push whose feed was skipped, or filtered out).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { INTERN_LOAD_MAX, INTERN_SLOTS_MIN } from '../limits';
import { fmix32 } from '../ops/sketch/hash';

export type Interned = string | boolean;

/** Per-process hash seed: values are user input, a fixed hash would let them collide on purpose. */
const SEED = randomBytes(4).readInt32LE(0);
const FNV_PRIME = 0x01000193;
const HASH_TRUE = 0x5bd1e995;
const HASH_FALSE = 0x1b873593;
/** Ids held no more than this fraction of the slots before the table shrinks (when above INTERN_SLOTS_MIN). */
const SHRINK_BELOW = INTERN_LOAD_MAX / 8;

function hashOf(v: Interned): number {
  if (typeof v === 'boolean') return v ? HASH_TRUE : HASH_FALSE;
  let h = SEED ^ v.length;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v.charCodeAt(i), FNV_PRIME);
  // Murmur3's finalizer: the FNV loop's low bits alone probe poorly for keys that differ in their last character.
  return fmix32(h) | 0;
}

/** hashOf of the string whose code units are bytes [from, to) of `b` (ASCII). */
function hashOfBytes(b: Uint8Array, from: number, to: number): number {
  let h = SEED ^ (to - from);
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i], FNV_PRIME);
  return fmix32(h) | 0;
}

/** The latin1 decoder of Buffer (a string of one byte per character), called on any Uint8Array. */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(this: Uint8Array, from: number, to: number): string }).latin1Slice;

export class InternTable {
  /** Value per id (undefined for a free id). */
  values: Array<Interned | undefined> = [];
  refs = new Int32Array(INTERN_SLOTS_MIN);
  /** Slot pairs: [2i] the hash, [2i + 1] id + 1 (0: empty). */
  #slots = new Int32Array(2 * INTERN_SLOTS_MIN);
  #mask = INTERN_SLOTS_MIN - 1;
  #size = 0;
  #free: number[] = [];
  /** Ids added by a lookup, without a reference yet (settle). */
  #pending: number[] = [];
  /** The last value looked up and its id (ref's fast path); undefined when none. */
  #lastV: Interned | undefined = undefined;
  #lastId = -1;

  get size(): number {
    return this.#size;
  }

  /** The id of `v`, with one more reference. */
  ref(v: Interned): number {
    const id = v === this.#lastV ? this.#lastId : this.#idOf(v);
    this.refs[id]++;
    return id;
  }

  /** The id of `v`, added (without a reference) when new. */
  #idOf(v: Interned): number {
    const h = hashOf(v);
    const s = this.#slots;
    const mask = this.#mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = s[2 * i + 1];
      if (e === 0) break;
      if (s[2 * i] === h && this.values[e - 1] === v) return this.#hit(v, e - 1);
    }
    return this.#add(v, h);
  }

  /**
   * The id of the ASCII string in bytes [from, to) of `b` (a PUSH record value),
   * added without a reference when new, without making a string unless it is new.
   * Its value is `values[id]`.
   */
  idOfAscii(b: Uint8Array, from: number, to: number): number {
    const n = to - from;
    // The same value as the last lookup (a low-cardinality column: a country, a category) costs no hash or probe.
    const lv = this.#lastV;
    if (typeof lv === 'string' && lv.length === n) {
      let k = 0;
      while (k < n && lv.charCodeAt(k) === b[from + k]) k++;
      if (k === n) return this.#lastId;
    }
    const h = hashOfBytes(b, from, to);
    const s = this.#slots;
    const mask = this.#mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = s[2 * i + 1];
      if (e === 0) break;
      if (s[2 * i] !== h) continue;
      const v = this.values[e - 1];
      if (typeof v !== 'string' || v.length !== n) continue;
      let k = 0;
      while (k < n && v.charCodeAt(k) === b[from + k]) k++;
      if (k === n) return this.#hit(v, e - 1);
    }
    const id = this.#add(latin1Slice.call(b, from, to), h);
    this.#pending.push(id);
    return id;
  }

  #hit(v: Interned, id: number): number {
    this.#lastV = v;
    this.#lastId = id;
    return id;
  }

  #add(v: Interned, h: number): number {
    const id = this.#free.length > 0 ? (this.#free.pop() as number) : this.values.length;
    if (id >= this.refs.length) {
      const r = new Int32Array(this.refs.length * 2);
      r.set(this.refs);
      this.refs = r;
    }
    this.values[id] = v;
    this.refs[id] = 0;
    this.#size++;
    if (this.#size > (this.#mask + 1) * INTERN_LOAD_MAX) this.#rehash((this.#mask + 1) * 2);
    else this.#place(id, h);
    return this.#hit(v, id);
  }

  #place(id: number, h: number): void {
    const s = this.#slots;
    const mask = this.#mask;
    let i = h & mask;
    while (s[2 * i + 1] !== 0) i = (i + 1) & mask;
    s[2 * i] = h;
    s[2 * i + 1] = id + 1;
  }

  #rehash(slots: number): void {
    this.#slots = new Int32Array(2 * slots);
    this.#mask = slots - 1;
    const values = this.values;
    for (let id = 0; id < values.length; id++) {
      const v = values[id];
      if (v !== undefined) this.#place(id, hashOf(v));
    }
  }

  /** Removes the ids added by lookups that no cell took a reference of. */
  settle(): void {
    const p = this.#pending;
    if (p.length === 0) return;
    for (let k = 0; k < p.length; k++) {
      const id = p[k];
      // A pending id may have been removed (and reused) meanwhile: only an unreferenced live one goes.
      if (this.values[id] !== undefined && this.refs[id] === 0) this.#remove(id);
    }
    p.length = 0;
  }

  /** Drops one reference of `id`; the value goes when none is left. */
  unref(id: number): void {
    assert(this.refs[id] > 0, 'intern id released more often than referenced');
    if (--this.refs[id] > 0) return;
    this.#remove(id);
  }

  #remove(id: number): void {
    const v = this.values[id] as Interned;
    const s = this.#slots;
    const mask = this.#mask;
    let i = hashOf(v) & mask;
    while (s[2 * i + 1] !== id + 1) i = (i + 1) & mask;
    // Backward-shift deletion: every later entry of the run whose home is not in (i, j] moves into the hole.
    for (let j = (i + 1) & mask; s[2 * j + 1] !== 0; j = (j + 1) & mask) {
      const home = s[2 * j] & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        s[2 * i] = s[2 * j];
        s[2 * i + 1] = s[2 * j + 1];
        i = j;
      }
    }
    s[2 * i] = 0;
    s[2 * i + 1] = 0;
    this.values[id] = undefined;
    this.#free.push(id);
    this.#size--;
    if (id === this.#lastId) {
      this.#lastV = undefined;
      this.#lastId = -1;
    }
    if (this.#mask + 1 > INTERN_SLOTS_MIN && this.#size < (this.#mask + 1) * SHRINK_BELOW) this.#rehash((this.#mask + 1) / 2);
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
    this.#free = [];
    this.#pending = [];
    this.#lastV = undefined;
    this.#lastId = -1;
    this.values = [];
    this.#size = 0;
    let cap = INTERN_SLOTS_MIN;
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
      this.#size++;
    }
    let slots = INTERN_SLOTS_MIN;
    while (this.#size > slots * INTERN_LOAD_MAX) slots *= 2;
    this.#rehash(slots);
  }
}
