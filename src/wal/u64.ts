/**
 * Little-endian u64 fields (WAL records, PUSH records, snapshot headers) as JS
 * numbers: written from safe integers, read back by byte arithmetic
 * (Buffer#readUInt32LE's argument checks cost 5-10% of replay CPU). Bytes that come
 * from disk are checked with u64Safe first, so every value read is a safe integer.
 */

export const TWO_POW_32 = 2 ** 32;
/** Largest high word of a u64 that is still a JS safe integer. */
export const SAFE_HIGH_WORD_MAX = 0x1fffff;

export function writeU64(buf: Buffer, value: number, at: number): void {
  buf.writeUInt32LE(value >>> 0, at);
  buf.writeUInt32LE(Math.floor(value / TWO_POW_32), at + 4);
}

/** u32 LE at `at`; the caller stays inside checked bytes. */
export function readU32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16)) + b[at + 3] * 0x1000000;
}

/** A u64 written by writeU64; the caller has checked the high word where the bytes came from disk (u64Safe). */
export function readU64(b: Uint8Array, at: number): number {
  return readU32(b, at + 4) * TWO_POW_32 + readU32(b, at);
}

/** Whether the u64 at `at` is a safe integer (its high word at most SAFE_HIGH_WORD_MAX). */
export function u64Safe(b: Uint8Array, at: number): boolean {
  return readU32(b, at + 4) <= SAFE_HIGH_WORD_MAX;
}
