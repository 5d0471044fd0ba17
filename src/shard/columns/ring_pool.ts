/**
 * Pooled storage for the shared rings (ring_group.ts): one pool per ring size
 * class, each one Float64Array cut into equal blocks, so a ring is a block
 * number, not an object. A ring of capacity 2^c entries of `stride` doubles
 * lives in class c (1..RING_CLASS_MAX); it moves up one class when it fills
 * (and to RING_CLASS_PENDING when a full ring starts deferring evictions).
 *
 *   class c:  data [ block 0 | block 1 | block 2 | ... ]    block = 2^c * stride doubles
 *             free [ 2, ... ]   released blocks, reused before `used` grows
 *
 * `u32` views the same bytes: ring cells that hold an interned id or an absent
 * value are NaN-boxed through it (writing a NaN through a Float64Array may
 * canonicalize its payload; writing the two words cannot).
 *
 * The blocks live on a SharedArrayBuffer (util/unaccounted.ts): V8 charges an
 * ArrayBuffer against the isolate's old-generation limit, and each doubling of a
 * pool of megabytes started a mark-compact of the shard.
 */
import { strict as assert } from 'node:assert';
import { TL, tlNow, tlSpan } from '../../timeline';
import { RING_POOL_BLOCKS_MIN } from '../../limits';
import { grown, unaccountedFloat64, wordsOf } from '../../util/unaccounted';

/** Largest size class of a ring's live entries: 2^6 = 64, the rings' RING_ENTRIES_MAX. */
export const RING_CLASS_MAX = 6;
/**
 * The class of a full ring that defers its evictions (ring_group.ts "Deferred
 * evictions"): 64 live entries plus up to 64 evicted ones not yet folded.
 */
export const RING_CLASS_PENDING = RING_CLASS_MAX + 1;

/**
 * One Float64Array cut into equal blocks of `blockDoubles`, handed out by number
 * (ring classes below; the pooled bloom filters of shard/columns/bloom_column.ts).
 *
 * Empty until the first block is taken: a table with many windows allocates
 * pools for six size classes per group, most of which a given workload never
 * uses (a 4,000-feature registry spent ~150 ms allocating them at install).
 */
export class BlockPool {
  data: Float64Array;
  u32: Uint32Array;
  /** Blocks ever handed out. */
  used = 0;
  #free: number[] = [];

  constructor(readonly blockDoubles: number, blocks = 0) {
    this.data = unaccountedFloat64(blocks * this.blockDoubles);
    this.u32 = wordsOf(this.data);
  }

  get liveBlocks(): number {
    return this.used - this.#free.length;
  }

  alloc(): number {
    if (this.#free.length > 0) return this.#free.pop() as number;
    if ((this.used + 1) * this.blockDoubles > this.data.length) this.#grow(Math.max(RING_POOL_BLOCKS_MIN, (this.data.length / this.blockDoubles) * 2));
    return this.used++;
  }

  release(block: number): void {
    assert(block >= 0 && block < this.used);
    this.#free.push(block);
  }

  #grow(blocks: number): void {
    const t0 = tlNow();
    // Not charged to the isolate's external memory (a doubling must not start a mark-compact), and in place once large (util/unaccounted.ts).
    this.data = grown(this.data, blocks * this.blockDoubles);
    this.u32 = wordsOf(this.data);
    tlSpan(TL.POOL_GROW, t0, blocks, this.blockDoubles);
  }

  /** The pool as a snapshot stores it: the used blocks' bytes and the free list. */
  save(): { bytes: Uint8Array; used: number; free: number[] } {
    const bytes = new Uint8Array(this.data.buffer, 0, this.used * this.blockDoubles * 8).slice();
    return { bytes, used: this.used, free: this.#free.slice() };
  }

  /** Inverse of save (the pool must be empty). */
  load(saved: { bytes: Uint8Array; used: number; free: number[] }): void {
    assert(this.used === 0, 'slab restore into a pool in use');
    assert(saved.bytes.length === saved.used * this.blockDoubles * 8, 'slab size does not match its block count');
    let blocks = RING_POOL_BLOCKS_MIN;
    while (blocks < saved.used) blocks *= 2;
    this.data = unaccountedFloat64(blocks * this.blockDoubles);
    this.u32 = wordsOf(this.data);
    new Uint8Array(this.data.buffer, 0, saved.bytes.length).set(saved.bytes);
    this.used = saved.used;
    this.#free = saved.free.slice();
  }

  /** Bytes held (allocated, used or not). */
  get bytes(): number {
    return this.data.byteLength;
  }
}

/** The pool of ring size class `cls`: blocks of 2^cls entries of `stride` doubles. */
export class ClassPool extends BlockPool {
  constructor(readonly cls: number, readonly stride: number, blocks = 0) {
    assert(cls >= 1 && cls <= RING_CLASS_PENDING);
    super((1 << cls) * stride, blocks);
  }
}
