/**
 * Snapshot chunks of hot entities as slab bytes: a run of slots of one table
 * copied column by column into typed arrays, not entity by entity into objects.
 * A restore into the same layout copies the bytes back (a key per entity is the
 * only per-entity allocation).
 *
 *   keys      string[]            the chunk's live entities, slot order
 *   lastTs    Float64Array        } per entity
 *   lastLsns  Float64Array        }
 *   groups[g] lens   Uint8Array   ring entries per entity
 *             skips  Uint8Array   per entity, the skip count of each of the group's
 *                                 windows but the longest (null: a group of one window)
 *             cells  Float64Array the rings, oldest entry first, one after another
 *             ids    per column [id, value] of every interned id in `cells`
 *             buckets [entity, saved buckets per member] for busy entities only
 *   fixed[i]  Float64Array        slab rows of lifetime op i (null: not fixed)
 *   objs[i]   unknown[]           saves of feature i held as objects or kept values (null: neither)
 *
 * A chunk is written as raw bytes (writeSlab), laid out in a scratch buffer the
 * thread keeps and copied into the snapshot stream, so encoding allocates no typed
 * array and no serializer output for the arrays (v8-serializing the object above
 * made ~200 KB of short-lived off-heap buffers per 1,024 entities, which drove
 * major GCs into the shard's snapshot slices). Keys are copied as the entity index
 * stores them (bytes and str tag), so encoding makes no key string (~40 B of young
 * garbage per entity when it did); only the small parts that are not arrays go
 * through v8.serialize:
 *
 *   0   u8     RAW_SLAB_TAG ('W'); the body's other chunks are v8-serialized and start with 0xFF
 *   1   u8[3]  0
 *   4   u32    t            table index in the snapshot's meta
 *   8   u32    n            entities
 *   12  u32    G            ring groups
 *   16  u32    C            solo columns (cols.objs)
 *   20  u32    rest bytes   the v8-serialized rest (below)
 *   24  u32    pad          zero bytes after the tables, so the doubles that follow
 *                           are 8-aligned in the snapshot body (views on restore, no copy)
 *   28  u32[G] cell doubles of each group
 *       u32[C] width of each fixed column in doubles (0: not a fixed column)
 *       u32[G] skip counts per entity of each group (its windows but one)
 *       pad bytes
 *       f64[n] lastTs, f64[n] lastLsns, per group its cells, per fixed column f64[n * width],
 *       per group u8[n] lens, per group u8[n * skip counts],
 *       u32[n] per key its byte length | str tag << 16 (wal/push_record.ts str tags),
 *             then the keys' bytes one after another,
 *       then the rest: v8.serialize({ ids, buckets, objs })
 *
 * Each entity is captured whole at the moment its chunk is encoded (fuzzy
 * snapshots, snapshot_job.ts): ids travel with their values because an id may be
 * freed and reused by the time a later chunk is encoded.
 */
import { strict as assert } from 'node:assert';
import { deserialize, serialize } from 'node:v8';
import type { Interned } from '../state/intern';
import { decodeCells, type GroupSave, type RingGroup } from '../columns/ring_group';
import type { FixedOp } from '../../ops/fixed';
import { FixedColumn } from '../columns/solo_column';
import { strOf } from '../../wal/push_record';
import { isExactSave } from '../../ops/val_window';
import type { EntitySave, TableColumns } from '../columns/table_columns';

export interface SlabChunk {
  slab: true;
  t: number;
  keys: string[];
  lastTs: Float64Array;
  lastLsns: Float64Array;
  /** `skips`: per entity the skip counts of a group spanning several windows; null for a group of one window. */
  groups: Array<{ lens: Uint8Array; skips: Uint8Array | null; cells: Float64Array; ids: Array<Array<[number, Interned]>>; buckets: Array<[number, unknown[]]> }>;
  fixed: Array<Float64Array | null>;
  objs: Array<unknown[] | null>;
}

