/**
 * The entities of one table on one shard: key -> slot, and per slot what the
 * shard tracks for every entity (its key, the server time and LSN of the last
 * push that reached it). Feature state lives in columns indexed by the same slot
 * (shard/table_columns.ts), so an entity is a slot number, not an object.
 *
 *   bySlot: Map<key, slot>     keys:    [k0 | k1 | null | k3 | ...]   (null = free)
 *                              lastT:   Float64Array, lastLsn: Float64Array
 *   free:   Int32Array stack of released slots, reused before `high` grows
 *
 * Storage grows by doubling (`capacity`); `onGrow` lets the columns grow with it.
 * Slots are never moved while an entity lives: a slot is released only when its
 * entity leaves (cold freeze, partition drop) and is then reused by a new key.
 */
import { strict as assert } from 'node:assert';

/** First allocation (slots); doubles from there. */
export const ENTITY_SLOTS_MIN = 64;

/** A copy of a typed array at a larger length (storage growth by doubling). */
export function grown<T extends Float64Array | Int32Array | Uint16Array | Uint8Array>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}

export class EntityIndex {
  readonly bySlot = new Map<string, number>();
  /** Key per slot; null for a free slot. */
  keys: Array<string | null> = [];
  lastT = new Float64Array(ENTITY_SLOTS_MIN);
  lastLsn = new Float64Array(ENTITY_SLOTS_MIN);
  #free = new Int32Array(ENTITY_SLOTS_MIN);
  #freeLen = 0;
  /** Slots ever handed out (every live or free slot is below it). */
  high = 0;
  capacity = ENTITY_SLOTS_MIN;
  /** Called with the new capacity before a slot at or past the old one is handed out. */
  onGrow: ((capacity: number) => void) | null = null;

  get size(): number {
    return this.bySlot.size;
  }

  slotOf(key: string): number {
    const s = this.bySlot.get(key);
    return s === undefined ? -1 : s;
  }

  /** A slot for a key that has none (asserted after the insert: one hash lookup, not two). */
  add(key: string, lastT: number, lastLsn: number): number {
    const size = this.bySlot.size;
    const slot = this.#takeSlot();
    this.bySlot.set(key, slot);
    // A key that had a slot would not grow the map (and its old slot would leak).
    assert(this.bySlot.size === size + 1, 'entity already has a slot');
    this.keys[slot] = key;
    this.lastT[slot] = lastT;
    this.lastLsn[slot] = lastLsn;
    return slot;
  }

  /**
   * A new slot for `key` with one hash insert (restore: a key normally arrives
   * once). Returns the slot, and in `replaced` the slot the key had before, -1 if
   * none (found by a scan: a key captured twice by a fuzzy snapshot is rare); the
   * caller empties and releases that one (releaseSlot).
   */
  addReplacing(key: string, lastT: number, lastLsn: number, replaced: Int32Array): number {
    const size = this.bySlot.size;
    const slot = this.#takeSlot();
    this.bySlot.set(key, slot);
    replaced[0] = -1;
    if (this.bySlot.size === size) {
      for (let s = 0; s < this.high; s++) if (s !== slot && this.keys[s] === key) replaced[0] = s;
      assert(replaced[0] >= 0, 'a key in the map without a slot');
    }
    this.keys[slot] = key;
    this.lastT[slot] = lastT;
    this.lastLsn[slot] = lastLsn;
    return slot;
  }

  /** Frees a slot whose key already points elsewhere (addReplacing). */
  releaseSlot(slot: number): void {
    assert(this.keys[slot] !== null && this.bySlot.get(this.keys[slot] as string) !== slot);
    this.keys[slot] = null;
    this.lastT[slot] = 0;
    this.lastLsn[slot] = 0;
    this.#pushFree(slot);
  }

  #pushFree(slot: number): void {
    if (this.#freeLen === this.#free.length) this.#free = grown(this.#free, this.#free.length * 2);
    this.#free[this.#freeLen++] = slot;
  }

  /** Releases `key`'s slot (the caller has emptied its columns first). Returns the slot, -1 if none. */
  remove(key: string): number {
    const slot = this.slotOf(key);
    if (slot < 0) return -1;
    assert(this.keys[slot] === key);
    this.bySlot.delete(key);
    this.keys[slot] = null;
    this.lastT[slot] = 0;
    this.lastLsn[slot] = 0;
    this.#pushFree(slot);
    return slot;
  }

  #takeSlot(): number {
    if (this.#freeLen > 0) return this.#free[--this.#freeLen];
    if (this.high === this.capacity) this.#grow(this.capacity * 2);
    return this.high++;
  }

  /** Makes room for `n` slots at once (restore): capacity is the next power of two at or above it. */
  reserve(n: number): void {
    let cap = this.capacity;
    while (cap < n) cap *= 2;
    if (cap > this.capacity) this.#grow(cap);
  }

  #grow(capacity: number): void {
    assert(capacity > this.capacity);
    this.lastT = grown(this.lastT, capacity);
    this.lastLsn = grown(this.lastLsn, capacity);
    this.capacity = capacity;
    if (this.onGrow !== null) this.onGrow(capacity);
  }

  /** Live slots in slot order (a copy: callers may release slots while walking it). */
  liveSlots(): number[] {
    const out: number[] = [];
    for (let s = 0; s < this.high; s++) if (this.keys[s] !== null) out.push(s);
    return out;
  }
}
