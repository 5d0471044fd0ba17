/**
 * Set membership (bloom_member): a Bloom filter sized from the expected number of
 * distinct values n (`capacity`) and the target false-positive rate p (`fpr`):
 *   m = ceil(-n ln p / (ln 2)^2) bits,   k = max(1, round(m / n * ln 2)) probes,
 * probe j of value hash h at bit (a + j * b) mod m (Kirsch–Mitzenmacher double
 * hashing), where a = low 32 bits of the 53-bit hash and b is derived from all 53
 * bits (see `probeStep`).
 *
 * Lazy memory, smallest form first:
 *   empty   nothing but the object                               ~50 B
 *   exact   sorted Float64Array of the inserted hashes           8 B per value
 *   bits    Int32Array of ceil(m / 32) words                     m / 8 B
 * The exact list is kept while 8 * count <= m / 8 (it is then never bigger than
 * the bit array), i.e. up to floor(m / 64) values: 153 values for n = 1024 at
 * p = 1 %. In exact mode `has` has no false positives (save a 53-bit hash
 * collision). The switch replays the hashes into the bits, so `has` afterwards
 * answers as if the filter had been bits from the start.
 *
 * Guarantees: no false negatives ever; with at most n distinct values inserted the
 * false-positive rate is about p ((1 - e^(-kn/m))^k; measured <= 1.5 p in tests).
 * Past n insertions the rate rises smoothly; nothing else changes.
 *
 * `add` returns whether the value was (probably) present before, which is what the
 * op needs for "had this value been seen before it arrived?".
 */
import { strict as assert } from 'node:assert';
import { SfError } from '../../errors';
import { BLOOM_BITS_MAX, BLOOM_CAPACITY_MAX, BLOOM_FPR_MIN } from '../../limits';
import { fmix32, hashHi, hashLo, hashValue } from './hash';
import { HashList, TYPED_ARRAY_OVERHEAD_BYTES, objectBytes } from './hash_list';

export const BLOOM_CAPACITY_DEFAULT = 1024;
export const BLOOM_FPR_DEFAULT = 0.01;
const SAVE_VERSION = 1;

/** The shape of a filter, computed once per feature and shared by its entities. */
export interface BloomGeometry {
  readonly capacity: number;
  readonly fpr: number;
  /** m, the number of bits. */
  readonly bits: number;
  /** k, the number of probes. */
  readonly hashes: number;
  /** Largest exact list before switching to bits: floor(m / 64). */
  readonly exactMax: number;
}

/**
 * Validates the parameters and computes m and k. Throws `invalid_bloom_fpr` for
 * fpr outside (0,1) and `aggregation_invalid_param` for a capacity that is not an
 * integer in [1, BLOOM_CAPACITY_MAX] or a filter above BLOOM_BITS_MAX bits.
 */
export function bloomGeometry(capacity: number, fpr: number): BloomGeometry {
  if (typeof fpr !== 'number' || !(fpr >= BLOOM_FPR_MIN && fpr < 1)) {
    throw new SfError('invalid_bloom_fpr', `fpr must be in [${BLOOM_FPR_MIN}, 1), got ${String(fpr)}`);
  }
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > BLOOM_CAPACITY_MAX) {
    throw new SfError(
      'aggregation_invalid_param',
      `capacity must be an integer in [1, ${BLOOM_CAPACITY_MAX}], got ${String(capacity)}`,
    );
  }
  const bits = Math.ceil((-capacity * Math.log(fpr)) / (Math.LN2 * Math.LN2));
  if (bits > BLOOM_BITS_MAX) {
    throw new SfError(
      'aggregation_invalid_param',
      `capacity ${capacity} at fpr ${fpr} needs ${bits} bits per entity, above ${BLOOM_BITS_MAX}`,
    );
  }
  const hashes = Math.max(1, Math.round((bits / capacity) * Math.LN2));
  return Object.freeze({ capacity, fpr, bits, hashes, exactMax: Math.floor(bits / 64) });
}

export const BLOOM_DEFAULT_GEOMETRY = bloomGeometry(BLOOM_CAPACITY_DEFAULT, BLOOM_FPR_DEFAULT);

/** Second probe hash from all 53 bits: independent of `a` except through the shared input. */
function probeStep(h: number, a: number): number {
  return fmix32((Math.imul(hashHi(h) ^ 0x5bd1e995, 0x27d4eb2f) ^ a) | 0);
}

export interface BloomSaved {
  kind: 'bloom_member';
  v: number;
  capacity: number;
  fpr: number;
  bits: number;
  hashes: number;
  inserted: number;
  list: Float64Array | null;
  words: Int32Array | null;
}

/** A filter's save (BloomFilter.save; shard/columns/bloom_column.ts saves its pooled filters the same way). */
export function bloomSaved(g: BloomGeometry, inserted: number, list: Float64Array | null, words: Int32Array | null): BloomSaved {
  return { kind: 'bloom_member', v: SAVE_VERSION, capacity: g.capacity, fpr: g.fpr, bits: g.bits, hashes: g.hashes, inserted, list, words };
}

export class BloomFilter {
  readonly geometry: BloomGeometry;
  /** Exact mode: sorted hashes (null when empty or in bits mode). */
  private list: HashList | null;
  /** Bits mode: the bit array (null before). */
  private words: Int32Array | null;
  /** add() calls that found the value absent (exact in exact mode, a lower bound in bits mode). */
  private inserted: number;

  constructor(geometry: BloomGeometry = BLOOM_DEFAULT_GEOMETRY) {
    this.geometry = geometry;
    this.list = null;
    this.words = null;
    this.inserted = 0;
  }