/** First byte of a chunk written by writeSlab. */
export const RAW_SLAB_TAG = 0x57;

/** Whether a body chunk starting with `byte` is a raw slab chunk (readSlab), not a v8-serialized one. */
export function isRawSlab(byte: number): boolean {
  return byte === RAW_SLAB_TAG;
}
const RAW_HEAD_BYTES = 28;
/** A key's byte length in its length | tag word (entity_index.ts copyKey). */
const KEY_LEN_MASK = 0xffff;
const KEY_TAG_SHIFT = 16;

/** The parts of a raw chunk that are not arrays (v8-serialized after them). */
interface SlabRest {
  ids: Array<Array<Array<[number, Interned]>>>;
  buckets: Array<Array<[number, unknown[]]>>;
  objs: Array<unknown[] | null>;
}

/**
 * writeSlab's buffer: one per thread, grown (by doubling) to the largest chunk and
 * kept, so a snapshot's chunks reuse it. Views are remade only when it grows.
 */
let scratch = new ArrayBuffer(0);
let scratchU8 = new Uint8Array(scratch);
let scratchU32 = new Uint32Array(scratch);
let scratchF64 = new Float64Array(scratch);
let scratchView = new DataView(scratch);

function reserve(bytes: number): void {
  if (bytes <= scratch.byteLength) return;
  // A multiple of 8: the Float64Array view covers it all.
  const next = new ArrayBuffer(Math.max((bytes + 7) & ~7, 2 * scratch.byteLength, 64 * 1024));
  new Uint8Array(next).set(scratchU8);
  scratch = next;
  scratchU8 = new Uint8Array(next);
  scratchU32 = new Uint32Array(next);
  scratchF64 = new Float64Array(next);
  scratchView = new DataView(next);
}

/**
 * The first `n` slots of `slots` (live ones) as a raw chunk of table `t` that
 * will sit at byte `bodyAt` of the snapshot body. The bytes are a view of the
 * thread's scratch buffer, valid until the next call: copy them out (the
 * snapshot sink does).
 */
