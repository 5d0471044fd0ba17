/**
 * One raw-event ring per entity shared by every windowed feature of a table
 * that has the same window (and no `where`): count, sum, mean, min, max,
 * var/std, quantile, n_unique, top_k, ... all read the same ring of
 * (t, field values) cells while it is exact, and each keeps only its own bucket
 * part (events pushed out of the full ring) as today (ops/num_window.ts,
 * ops/val_window.ts; semantics and bounds in docs/ops.md).
 *
 *   per slot (typed arrays):  cls  blk  head  len  busy
 *                              |    |
 *   pools[cls] (ring_pool.ts): [ ... | block blk: entry 0 | entry 1 | ... | ... ]
 *                                      entry = t, value of column 0, column 1, ...
 *   per member (feature):      buckets: Map<slot, buckets>  (only busy entities)
 *
 * A cell holds a number as itself; any other value is NaN-boxed (high word a tag,
 * low word the interned id of a string or boolean, intern.ts), so every value
 * comes back exactly as pushed, null and absent included.
 *
 * Compared with one ring per feature, a ring holds every event that reached the
 * group, also those a feature does not accept (a sum skips an event without a
 * number): an entity then leaves the exact regime after RING_ENTRIES_MAX events of
 * the table in a window rather than of the feature. The bound is the same
 * (docs/ops.md "Windows").
 */
import { strict as assert } from 'node:assert';
import type { JsonValue, Row, Value } from '../types';
import {
  FOLDS, foldValue, Input, numBucketsGoneAt, numExpireBuckets, numFoldBuckets, numFoldIntoBucket, numJoinNewest, numLoadBuckets, numResult,
  numOldestEnd, numSaveBuckets, resetFold, RING_ENTRIES_MAX, type NumBuckets, type NumWindowCfg,
} from '../ops/num_window';
import {
  valBucketsGoneAt, valExpireBuckets, valFoldIntoBucket, valJoinNewest, valKeepScratch, valLoadBuckets, valMergeBuckets, valOldestEnd, valSaveBuckets, valScratch,
  type ValBuckets, type ValWindowCfg,
} from '../ops/val_window';
import { InternTable, type Interned } from './intern';
import { decodeCell, decodeExported, encodeCell, HI_ID, releaseCell } from './cells';
import { ClassPool, RING_CLASS_MAX } from './ring_pool';
import { grown } from './entity_index';

assert(1 << RING_CLASS_MAX === RING_ENTRIES_MAX, 'the largest ring class holds RING_ENTRIES_MAX entries');

type Buckets = NumBuckets | ValBuckets<unknown>;

/** One feature reading a group's ring. */
export class RingMember {
  readonly buckets = new Map<number, Buckets>();
  constructor(
    /** Index of the feature in its table plan. */
    public feature: number,
    /** Ring column of its field, -1 without a field. */
    readonly col: number,
    public num: NumWindowCfg | null,
    public val: ValWindowCfg<unknown> | null,
  ) {
    assert((num === null) !== (val === null));
  }
}

export class RingGroup {
  readonly stride: number;
  readonly pools: ClassPool[] = [];
  cls: Uint8Array;
  blk: Int32Array;
  head: Uint8Array;
  len: Uint8Array;
  /** Members holding buckets for the slot (0: the ring is all there is). */
  busy: Uint16Array;
  /** Per field: its position in the table's columns (TableColumns.colIds), -1 when it has none. */
  colOf: Int32Array;
  /**
   * Per busy slot: the earliest time any member's oldest bucket stops counting,
   * so a push whose cutoff is below it skips the per-member expiry walk (a Map
   * lookup per member per push of a hot entity). Absent: not known, walk. Only
   * ever at or below the true earliest end (a new bucket list or a load deletes
   * it), so skipping never keeps a bucket that should go.
   */
  readonly #nextEnd = new Map<number, number>();

  constructor(
    readonly windowMs: number,
    /** The `where` of the group's one feature; null for a shared group. */
    readonly where: ((row: Row) => boolean) | null,
    readonly fields: readonly string[],
    readonly interns: readonly InternTable[],
    public members: RingMember[],
    capacity: number,
  ) {
    assert(fields.length === interns.length);
    this.stride = 1 + fields.length;
    for (let c = 0; c <= RING_CLASS_MAX; c++) this.pools.push(c === 0 ? (null as unknown as ClassPool) : new ClassPool(c, this.stride));
    this.cls = new Uint8Array(capacity);
    this.blk = new Int32Array(capacity);
    this.head = new Uint8Array(capacity);
    this.len = new Uint8Array(capacity);
    this.busy = new Uint16Array(capacity);
    this.colOf = new Int32Array(fields.length).fill(-1);
  }

