/**
 * The entities of one table on one shard: key -> slot, and per slot what the
 * shard tracks for every entity (its key, the server time and LSN of the last
 * push that reached it). Feature state lives in columns indexed by the same slot
 * (shard/columns/table_columns.ts), so an entity is a slot number, not an object.
 *
 * Keys are bytes, not JS strings (a `Map<string, slot>` cost a key
 * string decoded per WAL record plus its hashing, 33% of replay, and ~80 B per
 * entity). A key's bytes are those the PUSH record carries (wal/push_record.ts
 * str: UTF-8, ASCII when every unit is < 0x80, UTF-16LE when the string has a
 * lone surrogate), so a record's feed is looked up in place, and a string key
 * (a get, a snapshot, the cold store) is encoded the same way first.
 *
 *   arena    Buffer: per key [u16 byte length][u8 str tag][bytes], one after another
 *   meta     per slot 2 u32: the key's arena offset (FREE: free slot) and hash
 *            (finds its table entry without hashing again); unset at and past
 *            `high`, where nothing reads it
 *   lastT, lastLsn  per slot f64
 *   table    open addressing, linear probing (shard/state/probe_table.ts): per entry 3 i32,
 *            the key's hash, slot + 1 (0 = empty) and arena offset; at most
 *            ENTITY_INDEX_LOAD_MAX full
 *   free     Int32Array stack of released slots, reused before `high` grows
 *
 * A lookup touches one table entry and the key's length, tag and bytes side by
 * side in the arena: two cache lines (a Map walk touched more, and needed a string).
 *
 * Slot storage and the table grow by doubling (`onGrow` lets the columns grow
 * with the slots; a large column grows in place, util/unaccounted.ts); the table
 * halves when mostly empty. Deletion shifts the rest of a probe run back (no
 * tombstones), so churning keys never fills it with dead entries. A released
 * key's bytes stay in the arena as dead bytes until they pass
 * ENTITY_KEY_ARENA_DEAD_MAX of it; the live keys are then copied into a new arena.
 * Slots are never moved while an entity lives: a slot is released only when its
 * entity leaves (cold freeze, drop, partition drop) and is then reused by a new key.
 * Keys come back as strings only where an answer or another store needs one
 * (keyOf: inspect, snapshots, the cold store), decoded then.
 *
 * The table resizes incrementally once large (shard/state/probe_table.ts): an add or
 * removal moves a few entries of the old table along, and a key missing from
 * the new table is looked for in the old one.
 */
import { strict as assert } from 'node:assert';
import { ENTITY_INDEX_LOAD_MAX, ENTITY_KEY_ARENA_BYTES_MIN, ENTITY_KEY_ARENA_DEAD_MAX, ENTITY_SLOTS_MIN, PROBE_TABLE_MOVE_STEP } from '../../limits';
import { hashBytes32 } from '../../ops/sketch/hash';
import { strOf, TAG_STR_ASCII, TAG_STR_UTF16, TAG_STR_UTF8, wellFormed } from '../../wal/push_record';
import { TL, tlNow, tlSpan } from '../../timeline';
import { ProbeTable } from './probe_table';
import { grown } from '../../util/unaccounted';


/**
 * Zeroes `a[from, to)`. A loop rather than `TypedArray#fill`: fill with a range
 * is a call into V8's C++ runtime (~180 ns in a micro-benchmark for the 2-8
 * doubles of a slab row, a loop ~10 ns), and a new entity zeroes one row per
 * solo column of its table.
 */
export function zeroRange(a: Float64Array, from: number, to: number): void {
  for (let i = from; i < to; i++) a[i] = 0;
}

/**
 * Seeds of the key hash. Not the routing hash (FNV, registry/key.ts): within one
 * shard its low bits are correlated (they chose the shard), which would crowd the
 * probe runs. UTF-16 keys hash under their own seed (their bytes could equal
 * another key's UTF-8 bytes, and they are a different key).
 */
const SEED = 0x3c6ef372;
/** A key's bytes in the arena follow its u16 length and u8 str tag. */
const KEY_HEAD = 3;
/** meta[2 * slot] of a free slot. */
const FREE = 0xffffffff;
/** Words of a table entry: hash, slot + 1, arena offset. */
const ENTRY = 3;
const SEED_WIDE = 0x1b873593;