export function writeSlab(cols: TableColumns, t: number, slots: ArrayLike<number>, n: number, bodyAt: number): Uint8Array {
  const index = cols.index;
  const groups = cols.groups;
  const G = groups.length;
  const C = cols.objs.length;
  const head = RAW_HEAD_BYTES + 4 * (2 * G + C);
  // The chunk starts at the same offset mod 8 in the scratch as in the body, so the
  // doubles are aligned in both (typed-array indexes here, views on restore).
  const s0 = bodyAt & 7;
  const pad = (8 - ((s0 + head) & 7)) & 7;
  const cellDoubles: number[] = new Array(G);
  let doubles = 2 * n;
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    let total = 0;
    for (let e = 0; e < n; e++) total += g.len[slots[e]];
    cellDoubles[gi] = total * g.stride;
    doubles += total * g.stride;
  }
  const widths: number[] = new Array(C);
  for (let i = 0; i < C; i++) {
    const col = cols.objs[i];
    widths[i] = col instanceof FixedColumn ? col.width : 0;
    doubles += n * widths[i];
  }
  let skipBytes = 0;
  for (let gi = 0; gi < G; gi++) skipBytes += n * groups[gi].sw;
  const arraysEnd = s0 + head + pad + 8 * doubles + G * n + skipBytes;
  let keyBytes = 0;
  for (let e = 0; e < n; e++) keyBytes += index.keyBytes(slots[e]);
  const keysEnd = arraysEnd + 4 * n + keyBytes;
  reserve(keysEnd);
  const u8 = scratchU8;
  const f64 = scratchF64;
  const dv = scratchView;
  u8.fill(0, s0, s0 + head + pad);
  u8[s0] = RAW_SLAB_TAG;
  dv.setUint32(s0 + 4, t, true);
  dv.setUint32(s0 + 8, n, true);
  dv.setUint32(s0 + 12, G, true);
  dv.setUint32(s0 + 16, C, true);
  dv.setUint32(s0 + 24, pad, true);
  for (let gi = 0; gi < G; gi++) dv.setUint32(s0 + RAW_HEAD_BYTES + 4 * gi, cellDoubles[gi], true);
  for (let i = 0; i < C; i++) dv.setUint32(s0 + RAW_HEAD_BYTES + 4 * (G + i), widths[i], true);
  for (let gi = 0; gi < G; gi++) dv.setUint32(s0 + RAW_HEAD_BYTES + 4 * (G + C + gi), groups[gi].sw, true);
  let d = (s0 + head + pad) / 8;
  for (let e = 0; e < n; e++) {
    const s = slots[e];
    f64[d + e] = index.lastT[s];
    f64[d + n + e] = index.lastLsn[s];
  }
  d += 2 * n;
  const ids: SlabRest['ids'] = [];
  const buckets: SlabRest['buckets'] = [];
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    const found = g.fields.map(() => new Map<number, Interned>());
    const busy: Array<[number, unknown[]]> = [];
    let at = d;
    for (let e = 0; e < n; e++) {
      at += g.exportSlot(slots[e], scratchU32, at, found) * g.stride;
      const b = g.saveBuckets(slots[e]);
      if (b !== null) busy.push([e, b]);
    }
    assert(at === d + cellDoubles[gi]);
    d = at;
    ids.push(found.map((m) => [...m]));
    buckets.push(busy);
  }
  const objs: SlabRest['objs'] = new Array(C);
  for (let i = 0; i < C; i++) {
    const col = cols.objs[i];
    objs[i] = null;
    if (col === null) continue;
    if (col instanceof FixedColumn) {
      const w = col.width;
      const data = col.data;
      // Word by word: a subarray per entity would allocate 1,024 views per chunk.
      for (let e = 0; e < n; e++) for (let j = 0, from = slots[e] * w; j < w; j++) f64[d + e * w + j] = data[from + j];
      d += n * w;
      continue;
    }
    // Object states, kept values and exact sketch values (cells holding interned ids) as their saves.
    const out: unknown[] = new Array(n);
    for (let e = 0; e < n; e++) out[e] = col.save(slots[e]);
    objs[i] = out;
  }
  let b = d * 8;
  for (let gi = 0; gi < G; gi++) {
    const len = groups[gi].len;
    for (let e = 0; e < n; e++) u8[b + e] = len[slots[e]];
    b += n;
  }
  for (let gi = 0; gi < G; gi++) {
    const g = groups[gi];
    const sw = g.sw;
    if (sw === 0) continue;
    for (let e = 0; e < n; e++) g.exportSkips(slots[e], u8, b + e * sw);
    b += n * sw;
  }
  assert(b === arraysEnd);
  let k = arraysEnd + 4 * n;
  for (let e = 0; e < n; e++) {
    const lenTag = index.copyKey(slots[e], u8, k);
    dv.setUint32(arraysEnd + 4 * e, lenTag, true);
    k += lenTag & KEY_LEN_MASK;
  }
  assert(k === keysEnd);
  const rest = serialize({ ids, buckets, objs } satisfies SlabRest);
  reserve(keysEnd + rest.length);
  scratchU8.set(rest, keysEnd);
  scratchView.setUint32(s0 + 20, rest.length, true);
  return scratchU8.subarray(s0, keysEnd + rest.length);
}

/** `count` doubles at `at` of `body`: a view when aligned, else a copy. */
function doublesAt(body: Uint8Array, at: number, count: number): Float64Array {
  const off = body.byteOffset + at;
  if ((off & 7) === 0) return new Float64Array(body.buffer, off, count);
  const out = new Float64Array(count);
  new Uint8Array(out.buffer).set(body.subarray(at, at + 8 * count));
  return out;
}

