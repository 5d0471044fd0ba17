/**
 * The in-memory index of a table's entities in the on-disk cold store
 * (cold_files.ts): entity key -> (segment, offset, length) of its record.
 *
 * It must not become the new unbounded growth, so it holds no key strings and no
 * per-entry objects: an open-addressing table (linear probing, shard/state/probe_table.ts)
 * of five Int32 words an entry, 20 bytes, at most COLD_INDEX_LOAD_MAX full (so
 * >= 26.7 B and, just after a doubling, ~53 B per entry). The key is identified by two
 * independent 32-bit hashes; the key itself lives in the record on disk, and a
 * lookup whose both hashes match confirms the key there (`confirm`), so two keys
 * with equal 64-bit hashes stay distinct (both entries are kept and probed).
 *
 * Deletion shifts later entries of the run back (no tombstones), so a table that
 * churns keys never fills with dead slots; it shrinks when it is mostly empty.
 * It resizes incrementally once large (probe_table.ts): a cold sweep that
 * freezes a million entities does not stop the shard for a rehash. A slot (what
 * find and slotAt answer) names an entry of the new table, or of the old one
 * with OLD_SLOT set; it is valid until the next insert or removal.
 */
import { COLD_INDEX_LOAD_MAX, COLD_INDEX_SLOTS_MIN, PROBE_TABLE_MOVE_STEP } from '../../limits';
import { hashString32 } from '../../ops/sketch/hash';
import { TL, tlNow, tlSpan } from '../../timeline';
import { ProbeTable } from '../state/probe_table';

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

/** Words of an entry: h1 (its low bits the home), segment id (0: empty; ids start at 1), h2, offset, length. */
const W = 5;
/** A slot in the old table of a resize (table positions stay below it). */
export const OLD_SLOT = 2 ** 30;

export class KeyIndex {
  #t: ProbeTable;
  count = 0;

  constructor(slots = COLD_INDEX_SLOTS_MIN) {
    this.#t = new ProbeTable(W, slots);
  }

  /** Bytes of the index arrays (both tables while a resize is under way). */
  get bytes(): number {
    const t = this.#t;
    return (t.entries + (t.old === null ? 0 : t.oldMask + 1)) * W * 4;
  }

  /** Whether an incremental resize is under way (tests). */
  get resizing(): boolean {
    return this.#t.old !== null;
  }

  /**
   * The slot holding the entry for the key last hashed (H1, H2), or -1. `confirm`
   * reads the record at (segment, offset) and says whether it is this key.
   */
  find(confirm: (seg: number, off: number, len: number) => boolean): number {
    const h1 = H1 | 0;
    const h2 = H2 | 0;
    const t = this.#t;
    const at = findIn(t.tab, t.mask, h1 & t.mask, h1, h2, confirm);
    if (at >= 0 || t.old === null) return at;
    const old = findIn(t.old, t.oldMask, t.oldHome(h1), h1, h2, confirm);
    return old < 0 ? -1 : OLD_SLOT + old;
  }

  /** The slot whose entry for the key last hashed is at (seg, off), or -1 (liveness for compaction and scans: no disk read). */
  slotAt(seg: number, off: number): number {
    const at = (s: number, o: number): boolean => s === seg && o === off;
    return this.find(at);
  }

  seg(slot: number): number {
    return this.#word(slot, 1);
  }

  off(slot: number): number {
    return this.#word(slot, 3);
  }

  len(slot: number): number {
    return this.#word(slot, 4);
  }

  #word(slot: number, k: number): number {
    return this.#tableOf(slot)[W * positionOf(slot) + k] >>> 0;
  }

  /** The table `slot` names an entry of (the old one when OLD_SLOT is set). */
  #tableOf(slot: number): Int32Array {
    return slot >= OLD_SLOT ? (this.#t.old as Int32Array) : this.#t.tab;
  }

  /** Points an existing slot at a new location (compaction moved the record). */
  move(slot: number, seg: number, off: number, len: number): void {
    const tab = this.#tableOf(slot);
    const e = W * positionOf(slot);
    tab[e + 1] = seg;
    tab[e + 3] = off;
    tab[e + 4] = len;
  }

  /** Adds an entry for the key last hashed (the caller checked it is not there). */
  insert(seg: number, off: number, len: number): void {
    const t = this.#t;
    if ((this.count + 1) > t.entries * COLD_INDEX_LOAD_MAX) this.#resize(t.entries * 2);
    if (t.old !== null) t.moveSome(PROBE_TABLE_MOVE_STEP);
    const h1 = H1 | 0;
    const e = W * t.emptyFor(h1);
    const tab = t.tab;
    tab[e] = h1;
    tab[e + 1] = seg;
    tab[e + 2] = H2 | 0;
    tab[e + 3] = off;
    tab[e + 4] = len;
    this.count++;
  }

  /** Removes the entry in `slot`, shifting the rest of its probe run back. */
  removeAt(slot: number): void {
    const t = this.#t;
    t.hit = this.#tableOf(slot);
    t.deleteAt(positionOf(slot));
    this.count--;
    if (t.old !== null) t.moveSome(PROBE_TABLE_MOVE_STEP);
    // Mostly empty after a wave of thaws or drops: give the memory back.
    else if (t.entries > COLD_INDEX_SLOTS_MIN && this.count < t.entries * COLD_INDEX_LOAD_MAX / 8) this.#resize(t.entries / 2);
  }

  /** Every live slot's (seg, off, len), e.g. to release a dropped table's bytes. */
  forEach(fn: (seg: number, off: number, len: number) => void): void {
    const t = this.#t;
    for (const tab of [t.tab, t.old]) {
      if (tab === null) continue;
      for (let e = 0; e < tab.length; e += W) if (tab[e + 1] !== 0) fn(tab[e + 1] >>> 0, tab[e + 3] >>> 0, tab[e + 4] >>> 0);
    }
  }

  #resize(slots: number): void {
    const t0 = tlNow();
    this.#t.resize(slots, false);
    tlSpan(TL.COLD_INDEX_RESIZE, t0, slots, this.count);
  }
}

/** The table position `slot` names (in either table: positions stay below OLD_SLOT). */
function positionOf(slot: number): number {
  return slot >= OLD_SLOT ? slot - OLD_SLOT : slot;
}

/** Position of the entry of hashes (h1, h2) that `confirm` accepts, in table `tab` probed from entry `i`; -1 if none. */
function findIn(tab: Int32Array, mask: number, i: number, h1: number, h2: number, confirm: (seg: number, off: number, len: number) => boolean): number {
  for (; tab[W * i + 1] !== 0; i = (i + 1) & mask) {
    const e = W * i;
    if (tab[e] === h1 && tab[e + 2] === h2 && confirm(tab[e + 1] >>> 0, tab[e + 3] >>> 0, tab[e + 4] >>> 0)) return i;
  }
  return -1;
}
