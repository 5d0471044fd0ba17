/**
 * A frozen cold entity (cold.ts) as slab bytes: one entity's slab range, the
 * lean variant of a snapshot's raw chunk (../persist/slab_chunk.ts; no key: the
 * cold store keys it; no table index, entity count or body alignment). freeze
 * copies the slot's bytes out of the columns, thaw copies them back into the
 * layout it was frozen under. Self-describing (per group its ring length, stride
 * and skip width, per column its slab width), so a layout change can read it as
 * an EntitySave (frozenParts). The doubles are 8-aligned from the buffer's start.
 *
 *   0   u8      FROZEN_FORMAT (1; data format 1, docs/durability.md "Formats")
 *   1   u8      how the rest is encoded: REST_PLAIN (1) or REST_V8 (0)
 *   2   u16     G   ring groups
 *   4   u16     C   solo columns (cols.objs)
 *   6   u16     0
 *   8   f64     lastT
 *   16  f64     lastLsn
 *   24  per group  u8 ring length, u8 skip width, u16 stride (doubles per entry)
 *       per column u8 slab width in doubles (0: not a fixed column)
 *       per group its skip counts (skip width bytes)
 *       pad to 8
 *       f64 per group its cells (length * stride), per fixed column its row (width)
 *       the rest, to the end (none when it would be empty): one flat array (FrozenRest)
 *       of what is genuinely objects, plain-encoded (putPlain) when it holds no
 *       buckets and only null, undefined, booleans, numbers, strings and dense
 *       arrays of them (and lifetime sketches' { exactValues }), else v8-serialized:
 *         I, then I times (group, field, id, value): the interned ids in the cells
 *         B, then B times (group, saved buckets): groups with buckets
 *         then (column, OpState save) for each object or kept column
 */
import { strict as assert } from 'node:assert';
import { deserialize, serialize } from 'node:v8';
import type { Interned } from '../state/intern';
import { decodeCells, type GroupSave } from '../columns/ring_save';
import type { FixedOp } from '../../ops/fixed';
import { FixedColumn } from '../columns/solo_column';
import type { EntitySave, TableColumns } from '../columns/table_columns';
import { putPlain, readPlain } from '../persist/plain_values';
import { reserve, scratch } from '../persist/scratch';

export const FROZEN_FORMAT = 1;
const FROZEN_HEAD_BYTES = 24;
const REST_V8 = 0;
const REST_PLAIN = 1;

/** The rest of a frozen slab `b` from byte `at` to its end. */
function readRest(b: Uint8Array, at: number): FrozenRest {
  if (b[1] !== REST_PLAIN) return deserialize(b.subarray(at)) as FrozenRest;
  const rest = readPlain(b, at) as FrozenRest;
  assert(Array.isArray(rest), 'frozen entity: rest is not a list');
  return rest;
}

type FrozenRest = unknown[];

/** Per field, the ids exportSlot found (one set per thread, emptied after each freeze). */
const found: Array<Map<number, Interned>> = [];

