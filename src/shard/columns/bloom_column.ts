/**
 * bloom_member for every entity slot of a table without an object per entity: the
 * variable part of each slot's filter in pooled blocks. Same answers and save
 * format as ops/sketch_ops.ts BloomMemberState over ops/sketch/bloom.ts
 * BloomFilter (the form of filters too large to pool), whose phases it keeps:
 *
 *   per slot (typed arrays)   seen  mode  cls  len  blk  inserted
 *   mode NONE                 no value yet (the object form's null filter)
 *   mode LIST                 the exact phase: `len` sorted 53-bit hashes in block
 *                             `blk` of list pool `cls` (capacities 4, 8, ... up to
 *                             the geometry's exactMax; no block while len is 0)
 *   mode BITS                 the bit array: block `blk` of the bits pool
 *
 * A list that fills its class moves up one class; one that would pass exactMax
 * replays its hashes into a bit array, as BloomFilter.toBits does. Filters above
 * BLOOM_POOLED_WORDS_MAX words stay objects (solo_column.ts): a pool grows by
 * doubling, which suits blocks of a few hundred bytes, not of megabytes.
 */
import { BLOOM_POOLED_WORDS_MAX } from '../../limits';
import { BloomFilter, bloomBitsAdd, bloomSaved, type BloomGeometry, type BloomSaved } from '../../ops/sketch/bloom';
import { hashValue } from '../../ops/sketch/hash';
import { sortedFind } from '../../ops/sketch/hash_list';
import { isScalar } from '../../ops/sketch_ops';
import type { JsonValue, Value } from '../../types';
import { grown, int32sOf } from '../../util/unaccounted';
import { BlockPool } from './ring_pool';
import type { SoloColumn } from './solo_column';

const MODE_NONE = 0;
const MODE_LIST = 1;
const MODE_BITS = 2;
/** Capacity of the smallest list class (HashList's first allocation). */
const LIST_CLASS_MIN = 4;

/** Whether bloom_member of geometry `g` is kept in a BloomColumn. */
export function bloomPooled(g: BloomGeometry): boolean {
  return Math.ceil(g.bits / 32) <= BLOOM_POOLED_WORDS_MAX;
}

export class BloomColumn implements SoloColumn {
  readonly #lists: BlockPool[] = [];
  readonly #bits: BlockPool;
  /** Words of one bit array; its block holds them from word 0 (blocks are whole doubles). */
  readonly #words: number;
  /** Int32 view of the bits pool (renewed when the pool grows). */
  #i32: Int32Array;
  seen: Uint8Array;
  mode: Uint8Array;
  cls: Uint8Array;
  len: Int32Array;
  blk: Int32Array;
  inserted: Float64Array;

  constructor(readonly g: BloomGeometry, capacity: number) {
    for (let cap = LIST_CLASS_MIN; ; cap *= 2) {
      this.#lists.push(new BlockPool(Math.min(cap, Math.max(g.exactMax, 1))));
      if (cap >= g.exactMax) break;
    }
    this.#words = Math.ceil(g.bits / 32);
    this.#bits = new BlockPool(Math.ceil(this.#words / 2));
    this.#i32 = int32sOf(this.#bits.data);
    this.seen = new Uint8Array(capacity);
    this.mode = new Uint8Array(capacity);
    this.cls = new Uint8Array(capacity);
    this.len = new Int32Array(capacity);
    this.blk = new Int32Array(capacity);
    this.inserted = new Float64Array(capacity);
  }

  grow(capacity: number): void {
    this.seen = grown(this.seen, capacity);
    this.mode = grown(this.mode, capacity);
    this.cls = grown(this.cls, capacity);
    this.len = grown(this.len, capacity);
    this.blk = grown(this.blk, capacity);
    this.inserted = grown(this.inserted, capacity);
  }

  create(slot: number): void {
    this.clear(slot);
  }

  clear(slot: number): void {
    const mode = this.mode[slot];
    if (mode === MODE_BITS) this.#bits.release(this.blk[slot]);
    else if (mode === MODE_LIST && this.len[slot] > 0) this.#lists[this.cls[slot]].release(this.blk[slot]);
    this.seen[slot] = 0;
    this.mode[slot] = MODE_NONE;
    this.len[slot] = 0;
    this.inserted[slot] = 0;
  }

  update(slot: number, x: Value | undefined): void {
    if (!isScalar(x)) return;
    this.seen[slot] = this.#add(slot, hashValue(x)) ? 1 : 0;
  }

  miss(): void {}

  read(slot: number): JsonValue {
    return this.seen[slot] === 1;
  }

  /** Lifetime: never empty once it exists (the object form has no emptyAt). */
  emptyAt(): boolean {
    return false;
  }

