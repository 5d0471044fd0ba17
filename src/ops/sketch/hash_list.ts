/**
 * A small exact set of 53-bit hashes kept as a sorted Float64Array: the "exact
 * mode" of the distinct sketch and the Bloom filter.
 *
 * Why sorted and not a hash table: 8 bytes per member with no empty slots, and a
 * deterministic layout that saves as-is. Inserts move up to `len` doubles with
 * copyWithin, which is cheap because owners keep `len` small (<= 512) and switch
 * to their compact form beyond that. Lookups are a binary search.
 *
 * Memory grows lazily: no array until the first insert, then capacity doubles from
 * LIST_CAPACITY_MIN up to `lenMax`, never beyond, so an owner that bounds `lenMax`
 * bounds the bytes.
 */
import { strict as assert } from 'node:assert';

const LIST_CAPACITY_MIN = 4;
/**
 * Rough V8 cost of one typed array beyond its data (JSTypedArray, JSArrayBuffer,
 * backing-store record): measured 120..280 B on Node 20 x64, 200 B on average.
 */
export const TYPED_ARRAY_OVERHEAD_BYTES = 200;
/** Rough V8 cost of a small object: header words plus one word per field (measured). */
export function objectBytes(fields: number): number {
  return 24 + 8 * fields;
}

export class HashList {
  arr: Float64Array | null;
  len: number;
  readonly lenMax: number;

  constructor(lenMax: number) {
    assert(Number.isInteger(lenMax) && lenMax >= 0, 'lenMax is a non-negative integer');
    this.arr = null;
    this.len = 0;
    this.lenMax = lenMax;
  }

  /** Index of `h` if present, else -(insertion point) - 1. */
  find(h: number): number {
    const a = this.arr;
    if (a === null) return -1;
    return sortedFind(a, 0, this.len, h);
  }

  has(h: number): boolean {
    return this.find(h) >= 0;
  }

  /** True when the list has room for one more member without passing lenMax. */
  canGrow(): boolean {
    return this.len < this.lenMax;
  }

  /**
   * Adds `h`; returns true if it was new. The caller checks `canGrow()` first when
   * the member may be new (a full list asserts rather than overflow).
   */
  insert(h: number): boolean {
    const at = this.find(h);
    if (at >= 0) return false;
    const pos = -at - 1;
    assert(this.len < this.lenMax, 'hash list is full');
    let a = this.arr;
    if (a === null || this.len === a.length) a = this.grow();
    if (pos < this.len) a.copyWithin(pos + 1, pos, this.len);
    a[pos] = h;
    this.len++;
    return true;
  }

  private grow(): Float64Array {
    const old = this.arr;
    const cap = old === null ? LIST_CAPACITY_MIN : old.length * 2;
    const next = new Float64Array(Math.min(Math.max(cap, LIST_CAPACITY_MIN), this.lenMax));
    if (old !== null) next.set(old.subarray(0, this.len));
    this.arr = next;
    return next;
  }

  /** A copy of the members, ascending. */
  toArray(): Float64Array {
    return this.arr === null ? new Float64Array(0) : this.arr.slice(0, this.len);
  }

  /** Drops all members and the array. */
  clear(): void {
    this.arr = null;
    this.len = 0;
  }

  /** Drops all members, keeping the array for reuse. */
  empty(): void {
    this.len = 0;
  }

  bytes(): number {
    return objectBytes(3) + (this.arr === null ? 0 : TYPED_ARRAY_OVERHEAD_BYTES + this.arr.byteLength);
  }

  /** Rebuilds from `toArray()` output: asserts strictly ascending 53-bit integers. */
  static fromArray(members: Float64Array, lenMax: number): HashList {
    assert(members.length <= lenMax, 'saved hash list is longer than its bound');
    const list = new HashList(lenMax);
    if (members.length === 0) return list;
    let prev = -1;
    for (let i = 0; i < members.length; i++) {
      const h = members[i];
      assert(Number.isSafeInteger(h) && h >= 0 && h > prev, 'saved hashes are ascending 53-bit integers');
      prev = h;
    }
    const cap = Math.min(lenMax, Math.max(LIST_CAPACITY_MIN, members.length));
    list.arr = new Float64Array(cap);
    list.arr.set(members);
    list.len = members.length;
    return list;
  }
}

/**
 * Binary search of `h` among the `len` ascending doubles of `a` from `from`:
 * its index relative to `from` if present, else -(insertion point) - 1 (a
 * HashList's array, or a block of a pooled one: shard/columns/bloom_column.ts).
 */
export function sortedFind(a: Float64Array, from: number, len: number, h: number): number {
  let lo = 0;
  let hi = len - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const x = a[from + mid];
    if (x < h) lo = mid + 1;
    else if (x > h) hi = mid - 1;
    else return mid;
  }
  return -lo - 1;
}
