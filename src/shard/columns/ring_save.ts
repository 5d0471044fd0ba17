/**
 * A ring group's save of one slot (RingGroup.save, load, and the slab copies of
 * its cells: exportSlot, importSlot) as plain data, and what reads or reshapes
 * one: a cold entity or a snapshot of another layout (table_columns.ts addMapped,
 * detachMember), a snapshot chunk's cells (../persist/slab_chunk.ts slabSaves).
 */
import type { Value } from '../../types';
import { decodeExported } from './cells';
import type { Interned } from '../state/intern';
import { hashOrNull } from './ring_member';

/**
 * A group's save (RingGroup.save): entries oldest first (t, then a value per
 * field), per member its buckets or null, and for a group of several windows the
 * skip count of each window but the longest (absent in a group of one window).
 */
export type GroupSave = [Array<Value | undefined>, unknown[]] | [Array<Value | undefined>, unknown[], number[]];

/** A group save's skip counts, undefined when it has none (all 0). */
export function skipsOf(saved: GroupSave): number[] | undefined {
  return saved.length > 2 ? (saved as [unknown, unknown, number[]])[2] : undefined;
}

/** Decodes exported cells (RingGroup.exportSlot) back into a GroupSave's ring part: values as pushed. */
export function decodeCells(src: Uint32Array, at: number, len: number, stride: number, ids: Array<Map<number, Interned>>): GroupSave[0] {
  const f64 = new Float64Array(src.buffer, src.byteOffset, src.length >> 1);
  const out: GroupSave[0] = [];
  for (let k = 0; k < len; k++) {
    const e = at + k * stride;
    out.push(f64[e]);
    for (let c = 0; c < stride - 1; c++) out.push(decodeExported(f64, src, e + 1 + c, ids[c]));
  }
  return out;
}

/** The smallest block class (2^cls entries, cls >= 1) that holds a ring of `len` entries: a load or import takes no more. */
export function classFor(len: number): number {
  let cls = 1;
  while (1 << cls < len) cls++;
  return cls;
}

/**
 * Member `memberAt`'s part of a group save, as the save of a ring of that member
 * alone (detachMember): the entries from window `win`'s skip count on (-1: the
 * longest window, all of them) with the member's field only (`col`, -1: none),
 * hashed when `toHash`, and its buckets.
 */
export function memberPart(saved: GroupSave, stride: number, col: number, memberAt: number, win: number, toHash: boolean): GroupSave {
  const [ring, buckets] = saved;
  const skips = skipsOf(saved);
  const ringOut: GroupSave[0] = [];
  for (let at = stride * (win < 0 || skips === undefined ? 0 : skips[win]); at < ring.length; at += stride) {
    ringOut.push(ring[at]);
    if (col >= 0) ringOut.push(toHash ? hashOrNull(ring[at + 1 + col]) : ring[at + 1 + col]);
  }
  return [ringOut, [buckets[memberAt]]];
}
