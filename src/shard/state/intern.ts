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
 * The lookup is an open-addressing table (shard/state/probe_table.ts: linear probing,
 * backward-shift deletion, no tombstones, resized incrementally once large) of
 * (hash, id + 1) pairs in one Int32Array, so a probe reads one cache line
 * before it touches a value; the hash is over UTF-16 code
 * units (a value of at most 8 ASCII units: over its two prefix words, below), so
 * an ASCII string in a PUSH record can be looked up from its bytes
 * (idOfAscii) without making a string: a value seen before costs no allocation,
 * and the row gets the table's own string. A
 * Map<string, id> cost a fresh string per record value plus a hash-table walk
 * that missed the cache on tables of 10^5-10^6 values (bench/DECISIONS.md).
 *
 * A slot holds the value's length and first 8 code units as well, so a lookup of
 * a short ASCII value (most ids) compares in the slot and never touches the
 * string. The push path looks a value up by its bytes once per feed and holds a
 * reference while the feed applies (idOfAscii, refId, unref: a value added by the
 * lookup goes again if no cell took it); ring cells take theirs by id
 * (ring_group.ts). `ref(v)` first compares `v` with the value of the last lookup
 * (`===`, a pointer compare for the table's own string).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { INTERN_LOAD_MAX, INTERN_RECENT_STRINGS, INTERN_SLOTS_MIN, PROBE_TABLE_MOVE_STEP } from '../../limits';
import { fmix32 } from '../../ops/sketch/hash';
import { TL, tlNow, tlSpan } from '../../timeline';
import { grown } from '../../util/unaccounted';
import { ProbeTable } from './probe_table';
import { asciiString, sameAscii } from '../../util/ascii';

export type Interned = string | boolean;

/** Per-process hash seed: values are user input, a fixed hash would let them collide on purpose. */
const SEED = randomBytes(4).readInt32LE(0);
const FNV_PRIME = 0x01000193;
const HASH_TRUE = 0x5bd1e995;
const HASH_FALSE = 0x1b873593;
/** Murmur3's block multipliers (hashOfPrefix). */
const MIX_1 = 0xcc9e2d51 | 0;
const MIX_2 = 0x1b873593;
/** Ids held no more than this fraction of the slots before the table shrinks (when above INTERN_SLOTS_MIN). */
const SHRINK_BELOW = INTERN_LOAD_MAX / 8;
/** Int32s per slot: key word, id + 1, prefix words 0 and 1. */
const W = 4;
/** Code units a slot's prefix holds (two words of four ASCII bytes). */
const PREFIX_UNITS = 8;
/** The prefix of a value no ASCII bytes can equal (a boolean, a string with a unit >= 0x80 among its first 8). */
const NO_PREFIX = -1;
const LEN_SHIFT = 24;
const LEN_MAX = 255;

/** The word a slot keys on: the hash's low 24 bits and the length (capped), so a prefix match of a short value is a match. */
function keyWord(h: number, n: number): number {
  return (h & 0x00ffffff) | ((n < LEN_MAX ? n : LEN_MAX) << LEN_SHIFT);
}

function keyOfValue(v: Interned): number {
  return keyWord(hashOf(v), typeof v === 'string' ? v.length : 0);
}

/** Prefix word `w` (0 or 1) of `v`: its code units 4w..4w+3 as bytes, little-endian, 0 past the end. */
function prefixOf(v: Interned, w: number): number {
  if (typeof v !== 'string') return NO_PREFIX;
  let p = 0;
  for (let k = 0; k < PREFIX_UNITS; k++) {
    const c = k < v.length ? v.charCodeAt(k) : 0;
    if (c >= 0x80) return NO_PREFIX;
    if (k >> 2 === w) p |= c << (8 * (k & 3));
  }
  return p;
}

/** Prefix word `w` of the ASCII bytes [from, to) of `b` (prefixOf of their string). */
function prefixOfBytes(b: Uint8Array, from: number, to: number, w: number): number {
  const at = from + 4 * w;
  return (at < to ? b[at] : 0) | (at + 1 < to ? b[at + 1] << 8 : 0) | (at + 2 < to ? b[at + 2] << 16 : 0) | (at + 3 < to ? b[at + 3] << 24 : 0);
}

function hashOf(v: Interned): number {
  if (typeof v === 'boolean') return v ? HASH_TRUE : HASH_FALSE;
  if (v.length <= PREFIX_UNITS) {
    const p0 = prefixOf(v, 0);
    if (p0 !== NO_PREFIX) return hashOfPrefix(p0, prefixOf(v, 1), v.length);
  }
  let h = SEED ^ v.length;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v.charCodeAt(i), FNV_PRIME);
  // Murmur3's finalizer: the FNV loop's low bits alone probe poorly for keys that differ in their last character.
  return fmix32(h) | 0;
}

