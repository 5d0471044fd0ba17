/**
 * Snapshot chunks of hot entities as slab bytes (snapshot format 4): a run of
 * slots of one table copied column by column into typed arrays, not entity by
 * entity into objects. v8.serialize writes a typed array as one memcpy, and a
 * restore into the same layout copies the bytes back (a key per entity is the
 * only per-entity allocation).
 *
 *   keys      string[]            the chunk's live entities, slot order
 *   lastTs    Float64Array        } per entity
 *   lastLsns  Float64Array        }
 *   groups[g] lens   Uint8Array   ring entries per entity
 *             cells  Float64Array the rings, oldest entry first, one after another
 *             ids    per column [id, value] of every interned id in `cells`
 *             buckets [entity, saved buckets per member] for busy entities only
 *   fixed[i]  Float64Array        slab rows of lifetime op i (null: not fixed)
 *   objs[i]   unknown[]           saves of feature i held as objects or kept values (null: neither)
 *
 * Each entity is captured whole at the moment its chunk is encoded (fuzzy
 * snapshots, snapshot_job.ts): ids travel with their values because an id may be
 * freed and reused by the time a later chunk is encoded.
 */
import { strict as assert } from 'node:assert';
import type { Interned } from './intern';
import { decodeCells, type GroupSave, type RingGroup } from './ring_group';
import type { FixedOp } from '../ops/fixed';
import { FixedColumn } from './solo_column';
import type { EntitySave, TableColumns } from './table_columns';

export interface SlabChunk {
  slab: true;
  t: number;
  keys: string[];
  lastTs: Float64Array;
  lastLsns: Float64Array;
  groups: Array<{ lens: Uint8Array; cells: Float64Array; ids: Array<Array<[number, Interned]>>; buckets: Array<[number, unknown[]]> }>;
  fixed: Array<Float64Array | null>;
  objs: Array<unknown[] | null>;
}

/** The live slots of `slots` as a chunk of table `t`. */
export function encodeSlab(cols: TableColumns, t: number, slots: readonly number[]): SlabChunk {
  const n = slots.length;
  const index = cols.index;
  const keys: string[] = new Array(n);
  const lastTs = new Float64Array(n);
  const lastLsns = new Float64Array(n);
  for (let e = 0; e < n; e++) {
    const s = slots[e];
    keys[e] = index.keyOf(s);
    lastTs[e] = index.lastT[s];
    lastLsns[e] = index.lastLsn[s];
  }
  const groups = cols.groups.map((g) => {
    const lens = new Uint8Array(n);
    let total = 0;
    for (let e = 0; e < n; e++) total += (lens[e] = g.len[slots[e]]);
    const cells = new Float64Array(total * g.stride);
    const u32 = new Uint32Array(cells.buffer);
    const ids = g.fields.map(() => new Map<number, Interned>());
    const buckets: Array<[number, unknown[]]> = [];
    let at = 0;
    for (let e = 0; e < n; e++) {
      at += g.exportSlot(slots[e], u32, at, ids) * g.stride;
      const b = g.saveBuckets(slots[e]);
      if (b !== null) buckets.push([e, b]);
    }
    assert(at === cells.length);
    return { lens, cells, ids: ids.map((m) => [...m]), buckets };
  });
  const fixed = cols.objs.map((col) => {
    if (!(col instanceof FixedColumn)) return null;
    const w = col.width;
    const rows = new Float64Array(n * w);
    for (let e = 0; e < n; e++) rows.set(col.data.subarray(slots[e] * w, slots[e] * w + w), e * w);
    return rows;
  });
  // Object states and kept values (lifetime point ops, whose cells hold interned ids) as their saves.
  const objs = cols.objs.map((col) => {
    if (col === null || col instanceof FixedColumn) return null;
    const out: unknown[] = new Array(n);
    for (let e = 0; e < n; e++) out[e] = col.save(slots[e]);
    return out;
  });
  return { slab: true, t, keys, lastTs, lastLsns, groups, fixed, objs };
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
  let at = 0;
  for (let e = 0; e < slots.length; e++) {
    const len = sg.lens[e];
    if (slots[e] >= 0) g.importSlot(slots[e], words, at, len, ids);
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
      return [ring, buckets];
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