  /** Inserts v; returns true if v was (probably) present before. */
  add(v: string | number | boolean): boolean {
    return this.addHash(hashValue(v));
  }

  has(v: string | number | boolean): boolean {
    return this.hasHash(hashValue(v));
  }

  addHash(h: number): boolean {
    if (this.words !== null) {
      if (this.bitsAdd(h)) return true;
      this.inserted++;
      return false;
    }
    let list = this.list;
    if (list === null) {
      if (this.geometry.exactMax === 0) {
        this.toBits();
        return this.addHash(h);
      }
      list = this.list = new HashList(this.geometry.exactMax);
    }
    if (list.has(h)) return true;
    if (list.canGrow()) list.insert(h);
    else {
      this.toBits();
      this.bitsAdd(h);
    }
    this.inserted++;
    return false;
  }

  hasHash(h: number): boolean {
    if (this.words !== null) return this.bitsHas(h);
    return this.list !== null && this.list.has(h);
  }

  /** Number of insertions that were new (exact in exact mode; may undercount after the switch). */
  insertedCount(): number {
    return this.inserted;
  }

  isExact(): boolean {
    return this.words === null;
  }

  /** Adds every value of `other` (same geometry); bits are OR-ed. */
  merge(other: BloomFilter): void {
    assert(other !== this, 'merging a filter into itself');
    const g = this.geometry;
    const o = other.geometry;
    assert(g.bits === o.bits && g.hashes === o.hashes && g.exactMax === o.exactMax, 'merging filters of one geometry');
    if (other.words !== null) {
      const w = this.words === null ? this.toBits() : this.words;
      const src = other.words;
      for (let i = 0; i < w.length; i++) w[i] |= src[i];
      this.inserted += other.inserted;
      return;
    }
    const list = other.list;
    if (list === null || list.arr === null) return;
    for (let i = 0; i < list.len; i++) this.addHash(list.arr[i]);
  }

  /** Approximate retained bytes. */
  bytes(): number {
    let b = objectBytes(4);
    if (this.list !== null) b += this.list.bytes();
    if (this.words !== null) b += TYPED_ARRAY_OVERHEAD_BYTES + this.words.byteLength;
    return b;
  }

  save(): BloomSaved {
    return bloomSaved(this.geometry, this.inserted, this.words === null && this.list !== null ? this.list.toArray() : null, this.words === null ? null : this.words.slice());
  }

  /** Inverse of save(). Pass the feature's geometry to share it; else it is recomputed. */
  static load(data: unknown, geometry?: BloomGeometry): BloomFilter {
    const d = data as BloomSaved;
    assert(d !== null && typeof d === 'object' && d.kind === 'bloom_member' && d.v === SAVE_VERSION, 'saved bloom');
    const g = geometry ?? bloomGeometry(d.capacity, d.fpr);
    assert(g.bits === d.bits && g.hashes === d.hashes, 'saved bloom geometry matches');
    assert(Number.isSafeInteger(d.inserted) && d.inserted >= 0, 'saved insert count');
    const f = new BloomFilter(g);
    f.inserted = d.inserted;
    if (d.words !== null) {
      assert(d.words instanceof Int32Array && d.words.length === Math.ceil(g.bits / 32), 'saved bloom words');
      f.words = d.words.slice();
    } else if (d.list !== null) {
      assert(d.list instanceof Float64Array, 'saved bloom list');
      f.list = HashList.fromArray(d.list, g.exactMax);
    }
    return f;
  }

  clone(): BloomFilter {
    return BloomFilter.load(this.save(), this.geometry);
  }

  /** Switches to the bit array, replaying the exact hashes. */
  private toBits(): Int32Array {
    const words = new Int32Array(Math.ceil(this.geometry.bits / 32));
    this.words = words;
    const list = this.list;
    if (list !== null && list.arr !== null) for (let i = 0; i < list.len; i++) this.bitsAdd(list.arr[i]);
    this.list = null;
    return words;
  }

  /** Sets the k bits of h; returns true if they were all set already. */
  private bitsAdd(h: number): boolean {
    return bloomBitsAdd(this.words!, 0, this.geometry, h);
  }

  private bitsHas(h: number): boolean {
    return bloomBitsHas(this.words!, 0, this.geometry, h);
  }
}

/**
 * Sets the k bits of hash h in the bit array of geometry `g` that starts at word
 * `base` of `words` (a filter's own array, or a block of a pooled one:
 * shard/columns/bloom_column.ts); returns true if they were all set already.
 */
export function bloomBitsAdd(words: Int32Array, base: number, g: BloomGeometry, h: number): boolean {
  const m = g.bits;
  const a = hashLo(h);
  let pos = a % m;
  const step = m > 1 ? (probeStep(h, a) % (m - 1)) + 1 : 0;
  let present = true;
  for (let j = 0; j < g.hashes; j++) {
    const w = base + (pos >>> 5);
    const bit = 1 << (pos & 31);
    if ((words[w] & bit) === 0) {
      present = false;
      words[w] |= bit;
    }
    pos += step;
    if (pos >= m) pos -= m;
  }
  return present;
}

/** Whether every one of the k bits of h is set (bloomBitsAdd's array layout). */
export function bloomBitsHas(words: Int32Array, base: number, g: BloomGeometry, h: number): boolean {
  const m = g.bits;
  const a = hashLo(h);
  let pos = a % m;
  const step = m > 1 ? (probeStep(h, a) % (m - 1)) + 1 : 0;
  for (let j = 0; j < g.hashes; j++) {
    if ((words[base + (pos >>> 5)] & (1 << (pos & 31))) === 0) return false;
    pos += step;
    if (pos >= m) pos -= m;
  }
  return true;
}
