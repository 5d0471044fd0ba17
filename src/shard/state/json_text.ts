/**
 * JSON text of feature values, byte-identical to JSON.stringify, written for the
 * read path: a /get of a 30-feature row spent about a quarter of its shard time in
 * JSON.stringify and number-to-text conversion (bench/DECISIONS.md). Two fast paths:
 *
 * - Numbers with at most two decimals (money: sums, maxima, last amounts) are
 *   printed from their integer cents, ~3x faster than V8's shortest-round-trip
 *   conversion. `cents / 100 === x` (an exactly rounded division) proves that the
 *   decimal string reads back as x, and below CENTS_MAX two such decimals are
 *   further apart than half an ulp, so no shorter string reads back as x either:
 *   it is the string String(x) prints. Everything else falls back to String(x).
 * - Strings without quotes, backslashes, control characters or surrogates need no
 *   escaping: they are quoted by concatenation instead of JSON.stringify.
 */
import type { JsonValue } from '../../types';

/** |cents| below this: x < 1e13, where an ulp (< 0.002) is far below a cent. */
const CENTS_MAX = 1e15;
/** Characters JSON.stringify would escape (lone surrogates included, ES2019). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
/** Digit groups of four, for printing integer parts without String(). */
const DIGITS: string[] = [];
for (let i = 0; i < 10_000; i++) DIGITS.push(String(i));
const PAD = ['000', '00', '0', ''];

/** A non-negative integer below CENTS_MAX in decimal. */
function intText(n: number): string {
  if (n < 10_000) return DIGITS[n];
  let s = '';
  while (n >= 10_000) {
    const r = n % 10_000;
    n = (n - r) / 10_000;
    s = PAD[DIGITS[r].length - 1] + DIGITS[r] + s;
  }
  return DIGITS[n] + s;
}

/** JSON text of a number: String(x) for finite x, "null" otherwise (as JSON.stringify). */
export function numberText(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  const cents = Math.round(x * 100);
  if (cents / 100 !== x || cents >= CENTS_MAX || cents <= -CENTS_MAX) return String(x);
  const a = cents < 0 ? -cents : cents;
  const ip = Math.floor(a / 100);
  const fp = a - ip * 100;
  const frac = fp === 0 ? '' : fp % 10 === 0 ? `.${fp / 10}` : fp < 10 ? `.0${fp}` : `.${fp}`;
  return cents < 0 ? `-${intText(ip)}${frac}` : intText(ip) + frac;
}

export function stringText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** JSON text of a feature value, identical to JSON.stringify(v) for every JsonValue. */
export function jsonText(v: JsonValue): string {
  switch (typeof v) {
    case 'number': return numberText(v);
    case 'string': return stringText(v);
    case 'boolean': return v ? 'true' : 'false';
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) {
        let s = '[';
        for (let i = 0; i < v.length; i++) {
          if (i > 0) s += ',';
          const x = v[i];
          s += x === undefined ? 'null' : jsonText(x);
        }
        return s + ']';
      }
      let s = '{';
      let first = true;
      for (const k of Object.keys(v)) {
        const x = v[k];
        if (x === undefined) continue;
        if (!first) s += ',';
        first = false;
        s += stringText(k) + ':' + jsonText(x);
      }
      return s + '}';
    }
    default:
      return 'null';
  }
}
