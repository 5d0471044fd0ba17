/**
 * One value of a row in one double of a typed array (a "cell"), exactly as
 * pushed: a number holds itself; anything else is NaN-boxed, the high word a tag
 * and the low word, for a string or boolean, its id in the column's intern table
 * (intern.ts, one reference per cell). Used by the shared rings (ring_group.ts)
 * and the kept-value columns (kept_column.ts).
 *
 *   high word   0x7ff80000 NaN   0x7ff90000 null   0x7ffa0000 absent   0x7ffb0000 id
 *
 * The tags are written through a Uint32Array view of the same bytes: writing a NaN
 * through a Float64Array may canonicalize its payload, writing the two words
 * cannot. Little-endian: cell i is words 2i (low) and 2i + 1 (high).
 */
import { strict as assert } from 'node:assert';
import type { Value } from '../../types';
import type { Interned, InternTable } from '../state/intern';

export const HI_NAN = 0x7ff80000;
export const HI_NULL = 0x7ff90000;
export const HI_UNDEF = 0x7ffa0000;
export const HI_ID = 0x7ffb0000;
assert(new Uint8Array(new Uint32Array([1]).buffer)[0] === 1, 'cells assume a little-endian host');

/** Writes `v` into cell `i` (taking an intern reference for a string or boolean). */
export function encodeCell(f64: Float64Array, u32: Uint32Array, i: number, intern: InternTable, v: Value | undefined): void {
  if (typeof v === 'number' && v === v) {
    f64[i] = v;
    return;
  }
  if (typeof v === 'string' || typeof v === 'boolean') {
    u32[2 * i] = intern.ref(v);
    u32[2 * i + 1] = HI_ID;
    return;
  }
  u32[2 * i] = 0;
  u32[2 * i + 1] = v === null ? HI_NULL : v === undefined ? HI_UNDEF : HI_NAN;
}

/** The value of cell `i`. */
export function decodeCell(f64: Float64Array, u32: Uint32Array, i: number, intern: InternTable): Value | undefined {
  const d = f64[i];
  if (d === d) return d;
  const hi = u32[2 * i + 1];
  if (hi === HI_ID) return intern.value(u32[2 * i]);
  return hi === HI_NULL ? null : hi === HI_UNDEF ? undefined : NaN;
}

/** The value of a cell whose id (if any) is looked up in `ids` (exported cells, slab_chunk.ts). */
export function decodeExported(f64: Float64Array, u32: Uint32Array, i: number, ids: Map<number, Interned>): Value | undefined {
  const d = f64[i];
  if (d === d) return d;
  const hi = u32[2 * i + 1];
  if (hi === HI_ID) return ids.get(u32[2 * i]) as Interned;
  return hi === HI_NULL ? null : hi === HI_UNDEF ? undefined : NaN;
}

/** Drops the intern reference cell `i` holds, if any (the cell is being overwritten or freed). */
export function releaseCell(u32: Uint32Array, i: number, intern: InternTable): void {
  // No finite double has this high word (exponent all ones): the cell is an id.
  if (u32[2 * i + 1] === HI_ID) intern.unref(u32[2 * i]);
}

/** Whether cell `i` holds null or an absent value (what decodeCell returns as null / undefined). */
export function isNullCell(f64: Float64Array, u32: Uint32Array, i: number): boolean {
  if (f64[i] === f64[i]) return false;
  const hi = u32[2 * i + 1];
  return hi === HI_NULL || hi === HI_UNDEF;
}

