/**
 * Deterministic non-cryptographic hashes for the sketches.
 *
 * - `hashString32(s, seed)`: MurmurHash3 x86_32 over the UTF-16LE bytes of `s`
 *   (two code units per 32-bit block). Bit-identical to murmur3 run on
 *   `Buffer.from(s, 'utf16le')`, which the tests check.
 * - `hashValue(v)`: a 53-bit hash (a safe integer in [0, 2^53)) of a string,
 *   number or boolean. Two murmur3-style lanes of 32 bits run side by side with
 *   different multipliers and rotations, are cross-added and finalised with fmix32;
 *   the result keeps all 32 bits of lane 1 and the low 21 bits of lane 2. A type tag
 *   seeds both lanes, so the string "5", the number 5 and `true` hash differently.
 *
 * Determinism: no random seed, no per-process state. Numbers are hashed by their
 * IEEE-754 bits read through a little-endian view (every platform Node 20 ships on
 * is little-endian); -0 is hashed as 0 and every NaN as the canonical NaN, so values
 * that JS considers the same (SameValueZero) hash the same.
 *
 * 53 bits and not 64: the result is one JS number (no allocation, no BigInt), and
 * the sketches take their bits from it with `hashLo`/`hashHi`. Collisions among
 * N distinct values happen with probability about N^2 / 2^54 (1.5e-11 for 512
 * values, 5.5e-5 for a million).
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const C3 = 0x85ebca6b;
const C4 = 0xc2b2ae35;

const TAG_STRING = 1;
const TAG_NUMBER = 2;
const TAG_BOOLEAN = 3;

/** 2^32 as a float: splits a 53-bit hash into its two words. */
const TWO_POW_32 = 4294967296;
/** Low 21 bits: the part of lane 2 that fits a safe integer beside 32 bits of lane 1. */
const HI_MASK = 0x1fffff;

// One shared scratch view to read a double's bits without allocating.
const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** The murmur3 finaliser: full avalanche of a 32-bit word. Returns an unsigned int. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, C3);
  h ^= h >>> 13;
  h = Math.imul(h, C4);
  h ^= h >>> 16;
  return h >>> 0;
}