/** The raw chunk of `len` bytes at `at` of `body` (written by writeSlab) as a SlabChunk; its arrays are views of `body` where aligned. */
export function readSlab(body: Buffer, at: number, len: number): SlabChunk {
  const dv = new DataView(body.buffer, body.byteOffset + at, len);
  assert(isRawSlab(dv.getUint8(0)), 'not a raw slab chunk');
  const t = dv.getUint32(4, true);
  const n = dv.getUint32(8, true);
  const G = dv.getUint32(12, true);
  const C = dv.getUint32(16, true);
  const restBytes = dv.getUint32(20, true);
  const pad = dv.getUint32(24, true);
  // Skip counts per entity of each group (0: one window).
  const skipWidths: number[] = [];
  for (let gi = 0; gi < G; gi++) skipWidths.push(dv.getUint32(RAW_HEAD_BYTES + 4 * (G + C + gi), true));
  let p = at + RAW_HEAD_BYTES + 4 * (2 * G + C) + pad;
  const lastTs = doublesAt(body, p, n);
  const lastLsns = doublesAt(body, p + 8 * n, n);
  p += 16 * n;
  const cells: Float64Array[] = [];
  for (let gi = 0; gi < G; gi++) {
    const count = dv.getUint32(RAW_HEAD_BYTES + 4 * gi, true);
    cells.push(doublesAt(body, p, count));
    p += 8 * count;
  }
  const fixed: Array<Float64Array | null> = [];
  for (let i = 0; i < C; i++) {
    const w = dv.getUint32(RAW_HEAD_BYTES + 4 * (G + i), true);
    fixed.push(w === 0 ? null : doublesAt(body, p, n * w));
    p += 8 * n * w;
  }
  const lens: Uint8Array[] = [];
  for (let gi = 0; gi < G; gi++) {
    lens.push(body.subarray(p, p + n));
    p += n;
  }
  const skips: Array<Uint8Array | null> = [];
  for (let gi = 0; gi < G; gi++) {
    const sw = skipWidths[gi];
    skips.push(sw === 0 ? null : body.subarray(p, p + n * sw));
    p += n * sw;
  }
  const keys = new Array<string>(n);
  let k = p + 4 * n;
  for (let e = 0; e < n; e++) {
    const lenTag = dv.getUint32(p - at + 4 * e, true);
    const kl = lenTag & KEY_LEN_MASK;
    keys[e] = strOf(body, k, kl, lenTag >>> KEY_TAG_SHIFT);
    k += kl;
  }
  p = k;
  assert(p + restBytes === at + len, 'raw slab chunk: length mismatch');
  const rest = deserialize(body.subarray(p, p + restBytes)) as SlabRest;
  return {
    slab: true, t, keys, lastTs, lastLsns,
    groups: cells.map((c, gi) => ({ lens: lens[gi], skips: skips[gi], cells: c, ids: rest.ids[gi], buckets: rest.buckets[gi] })),
    fixed, objs: rest.objs,
  };
}

/** The live slots of `slots` as a chunk of table `t` (writeSlab's bytes read back: what a restore loads). */
export function encodeSlab(cols: TableColumns, t: number, slots: readonly number[]): SlabChunk {
  const bytes = Buffer.from(writeSlab(cols, t, slots, slots.length, 0));
  return readSlab(bytes, 0, bytes.length);
}

function idMaps(ch: SlabChunk['groups'][number]): Array<Map<number, Interned>> {
  return ch.ids.map((pairs) => new Map(pairs));
}

/**
 * Loads the chunk's entities whose key `keep` accepts into `cols`, which has the
 * chunk's layout (restore imposed it: TableColumns.fromLayout). `onKey` runs
 * before each entity is added (the caller drops a cold copy of the key; a hot
 * one is replaced by addForLoad).
 * Column by column: the keys first, then each group's rings, then each solo
 * column, so each loop touches one array (restore of 1M entities: one hash
 * insert per key is most of the cost).
 */
