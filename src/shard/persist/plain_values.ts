/**
 * The plain encoding of JSON-like values, exact, written into the encoders'
 * scratch (scratch.ts): what a frozen entity's rest is encoded as when it holds no
 * buckets (../cold/frozen_entity.ts), since v8.serialize costs a serializer object
 * and a few µs per call whatever the size: most of a small entity's freeze.
 *
 * A value is a tag byte, then
 *   P_NULL, P_UNDEFINED, P_FALSE, P_TRUE   nothing
 *   P_INT     varint of the zigzagged int32 (-0 is not an int: it goes as f64)
 *   P_F64     8 bytes LE
 *   P_STR1    varint length, then one byte per char (every char code < 256)
 *   P_STR2    varint length in UTF-16 code units, then two bytes LE per unit (lone surrogates kept)
 *   P_ARR     varint length, then the elements
 *   P_EXACT   a lifetime sketch's values (ExactSave, ../columns/exact_column.ts): its array, as P_ARR
 * Anything else (objects, sparse arrays, typed arrays, deeper than
 * PLAIN_DEPTH_MAX) is not plain: putPlain answers -1 and the caller uses v8.
 */
import { isExactSave } from '../../ops/val_window';
import { reserve, scratch } from './scratch';

const P_NULL = 0;
const P_UNDEFINED = 1;
const P_FALSE = 2;
const P_TRUE = 3;
const P_INT = 4;
const P_F64 = 5;
const P_STR1 = 6;
const P_STR2 = 7;
const P_ARR = 8;
const P_EXACT = 9;
/** Deeper arrays go through v8 (no rest of ours nests that deep). */
const PLAIN_DEPTH_MAX = 32;

function putVarint(x: number, p: number): number {
  const u8 = scratch.u8;
  while (x >= 0x80) {
    u8[p++] = (x & 0x7f) | 0x80;
    x >>>= 7;
  }
  u8[p++] = x;
  return p;
}

/** Writes `v` plain-encoded at byte `p` of the scratch (growing it); the end, or -1 when `v` is not plain. */
export function putPlain(v: unknown, p: number, depth = 0): number {
  reserve(p + 16);
  const u8 = scratch.u8;
  if (v === null) { u8[p] = P_NULL; return p + 1; }
  switch (typeof v) {
    case 'undefined': u8[p] = P_UNDEFINED; return p + 1;
    case 'boolean': u8[p] = v ? P_TRUE : P_FALSE; return p + 1;
    case 'number':
      if ((v | 0) === v && !(v === 0 && 1 / v < 0)) {
        u8[p] = P_INT;
        return putVarint(((v << 1) ^ (v >> 31)) >>> 0, p + 1);
      }
      u8[p] = P_F64;
      scratch.view.setFloat64(p + 1, v, true);
      return p + 9;
    case 'string': {
      const n = v.length;
      let one = true;
      for (let i = 0; i < n; i++) if (v.charCodeAt(i) > 0xff) { one = false; break; }
      reserve(p + 6 + 2 * n);
      const b = scratch.u8;
      b[p] = one ? P_STR1 : P_STR2;
      p = putVarint(n, p + 1);
      if (one) for (let i = 0; i < n; i++) b[p++] = v.charCodeAt(i);
      else {
        for (let i = 0; i < n; i++) {
          const c = v.charCodeAt(i);
          b[p++] = c & 0xff;
          b[p++] = c >>> 8;
        }
      }
      return p;
    }
    case 'object': {
      if (isExactSave(v) && Object.keys(v).length === 1) {
        u8[p] = P_EXACT;
        return putPlain(v.exactValues, p + 1, depth + 1);
      }
      if (!Array.isArray(v) || Object.getPrototypeOf(v) !== Array.prototype || depth >= PLAIN_DEPTH_MAX) return -1;
      const n = v.length;
      u8[p] = P_ARR;
      p = putVarint(n, p + 1);
      for (let i = 0; i < n; i++) {
        if (!(i in v)) return -1;
        p = putPlain(v[i], p, depth + 1);
        if (p < 0) return -1;
      }
      return p;
    }
    default:
      return -1;
  }
}

/** Reading position of getPlain in its buffer. */
let plainAt = 0;
const plainF64 = new Float64Array(1);
const plainF64U8 = new Uint8Array(plainF64.buffer);

function getVarint(b: Uint8Array): number {
  let x = 0;
  let mul = 1;
  for (;;) {
    const c = b[plainAt++];
    x += (c & 0x7f) * mul;
    if (c < 0x80) return x;
    mul *= 128;
  }
}

/** The plain-encoded value at plainAt of `b` (`buf`: the same bytes as a Buffer, for strings). */
function getPlain(b: Uint8Array, buf: Buffer): unknown {
  const tag = b[plainAt++];
  switch (tag) {
    case P_NULL: return null;
    case P_UNDEFINED: return undefined;
    case P_FALSE: return false;
    case P_TRUE: return true;
    case P_INT: {
      const z = getVarint(b);
      return (z >>> 1) ^ -(z & 1);
    }
    case P_F64:
      for (let i = 0; i < 8; i++) plainF64U8[i] = b[plainAt + i];
      plainAt += 8;
      return plainF64[0];
    case P_STR1: case P_STR2: {
      const n = getVarint(b);
      const bytes = tag === P_STR1 ? n : 2 * n;
      const str = buf.toString(tag === P_STR1 ? 'latin1' : 'utf16le', plainAt, plainAt + bytes);
      plainAt += bytes;
      return str;
    }
    case P_ARR: {
      const n = getVarint(b);
      const out: unknown[] = new Array(n);
      for (let i = 0; i < n; i++) out[i] = getPlain(b, buf);
      return out;
    }
    case P_EXACT:
      return { exactValues: getPlain(b, buf) };
    default:
      throw new Error(`plain values: bad tag ${tag}`);
  }
}

/** The plain-encoded value from byte `at` of `b` to its end (asserting it ends there). */
export function readPlain(b: Uint8Array, at: number): unknown {
  plainAt = at;
  const v = getPlain(b, Buffer.from(b.buffer, b.byteOffset, b.length));
  if (plainAt !== b.length) throw new Error('plain values: length mismatch');
  return v;
}