/**
 * hashOf of an ASCII value of `n` <= PREFIX_UNITS units from its prefix words: two
 * multiplies instead of one per unit (most values are short ids: the lookup by
 * bytes computes the prefix words anyway).
 */
function hashOfPrefix(p0: number, p1: number, n: number): number {
  let h = Math.imul((SEED ^ n) ^ p0, MIX_1);
  h = (h << 15) | (h >>> 17);
  h = Math.imul(h ^ p1, MIX_2);
  return fmix32(h) | 0;
}

/** hashOf of the string whose code units are bytes [from, to) of `b` (ASCII, longer than PREFIX_UNITS). */
function hashOfBytes(b: Uint8Array, from: number, to: number): number {
  let h = SEED ^ (to - from);
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i], FNV_PRIME);
  return fmix32(h) | 0;
}

/**
 * Strings lately made from record bytes by any intern table of this thread, by
 * hash (direct-mapped): the tables share the hash function, so a value new to
 * several of them in one record (the fraud workload's user id is in two tables,
 * its card and merchant ids too) is made once and shared; each string made is
 * kept, so it is garbage the scavenges copy twice (and memory held per table).
 */
const recent: Array<string | undefined> = new Array<string | undefined>(INTERN_RECENT_STRINGS).fill(undefined);

/** The string of the ASCII bytes [from, to) of `b` (hash `h` = hashOf of it), a recent one when it has those bytes. */
function stringOfAscii(b: Uint8Array, from: number, to: number, h: number): string {
  const at = h & (INTERN_RECENT_STRINGS - 1);
  const r = recent[at];
  if (r !== undefined && sameAscii(r, b, from, to - from)) return r;
  const v = asciiString(b, from, to);
  recent[at] = v;
  return v;
}

/** The id of `v` (key word `key`) in table `s` probed from entry `i`, -1 if none. */
function findValue(s: Int32Array, mask: number, i: number, key: number, v: Interned, values: Array<Interned | undefined>): number {
  for (; ; i = (i + 1) & mask) {
    const e = s[W * i + 1];
    if (e === 0) return -1;
    if (s[W * i] === key && values[e - 1] === v) return e - 1;
  }
}

/** The id of the ASCII value of `n` bytes at `from` of `b` (key word `key`, prefix words p0, p1) in table `s` probed from entry `i`, -1 if none. */
function findAscii(s: Int32Array, mask: number, i: number, key: number, p0: number, p1: number, b: Uint8Array, from: number, n: number, values: Array<Interned | undefined>): number {
  for (; ; i = (i + 1) & mask) {
    const e = s[W * i + 1];
    if (e === 0) return -1;
    if (s[W * i] !== key || s[W * i + 2] !== p0 || s[W * i + 3] !== p1) continue;
    // Same length, same first PREFIX_UNITS units: compare the rest.
    const v = values[e - 1];
    if (typeof v === 'string' && sameAscii(v, b, from, n, PREFIX_UNITS)) return e - 1;
  }
}

/** The id of the value of at most PREFIX_UNITS units whose key word and prefix words these are, in table `s` probed from entry `i`, -1 if none. */
function findShort(s: Int32Array, mask: number, i: number, key: number, p0: number, p1: number): number {
  for (; ; i = (i + 1) & mask) {
    const e = s[W * i + 1];
    if (e === 0) return -1;
    // Same length, same units: the same value.
    if (s[W * i] === key && s[W * i + 2] === p0 && s[W * i + 3] === p1) return e - 1;
  }
}

