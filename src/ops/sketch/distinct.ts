/**
 * Distinct count (n_unique): an exact set of 53-bit hashes while small, then
 * HyperLogLog with precision 12.
 *
 * Modes (memory grows only as needed, never past the HLL):
 *   empty   no arrays at all                                 ~40 B
 *   exact   sorted Float64Array of hashes, <= 512 members    <= 4 KiB + ~0.2 KiB
 *   hll     Uint8Array of 4096 registers                     4 KiB + ~0.2 KiB
 * The exact mode stops at 512 members because 512 hashes take as many bytes as the
 * 4096 registers. Its count is exact unless two distinct values share a 53-bit
 * hash (probability < 1.5e-11 at 512 values).
 *
 * HLL: m = 2^12 registers; the register index is the low 12 bits of the hash and
 * the rank is 1 + the number of trailing zero bits of the remaining 41 bits (so a
 * register holds 1..42). The count uses Ertl's improved estimator ("New
 * cardinality estimation algorithms for HyperLogLog sketches", 2017, the one Redis
 * uses), which needs no empirical bias tables and is unbiased from tiny to huge
 * cardinalities (it reduces to linear counting where that is best).
 *
 * Error bound (HLL mode): relative standard error 1.04 / sqrt(4096) = 1.625 %;
 * an estimate is within 2 standard errors (3.25 %) about 95 % of the time and
 * within 4 (6.5 %) essentially always (the tests check 4 across 0..100k).
 *
 * Merge: the exact sets are unioned (turning into an HLL past 512 members), an HLL
 * takes the register-wise max. Because the exact mode keeps the full hashes, a
 * merge equals the sketch built from the union of the inputs, register for
 * register.
 */
import { strict as assert } from 'node:assert';
import { hashHi, hashLo, hashValue } from './hash';
import { HashList, TYPED_ARRAY_OVERHEAD_BYTES, objectBytes } from './hash_list';

export const HLL_PRECISION = 12;
export const HLL_REGISTERS = 1 << HLL_PRECISION;
/** Members of the exact set; past this the sketch becomes an HLL (equal bytes). */
export const DISTINCT_EXACT_MAX = (HLL_REGISTERS / 8) | 0;
/** Relative standard error of the HLL mode: 1.04 / sqrt(m). */
export const HLL_STANDARD_ERROR = 1.04 / Math.sqrt(HLL_REGISTERS);

const INDEX_MASK = HLL_REGISTERS - 1;
/** Hash bits left for the rank: 53 - p. */
const RANK_BITS = 53 - HLL_PRECISION;
/** Rank bits taken from the low word (the rest come from the 21 high bits). */
const LOW_RANK_BITS = 32 - HLL_PRECISION;
/** Largest register value: all rank bits zero. */
const RANK_MAX = RANK_BITS + 1;
const ALPHA_INF = 1 / (2 * Math.LN2);
const SAVE_VERSION = 1;

/** Number of trailing zero bits of a non-zero 32-bit integer. */
function ctz32(x: number): number {
  return 31 - Math.clz32(x & -x);
}

/** Rank of a hash: 1 + trailing zeros of its 41 rank bits (RANK_MAX when all zero). */
function rankOf(lo: number, hi: number): number {
  const w = lo >>> HLL_PRECISION;
  if (w !== 0) return ctz32(w) + 1;
  if (hi !== 0) return LOW_RANK_BITS + ctz32(hi) + 1;
  return RANK_MAX;
}

/** Ertl's sigma(x) = x + sum_k x^(2^k) 2^(k-1). */
function sigma(x: number): number {
  if (x === 1) return Infinity;
  let y = 1;
  let z = x;
  for (;;) {
    x *= x;
    const prev = z;
    z += x * y;
    y += y;
    if (z === prev) return z;
  }
}

/** Ertl's tau(x) = (1 - x - sum_k (1 - x^(2^-k))^2 2^-k) / 3. */
function tau(x: number): number {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  for (;;) {
    x = Math.sqrt(x);
    const prev = z;
    y *= 0.5;
    const d = 1 - x;
    z -= d * d * y;
    if (z === prev) return z / 3;
  }
}

/** Ertl's improved raw estimator over the register histogram. */
function estimate(regs: Uint8Array): number {
  const hist = new Float64Array(RANK_MAX + 1);
  for (let i = 0; i < HLL_REGISTERS; i++) hist[regs[i]]++;
  const m = HLL_REGISTERS;
  let z = m * tau(1 - hist[RANK_MAX] / m);
  for (let k = RANK_BITS; k >= 1; k--) z = 0.5 * (z + hist[k]);
  z += m * sigma(hist[0] / m);
  return Math.round((ALPHA_INF * m * m) / z);
}

