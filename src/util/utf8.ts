/**
 * UTF-8 validity of request bodies (RFC 8259 section 8.1: JSON text is UTF-8).
 * Decoding a body that is not UTF-8 replaces each bad sequence with U+FFFD, so raw
 * 0xff and 0xfe in a key would both become "\ufffd" and count on one entity; a body
 * must be valid before it is decoded. The check is node's isUtf8 (simdutf, several
 * GB/s); the byte-by-byte scan below runs only to say where an invalid body goes wrong.
 */
import { isUtf8 } from 'node:buffer';
import { UTF8_INLINE_SCAN_BYTES_MAX } from '../limits';

/** b[start, end) is well-formed UTF-8 (no overlong forms, no encoded surrogates, nothing above U+10FFFF). */
export function isUtf8Range(b: Uint8Array, start: number, end: number): boolean {
  if (start === 0 && end === b.length) return isUtf8(b);
  // isUtf8 takes no range, and a view per TCP frame costs more than the check: a short
  // ASCII range (a get, most frames) is scanned in place instead.
  if (end - start <= UTF8_INLINE_SCAN_BYTES_MAX) {
    let i = start;
    while (i < end && b[i] < 0x80) i++;
    if (i === end) return true;
  }
  return isUtf8(b.subarray(start, end));
}

/** Offset (from `start`) of the first byte of b[start, end) that is not part of a well-formed UTF-8 sequence; -1 if none. */
export function firstInvalidUtf8(b: Uint8Array, start: number, end: number): number {
  let i = start;
  while (i < end) {
    const c = b[i];
    if (c < 0x80) { i++; continue; }
    let n: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c >= 0xe0 && c <= 0xef) { n = 2; if (c === 0xe0) lo = 0xa0; else if (c === 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; if (c === 0xf0) lo = 0x90; else if (c === 0xf4) hi = 0x8f; }
    else return i - start;
    if (i + n >= end) return i - start; // truncated at the end
    // The second byte has the tight range (overlongs, surrogates, > U+10FFFF); the rest are any continuation byte.
    if (b[i + 1] < lo || b[i + 1] > hi) return i - start;
    for (let k = 2; k <= n; k++) if ((b[i + k] & 0xc0) !== 0x80) return i - start;
    i += n + 1;
  }
  return -1;
}