  /** BloomFilter.addHash on the slot's filter: whether h was (probably) there before. */
  #add(slot: number, h: number): boolean {
    let mode = this.mode[slot];
    if (mode === MODE_NONE) {
      if (this.g.exactMax === 0) this.#toBits(slot);
      else this.mode[slot] = MODE_LIST;
      mode = this.mode[slot];
    }
    if (mode === MODE_LIST) {
      const len = this.len[slot];
      const at = len === 0 ? -1 : sortedFind(this.#lists[this.cls[slot]].data, this.#listBase(slot), len, h);
      if (at >= 0) return true;
      if (len < this.g.exactMax) {
        this.#insert(slot, -at - 1, h);
        this.inserted[slot]++;
        return false;
      }
      this.#toBits(slot);
    }
    if (bloomBitsAdd(this.#i32, this.blk[slot] * this.#bits.blockDoubles * 2, this.g, h)) return true;
    this.inserted[slot]++;
    return false;
  }

  #listBase(slot: number): number {
    return this.blk[slot] * this.#lists[this.cls[slot]].blockDoubles;
  }

  /** Inserts h at `pos` of the slot's list, which has room under exactMax. */
  #insert(slot: number, pos: number, h: number): void {
    const len = this.len[slot];
    if (len === 0) {
      this.cls[slot] = 0;
      this.blk[slot] = this.#lists[0].alloc();
    } else if (len === this.#lists[this.cls[slot]].blockDoubles) this.#moveUp(slot);
    const d = this.#lists[this.cls[slot]].data;
    const base = this.#listBase(slot);
    if (pos < len) d.copyWithin(base + pos + 1, base + pos, base + len);
    d[base + pos] = h;
    this.len[slot] = len + 1;
  }

  #moveUp(slot: number): void {
    const from = this.#lists[this.cls[slot]];
    const to = this.#lists[this.cls[slot] + 1];
    const nb = to.alloc();
    const src = this.#listBase(slot);
    // Element by element: a subarray per move was garbage, and lists are short.
    const a = from.data;
    const d = to.data;
    const dst = nb * to.blockDoubles;
    for (let k = this.len[slot] - 1; k >= 0; k--) d[dst + k] = a[src + k];
    from.release(this.blk[slot]);
    this.cls[slot]++;
    this.blk[slot] = nb;
  }

  /** Switches the slot to a (zeroed) bit array, replaying its exact hashes. */
  #toBits(slot: number): void {
    const pool = this.#bits;
    const b = pool.alloc();
    // A pool that grew in place keeps its buffer: compare lengths as well as buffers.
    if (this.#i32.buffer !== pool.data.buffer || this.#i32.length !== 2 * pool.data.length) this.#i32 = int32sOf(pool.data);
    const base = b * pool.blockDoubles * 2;
    this.#i32.fill(0, base, base + pool.blockDoubles * 2);
    const len = this.len[slot];
    if (this.mode[slot] === MODE_LIST && len > 0) {
      const list = this.#lists[this.cls[slot]];
      const from = this.#listBase(slot);
      for (let k = 0; k < len; k++) bloomBitsAdd(this.#i32, base, this.g, list.data[from + k]);
      list.release(this.blk[slot]);
    }
    this.mode[slot] = MODE_BITS;
    this.len[slot] = 0;
    this.blk[slot] = b;
  }

  /** BloomMemberState.save(): [seenBefore, the filter's save or null]. */
  save(slot: number): unknown {
    const seen = this.seen[slot] === 1;
    const mode = this.mode[slot];
    if (mode === MODE_NONE) return [seen, null];
    let list: Float64Array | null = null;
    let words: Int32Array | null = null;
    if (mode === MODE_BITS) {
      const base = this.blk[slot] * this.#bits.blockDoubles * 2;
      words = this.#i32.slice(base, base + this.#words);
    } else if (this.len[slot] > 0) {
      const from = this.#listBase(slot);
      list = this.#lists[this.cls[slot]].data.slice(from, from + this.len[slot]);
    }
    return [seen, bloomSaved(this.g, this.inserted[slot], list, words)];
  }

  /** Inverse of save, and of BloomMemberState.save() (BloomFilter.load validates the filter). */
  load(slot: number, saved: unknown): void {
    this.clear(slot);
    const [seen, f] = saved as [boolean, unknown];
    this.seen[slot] = seen ? 1 : 0;
    if (f === null) return;
    const d: BloomSaved = BloomFilter.load(f, this.g).save();
    this.mode[slot] = MODE_LIST;
    this.inserted[slot] = d.inserted;
    if (d.words !== null) {
      this.#toBits(slot);
      this.#i32.set(d.words, this.blk[slot] * this.#bits.blockDoubles * 2);
      return;
    }
    const n = d.list === null ? 0 : d.list.length;
    if (n === 0) return;
    let c = 0;
    while (this.#lists[c].blockDoubles < n) c++;
    this.cls[slot] = c;
    this.blk[slot] = this.#lists[c].alloc();
    this.#lists[c].data.set(d.list as Float64Array, this.#listBase(slot));
    this.len[slot] = n;
  }

  /** Bytes of the pooled lists and bit arrays (allocated). */
  get poolBytes(): number {
    let n = this.#bits.bytes;
    for (const p of this.#lists) n += p.bytes;
    return n;
  }
}