export class InternTable {
  /** Value per id (undefined for a free id). */
  values: Array<Interned | undefined> = [];
  refs = new Int32Array(INTERN_SLOTS_MIN);
  /** keyWord per id: its slot is found (removal) without hashing the value again. */
  #keys = new Int32Array(INTERN_SLOTS_MIN);
  /** Slots of W words: [W i] keyWord, [W i + 1] id + 1 (0: empty), [W i + 2, W i + 3] the prefix. */
  readonly #t = new ProbeTable(W, INTERN_SLOTS_MIN);
  #size = 0;
  #free: number[] = [];
  /** The last value looked up and its id (ref's fast path); undefined when none. */
  #lastV: Interned | undefined = undefined;
  #lastId = -1;
  /** The last value found by idOfAscii's short path, as its length and prefix words (-1: none): that path never loads the string. */
  #lastN = -1;
  #lastP0 = 0;
  #lastP1 = 0;

  get size(): number {
    return this.#size;
  }

  /** Whether an incremental resize of the lookup table is under way (tests). */
  get resizing(): boolean {
    return this.#t.old !== null;
  }

  /** The id of `v`, with one more reference. */
  ref(v: Interned): number {
    const id = v === this.#lastV ? this.#lastId : this.#idOf(v);
    this.refs[id]++;
    return id;
  }

  /** One more reference of live `id` (the push path's hold on a value it looked up; a ring cell's). */
  refId(id: number): void {
    this.refs[id]++;
  }