  /** Grows the per-slot arrays with the entity index (entity_index.ts onGrow). */
  grow(capacity: number): void {
    this.cls = grown(this.cls, capacity);
    this.head = grown(this.head, capacity);
    this.len = grown(this.len, capacity);
    this.blk = grown(this.blk, capacity);
    this.busy = grown(this.busy, capacity);
  }

  /**
   * Appends one event (that passed `where`) to the slot's ring. `ids` (by table
   * column, -1 for none) gives the interned id of a field's value when the caller
   * holds a reference to it: the cell takes one more without a lookup.
   */
  push(slot: number, row: Row, t: number, ids: Int32Array): void {
    const cutoff = t - this.windowMs;
    this.#expire(slot, cutoff);
    let cls = this.cls[slot];
    let cap = cls === 0 ? 0 : 1 << cls;
    if (this.len[slot] === cap) {
      if (cap < RING_ENTRIES_MAX) {
        this.#moveUp(slot);
        cls++;
        cap = 1 << cls;
      } else this.#evictOldest(slot);
    }
    const pool = this.pools[cls];
    const at = this.blk[slot] * pool.blockDoubles + ((this.head[slot] + this.len[slot]) & (cap - 1)) * this.stride;
    pool.data[at] = t;
    const fields = this.fields;
    const colOf = this.colOf;
    for (let c = 0; c < fields.length; c++) {
      const j = colOf[c];
      const id = j < 0 ? -1 : ids[j];
      if (id < 0) this.#encode(pool, at + 1 + c, c, row[fields[c]]);
      else {
        const w = 2 * (at + 1 + c);
        pool.u32[w] = id;
        pool.u32[w + 1] = HI_ID;
        this.interns[c].refId(id);
      }
    }
    this.len[slot]++;
  }