export function loadSlab(cols: TableColumns, ch: SlabChunk, keep: ((key: string) => boolean) | null, onKey: (key: string) => void): number {
  assert(ch.groups.length === cols.groups.length, 'slab chunk of another layout');
  const n = ch.keys.length;
  const slots = new Int32Array(n);
  let loaded = 0;
  for (let e = 0; e < n; e++) {
    const key = ch.keys[e];
    if (keep !== null && !keep(key)) { slots[e] = -1; continue; }
    onKey(key);
    slots[e] = cols.addForLoad(key, ch.lastTs[e], ch.lastLsns[e]);
    loaded++;
  }
  for (let gi = 0; gi < cols.groups.length; gi++) loadRings(cols.groups[gi], ch.groups[gi], slots);
  for (let i = 0; i < cols.objs.length; i++) {
    const col = cols.objs[i];
    if (col === null) continue;
    const rows = ch.fixed[i];
    const objs = ch.objs[i];
    if (col instanceof FixedColumn && rows !== null && rows !== undefined) {
      const w = col.width;
      for (let e = 0; e < n; e++) if (slots[e] >= 0) for (let j = 0; j < w; j++) col.data[slots[e] * w + j] = rows[e * w + j];
    } else {
      for (let e = 0; e < n; e++) {
        if (slots[e] < 0) continue;
        if (objs !== null && objs !== undefined) col.load(slots[e], objs[e]);
        else col.create(slots[e]);
      }
    }
  }
  return loaded;
}

function loadRings(g: RingGroup, sg: SlabChunk['groups'][number], slots: Int32Array): void {
  const ids = idMaps(sg);
  const words = new Uint32Array(sg.cells.buffer, sg.cells.byteOffset, sg.cells.length * 2);
  const sw = g.sw;
  const skips = sg.skips;
  assert(skips === null ? sw === 0 : skips.length === slots.length * sw, 'slab chunk: skip counts of another layout');
  let at = 0;
  for (let e = 0; e < slots.length; e++) {
    const len = sg.lens[e];
    if (slots[e] >= 0) {
      g.importSlot(slots[e], words, at, len, ids);
      if (skips !== null) g.importSkips(slots[e], skips, e * sw);
    }
    at += len * g.stride;
  }
  for (const [e, saved] of sg.buckets) if (slots[e] >= 0) g.loadBuckets(slots[e], saved);
}

/**
 * The chunk's entities as EntitySaves (for a table of another layout, which maps
 * them: TableColumns.addMapped). Fixed rows become their op's save through
 * `fixedOf(i)` (the live op of saved feature i, same signature; null when no live
 * feature takes it).
 */
export function slabSaves(ch: SlabChunk, strides: readonly number[], fixedOf: (i: number) => FixedOp | null): EntitySave[] {
  const out: EntitySave[] = [];
  const maps = ch.groups.map(idMaps);
  const cellAt = ch.groups.map(() => 0);
  const bucketAt = ch.groups.map(() => 0);
  for (let e = 0; e < ch.keys.length; e++) {
    const groups: GroupSave[] = ch.groups.map((sg, gi) => {
      const len = sg.lens[e];
      const stride = strides[gi];
      const cells = new Uint32Array(sg.cells.buffer, sg.cells.byteOffset, sg.cells.length * 2);
      const ring = decodeCells(cells, cellAt[gi], len, stride, maps[gi]);
      cellAt[gi] += len * stride;
      const bk = sg.buckets[bucketAt[gi]];
      let buckets: unknown[] = [];
      if (bk !== undefined && bk[0] === e) {
        buckets = bk[1];
        bucketAt[gi]++;
      }
      const skips = sg.skips;
      if (skips === null) return [ring, buckets];
      const sw = skips.length / ch.keys.length;
      return [ring, buckets, Array.from(skips.subarray(e * sw, e * sw + sw))];
    });
    const objs = ch.objs.map((o, i) => {
      if (o !== null && o !== undefined) return o[e];
      const rows = ch.fixed[i];
      const op = rows === null || rows === undefined ? null : fixedOf(i);
      return op === null ? null : op.save(rows!, e * op.width);
    });
    out.push([groups, objs]);
  }
  return out;
}

