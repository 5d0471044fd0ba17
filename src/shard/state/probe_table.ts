/**
 * The open-addressing tables under the entity index (key -> slot,
 * entity_index.ts), the intern tables (value -> id, intern.ts) and the cold
 * store's index (key -> record on disk, key_index.ts): entries of
 * `width` Int32 words, word 0 a hash whose low bits give the entry's home, word 1
 * what it maps to + 1 (0: an empty entry); linear probing, backward-shift
 * deletion (no tombstones, so churn never fills a table with dead entries). The
 * owners keep their own load policy and their own probe loops, which compare
 * keys their own way; this class holds the entries, and resizes them.
 *
 * Incremental resize (Redis's rehashing, for open addressing). Rehashing a table
 * of 4M entries at once stalled one push ~50 ms. A table of at least
 * PROBE_TABLE_MOVE_MIN_ENTRIES keeps the old entries beside the new ones
 * instead: new entries go to the new table (`tab`), and every add or removal of
 * the owner moves the next PROBE_TABLE_MOVE_STEP entries of the old one (`old`)
 * over (moveSome), walking it from an entry that was empty when the resize
 * began, so no probe run wraps past the walk's start. An entry missing from the
 * new table is then looked for in the old one, from its home, or from the walk's
 * position once the walk has passed its home (oldHome): the entries from there
 * to it are still in place, since the old table takes no new entries and a
 * removal's backward shift fills holes only at or past the walk (it stops at
 * the first empty entry, at the latest the walk's start). A moved entry is left
 * empty. The walk ends long before the new table is full (a doubling leaves
 * half the new table's room to fill, the walk passes PROBE_TABLE_MOVE_STEP old
 * entries per add); a resize while one is under way finishes that one first.
 */
import { PROBE_TABLE_MOVE_MIN_ENTRIES } from '../../limits';

export class ProbeTable {
  /** The table new entries go to. */
  tab: Int32Array;
  mask: number;
  /** The table a resize is moving entries out of (null: none under way), and its mask. */
  old: Int32Array | null = null;
  oldMask = 0;
  /** The table of the entry the owner's last probe hit (entryOf sets it; the owner's own probes do too). */
  hit: Int32Array;
  /** Where the walk of the old table began, and how many of its entries it has passed. */
  #from = 0;
  #moved = 0;

  constructor(readonly width: number, entries: number) {
    this.tab = new Int32Array(width * entries);
    this.mask = entries - 1;
    this.hit = this.tab;
  }

  /** Entries of the new table (used and empty). */
  get entries(): number {
    return this.mask + 1;
  }

  /** Empties the table at `entries` entries (a restore fills it again). */
  reset(entries: number): void {
    this.tab = new Int32Array(this.width * entries);
    this.mask = entries - 1;
    this.old = null;
    this.hit = this.tab;
  }

  /** Where a probe of the old table for hash `h` starts: its home, or the walk's position once the walk has passed it. */
  oldHome(h: number): number {
    const m = this.oldMask;
    return ((h - this.#from) & m) < this.#moved ? (this.#from + this.#moved) & m : h & m;
  }

  /** An empty entry of the new table for hash `h` (the owner writes it). */
  emptyFor(h: number): number {
    const tab = this.tab;
    const mask = this.mask;
    const w = this.width;
    let i = h & mask;
    while (tab[w * i + 1] !== 0) i = (i + 1) & mask;
    return i;
  }

  /** Position of the entry of hash `h` whose word 1 is `v1`, -1 if none; its table is left in `hit`. */
  entryOf(h: number, v1: number): number {
    const w = this.width;
    const tab = this.tab;
    const mask = this.mask;
    for (let i = h & mask; tab[w * i + 1] !== 0; i = (i + 1) & mask) {
      if (tab[w * i + 1] === v1) {
        this.hit = tab;
        return i;
      }
    }
    const old = this.old;
    if (old === null) return -1;
    const oldMask = this.oldMask;
    for (let i = this.oldHome(h); old[w * i + 1] !== 0; i = (i + 1) & oldMask) {
      if (old[w * i + 1] === v1) {
        this.hit = old;
        return i;
      }
    }
    return -1;
  }

  /** Removes the entry at `i` of `hit` (the table the last probe found it in), shifting the rest of its run back. */
  deleteAt(i: number): void {
    const tab = this.hit;
    const w = this.width;
    const mask = tab === this.tab ? this.mask : this.oldMask;
    let hole = i;
    for (let j = (i + 1) & mask; tab[w * j + 1] !== 0; j = (j + 1) & mask) {
      // Entry j may fill the hole iff its home is not in the cyclic range (hole, j].
      if (((j - (tab[w * j] & mask)) & mask) >= ((j - hole) & mask)) {
        tab.copyWithin(w * hole, w * j, w * j + w);
        hole = j;
      }
    }
    tab.fill(0, w * hole, w * hole + w);
  }

  /** Moves to a table of `entries` entries: at once when small or `now` (a restore), else incrementally. */
  resize(entries: number, now: boolean): void {
    if (this.old !== null) this.moveSome(this.oldMask + 1);
    const tab = this.tab;
    const w = this.width;
    this.old = tab;
    this.oldMask = this.mask;
    // An ordinary ArrayBuffer, charged to the isolate: the old table becomes garbage once the walk
    // ends, and V8 must count it to collect it in time. On shared memory (util/unaccounted.ts) a
    // table that shrinks and grows every round of key churn piled ~20 MB of garbage a round up to
    // the next mark-compact (RSS sawtooth 136-304 MB in bench/churn.js, against a flat 126-141 MB).
    this.tab = new Int32Array(w * entries);
    this.mask = entries - 1;
    // The walk starts at an empty entry (there is one: no owner lets a table fill), so no run wraps past its start.
    let from = 0;
    while (tab[w * from + 1] !== 0) from++;
    this.#from = from;
    this.#moved = 0;
    if (now || this.oldMask + 1 < PROBE_TABLE_MOVE_MIN_ENTRIES) this.moveSome(this.oldMask + 1);
  }

  /** Moves the next `n` entries of the old table (empty or not) to the new one; the resize ends when the walk has passed them all. */
  moveSome(n: number): void {
    const old = this.old as Int32Array;
    const oldMask = this.oldMask;
    const next = this.tab;
    const mask = this.mask;
    const w = this.width;
    const end = Math.min(this.#moved + n, oldMask + 1);
    for (let k = this.#moved; k < end; k++) {
      const o = w * ((this.#from + k) & oldMask);
      if (old[o + 1] === 0) continue;
      let j = old[o] & mask;
      while (next[w * j + 1] !== 0) j = (j + 1) & mask;
      for (let x = 0; x < w; x++) next[w * j + x] = old[o + x];
      old[o + 1] = 0;
    }
    this.#moved = end;
    if (end === oldMask + 1) {
      this.old = null;
      this.hit = next;
    }
  }
}
