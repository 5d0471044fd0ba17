/**
 * Helpers called by compiled expressions (and by the type checker for literal
 * conversion). Each takes a value that is already null or of its declared
 * type and never throws. They are handed to the generated code once per
 * compiled expression (see compile.ts), not looked up per row.
 */

import { stringBytesMax } from '../string_cap';

/** i64 values are JS numbers, so the i64 range is the safe-integer range. */
export const I64_MAX = Number.MAX_SAFE_INTEGER;
export const I64_MIN = -Number.MAX_SAFE_INTEGER;

/** Largest |epoch ms| a JS Date can hold; beyond it there is no calendar form. */
const DATE_MS_ABS_MAX = 8.64e15;

const INT_TEXT = /^[+-]?[0-9]+$/;
const FLOAT_TEXT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** cast(str, int): optional sign and decimal digits, nothing else (no spaces); out of the i64 range -> null. */
export function castStrToInt(s: string | null): number | null {
  if (s === null || !INT_TEXT.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n + 0 : null;
}

/** cast(str, float): a decimal number with optional fraction and exponent (no spaces, no inf/nan words). */
export function castStrToFloat(s: string | null): number | null {
  if (s === null || !FLOAT_TEXT.test(s)) return null;
  return Number(s);
}

/** cast(f64, int): truncates toward zero, saturates to the i64 range; NaN and infinities -> null. */
export function castFloatToInt(x: number | null): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  const t = Math.trunc(x) + 0;
  return t > I64_MAX ? I64_MAX : t < I64_MIN ? I64_MIN : t;
}

/** cast(datetime, str): RFC 3339 UTC with milliseconds, e.g. 2024-05-01T12:00:00.000Z. */
export function castDatetimeToStr(ms: number | null): string | null {
  if (ms === null || !(Math.abs(ms) <= DATE_MS_ABS_MAX)) return null;
  return new Date(ms).toISOString();
}

/** length(str): Unicode code points (a surrogate pair counts once; a lone surrogate counts once). */
export function strLength(s: string | null): number | null {
  if (s === null) return null;
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** length(bytes): decoded byte count of a base64 text (padded or not). */
export function bytesLength(b64: string | null): number | null {
  if (b64 === null) return null;
  let m = b64.length;
  if (m > 0 && b64.charCodeAt(m - 1) === 61 /* = */) m--;
  if (m > 0 && b64.charCodeAt(m - 1) === 61) m--;
  return Math.floor((m * 3) / 4);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2})))?$/;

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/**
 * An RFC 3339 timestamp (or a bare date, taken as midnight UTC) -> epoch ms
 * (fractions below a millisecond are truncated), or null when the text is not
 * one or names an impossible date such as Feb 30. Used at register time for
 * comparisons such as `ts >= '2024-01-01T00:00:00Z'`.
 */
export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const y = +m[1];
  const mo = +m[2];
  const d = +m[3];
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return null;
  const h = m[4] === undefined ? 0 : +m[4];
  const mi = m[5] === undefined ? 0 : +m[5];
  const s = m[6] === undefined ? 0 : +m[6];
  if (h > 23 || mi > 59 || s > 59) return null;
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = +m[10];
    const om = +m[11];
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const frac = m[7] === undefined ? 0 : +(m[7].slice(1) + '00').slice(0, 3);
  // setUTCFullYear, unlike Date.UTC, does not map years 0..99 to 1900..1999.
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, s, frac);
  return t.getTime() - offsetMin * 60_000;
}

/**
 * str + str. A result over the string cap (--max-string-bytes, string_cap.ts) is
 * null, like any other value with no representation: pushed strings are capped at
 * that size, and without this a derivation chain that doubles a column per step
 * would grow a stored string exponentially.
 */
export function concatStr(a: string | null, b: string | null): string | null {
  if (a === null || b === null) return null;
  const max = stringBytesMax();
  const units = a.length + b.length;
  if (units * 3 <= max) return a + b;
  if (units > max) return null;
  const s = a + b;
  return Buffer.byteLength(s) > max ? null : s;
}

/** Everything compiled code may call, by the name it uses. */
export const HELPERS = {
  concatStr,
  castStrToInt,
  castStrToFloat,
  castFloatToInt,
  castDatetimeToStr,
  strLength,
  bytesLength,
} as const;

export type HelperName = keyof typeof HELPERS;
