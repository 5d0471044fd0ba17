/**
 * Strings against the bytes they came from, without decoding: the shard's intern
 * tables (shard/state/intern.ts) and the front's push reader (front/push_text.ts) match
 * and make strings straight from record or request bytes they have checked to be
 * ASCII (one byte per UTF-16 code unit).
 */

/** Whether string `s` has exactly the code units of bytes [from, from + n) of `b`, given its first `k` already match. */
export function sameAscii(s: string, b: Uint8Array, from: number, n: number, k = 0): boolean {
  if (s.length !== n) return false;
  while (k < n && s.charCodeAt(k) === b[from + k]) k++;
  return k === n;
}

/** The latin1 decoder of Buffer (a string of one byte per character), called on any Uint8Array. */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(this: Uint8Array, from: number, to: number): string }).latin1Slice;

/** The string of the bytes [from, to) of `b`, one character per byte (ASCII bytes: their text). */
export function asciiString(b: Uint8Array, from: number, to: number): string {
  return latin1Slice.call(b, from, to);
}