/**
 * A frozen cold entity (cold.ts) as slab bytes: one entity's slab range, the
 * lean variant of a raw chunk (no key: the cold store keys it; no table index,
 * entity count or body alignment). Self-describing (per group its ring length,
 * stride and skip width, per column its slab width), so a layout change can read
 * it as an EntitySave (frozenSlabSave). The doubles are 8-aligned from the
 * buffer's start.
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
export const FROZEN_FORMAT = 1;
const FROZEN_HEAD_BYTES = 24;
const REST_V8 = 0;
const REST_PLAIN = 1;

/*
 * The plain encoding of a rest (JSON-like values, exact): a tag byte, then
 *   P_INT     varint of the zigzagged int32 (-0 is not an int: it goes as f64)
 *   P_F64     8 bytes LE
 *   P_STR1    varint length, then one byte per char (every char code < 256)
 *   P_STR2    varint length in UTF-16 code units, then two bytes LE per unit (lone surrogates kept)
 *   P_ARR     varint length, then the elements
 *   P_EXACT   a lifetime sketch's values (ExactSave, exact_column.ts): its array, as P_ARR
 * v8.serialize costs a serializer object and a few µs per call whatever the
 * size: most of a small entity's freeze.
 */
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
  const u8 = scratchU8;
  while (x >= 0x80) {
    u8[p++] = (x & 0x7f) | 0x80;
    x >>>= 7;
  }
  u8[p++] = x;
  return p;
}

/** Writes `v` plain-encoded at byte `p` of the scratch (growing it); the end, or -1 when `v` is not plain. */
function putPlain(v: unknown, p: number, depth: number): number {
  reserve(p + 16);
  const u8 = scratchU8;
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
      scratchView.setFloat64(p + 1, v, true);
      return p + 9;
    case 'string': {
      const n = v.length;
      let one = true;
      for (let i = 0; i < n; i++) if (v.charCodeAt(i) > 0xff) { one = false; break; }
      reserve(p + 6 + 2 * n);
      const b = scratchU8;
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
      throw new Error(`frozen slab: bad plain tag ${tag}`);
  }
}

/** The rest of a frozen slab `b` from byte `at` to its end. */
function readRest(b: Uint8Array, at: number): FrozenRest {
  if (b[1] !== REST_PLAIN) return deserialize(b.subarray(at)) as FrozenRest;
  plainAt = at;
  const rest = getPlain(b, Buffer.from(b.buffer, b.byteOffset, b.length)) as FrozenRest;
  assert(plainAt === b.length && Array.isArray(rest), 'frozen slab: rest length mismatch');
  return rest;
}

type FrozenRest = unknown[];

/** Per field, the ids exportSlot found (one set per thread, emptied after each freeze). */
const found: Array<Map<number, Interned>> = [];

/** The entity at `slot` as a frozen slab (a new Buffer). */
export function writeFrozen(cols: TableColumns, slot: number): Buffer {
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
  const u8 = scratchU8;
  const f64 = scratchF64;
  const dv = scratchView;
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
    const len = g.exportSlot(slot, scratchU32, d, found);
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
  const end = rest[bkAt] === 0 ? putPlain(rest, arraysEnd, 0) : -1;
  if (end >= 0) {
    scratchU8[1] = REST_PLAIN;
    return Buffer.from(scratchU8.subarray(0, end));
  }
  const restBytes = serialize(rest);
  const out = Buffer.allocUnsafe(arraysEnd + restBytes.length);
  out.set(scratchU8.subarray(0, arraysEnd), 0);
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
export function frozenSlabClock(buf: Uint8Array): { lastT: number; lastLsn: number } {
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
export function thawFrozen(buf: Uint8Array, cols: TableColumns, key: string): number {
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
export function frozenSlabSave(buf: Uint8Array, fixedOf: (i: number) => FixedOp | null): { lastT: number; lastLsn: number; saved: EntitySave } {
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