/**
 * Hashes are kept to 30 bits: a small integer (Smi) passes between functions as
 * itself, where a 32-bit one that does not fit is boxed into a heap number at
 * each call that is not inlined (findBytes, addBytes: ~30 B of garbage per fraud
 * push). The bits dropped only shorten the hash compared before the key bytes.
 */
const HASH_MASK = 0x3fffffff;

/** The hash a key of these bytes and str tag is filed under. */
export function keyHash(b: Uint8Array, from: number, len: number, tag: number): number {
  return hashBytes32(b, from, len, tag === TAG_STR_UTF16 ? SEED_WIDE : SEED, HASH_MASK);
}

/**
 * A string key encoded as the PUSH record writer encodes it, into a scratch
 * buffer shared by every index (synchronous use only): its length is returned,
 * its tag left in ENC_TAG.
 */
let SCRATCH = Buffer.allocUnsafeSlow(256);
let ENC_TAG = 0;

function encodeKey(s: string): number {
  const n = s.length;
  if (SCRATCH.length < 3 * n) SCRATCH = Buffer.allocUnsafeSlow(Math.max(3 * n, 2 * SCRATCH.length));
  const b = SCRATCH;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    b[i] = c;
  }
  if (i === n) {
    ENC_TAG = TAG_STR_ASCII;
    return n;
  }
  if (wellFormed(s)) {
    ENC_TAG = TAG_STR_UTF8;
    return b.write(s, 0, 'utf8');
  }
  ENC_TAG = TAG_STR_UTF16;
  return b.write(s, 0, 'utf16le');
}

export class EntityIndex {
  lastT = new Float64Array(ENTITY_SLOTS_MIN);
  lastLsn = new Float64Array(ENTITY_SLOTS_MIN);
  /** Per slot [arena offset (FREE: free slot), hash]. */
  #meta = new Uint32Array(ENTITY_SLOTS_MIN * 2);
  #free = new Int32Array(ENTITY_SLOTS_MIN);
  #freeLen = 0;
  /** Slots ever handed out (every live or free slot is below it). */
  high = 0;
  capacity = ENTITY_SLOTS_MIN;
  /** Called with the new capacity before a slot at or past the old one is handed out. */
  onGrow: ((capacity: number) => void) | null = null;

  #arena = Buffer.allocUnsafeSlow(ENTITY_KEY_ARENA_BYTES_MIN);
  /** Arena bytes written (live and dead keys). */
  #used = 0;
  /** Arena bytes of released keys. */
  #dead = 0;

  /** Per entry [hash, slot + 1, arena offset]; slot + 1 = 0: empty. */
  readonly #t = new ProbeTable(ENTRY, ENTITY_SLOTS_MIN);
  /** Keys (in both tables while a resize is under way). */
  #count = 0;

  get size(): number {
    return this.#count;
  }

  /** Size of the key arena (live, dead and not yet used bytes). */
  get arenaBytes(): number {
    return this.#arena.length;
  }

  /** Entries of the table (used and empty; the new one while a resize is under way). */
  get tableEntries(): number {
    return this.#t.entries;
  }

  /** Whether an incremental resize is under way (tests). */
  get resizing(): boolean {
    return this.#t.old !== null;
  }

  /** The slot of the key of `len` bytes at `from` of `b` (str tag `tag`, hash `h` = keyHash), -1 if none. */
  findBytes(b: Uint8Array, from: number, len: number, tag: number, h: number): number {
    const at = this.#probe(b, from, len, tag, h);
    return at < 0 ? -1 : this.#t.hit[ENTRY * at + 1] - 1;
  }

  slotOf(key: string): number {
    const len = encodeKey(key);
    return this.findBytes(SCRATCH, 0, len, ENC_TAG, keyHash(SCRATCH, 0, len, ENC_TAG));
  }