  /** The id of `v`, added (without a reference) when new. */
  #idOf(v: Interned): number {
    const key = keyOfValue(v);
    const t = this.#t;
    let id = findValue(t.tab, t.mask, key & t.mask, key, v, this.values);
    if (id < 0 && t.old !== null) id = findValue(t.old, t.oldMask, t.oldHome(key), key, v, this.values);
    return id >= 0 ? this.#hit(v, id) : this.#add(v, key);
  }

  /**
   * The id of the ASCII string in bytes [from, to) of `b` (a PUSH record value),
   * without making a string unless it is new; its value is `values[id]`. A new
   * value has no reference: the caller takes one (refId) at once and drops it
   * (unref) when done, which removes the value if nothing else took one.
   */
  idOfAscii(b: Uint8Array, from: number, to: number): number {
    const n = to - from;
    if (n <= PREFIX_UNITS) return this.#idOfShort(b, from, to);
    // The same value as the last lookup (a low-cardinality column: a country, a category) costs no hash or probe.
    const lv = this.#lastV;
    if (typeof lv === 'string' && sameAscii(lv, b, from, n)) return this.#lastId;
    const h = hashOfBytes(b, from, to);
    const key = keyWord(h, n);
    const p0 = prefixOfBytes(b, from, to, 0);
    const p1 = prefixOfBytes(b, from, to, 1);
    const t = this.#t;
    let id = findAscii(t.tab, t.mask, key & t.mask, key, p0, p1, b, from, n, this.values);
    if (id < 0 && t.old !== null) id = findAscii(t.old, t.oldMask, t.oldHome(key), key, p0, p1, b, from, n, this.values);
    return id >= 0 ? this.#hit(this.values[id] as string, id) : this.#add(stringOfAscii(b, from, to, h), key);
  }

  /**
   * idOfAscii of at most PREFIX_UNITS bytes: the slot's key word and prefix words
   * are the whole value, so a value held already is found without loading its
   * string (values[id] is another cache line per lookup in a large table; the push
   * path loads it only when something reads it from the row).
   */
  #idOfShort(b: Uint8Array, from: number, to: number): number {
    const n = to - from;
    const p0 = prefixOfBytes(b, from, to, 0);
    const p1 = prefixOfBytes(b, from, to, 1);
    // The same value as the last lookup (a low-cardinality column: a country, a category) costs no hash or probe.
    if (n === this.#lastN && p0 === this.#lastP0 && p1 === this.#lastP1) return this.#lastId;
    const h = hashOfPrefix(p0, p1, n);
    const key = keyWord(h, n);
    const t = this.#t;
    let id = findShort(t.tab, t.mask, key & t.mask, key, p0, p1);
    if (id < 0 && t.old !== null) id = findShort(t.old, t.oldMask, t.oldHome(key), key, p0, p1);
    if (id >= 0) {
      this.#lastV = undefined;
      this.#lastId = id;
    } else id = this.#add(stringOfAscii(b, from, to, h), key);
    this.#lastN = n;
    this.#lastP0 = p0;
    this.#lastP1 = p1;
    return id;
  }

  #hit(v: Interned, id: number): number {
    this.#lastV = v;
    this.#lastId = id;
    this.#lastN = -1;
    return id;
  }

  #add(v: Interned, key: number): number {
    const id = this.#free.length > 0 ? (this.#free.pop() as number) : this.values.length;
    if (id >= this.refs.length) {
      const t0 = tlNow();
      this.refs = grown(this.refs, this.refs.length * 2);
      this.#keys = grown(this.#keys, this.#keys.length * 2);
      tlSpan(TL.INTERN_GROW, t0, this.refs.length, 0);
    }
    this.values[id] = v;
    this.#keys[id] = key;
    this.refs[id] = 0;
    this.#size++;
    const t = this.#t;
    if (this.#size > t.entries * INTERN_LOAD_MAX) this.#rehash(t.entries * 2);
    if (t.old !== null) t.moveSome(PROBE_TABLE_MOVE_STEP);
    this.#place(id, key, v);
    return this.#hit(v, id);
  }

  #place(id: number, key: number, v: Interned): void {
    const s = this.#t.tab;
    const i = this.#t.emptyFor(key);
    s[W * i] = key;
    s[W * i + 1] = id + 1;
    s[W * i + 2] = prefixOf(v, 0);
    s[W * i + 3] = prefixOf(v, 1);
  }

  /** Moves to a table of `slots` slots (incrementally once large: shard/state/probe_table.ts); a slot's key word gives its new home, no value is read or hashed. */
  #rehash(slots: number): void {
    const t0 = tlNow();
    this.#t.resize(slots, false);
    tlSpan(TL.INTERN_REHASH, t0, slots, this.#size);
  }

  /** Drops one reference of `id`; the value goes when none is left. */
  unref(id: number): void {
    assert(this.refs[id] > 0, 'intern id released more often than referenced');
    if (--this.refs[id] > 0) return;
    this.#remove(id);
  }

  #remove(id: number): void {
    const t = this.#t;
    const at = t.entryOf(this.#keys[id], id + 1);
    assert(at >= 0, 'intern id without a slot');
    t.deleteAt(at);
    this.values[id] = undefined;
    this.#free.push(id);
    this.#size--;
    if (id === this.#lastId) {
      this.#lastV = undefined;
      this.#lastId = -1;
      this.#lastN = -1;
    }
    if (t.old !== null) t.moveSome(PROBE_TABLE_MOVE_STEP);
    else if (t.entries > INTERN_SLOTS_MIN && this.#size < t.entries * SHRINK_BELOW) this.#rehash(t.entries / 2);
  }

  value(id: number): Interned {
    return this.values[id] as Interned;
  }

  /**
   * value(id) of the id the last lookup answered, which ref() then finds by its
   * `===` fast path: the short path of idOfAscii does not load the string, so the
   * push path hands it over when it loads it for the row (a kept value, last_merchant,
   * takes its reference through ref right after).
   */
  lookedUp(id: number): Interned {
    const v = this.values[id] as Interned;
    if (id === this.#lastId) this.#lastV = v;
    return v;
  }

  /** The table as saved in a slab snapshot: values by id (null for free ids) and their counts. */
  save(): { values: Array<Interned | null>; refs: Int32Array } {
    const values = this.values.map((v) => (v === undefined ? null : v));
    return { values, refs: this.refs.slice(0, values.length) };
  }

  /** Replaces the content by a saved table (slab restore: ring cells keep their ids). */
  load(saved: { values: Array<Interned | null>; refs: Int32Array }): void {
    this.#free = [];
    this.#lastV = undefined;
    this.#lastId = -1;
    this.#lastN = -1;
    this.values = [];
    this.#size = 0;
    let cap = INTERN_SLOTS_MIN;
    while (cap < saved.values.length) cap *= 2;
    this.refs = new Int32Array(cap);
    this.#keys = new Int32Array(cap);
    let slots = INTERN_SLOTS_MIN;
    while (saved.values.length > slots * INTERN_LOAD_MAX) slots *= 2;
    this.#t.reset(slots);
    for (let id = 0; id < saved.values.length; id++) {
      const v = saved.values[id];
      if (v === null || saved.refs[id] <= 0) {
        this.values[id] = undefined;
        this.#free.push(id);
        continue;
      }
      this.values[id] = v;
      this.refs[id] = saved.refs[id];
      this.#keys[id] = keyOfValue(v);
      this.#place(id, this.#keys[id], v);
      this.#size++;
    }
  }
}