  #encode(pool: ClassPool, i: number, c: number, v: Value | undefined): void {
    encodeCell(pool.data, pool.u32, i, this.interns[c], v);
  }

  /** The value of cell `i` of a pool (column c). */
  #decode(pool: ClassPool, i: number, c: number): Value | undefined {
    return decodeCell(pool.data, pool.u32, i, this.interns[c]);
  }

  /** Releases the intern references of the entry at `at`. */
  #release(pool: ClassPool, at: number): void {
    for (let c = 0; c < this.fields.length; c++) releaseCell(pool.u32, at + 1 + c, this.interns[c]);
  }

  /** Offset of the k-th oldest entry of the slot (its class pool is pools[cls[slot]]). */
  #entry(slot: number, k: number): number {
    const cls = this.cls[slot];
    return this.blk[slot] * this.pools[cls].blockDoubles + ((this.head[slot] + k) & ((1 << cls) - 1)) * this.stride;
  }

  /** Moves the slot's ring to the next size class, oldest entry first. */
  #moveUp(slot: number): void {
    const cls = this.cls[slot];
    const to = this.pools[cls + 1];
    const nb = to.alloc();
    const len = this.len[slot];
    if (cls > 0) {
      const from = this.pools[cls];
      const w = this.stride * 2;
      const fu = from.u32;
      const tu = to.u32;
      for (let k = 0; k < len; k++) {
        const src = this.#entry(slot, k) * 2;
        const dst = (nb * to.blockDoubles + k * this.stride) * 2;
        for (let j = 0; j < w; j++) tu[dst + j] = fu[src + j];
      }
      from.release(this.blk[slot]);
    }
    this.cls[slot] = cls + 1;
    this.blk[slot] = nb;
    this.head[slot] = 0;
  }

  /** Drops entries that no read can see any more; members fold them as num_window.ts expireRing does. */
  #expire(slot: number, cutoff: number): void {
    const cls = this.cls[slot];
    if (cls === 0) return;
    const pool = this.pools[cls];
    const mask = (1 << cls) - 1;
    while (this.len[slot] > 0) {
      const at = this.#entry(slot, 0);
      const t = pool.data[at];
      if (t > cutoff) break;
      if (this.busy[slot] > 0) this.#joinNewest(slot, pool, at, t);
      this.#release(pool, at);
      this.head[slot] = (this.head[slot] + 1) & mask;
      this.len[slot]--;
    }
    if (this.busy[slot] > 0) {
      const end = this.#nextEnd.get(slot);
      if (end === undefined || end <= cutoff) this.#expireBuckets(slot, cutoff);
    }
    if (this.len[slot] === 0 && this.busy[slot] === 0) this.#freeRing(slot);
  }

  #joinNewest(slot: number, pool: ClassPool, at: number, t: number): void {
    for (const m of this.members) {
      const b = m.buckets.get(slot);
      if (b === undefined) continue;
      const x = m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col);
      if (m.num !== null) {
        const v = numInput(m.num, x);
        if (v === v) numJoinNewest(b as NumBuckets, m.num, t, v);
      } else {
        const val = m.val as ValWindowCfg<unknown>;
        if (val.agg.accepts(x)) valJoinNewest(b as ValBuckets<unknown>, val, x === undefined ? 0 : x, t, 0);
      }
    }
  }

  #expireBuckets(slot: number, cutoff: number): void {
    let next = Infinity;
    for (const m of this.members) {
      const b = m.buckets.get(slot);
      if (b === undefined) continue;
      const left = m.num !== null ? numExpireBuckets(b as NumBuckets, m.num, cutoff) : valExpireBuckets(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>, cutoff);
      if (left === null) {
        m.buckets.delete(slot);
        this.busy[slot]--;
        continue;
      }
      const end = m.num !== null ? numOldestEnd(left as NumBuckets, m.num) : valOldestEnd(left as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>);
      if (end < next) next = end;
    }
    if (this.busy[slot] > 0) this.#nextEnd.set(slot, next);
    else this.#nextEnd.delete(slot);
  }

  /** The ring is full of live events: its oldest goes into each accepting member's bucket. */
  #evictOldest(slot: number): void {
    const pool = this.pools[this.cls[slot]];
    const at = this.#entry(slot, 0);
    const t = pool.data[at];
    for (const m of this.members) {
      const x = m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col);
      const had = m.buckets.get(slot);
      let b: Buckets | undefined = had;
      if (m.num !== null) {
        const v = numInput(m.num, x);
        if (v === v) b = numFoldIntoBucket(had === undefined ? null : (had as NumBuckets), m.num, t, v);
      } else {
        const val = m.val as ValWindowCfg<unknown>;
        if (val.agg.accepts(x)) b = valFoldIntoBucket(had === undefined ? null : (had as ValBuckets<unknown>), val, x === undefined ? 0 : x, t, 0);
      }
      if (b !== had && b !== undefined) {
        m.buckets.set(slot, b);
        if (had === undefined) {
          this.busy[slot]++;
          this.#nextEnd.delete(slot); // a new oldest bucket: the next expiry walks
        }
      }
    }
    this.#release(pool, at);
    this.head[slot] = (this.head[slot] + 1) & (RING_ENTRIES_MAX - 1);
    this.len[slot]--;
  }

  #freeRing(slot: number): void {
    const cls = this.cls[slot];
    if (cls === 0) return;
    this.pools[cls].release(this.blk[slot]);
    this.cls[slot] = 0;
    this.blk[slot] = 0;
    this.head[slot] = 0;
  }

  /** Empties the slot (the entity leaves: frozen, dropped, or its slot is reused). */
  clear(slot: number): void {
    const cls = this.cls[slot];
    if (cls > 0) {
      const pool = this.pools[cls];
      for (let k = 0; k < this.len[slot]; k++) this.#release(pool, this.#entry(slot, k));
      this.len[slot] = 0;
      this.#freeRing(slot);
    }
    if (this.busy[slot] > 0) for (const m of this.members) m.buckets.delete(slot);
    this.busy[slot] = 0;
    this.#nextEnd.delete(slot);
  }

  /**
   * From time `t` on, the slot reads and updates like an empty one: every ring
   * entry and every bucket of every member has left the window (OpState.emptyAt).
   */
  emptyAt(slot: number, t: number): boolean {
    const cutoff = t - this.windowMs;
    const len = this.len[slot];
    if (len > 0 && this.pools[this.cls[slot]].data[this.#entry(slot, len - 1)] > cutoff) return false;
    if (this.busy[slot] === 0) return true;
    for (const m of this.members) {
      const b = m.buckets.get(slot);
      if (b === undefined) continue;
      if (m.num !== null ? !numBucketsGoneAt(b as NumBuckets, m.num, cutoff) : !valBucketsGoneAt(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>, cutoff)) return false;
    }
    return true;
  }

  /** The value of member `m` for the slot at query time `now`. */
  read(m: RingMember, slot: number, now: number): JsonValue {
    const cutoff = now - this.windowMs;
    const cls = this.cls[slot];
    const len = this.len[slot];
    const pool = this.pools[cls];
    let k = 0;
    while (k < len && pool.data[this.#entry(slot, k)] <= cutoff) k++;
    // Buckets only hold events older than every ring entry: when the ring's oldest
    // has left the window, so has every bucketed event.
    const b = k === 0 && len > 0 ? m.buckets.get(slot) : undefined;
    if (m.num !== null) {
      const c = m.num;
      const f = FOLDS[c.kind];
      resetFold(f);
      if (b !== undefined) numFoldBuckets(b as NumBuckets, c, cutoff, f);
      for (; k < len; k++) {
        const at = this.#entry(slot, k);
        const v = numInput(c, m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col));
        if (v === v) foldValue(f, c.kind, v);
      }
      return numResult(c, f);
    }
    const c = m.val as ValWindowCfg<unknown>;
    const scratch = valScratch(c);
    let acc = scratch;
    if (b !== undefined) acc = valMergeBuckets(b as ValBuckets<unknown>, c, cutoff, acc);
    for (; k < len; k++) {
      const at = this.#entry(slot, k);
      const x = m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col);
      if (c.agg.accepts(x)) acc = c.agg.add(acc, x === undefined ? 0 : x, pool.data[at], 0);
    }
    valKeepScratch(c, acc, scratch);
    return c.agg.result(acc);
  }

  /**
   * The slot as plain data (cold freeze, per-entity snapshots, partition export):
   * [entries oldest first as t, values..., per member its saved buckets or null].
   */
  save(slot: number): GroupSave {
    const ring: Array<Value | undefined> = [];
    const len = this.len[slot];
    if (len > 0) {
      const pool = this.pools[this.cls[slot]];
      for (let k = 0; k < len; k++) {
        const at = this.#entry(slot, k);
        ring.push(pool.data[at]);
        for (let c = 0; c < this.fields.length; c++) ring.push(this.#decode(pool, at + 1 + c, c));
      }
    }
    return [ring, this.#saveBuckets(slot)];
  }

  #saveBuckets(slot: number): unknown[] {
    return this.members.map((m) => {
      const b = m.buckets.get(slot);
      if (b === undefined) return null;
      return m.num !== null ? numSaveBuckets(b as NumBuckets, m.num) : valSaveBuckets(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>);
    });
  }

  /** Inverse of save, into an empty slot. */
  load(slot: number, saved: GroupSave): void {
    assert(this.cls[slot] === 0 && this.busy[slot] === 0, 'ring load into a slot in use');
    const [ring, buckets] = saved;
    const len = ring.length / this.stride;
    assert(Number.isInteger(len) && len <= RING_ENTRIES_MAX, 'saved ring does not fit the group');
    if (len > 0) {
      let cls = 1;
      while (1 << cls < len) cls++;
      const pool = this.pools[cls];
      this.blk[slot] = pool.alloc();
      this.cls[slot] = cls;
      this.head[slot] = 0;
      for (let k = 0; k < len; k++) {
        const at = this.blk[slot] * pool.blockDoubles + k * this.stride;
        pool.data[at] = ring[k * this.stride] as number;
        for (let c = 0; c < this.fields.length; c++) this.#encode(pool, at + 1 + c, c, ring[k * this.stride + 1 + c]);
      }
      this.len[slot] = len;
    }
    this.#loadBuckets(slot, buckets);
  }

  #loadBuckets(slot: number, buckets: unknown[]): void {
    for (let i = 0; i < this.members.length; i++) {
      const m = this.members[i];
      const sb = buckets[i];
      if (sb === null || sb === undefined) continue;
      const b = m.num !== null
        ? numLoadBuckets(sb as number[], m.num)
        : valLoadBuckets((sb as [number[], unknown[]])[0], (sb as [number[], unknown[]])[1], m.val as ValWindowCfg<unknown>);
      if (b === null) continue;
      m.buckets.set(slot, b);
      this.busy[slot]++;
    }
    this.#nextEnd.delete(slot);
  }

  /**
   * Slab export (snapshots, slab_chunk.ts): copies the slot's entries, oldest
   * first, as raw cells into `out` (a Uint32Array view) from double offset `at`,
   * and records every interned id they hold with its value in `ids` (per column),
   * since ids are only meaningful with this table's intern tables. Returns the
   * number of entries.
   */
  exportSlot(slot: number, out: Uint32Array, at: number, ids: Array<Map<number, Interned>>): number {
    const len = this.len[slot];
    if (len === 0) return 0;
    const pool = this.pools[this.cls[slot]];
    const w = this.stride * 2;
    const u = pool.u32;
    for (let k = 0; k < len; k++) {
      const src = this.#entry(slot, k) * 2;
      const dst = (at + k * this.stride) * 2;
      // Word by word: a subarray view per entry would cost more than the copy (entries are a few words).
      for (let j = 0; j < w; j++) out[dst + j] = u[src + j];
      for (let c = 0; c < this.fields.length; c++) {
        const i = dst + 2 * (1 + c);
        if (out[i + 1] === HI_ID && !ids[c].has(out[i])) ids[c].set(out[i], this.interns[c].value(out[i]));
      }
    }
    return len;
  }

  /** Inverse of exportSlot into an empty slot: ids are interned anew from `ids` (a reference per cell). */
  importSlot(slot: number, src: Uint32Array, at: number, len: number, ids: Array<Map<number, Interned>>): void {
    assert(this.cls[slot] === 0 && this.busy[slot] === 0, 'ring import into a slot in use');
    assert(len <= RING_ENTRIES_MAX);
    if (len === 0) return;
    let cls = 1;
    while (1 << cls < len) cls++;
    const pool = this.pools[cls];
    const blk = pool.alloc();
    this.cls[slot] = cls;
    this.blk[slot] = blk;
    this.head[slot] = 0;
    this.len[slot] = len;
    const base = blk * pool.blockDoubles * 2;
    const words = len * this.stride * 2;
    const u = pool.u32;
    const from = at * 2;
    for (let j = 0; j < words; j++) u[base + j] = src[from + j];
    for (let c = 0; c < this.fields.length; c++) {
      // A column whose cells hold no id in this chunk (numbers) needs no rewrite.
      if (ids[c].size === 0) continue;
      for (let k = 0; k < len; k++) {
        const i = base + 2 * (k * this.stride + 1 + c);
        if (u[i + 1] === HI_ID) u[i] = this.interns[c].ref(ids[c].get(u[i]) as Interned);
      }
    }
  }

  /** The slot's buckets per member (saved form), or null when it has none. */
  saveBuckets(slot: number): unknown[] | null {
    return this.busy[slot] === 0 ? null : this.#saveBuckets(slot);
  }

  /** Loads saveBuckets' result into a slot without buckets. */
  loadBuckets(slot: number, saved: unknown[]): void {
    this.#loadBuckets(slot, saved);
  }

  /** Bytes of the pooled rings (allocated). */
  get poolBytes(): number {
    let n = 0;
    for (let c = 1; c <= RING_CLASS_MAX; c++) n += this.pools[c].bytes;
    return n;
  }
}

/** A group's save (RingGroup.save): entries oldest first (t, then a value per field), per member its buckets or null. */
export type GroupSave = [Array<Value | undefined>, unknown[]];

/**
 * One member's state out of a group save, in the format of its own OpState.save()
 * (NumWindowState / ValWindowState: the entries it accepts and its buckets), for
 * loading it as a standalone state (a snapshot of another layout, snapshot_job.ts).
 */
export function memberView(saved: GroupSave, stride: number, col: number, memberAt: number, num: NumWindowCfg | null, val: ValWindowCfg<unknown> | null): unknown {
  const [ring, buckets] = saved;
  const b = buckets[memberAt];
  if (num !== null) {
    const out: number[] = [];
    for (let at = 0; at < ring.length; at += stride) {
      const v = numInput(num, col < 0 ? undefined : ring[at + 1 + col]);
      if (v !== v) continue;
      out.push(ring[at] as number);
      if (num.stride === 2) out.push(v);
    }
    return [out, b === null || b === undefined ? [] : b];
  }
  const c = val as ValWindowCfg<unknown>;
  const ts: number[] = [];
  const vs: Array<string | number | boolean> = [];
  for (let at = 0; at < ring.length; at += stride) {
    const x = col < 0 ? undefined : ring[at + 1 + col];
    if (!c.agg.accepts(x)) continue;
    ts.push(ring[at] as number);
    vs.push(x === undefined ? 0 : (x as string | number | boolean));
  }
  const [be, ba] = b === null || b === undefined ? [[], []] : (b as [number[], unknown[]]);
  return [ts, vs, be, ba];
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

/** What a numeric member adds for a cell value: NaN when it does not take the event (num_window.ts update). */
function numInput(c: NumWindowCfg, x: Value | undefined): number {
  switch (c.input) {
    case Input.Number:
      return typeof x === 'number' && Number.isFinite(x) ? x : NaN;
    case Input.Present:
      return x === null || x === undefined ? NaN : 1;
    default:
      return 1;
  }
}


export type { Interned };
