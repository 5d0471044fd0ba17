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

// Two-lane state of the 53-bit hash. Module-level so that the block step needs no
// object or closure per call; the hash is synchronous, so no reentrancy.
let lane1 = 0;
let lane2 = 0;

function laneStart(tag: number): void {
  lane1 = 0x2f6b1d35 ^ Math.imul(tag, 0x9e3779b1);
  lane2 = 0x7a3c95e1 ^ Math.imul(tag, 0x85ebca77);
}

/** Feeds one 32-bit block to both lanes (murmur3 body, different constants per lane). */
function laneBlock(k: number): void {
  let k1 = Math.imul(k, C1);
  k1 = rotl32(k1, 15);
  k1 = Math.imul(k1, C2);
  lane1 ^= k1;
  lane1 = rotl32(lane1, 13);
  lane1 = (Math.imul(lane1, 5) + 0xe6546b64) | 0;
  let k2 = Math.imul(k, C3);
  k2 = rotl32(k2, 17);
  k2 = Math.imul(k2, C4);
  lane2 ^= k2;
  lane2 = rotl32(lane2, 19);
  lane2 = (Math.imul(lane2, 5) + 0x561ccd1b) | 0;
}

/** Finalises both lanes into a 53-bit safe integer. `len` separates inputs of different length. */
function laneFinish(len: number): number {
  let h1 = lane1 ^ len;
  let h2 = lane2 ^ len;
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  h1 = fmix32(h1);
  h2 = fmix32(h2);
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  return (h2 & HI_MASK) * TWO_POW_32 + (h1 >>> 0);
}

/** 53-bit hash of a string (over its UTF-16 code units), tagged as a string. */
export function hashString53(s: string): number {
  laneStart(TAG_STRING);
  const len = s.length;
  const end = len & ~1;
  for (let i = 0; i < end; i += 2) laneBlock(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  // An odd tail is one block of its own; the length in laneFinish tells it from "x\0".
  if (end !== len) laneBlock(s.charCodeAt(end));
  return laneFinish(len);
}

/** 53-bit hash of a number's IEEE-754 bits (-0 as 0, NaN canonical), tagged as a number. */
export function hashNumber53(x: number): number {
  laneStart(TAG_NUMBER);
  if (x === 0) {
    laneBlock(0);
    laneBlock(0);
  } else if (x !== x) {
    laneBlock(0);
    laneBlock(0x7ff80000);
  } else {
    F64[0] = x;
    laneBlock(U32[0]);
    laneBlock(U32[1]);
  }
  return laneFinish(8);
}

/** 53-bit hash of a boolean, tagged as a boolean. */
export function hashBoolean53(b: boolean): number {
  laneStart(TAG_BOOLEAN);
  laneBlock(b ? 1 : 0);
  return laneFinish(1);
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