  /** A slot for a key given by its bytes (as findBytes) that has none; throws when it has one. */
  addBytes(b: Uint8Array, from: number, len: number, tag: number, h: number, lastT: number, lastLsn: number): number {
    assert(len <= 0xffff, 'entity key longer than 65,535 bytes');
    const t = this.#t;
    if (this.#count + 1 > t.entries * ENTITY_INDEX_LOAD_MAX) this.#resize(t.entries * 2, false);
    if (t.old !== null) t.moveSome(PROBE_TABLE_MOVE_STEP);
    const mask = t.mask;
    let i = h & mask;
    for (; t.tab[ENTRY * i + 1] !== 0; i = (i + 1) & mask) {
      // A key that had a slot would leak it (a programmer error; the old table of a resize is not checked).
      if (t.tab[ENTRY * i] === h && this.#same(t.tab[ENTRY * i + 2], b, from, len, tag)) assert.fail('entity already has a slot');
    }
    const slot = this.#place(b, from, len, tag, h, lastT, lastLsn);
    // #place may have compacted the arena (the table's offsets with it): set the entry after it.
    const tab = t.tab;
    tab[ENTRY * i] = h;
    tab[ENTRY * i + 1] = slot + 1;
    tab[ENTRY * i + 2] = this.#meta[2 * slot];
    this.#count++;
    return slot;
  }

  add(key: string, lastT: number, lastLsn: number): number {
    const len = encodeKey(key);
    return this.addBytes(SCRATCH, 0, len, ENC_TAG, keyHash(SCRATCH, 0, len, ENC_TAG), lastT, lastLsn);
  }

  /**
   * A new slot for `key` (restore: a key normally arrives once). Returns the
   * slot, and in `replaced` the slot the key had before, -1 if none (a key
   * captured twice by a fuzzy snapshot); the caller empties and releases that
   * one (releaseSlot).
   */
  addReplacing(key: string, lastT: number, lastLsn: number, replaced: Int32Array): number {
    const len = encodeKey(key);
    const tag = ENC_TAG;
    const h = keyHash(SCRATCH, 0, len, tag);
    const at = this.#probe(SCRATCH, 0, len, tag, h);
    if (at < 0) {
      replaced[0] = -1;
      return this.addBytes(SCRATCH, 0, len, tag, h, lastT, lastLsn);
    }
    const tab = this.#t.hit;
    replaced[0] = tab[ENTRY * at + 1] - 1;
    const slot = this.#place(SCRATCH, 0, len, tag, h, lastT, lastLsn);
    tab[ENTRY * at + 1] = slot + 1;
    tab[ENTRY * at + 2] = this.#meta[2 * slot];
    return slot;
  }

  /** Frees a slot whose key already points elsewhere (addReplacing). */
  releaseSlot(slot: number): void {
    assert(this.live(slot) && this.#tableAt(slot) < 0, 'releaseSlot of a slot the index still points to');
    this.#release(slot);
  }

  /** Releases `key`'s slot (the caller has emptied its columns first). Returns the slot, -1 if none. */
  remove(key: string): number {
    const len = encodeKey(key);
    const at = this.#probe(SCRATCH, 0, len, ENC_TAG, keyHash(SCRATCH, 0, len, ENC_TAG));
    if (at < 0) return -1;
    const slot = this.#t.hit[ENTRY * at + 1] - 1;
    this.#deleteAt(at);
    this.#release(slot);
    return slot;
  }

  /** Releases the live `slot` and its key (the caller has emptied its columns first). */
  removeSlot(slot: number): void {
    const at = this.#tableAt(slot);
    assert(at >= 0, 'removeSlot of a free slot');
    this.#deleteAt(at);
    this.#release(slot);
  }

  live(slot: number): boolean {
    return slot < this.high && this.#meta[2 * slot] !== FREE;
  }

  /** The key of the live `slot` as a string (decoded now: keys are kept as bytes). */
  keyOf(slot: number): string {
    const at = this.#meta[2 * slot];
    assert(at !== FREE && slot < this.high, 'keyOf a free slot');
    const a = this.#arena;
    return strOf(a, at + KEY_HEAD, a[at] | (a[at + 1] << 8), a[at + 2]);
  }

  /**
   * Copies the live `slot`'s key bytes into `out` at `at`, as stored (no string is
   * made: snapshots write keys as bytes, slab_chunk.ts). Returns the key's byte
   * length | str tag << 16, the tag strOf decodes it with.
   */
  copyKey(slot: number, out: Uint8Array, at: number): number {
    const k = this.#meta[2 * slot];
    assert(k !== FREE && slot < this.high, 'copyKey of a free slot');
    const a = this.#arena;
    const len = a[k] | (a[k + 1] << 8);
    const from = k + KEY_HEAD;
    // Byte by byte: keys are short, and a native copy per key costs more.
    for (let i = 0; i < len; i++) out[at + i] = a[from + i];
    return len | (a[k + 2] << 16);
  }

  /** Bytes of the live `slot`'s key as stored. */
  keyBytes(slot: number): number {
    const at = this.#meta[2 * slot];
    return this.#arena[at] | (this.#arena[at + 1] << 8);
  }

  /** Makes room for `n` slots at once (restore): capacity is the next power of two at or above it, the table sized to hold them. */
  reserve(n: number): void {
    let cap = this.capacity;
    while (cap < n) cap *= 2;
    if (cap > this.capacity) this.#grow(cap);
    let entries = this.#t.entries;
    while (n > entries * ENTITY_INDEX_LOAD_MAX) entries *= 2;
    if (entries > this.#t.entries) this.#resize(entries, true);
  }

  /** Live slots in slot order (a copy: callers may release slots while walking it). */
  liveSlots(): number[] {
    const out: number[] = [];
    for (let s = 0; s < this.high; s++) if (this.#meta[2 * s] !== FREE) out.push(s);
    return out;
  }

  /** Every live key, in slot order (tests, benches, rare admin paths). */
  keyList(): string[] {
    return this.liveSlots().map((s) => this.keyOf(s));
  }

  /** Position of the key's entry, -1 if none; the table it is in is left in the ProbeTable's `hit`. */
  #probe(b: Uint8Array, from: number, len: number, tag: number, h: number): number {
    const t = this.#t;
    const at = this.#probeIn(t.tab, t.mask, h & t.mask, b, from, len, tag, h);
    if (at >= 0) {
      t.hit = t.tab;
      return at;
    }
    if (t.old === null) return -1;
    const old = this.#probeIn(t.old, t.oldMask, t.oldHome(h), b, from, len, tag, h);
    if (old >= 0) t.hit = t.old;
    return old;
  }

  /** Position of the key's entry in table `tab` probed from entry `i`, -1 if none. */
  #probeIn(tab: Int32Array, mask: number, i: number, b: Uint8Array, from: number, len: number, tag: number, h: number): number {
    for (; ; i = (i + 1) & mask) {
      const e = ENTRY * i;
      if (tab[e + 1] === 0) return -1;
      if (tab[e] === h && this.#same(tab[e + 2], b, from, len, tag)) return i;
    }
  }

  /** Position of the entry pointing at `slot`, -1 if none (its table in the ProbeTable's `hit`). */
  #tableAt(slot: number): number {
    return this.#t.entryOf(this.#meta[2 * slot + 1], slot + 1);
  }

  /** Whether the key at arena offset `at` is this one. UTF-8 and ASCII bytes compare as one encoding; UTF-16 bytes only with UTF-16. */
  #same(at: number, b: Uint8Array, from: number, len: number, tag: number): boolean {
    const a = this.#arena;
    if ((a[at] | (a[at + 1] << 8)) !== len || (a[at + 2] === TAG_STR_UTF16) !== (tag === TAG_STR_UTF16)) return false;
    const k = at + KEY_HEAD;
    for (let j = 0; j < len; j++) if (a[k + j] !== b[from + j]) return false;
    return true;
  }

  /** A slot holding a copy of the key (not yet in the table). */
  #place(b: Uint8Array, from: number, len: number, tag: number, h: number, lastT: number, lastLsn: number): number {
    const slot = this.#takeSlot();
    const size = KEY_HEAD + len;
    if (this.#used + size > this.#arena.length) this.#makeRoom(size);
    const a = this.#arena;
    const at = this.#used;
    a[at] = len & 0xff;
    a[at + 1] = len >>> 8;
    a[at + 2] = tag;
    for (let j = 0; j < len; j++) a[at + KEY_HEAD + j] = b[from + j];
    this.#used = at + size;
    this.#meta[2 * slot] = at;
    this.#meta[2 * slot + 1] = h;
    this.lastT[slot] = lastT;
    this.lastLsn[slot] = lastLsn;
    return slot;
  }

  #release(slot: number): void {
    this.#dead += KEY_HEAD + this.keyBytes(slot);
    this.#meta[2 * slot] = FREE;
    this.lastT[slot] = 0;
    this.lastLsn[slot] = 0;
    if (this.#freeLen === this.#free.length) this.#free = grown(this.#free, this.#free.length * 2);
    this.#free[this.#freeLen++] = slot;
    if (this.#used > ENTITY_KEY_ARENA_BYTES_MIN && this.#dead > this.#used * ENTITY_KEY_ARENA_DEAD_MAX) this.#compact(0);
  }

  /** Room for `len` more arena bytes: compacts when half dead, else doubles. */
  #makeRoom(len: number): void {
    if (this.#dead > this.#used * ENTITY_KEY_ARENA_DEAD_MAX) this.#compact(len);
    if (this.#used + len <= this.#arena.length) return;
    const t0 = tlNow();
    let size = this.#arena.length * 2;
    while (size < this.#used + len) size *= 2;
    // In place once large (util/unaccounted.ts): a Buffer's constructor is not a typed array's, so grow a plain view.
    const a = this.#arena;
    const next = grown(new Uint8Array(a.buffer, a.byteOffset, a.length), size);
    this.#arena = Buffer.from(next.buffer, next.byteOffset, next.length);
    tlSpan(TL.ARENA_GROW, t0, size, this.#used - this.#dead);
  }

  /** Copies the live keys into a new arena sized for them (and `extra` bytes) with room to grow. */
  #compact(extra: number): void {
    const t0 = tlNow();
    const liveBytes = this.#used - this.#dead;
    let size = ENTITY_KEY_ARENA_BYTES_MIN;
    while (size < 2 * (liveBytes + extra)) size *= 2;
    const from = this.#arena;
    const to = Buffer.allocUnsafeSlow(size);
    let at = 0;
    const meta = this.#meta;
    for (let m = 0; m < 2 * this.high; m += 2) {
      const src = meta[m];
      if (src === FREE) continue;
      const size = KEY_HEAD + (from[src] | (from[src + 1] << 8));
      for (let j = 0; j < size; j++) to[at + j] = from[src + j];
      meta[m] = at;
      at += size;
    }
    assert(at === liveBytes, 'key arena: live bytes do not add up');
    this.#arena = to;
    this.#used = at;
    this.#dead = 0;
    for (const tab of [this.#t.tab, this.#t.old]) {
      if (tab === null) continue;
      for (let e = 0; e < tab.length; e += ENTRY) if (tab[e + 1] !== 0) tab[e + 2] = meta[2 * (tab[e + 1] - 1)];
    }
    tlSpan(TL.ARENA_GROW, t0, size, liveBytes);
  }

  /** Removes the entry at `i` of the table #probe or #tableAt found it in. */
  #deleteAt(i: number): void {
    const t = this.#t;
    t.deleteAt(i);
    this.#count--;
    if (t.old !== null) {
      t.moveSome(PROBE_TABLE_MOVE_STEP);
      return;
    }
    // Mostly empty after a wave of drops: give the memory back.
    if (t.entries > ENTITY_SLOTS_MIN && this.#count < t.entries * ENTITY_INDEX_LOAD_MAX / 8) this.#resize(t.entries / 2, false);
  }

  /** Moves to a table of `entries` entries (at once when `now`: a restore). */
  #resize(entries: number, now: boolean): void {
    const t0 = tlNow();
    this.#t.resize(entries, now);
    tlSpan(TL.INDEX_RESIZE, t0, entries, this.#count);
  }

  #takeSlot(): number {
    if (this.#freeLen > 0) return this.#free[--this.#freeLen];
    if (this.high === this.capacity) this.#grow(this.capacity * 2);
    // Free until #place files its key (a compaction on the way walks it).
    this.#meta[2 * this.high] = FREE;
    return this.high++;
  }

  #grow(capacity: number): void {
    assert(capacity > this.capacity);
    const t0 = tlNow();
    this.lastT = grown(this.lastT, capacity);
    this.lastLsn = grown(this.lastLsn, capacity);
    // Not filled with FREE: no slot at or past `high` is read (live() checks), and #place sets a slot's meta.
    this.#meta = grown(this.#meta, capacity * 2);
    this.capacity = capacity;
    if (this.onGrow !== null) this.onGrow(capacity);
    tlSpan(TL.SLOTS_GROW, t0, capacity, this.#count);
  }
}
