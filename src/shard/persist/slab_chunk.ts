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
import type { RingGroup } from '../columns/ring_group';
import { decodeCells, type GroupSave } from '../columns/ring_save';
import type { FixedOp } from '../../ops/fixed';
import { FixedColumn } from '../columns/solo_column';
import { strOf } from '../../wal/push_record';
import type { EntitySave, TableColumns } from '../columns/table_columns';
import { reserve, scratch } from './scratch';

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
  const u8 = scratch.u8;
  const f64 = scratch.f64;
  const dv = scratch.view;
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
      at += g.exportSlot(slots[e], scratch.u32, at, found) * g.stride;
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
  scratch.u8.set(rest, keysEnd);
  scratch.view.setUint32(s0 + 20, rest.length, true);
  return scratch.u8.subarray(s0, keysEnd + rest.length);
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