export interface DistinctSaved {
  kind: 'n_unique';
  v: number;
  p: number;
  hashes: Float64Array | null;
  regs: Uint8Array | null;
}

export class DistinctSketch {
  /** Exact mode: the sorted hashes (null when empty or in HLL mode). */
  private list: HashList | null;
  /** HLL mode: the registers (null before). */
  private regs: Uint8Array | null;
  /** HLL estimate cache; -1 when registers changed since the last count(). */
  private cached: number;

  constructor() {
    this.list = null;
    this.regs = null;
    this.cached = 0;
  }

  add(v: string | number | boolean): void {
    this.addHash(hashValue(v));
  }

  /** Adds a value already hashed with `hashValue`. */
  addHash(h: number): void {
    if (this.regs !== null) {
      this.hllAdd(h);
      return;
    }
    let list = this.list;
    if (list === null) list = this.list = new HashList(DISTINCT_EXACT_MAX);
    if (list.canGrow()) {
      list.insert(h);
      return;
    }
    if (list.has(h)) return;
    this.toHll();
    this.hllAdd(h);
  }

  /** Estimated number of distinct values (exact in exact mode). */
  count(): number {
    if (this.regs === null) return this.list === null ? 0 : this.list.len;
    if (this.cached < 0) this.cached = estimate(this.regs);
    return this.cached;
  }

  isExact(): boolean {
    return this.regs === null;
  }

  /** Back to the empty sketch, keeping the exact list's array (a reused read accumulator). */
  reset(): void {
    this.list?.empty();
    this.regs = null;
    this.cached = 0;
  }

  /** Adds every value of `other` (which is left unchanged). */
  merge(other: DistinctSketch): void {
    assert(other !== this, 'merging a sketch into itself');
    if (other.regs !== null) {
      const regs = this.regs === null ? this.toHll() : this.regs;
      const src = other.regs;
      for (let i = 0; i < HLL_REGISTERS; i++) if (src[i] > regs[i]) regs[i] = src[i];
      this.cached = -1;
      return;
    }
    const list = other.list;
    if (list === null || list.arr === null) return;
    const arr = list.arr;
    for (let i = 0; i < list.len; i++) this.addHash(arr[i]);
  }

  /** A copy of the registers in HLL mode (null in exact mode), for tests and tools. */
  registers(): Uint8Array | null {
    return this.regs === null ? null : this.regs.slice();
  }

  /** Approximate retained bytes. */
  bytes(): number {
    let b = objectBytes(3);
    if (this.list !== null) b += this.list.bytes();
    if (this.regs !== null) b += TYPED_ARRAY_OVERHEAD_BYTES + this.regs.byteLength;
    return b;
  }

  save(): DistinctSaved {
    return {
      kind: 'n_unique',
      v: SAVE_VERSION,
      p: HLL_PRECISION,
      hashes: this.regs === null && this.list !== null ? this.list.toArray() : null,
      regs: this.regs === null ? null : this.regs.slice(),
    };
  }

  static load(data: unknown): DistinctSketch {
    const d = data as DistinctSaved;
    assert(d !== null && typeof d === 'object' && d.kind === 'n_unique', 'saved n_unique state');
    assert(d.v === SAVE_VERSION && d.p === HLL_PRECISION, 'saved n_unique version and precision');
    const s = new DistinctSketch();
    if (d.regs !== null) {
      assert(d.regs instanceof Uint8Array && d.regs.length === HLL_REGISTERS, 'saved HLL registers');
      for (let i = 0; i < HLL_REGISTERS; i++) assert(d.regs[i] <= RANK_MAX, 'saved HLL register value');
      s.regs = d.regs.slice();
      s.cached = -1;
    } else if (d.hashes !== null) {
      assert(d.hashes instanceof Float64Array, 'saved n_unique hashes');
      s.list = HashList.fromArray(d.hashes, DISTINCT_EXACT_MAX);
    }
    return s;
  }

  clone(): DistinctSketch {
    return DistinctSketch.load(this.save());
  }

  /** Switches to HLL mode, replaying the exact hashes into fresh registers. */
  private toHll(): Uint8Array {
    const regs = new Uint8Array(HLL_REGISTERS);
    this.regs = regs;
    const list = this.list;
    if (list !== null && list.arr !== null) {
      const arr = list.arr;
      for (let i = 0; i < list.len; i++) this.hllAdd(arr[i]);
    }
    this.list = null;
    this.cached = -1;
    return regs;
  }

  private hllAdd(h: number): void {
    const lo = hashLo(h);
    const r = rankOf(lo, hashHi(h));
    const regs = this.regs!;
    const i = lo & INDEX_MASK;
    if (r > regs[i]) {
      regs[i] = r;
      this.cached = -1;
    }
  }
}