/** The entity at `slot` as a frozen slab (a new Buffer). */
export function freeze(cols: TableColumns, slot: number): Buffer {
  const index = cols.index;
  const groups = cols.groups;
  const objs = cols.objs;
  const G = groups.length;
  const C = objs.length;
  assert(G <= 0xffff && C <= 0xffff, 'frozen slab: too many groups or columns');
  let skipBytes = 0;
  let doubles = 0;
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    skipBytes += g.sw;
    doubles += g.len[slot] * g.stride;
    while (found.length < g.fields.length) found.push(new Map());
  }
  for (let i = 0; i < C; i++) {
    const col = objs[i];
    if (col instanceof FixedColumn) doubles += col.width;
  }
  const pre = FROZEN_HEAD_BYTES + 4 * G + C + skipBytes;
  const cellsAt = (pre + 7) & ~7;
  const arraysEnd = cellsAt + 8 * doubles;
  reserve(arraysEnd);
  const u8 = scratch.u8;
  const f64 = scratch.f64;
  const dv = scratch.view;
  u8.fill(0, 0, cellsAt);
  u8[0] = FROZEN_FORMAT;
  dv.setUint16(2, G, true);
  dv.setUint16(4, C, true);
  f64[1] = index.lastT[slot];
  f64[2] = index.lastLsn[slot];
  let h = FROZEN_HEAD_BYTES;
  let sk = FROZEN_HEAD_BYTES + 4 * G + C;
  let d = cellsAt / 8;
  // The rest: ids first (their count at 0), then buckets (their count at `bkAt`), then object saves.
  const rest: FrozenRest = [0];
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    const len = g.exportSlot(slot, scratch.u32, d, found);
    assert(len === g.len[slot] && len <= 0xff && g.sw <= 0xff);
    u8[h] = len;
    u8[h + 1] = g.sw;
    dv.setUint16(h + 2, g.stride, true);
    h += 4;
    if (g.sw > 0) g.exportSkips(slot, u8, sk);
    sk += g.sw;
    d += len * g.stride;
    for (let c = 0; c < g.fields.length; c++) {
      const m = found[c];
      if (m.size === 0) continue;
      for (const [id, v] of m) rest.push(gi, c, id, v);
      rest[0] = (rest[0] as number) + m.size;
      m.clear();
    }
  }
  const bkAt = rest.length;
  rest.push(0);
  for (let gi = 0; gi < G; gi++) {
    const b = groups[gi].saveBuckets(slot);
    if (b === null) continue;
    rest.push(gi, b);
    rest[bkAt] = (rest[bkAt] as number) + 1;
  }
  for (let i = 0; i < C; i++) {
    const col = objs[i];
    if (col === null) { h++; continue; }
    if (col instanceof FixedColumn) {
      const w = col.width;
      assert(w <= 0xff, 'frozen slab: fixed row too wide');
      u8[h++] = w;
      const data = col.data;
      for (let j = 0, from = slot * w; j < w; j++) f64[d + j] = data[from + j];
      d += w;
      continue;
    }
    h++;
    rest.push(i, col.save(slot));
  }
  assert(d * 8 === arraysEnd);
  if (rest.length === 2) return Buffer.from(u8.subarray(0, arraysEnd));
  // Saved buckets are large and mostly not plain (sketches): straight to v8, not walked twice.
  const end = rest[bkAt] === 0 ? putPlain(rest, arraysEnd) : -1;
  if (end >= 0) {
    scratch.u8[1] = REST_PLAIN;
    return Buffer.from(scratch.u8.subarray(0, end));
  }
  const restBytes = serialize(rest);
  const out = Buffer.allocUnsafe(arraysEnd + restBytes.length);
  out.set(scratch.u8.subarray(0, arraysEnd), 0);
  out[1] = REST_V8;
  out.set(restBytes, arraysEnd);
  return out;
}

/** A frozen slab's fields, read from an 8-aligned copy when `buf` is not aligned. */
interface FrozenView {
  b: Uint8Array;
  G: number;
  C: number;
  lastT: number;
  lastLsn: number;
  /** Byte offset of the skip counts, and of the doubles. */
  skipsAt: number;
  cellsAt: number;
  /** Per group its interned ids per field (null: none), per group its buckets (null: none), per column its save (NO_SAVE: none). */
  ids: Array<Array<Map<number, Interned>> | null>;
  buckets: Array<unknown[] | null>;
  saves: unknown[];
}

function viewFrozen(buf: Uint8Array): FrozenView {
  let b = buf;
  if ((b.byteOffset & 7) !== 0) {
    b = new Uint8Array(buf.length);
    b.set(buf);
  }
  assert(b[0] === FROZEN_FORMAT, 'not a frozen entity of this format');
  const dv = new DataView(b.buffer, b.byteOffset, b.length);
  const G = dv.getUint16(2, true);
  const C = dv.getUint16(4, true);
  let skipBytes = 0;
  let doubles = 0;
  for (let gi = 0; gi < G; gi++) {
    const h = FROZEN_HEAD_BYTES + 4 * gi;
    skipBytes += b[h + 1];
    doubles += b[h] * dv.getUint16(h + 2, true);
  }
  for (let i = 0; i < C; i++) doubles += b[FROZEN_HEAD_BYTES + 4 * G + i];
  const skipsAt = FROZEN_HEAD_BYTES + 4 * G + C;
  const cellsAt = (skipsAt + skipBytes + 7) & ~7;
  const arraysEnd = cellsAt + 8 * doubles;
  assert(arraysEnd <= b.length, 'frozen slab: truncated');
  const ids: FrozenView['ids'] = new Array(G).fill(null);
  const buckets: FrozenView['buckets'] = new Array(G).fill(null);
  const saves: unknown[] = new Array(C).fill(NO_SAVE);
  if (arraysEnd < b.length) {
    const rest = readRest(b, arraysEnd);
    let p = 1;
    for (let k = rest[0] as number; k > 0; k--, p += 4) {
      const gi = rest[p] as number;
      const c = rest[p + 1] as number;
      const per = (ids[gi] ??= []);
      (per[c] ??= new Map()).set(rest[p + 2] as number, rest[p + 3] as Interned);
    }
    for (let k = rest[p++] as number; k > 0; k--, p += 2) buckets[rest[p] as number] = rest[p + 1] as unknown[];
    for (; p < rest.length; p += 2) saves[rest[p] as number] = rest[p + 1];
  }
  return { b, G, C, lastT: dv.getFloat64(8, true), lastLsn: dv.getFloat64(16, true), skipsAt, cellsAt, ids, buckets, saves };
}