/** MurmurHash3 x86_32 over the UTF-16LE encoding of `s`. Unsigned 32-bit result. */
export function hashString32(s: string, seed = 0): number {
  let h = seed | 0;
  const len = s.length;
  const end = len & ~1;
  for (let i = 0; i < end; i += 2) {
    let k = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    k = Math.imul(k, C1);
    k = rotl32(k, 15);
    k = Math.imul(k, C2);
    h ^= k;
    h = rotl32(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (end !== len) {
    // Tail of two bytes: the last code unit, little-endian.
    let k = s.charCodeAt(end);
    k = Math.imul(k, C1);
    k = rotl32(k, 15);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len * 2;
  return fmix32(h);
}

/**
 * MurmurHash3 x86_32 over `len` bytes of `b` from `from` (4 bytes per block,
 * little-endian). Unsigned 32-bit result; `hashString32(s, seed)` equals it over
 * `Buffer.from(s, 'utf16le')`. The entity index hashes keys with it straight from
 * the WAL record's bytes (shard/state/entity_index.ts), keeping the low 30 bits (`mask`):
 * a result below 2^30 is a small integer, never a heap number per call.
 */
export function hashBytes32(b: Uint8Array, from: number, len: number, seed: number, mask = 0xffffffff): number {
  let h = seed | 0;
  const end = from + (len & ~3);
  let i = from;
  for (; i < end; i += 4) h = step1(h, b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24));
  const rest = len & 3;
  if (rest !== 0) {
    let k = b[i];
    if (rest > 1) k |= b[i + 1] << 8;
    if (rest > 2) k |= b[i + 2] << 16;
    k = Math.imul(k, C1);
    k = rotl32(k, 15);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len;
  return (fmix32(h) & mask) >>> 0;
}

/*
 * The 53-bit hash keeps its two lanes in locals (module-level state measured about
 * 2x slower in V8), so each entry point repeats the small block step inline:
 *   lane 1: k1 = rotl(k * C1, 15) * C2; h1 = rotl(h1 ^ k1, 13) * 5 + 0xe6546b64
 *   lane 2: k2 = rotl(k * C3, 17) * C4; h2 = rotl(h2 ^ k2, 19) * 5 + 0x561ccd1b
 * `finish53` then cross-adds, applies fmix32 to both and keeps 32 + 21 bits.
 */

function seed1(tag: number): number {
  return 0x2f6b1d35 ^ Math.imul(tag, 0x9e3779b1);
}

function seed2(tag: number): number {
  return 0x7a3c95e1 ^ Math.imul(tag, 0x85ebca77);
}

function step1(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, C2);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function step2(h: number, k: number): number {
  k = Math.imul(k, C3);
  k = (k << 17) | (k >>> 15);
  h ^= Math.imul(k, C4);
  h = (h << 19) | (h >>> 13);
  return (Math.imul(h, 5) + 0x561ccd1b) | 0;
}

/** Finalises both lanes into a 53-bit safe integer. `len` separates inputs of different length. */
function finish53(h1: number, h2: number, len: number): number {
  h1 ^= len;
  h2 ^= len;
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  h1 = fmix32(h1);
  h2 = fmix32(h2);
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  return (h2 & HI_MASK) * TWO_POW_32 + (h1 >>> 0);
}

const STRING_SEED_1 = seed1(TAG_STRING);
const STRING_SEED_2 = seed2(TAG_STRING);
const NUMBER_SEED_1 = seed1(TAG_NUMBER);
const NUMBER_SEED_2 = seed2(TAG_NUMBER);
const BOOLEAN_SEED_1 = seed1(TAG_BOOLEAN);
const BOOLEAN_SEED_2 = seed2(TAG_BOOLEAN);

/** 53-bit hash of a string (over its UTF-16 code units), tagged as a string. */
export function hashString53(s: string): number {
  let h1 = STRING_SEED_1;
  let h2 = STRING_SEED_2;
  const len = s.length;
  const end = len & ~1;
  for (let i = 0; i < end; i += 2) {
    const k = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    h1 = step1(h1, k);
    h2 = step2(h2, k);
  }
  // An odd tail is one block of its own; the length in finish53 tells it from "x\0".
  if (end !== len) {
    const k = s.charCodeAt(end);
    h1 = step1(h1, k);
    h2 = step2(h2, k);
  }
  return finish53(h1, h2, len);
}

/**
 * hashString53 of the string whose code units are the bytes [from, to) of `b`
 * (ASCII), written to out[at]: a hash returned would be a heap number per call
 * (53 bits are no small integer); stored from here it is none (push_apply.ts).
 */
export function hashAscii53Into(b: Uint8Array, from: number, to: number, out: Float64Array, at: number): void {
  let h1 = STRING_SEED_1;
  let h2 = STRING_SEED_2;
  const len = to - from;
  const end = from + (len & ~1);
  for (let i = from; i < end; i += 2) {
    const k = b[i] | (b[i + 1] << 16);
    h1 = step1(h1, k);
    h2 = step2(h2, k);
  }
  // An odd tail is one block of its own, as in hashString53.
  if (end !== to) {
    const k = b[end];
    h1 = step1(h1, k);
    h2 = step2(h2, k);
  }
  // finish53 inlines here (a small leaf): the double goes to `out` unboxed.
  out[at] = finish53(h1, h2, len);
}

/** 53-bit hash of a number's IEEE-754 bits (-0 as 0, NaN canonical), tagged as a number. */
export function hashNumber53(x: number): number {
  let lo = 0;
  let hi = 0;
  if (x !== x) {
    hi = 0x7ff80000;
  } else if (x !== 0) {
    F64[0] = x;
    lo = U32[0];
    hi = U32[1];
  }
  const h1 = step1(step1(NUMBER_SEED_1, lo), hi);
  const h2 = step2(step2(NUMBER_SEED_2, lo), hi);
  return finish53(h1, h2, 8);
}

/** 53-bit hash of a boolean, tagged as a boolean. */
export function hashBoolean53(b: boolean): number {
  const k = b ? 1 : 0;
  return finish53(step1(BOOLEAN_SEED_1, k), step2(BOOLEAN_SEED_2, k), 1);
}

/** 53-bit hash of any sketchable value; different JS types never share an input. */
export function hashValue(v: string | number | boolean): number {
  if (typeof v === 'string') return hashString53(v);
  if (typeof v === 'number') return hashNumber53(v);
  return hashBoolean53(v);
}

/** Low 32 bits of a 53-bit hash (unsigned). */
export function hashLo(h: number): number {
  return h >>> 0;
}

/** High 21 bits of a 53-bit hash. */
export function hashHi(h: number): number {
  return Math.floor(h / TWO_POW_32);
}
