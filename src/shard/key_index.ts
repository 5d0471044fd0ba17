/**
 * The in-memory index of a table's entities in the on-disk cold store
 * (cold_files.ts): entity key -> (segment, offset, length) of its record.
 *
 * It must not become the new unbounded growth, so it holds no key strings and no
 * per-entry objects: an open-addressing table (linear probing) of five parallel
 * Uint32Arrays, 20 bytes a slot, at most COLD_INDEX_LOAD_MAX full (so >= 26.7 B
 * and, just after a doubling, ~53 B per entry). The key is identified by two
 * independent 32-bit hashes; the key itself lives in the record on disk, and a
 * lookup whose both hashes match confirms the key there (`confirm`), so two keys
 * with equal 64-bit hashes stay distinct (both entries are kept and probed).
 *
 * Deletion shifts later entries of the run back (no tombstones), so a table that
 * churns keys never fills with dead slots; it shrinks when it is mostly empty.
 */
import { COLD_INDEX_LOAD_MAX, COLD_INDEX_SLOTS_MIN } from '../limits';
import { hashString32 } from '../ops/sketch/hash';
import { TL, tlNow, tlSpan } from '../timeline';

/** Hashes of the last hashKey() call (module scratch: no allocation per lookup). */
export let H1 = 0;
export let H2 = 0;

/**
 * Two independent 32-bit hashes of `s`: murmur3 (the sketches' hashString32) under
 * two seeds. Not the routing hash (FNV, registry/key.ts): within one shard its low
 * bits are correlated (they chose the shard), which would crowd the probe runs.
 */
export function hashKey(s: string): void {
  H1 = hashString32(s, SEED_1);
  H2 = hashString32(s, SEED_2);
}

const SEED_1 = 0x9747b28c;
const SEED_2 = 0x5bd1e995;

export class KeyIndex {
  #h1: Uint32Array;
  #h2: Uint32Array;
  /** Segment id of the record; 0 marks an empty slot (segment ids start at 1). */
  #seg: Uint32Array;
  #off: Uint32Array;
  #len: Uint32Array;
  #mask: number;
  count = 0;

  constructor(slots = COLD_INDEX_SLOTS_MIN) {
    this.#h1 = this.#h2 = this.#seg = this.#off = this.#len = new Uint32Array(0);
    this.#mask = 0;
    this.#alloc(slots);
  }

  #alloc(slots: number): void {
    this.#h1 = new Uint32Array(slots);
    this.#h2 = new Uint32Array(slots);
    this.#seg = new Uint32Array(slots);
    this.#off = new Uint32Array(slots);
    this.#len = new Uint32Array(slots);
    this.#mask = slots - 1;
  }

  /** Bytes of the index arrays. */
  get bytes(): number {
    return (this.#mask + 1) * 20;
  }

  /**
   * The slot holding the entry for the key last hashed (H1, H2), or -1. `confirm`
   * reads the record at (segment, offset) and says whether it is this key.
   */
  find(confirm: (seg: number, off: number, len: number) => boolean): number {
    const h1 = H1;
    const h2 = H2;
    const mask = this.#mask;
    for (let i = h1 & mask; this.#seg[i] !== 0; i = (i + 1) & mask) {
      if (this.#h1[i] === h1 && this.#h2[i] === h2 && confirm(this.#seg[i], this.#off[i], this.#len[i])) return i;
    }
    return -1;
  }

  /** The slot whose entry for the key last hashed is at (seg, off), or -1 (liveness for compaction and scans: no disk read). */
  slotAt(seg: number, off: number): number {
    const mask = this.#mask;
    for (let i = H1 & mask; this.#seg[i] !== 0; i = (i + 1) & mask) {
      if (this.#seg[i] === seg && this.#off[i] === off && this.#h1[i] === H1 && this.#h2[i] === H2) return i;
    }
    return -1;
  }

  seg(slot: number): number {
    return this.#seg[slot];
  }

  off(slot: number): number {
    return this.#off[slot];
  }

  len(slot: number): number {
    return this.#len[slot];
  }

  /** Points an existing slot at a new location (compaction moved the record). */
  move(slot: number, seg: number, off: number, len: number): void {
    this.#seg[slot] = seg;
    this.#off[slot] = off;
    this.#len[slot] = len;
  }

  /** Adds an entry for the key last hashed (the caller checked it is not there). */
  insert(seg: number, off: number, len: number): void {
    if ((this.count + 1) > (this.#mask + 1) * COLD_INDEX_LOAD_MAX) this.#resize((this.#mask + 1) * 2);
    this.#put(H1, H2, seg, off, len);
    this.count++;
  }

  #put(h1: number, h2: number, seg: number, off: number, len: number): void {
    const mask = this.#mask;
    let i = h1 & mask;
    while (this.#seg[i] !== 0) i = (i + 1) & mask;
    this.#h1[i] = h1;
    this.#h2[i] = h2;
    this.#seg[i] = seg;
    this.#off[i] = off;
    this.#len[i] = len;
  }

  /** Removes the entry in `slot`, shifting the rest of its probe run back. */
  removeAt(slot: number): void {
    const mask = this.#mask;
    let hole = slot;
    for (let i = (slot + 1) & mask; this.#seg[i] !== 0; i = (i + 1) & mask) {
      const home = this.#h1[i] & mask;
      // Entry i may fill the hole iff its home is not in the cyclic range (hole, i].
      if (((i - home) & mask) >= ((i - hole) & mask)) {
        this.#h1[hole] = this.#h1[i];
        this.#h2[hole] = this.#h2[i];
        this.#seg[hole] = this.#seg[i];
        this.#off[hole] = this.#off[i];
        this.#len[hole] = this.#len[i];
        hole = i;
      }
    }
    this.#seg[hole] = 0;
    this.count--;
    const slots = this.#mask + 1;
    // Mostly empty after a wave of thaws or drops: give the memory back.
    if (slots > COLD_INDEX_SLOTS_MIN && this.count < slots * COLD_INDEX_LOAD_MAX / 8) this.#resize(slots / 2);
  }

  /** Every live slot's (seg, len), e.g. to release a dropped table's bytes. */
  forEach(fn: (seg: number, off: number, len: number) => void): void {
    for (let i = 0; i <= this.#mask; i++) if (this.#seg[i] !== 0) fn(this.#seg[i], this.#off[i], this.#len[i]);
  }

  #resize(slots: number): void {
    const t0 = tlNow();
    const h1 = this.#h1;
    const h2 = this.#h2;
    const seg = this.#seg;
    const off = this.#off;
    const len = this.#len;
    this.#alloc(slots);
    for (let i = 0; i < seg.length; i++) if (seg[i] !== 0) this.#put(h1[i], h2[i], seg[i], off[i], len[i]);
    tlSpan(TL.COLD_INDEX_RESIZE, t0, slots, this.count);
  }
}