/** lastT and lastLsn of a frozen slab, without reading the rest. */
export function frozenClock(buf: Uint8Array): { lastT: number; lastLsn: number } {
  assert(buf[0] === FROZEN_FORMAT, 'not a frozen entity of this format');
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.length);
  return { lastT: dv.getFloat64(8, true), lastLsn: dv.getFloat64(16, true) };
}

const NO_IDS = new Map<number, Interned>();
/** A column without a save in a frozen slab (a save may be any value, undefined included). */
const NO_SAVE: unique symbol = Symbol('no save');

/** Per field of a group with `fields` fields, its ids from `per` (an empty map for a field without any). */
function idsOf(per: Array<Map<number, Interned>> | null, fields: number): Array<Map<number, Interned>> {
  const out: Array<Map<number, Interned>> = new Array(fields);
  for (let c = 0; c < fields; c++) out[c] = per?.[c] ?? NO_IDS;
  return out;
}

/** Makes a frozen slab hot again under `key` in `cols` (the layout it was frozen under): its bytes go back into the columns. Returns the slot. */
export function thaw(buf: Uint8Array, cols: TableColumns, key: string): number {
  const v = viewFrozen(buf);
  const { b, G, C } = v;
  const groups = cols.groups;
  const objs = cols.objs;
  assert(G === groups.length && C === objs.length, 'frozen slab of another layout');
  for (let gi = 0; gi < G; gi++) {
    const h = FROZEN_HEAD_BYTES + 4 * gi;
    assert(b[h + 1] === groups[gi].sw && (b[h + 2] | (b[h + 3] << 8)) === groups[gi].stride, 'frozen slab: ring group of another layout');
  }
  for (let i = 0; i < C; i++) {
    const col = objs[i];
    const w = b[FROZEN_HEAD_BYTES + 4 * G + i];
    assert(col instanceof FixedColumn ? w === col.width : w === 0, 'frozen slab: column of another kind or width');
  }
  const u32 = new Uint32Array(b.buffer, b.byteOffset, b.length >> 2);
  const f64 = new Float64Array(b.buffer, b.byteOffset, b.length >> 3);
  const slot = cols.addForLoad(key, v.lastT, v.lastLsn);
  let d = v.cellsAt / 8;
  let sk = v.skipsAt;
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    const len = b[FROZEN_HEAD_BYTES + 4 * gi];
    g.importSlot(slot, u32, d, len, idsOf(v.ids[gi], g.fields.length));
    if (g.sw > 0) g.importSkips(slot, b, sk);
    sk += g.sw;
    d += len * g.stride;
    const bk = v.buckets[gi];
    if (bk !== null) g.loadBuckets(slot, bk);
  }
  for (let i = 0; i < C; i++) {
    const col = objs[i];
    if (col === null) continue;
    if (col instanceof FixedColumn) {
      const w = col.width;
      const data = col.data;
      for (let j = 0, to = slot * w; j < w; j++) data[to + j] = f64[d + j];
      d += w;
      continue;
    }
    const saved = v.saves[i];
    if (saved !== NO_SAVE) col.load(slot, saved);
    else col.create(slot);
  }
  return slot;
}

/**
 * A frozen slab as an EntitySave of the layout it was frozen under (for a table
 * of another layout, which maps it: TableColumns.addMapped). Fixed rows become
 * their op's save through `fixedOf(i)` (as slabSaves).
 */
export function frozenParts(buf: Uint8Array, fixedOf: (i: number) => FixedOp | null): { lastT: number; lastLsn: number; saved: EntitySave } {
  const v = viewFrozen(buf);
  const { b, G, C } = v;
  const u32 = new Uint32Array(b.buffer, b.byteOffset, b.length >> 2);
  const f64 = new Float64Array(b.buffer, b.byteOffset, b.length >> 3);
  let d = v.cellsAt / 8;
  let sk = v.skipsAt;
  const groups: GroupSave[] = [];
  for (let gi = 0; gi < G; gi++) {
    const h = FROZEN_HEAD_BYTES + 4 * gi;
    const len = b[h];
    const sw = b[h + 1];
    const stride = b[h + 2] | (b[h + 3] << 8);
    const ring = decodeCells(u32, d, len, stride, idsOf(v.ids[gi], stride - 1));
    d += len * stride;
    const bk = v.buckets[gi] ?? [];
    groups.push(sw === 0 ? [ring, bk] : [ring, bk, Array.from(b.subarray(sk, sk + sw))]);
    sk += sw;
  }
  const objs: unknown[] = [];
  for (let i = 0; i < C; i++) {
    const w = b[FROZEN_HEAD_BYTES + 4 * G + i];
    if (w === 0) {
      objs.push(v.saves[i] === NO_SAVE ? null : v.saves[i]);
      continue;
    }
    const op = fixedOf(i);
    objs.push(op === null ? null : op.save(f64, d));
    d += w;
  }
  return { lastT: v.lastT, lastLsn: v.lastLsn, saved: [groups, objs] };
}
