/**
 * Fuzzy, incremental shard snapshots (a page-LSN checkpoint).
 *
 * A snapshot must not stall its shard: encoding 1M entities at once takes
 * seconds. So a job encodes a few milliseconds' worth of entities per event-loop
 * turn, between batches, while pushes keep being applied. The result is fuzzy:
 * each entity is captured at some LSN >= the job's start LSN. That is safe
 * because every entity carries `lastLsn` (the last push applied to it), and
 * recovery replays the WAL from the start LSN skipping, per entity, records with
 * lsn <= lastLsn (state.ts apply).
 *
 * Order of capture: frozen (cold) entities first (read back from the cold store:
 * the on-disk store is a cache the snapshot must cover), then hot ones slot by
 * slot. With cold sweeps, memory-limit evictions and cold-store compaction paused
 * during a job, an entity thawed after its frozen copy was taken lands in a free
 * slot: captured again if the cursor has not passed it (a key captured twice
 * keeps its later copy on restore), else its frozen copy stands, which is its
 * state at the thaw (every later push has a higher LSN and replays).
 * An install or reset aborts the job (the layout it captured is gone).
 *
 * The body goes to a sink as it is encoded: a SnapshotStream (periodic snapshots:
 * lz4 and the file write follow the encoding block by block, wal/snapshot_stream.ts)
 * or one growing buffer (shutdown snapshots, cluster partition exports). A job
 * whose stream has no free block stops its slice early and resumes when one is
 * written (whenRoom): the body is never held whole in memory.
 *
 * Body: a sequence of [u32 LE length][chunk], each chunk v8-serialized except raw slab chunks:
 *   chunk 0            SnapshotMeta  (format, registry version, start LSN, tables: feature signatures, layout)
 *   chunks 1..n        EntityChunk   (one table, frozen buffers as the cold store holds them, cold.ts; format 3: per-entity saves)
 *                      SlabChunk     (one table, hot entities as slab bytes, slab_chunk.ts;
 *                                     formats 5-8 raw bytes by writeSlab, format 4 v8-serialized)
 *                      DedupeChunk   (periodic snapshots: the dedupe entries, written across slices)
 *   last chunk         EndChunk      (dedupe entries when not written before, max LSN and time applied at the end)
 */
import { deserialize, serialize } from 'node:v8';
import type { RegistryState } from '../../registry/model';
import type { WalPosition } from '../../wal';
import { SNAPSHOT_CHUNK_ENTITIES_MAX, SNAPSHOT_CHUNK_ENTITIES_MIN, SNAPSHOT_COLD_CHUNK_ENTITIES, SNAPSHOT_DEDUPE_CHUNK_ENTRIES } from '../../limits';
import { frozenClock, frozenParts } from '../cold/cold';
import type { FixedOp } from '../../ops/fixed';
import type { DedupeEntry, DedupeLog } from '../state/dedupe_log';
import type { ShardState, TableState } from '../state/state';
import { TableColumns, type EntitySave, type LayoutMeta } from '../columns/table_columns';
import { isRawSlab, loadSlab, readSlab, slabSaves, writeSlab, type SlabChunk } from './slab_chunk';

/**
 * 8: a lifetime n_unique, quantile, top_k or entropy may save an entity as its
 *    values, `{ exactValues: [...] }` (exact_column.ts), in object saves and
 *    frozen entities alike; and frozen (cold) entities may be frozen slabs
 *    (slab_chunk.ts writeFrozen, first byte 'E': the entity's slab bytes) beside
 *    frozen buffers of the first encoding (v8-serialized [lastT, lastLsn,
 *    EntitySave], 0xFF). An older build would hand exact values to a sketch's
 *    loader and take a slab for v8 data, so it refuses 8 by number. Everything
 *    else as in 7.
 * 7: a ring group's layout may list `hashed` fields, whose cells hold 53-bit
 *    hashes of the values (ring_group.ts "hashed fields"); an older build would
 *    read them as numbers, so it refuses 7 by number. Everything else as in 6.
 * 6: a ring group may span several windows (table_columns.ts: its layout lists
 *    `windows`; raw slab chunks tagged 'W' carry each entity's skip counts, and
 *    an EntitySave's group saves, also in frozen buffers, a third element with
 *    them); everything else as in 5. An older build refuses it by number.
 * 5: hot entities as raw slab chunks (slab_chunk.ts writeSlab: the arrays as bytes,
 *    not v8-serialized); everything else as in 4.
 * 4: hot entities as slab chunks (slab_chunk.ts), cold ones as frozen buffers.
 * 3: columnar entity state (table_columns.ts): per table its layout (ring groups),
 *    per entity an EntitySave (also what a frozen buffer holds).
 * 2 (before issue 12): per entity one save per feature; it still loads, every
 *    windowed feature as an object column, exactly as it was saved.
 */
export const SNAPSHOT_FORMAT = 8;
const SNAPSHOT_FORMATS_READ = [2, 3, 4, 5, 6, 7, 8];

/** Where a job's body bytes go (copied: the job reuses what it passes). */
export interface BodySink {
  write(bytes: Uint8Array): void;
  /** True when the sink takes no more bytes for now (whenRoom says when it does). */
  readonly full: boolean;
  whenRoom(f: () => void): void;
  /** The body is not wanted any more (the job was dropped). */
  abort(): void;
}

/** A body kept in memory: one buffer grown by doubling. */
export class BodyBuffer implements BodySink {
  #buf = Buffer.allocUnsafe(64 * 1024);
  #n = 0;
  readonly full = false;

  write(bytes: Uint8Array): void {
    if (this.#n + bytes.length > this.#buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#n + bytes.length));
      this.#buf.copy(next, 0, 0, this.#n);
      this.#buf = next;
    }
    this.#buf.set(bytes, this.#n);
    this.#n += bytes.length;
  }

  whenRoom(f: () => void): void {
    setImmediate(f);
  }

  abort(): void {
    this.#buf = Buffer.alloc(0);
    this.#n = 0;
  }

  get body(): Buffer {
    return this.#buf.subarray(0, this.#n);
  }
}

interface SnapshotMeta {
  format: number;
  shardId: number;
  shardCount: number;
  registryVersion: number;
  startLsn: number;
  /**
   * Per table; `hot`: its hot entities when the job began (a restore sizes the
   * entity index for them at once; absent before it was recorded).
   */
  tables: Array<{ name: string; keySignature: string; features: Array<[string, string]>; layout?: LayoutMeta; hot?: number }>;
  /** Where WAL replay after this snapshot may start (WalWriter.position() when it began); absent or null: none. */
  walResume?: WalPosition | null;
}

interface EntityChunk {
  t: number;
  keys: string[];
  lastTs: number[];
  lastLsns: number[];
  /** Hot entities: per entity its EntitySave (format 2: per feature OpState.save()). */
  states: unknown[] | null;
  /** Cold entities: their frozen buffers, as is. */
  frozen: Buffer[] | null;
}

/** Some of the dedupe entries (a periodic snapshot writes them in chunks before the end chunk). */
interface DedupeChunk {
  dedupeMore: DedupeEntry[];
}

interface EndChunk {
  end: true;
  appliedLsn: number;
  lastT: number;
  dedupe: DedupeEntry[];
}

export class SnapshotJob {
  readonly startLsn: number;
  readonly registryVersion: number;
  readonly #state: ShardState;
  readonly #tables: TableState[];
  readonly sink: BodySink;
  /** The length prefix of each chunk (copied by the sink). */
  readonly #len = Buffer.alloc(4);
  #rawBytes = 0;
  #table = 0;
  #cold = true;
  #it: Iterator<[string, Buffer]> | null = null;
  /** Next slot to capture of the current table (hot phase). */
  #slot = 0;
  #dedupeIt: Generator<DedupeEntry> | null = null;
  #dedupeDone = false;
  /** The slots of the hot chunk being encoded (reused by every chunk). */
  readonly #slots = new Int32Array(SNAPSHOT_CHUNK_ENTITIES_MAX);
  /**
   * Encoding time per hot entity, measured on the last chunk (a first guess before
   * any): sizes each chunk to the time left in its slice. A thread's first snapshot
   * runs before the JIT has optimized the encoder, at ~10x the cost of later ones.
   */
  #usPerEntity = 10;
  entities = 0;
  encodeMs = 0;
  /** Longest single step: the longest a batch waited behind this snapshot. */
  maxSliceMs = 0;
  done = false;

  /**
   * `keep`: only these keys (a cluster partition's, shard/persist/partition_io.ts); default every key.
   * `sink`: where the body goes; default a BodyBuffer, read by finish().
   * `walResume`: the WAL writer's position now (recorded when its batch is in the snapshot).
   */
  constructor(state: ShardState, readonly keep: ((key: string) => boolean) | null = null, sink: BodySink = new BodyBuffer(), walResume: WalPosition | null = null) {
    this.#state = state;
    this.sink = sink;
    this.#tables = state.tables;
    this.startLsn = state.appliedLsn;
    this.registryVersion = state.registryVersion;
    const meta: SnapshotMeta = {
      format: SNAPSHOT_FORMAT, shardId: state.opts.shardId, shardCount: state.opts.shardCount,
      registryVersion: state.registryVersion, startLsn: this.startLsn,
      tables: state.tables.map((ts) => ({
        name: ts.plan.name, keySignature: ts.plan.keySignature, features: ts.plan.features.map((f) => [f.name, f.signature]), layout: ts.cols.layoutMeta(), hot: ts.size,
      })),
      // A batch past the job's LSN (appended, not applied) is no resume point.
      walResume: walResume !== null && walResume.lsn <= this.startLsn ? walResume : null,
    };
    this.#push(meta);
  }

  #push(chunk: unknown): void {
    this.#frame(serialize(chunk));
  }

  /** One chunk's bytes into the body, after their u32 length. */
  #frame(bytes: Uint8Array): void {
    this.#len.writeUInt32LE(bytes.length, 0);
    this.sink.write(this.#len);
    this.sink.write(bytes);
    this.#rawBytes += 4 + bytes.length;
  }

  /**
   * Encodes chunks until `budgetMs` has passed or the sink is full. Returns true
   * when every entity is encoded; else call again (after whenRoom).
   */
  step(budgetMs: number): boolean {
    const t0 = performance.now();
    const sink = this.sink;
    while (!this.done && !sink.full) {
      const left = budgetMs - (performance.now() - t0);
      if (left <= 0) break;
      this.#chunk(left);
    }
    const ms = performance.now() - t0;
    this.encodeMs += ms;
    if (ms > this.maxSliceMs) this.maxSliceMs = ms;
    return this.done;
  }

  /** One chunk: of the cold entities (a fixed count), or of hot ones sized to fit `leftMs`. */
  #chunk(leftMs: number): void {
    if (this.#table >= this.#tables.length) {
      if (this.#cold) { this.#cold = false; this.#table = 0; return; }
      this.done = true;
      return;
    }
    const ts = this.#tables[this.#table];
    if (!this.#cold) {
      const want = Math.max(SNAPSHOT_CHUNK_ENTITIES_MIN, Math.min(SNAPSHOT_CHUNK_ENTITIES_MAX, Math.floor((leftMs * 1000) / this.#usPerEntity)));
      const t0 = performance.now();
      const n = this.#hotSlots(ts, want);
      if (n === 0) return;
      this.entities += n;
      // The raw chunk's doubles are aligned to its place in the body (after its length).
      this.#frame(writeSlab(ts.cols, this.#tables.indexOf(ts), this.#slots, n, this.#rawBytes + 4));
      if (n >= SNAPSHOT_CHUNK_ENTITIES_MIN) this.#usPerEntity = Math.max(0.05, ((performance.now() - t0) * 1000) / n);
      return;
    }
    const keys: string[] = [];
    const lastTs: number[] = [];
    const lastLsns: number[] = [];
    const frozen: Buffer[] = [];
    this.#coldChunk(ts, keys, lastTs, lastLsns, frozen);
    if (keys.length === 0) return;
    this.entities += keys.length;
    const t = this.#tables.indexOf(ts);
    const chunk: EntityChunk = { t, keys, lastTs, lastLsns, states: null, frozen };
    this.#push(chunk);
  }

  #coldChunk(ts: TableState, keys: string[], lastTs: number[], lastLsns: number[], frozen: Buffer[]): void {
    if (this.#it === null) this.#it = ts.cold.entries();
    while (keys.length < SNAPSHOT_COLD_CHUNK_ENTITIES) {
      const next = this.#it.next();
      if (next.done) { this.#it = null; this.#table++; break; }
      const [key, buf] = next.value;
      if (this.keep !== null && !this.keep(key)) continue;
      const parts = frozenClock(buf);
      keys.push(key);
      lastTs.push(parts.lastT);
      lastLsns.push(parts.lastLsn);
      frozen.push(buf);
    }
  }

  /**
   * Slots in order: a slot freed and reused after the cursor passed it holds an
   * entity created after the job started (its pushes are all after startLsn).
   */
  #hotSlots(ts: TableState, want: number): number {
    const index = ts.cols.index;
    const slots = this.#slots;
    let n = 0;
    while (n < want) {
      if (this.#slot >= index.high) { this.#slot = 0; this.#table++; break; }
      const slot = this.#slot++;
      if (!index.live(slot) || (this.keep !== null && !this.keep(index.keyOf(slot)))) continue;
      slots[n++] = slot;
    }
    return n;
  }

  /** Runs `f` on a later event-loop turn when the sink takes bytes again. */
  whenRoom(f: () => void): void {
    this.sink.whenRoom(f);
  }

  /** The job is dropped (install, reset): its sink lets the body go. */
  abort(): void {
    this.sink.abort();
  }

  /**
   * The whole body of a BodyBuffer job, after the end chunk (dedupe entries and the LSN reached).
   * Dedupe entries expired at server time `nowMs` are left out (by default the shard's newest
   * push time, which server time is never behind: only entries certainly expired go).
   */
  finish(dedupe: DedupeLog, nowMs = this.#state.lastT): { body: Buffer; rawBytes: number } {
    const sink = this.sink;
    if (!(sink instanceof BodyBuffer)) throw new Error('finish() reads a body kept in memory; a streamed job ends with end()');
    this.#pushEnd(dedupe, nowMs);
    return { body: sink.body, rawBytes: this.#rawBytes };
  }

  /**
   * Appends dedupe entries in chunks of SNAPSHOT_DEDUPE_CHUNK_ENTRIES until
   * `budgetMs` has passed or the sink is full (after every entity is encoded).
   * Returns true when every entry is written; the end chunk then carries none.
   * `nowMs`: server time (entries expired then are left out, as in finish()).
   */
  stepDedupe(dedupe: DedupeLog, budgetMs: number, nowMs = this.#state.lastT): boolean {
    const t0 = performance.now();
    const it = (this.#dedupeIt ??= dedupe.each(nowMs));
    while (!this.#dedupeDone && !this.sink.full && performance.now() - t0 < budgetMs) {
      const batch: DedupeEntry[] = [];
      while (batch.length < SNAPSHOT_DEDUPE_CHUNK_ENTRIES) {
        const r = it.next();
        if (r.done === true) { this.#dedupeDone = true; break; }
        batch.push(r.value);
      }
      if (batch.length > 0) this.#push({ dedupeMore: batch } satisfies DedupeChunk);
    }
    const ms = performance.now() - t0;
    if (ms > this.maxSliceMs) this.maxSliceMs = ms;
    return this.#dedupeDone;
  }

  /** Appends the end chunk (the LSN reached, and the dedupe entries unless stepDedupe wrote them) to the sink: the body is complete. Returns the body's bytes. */
  end(dedupe: DedupeLog, nowMs = this.#state.lastT): number {
    this.#pushEnd(dedupe, nowMs);
    return this.#rawBytes;
  }

  #pushEnd(dedupe: DedupeLog, nowMs: number): void {
    const entries = this.#dedupeDone ? [] : dedupe.entries(nowMs);
    const end: EndChunk = { end: true, appliedLsn: this.#state.appliedLsn, lastT: this.#state.lastT, dedupe: entries };
    this.#push(end);
  }
}

function* chunks(body: Buffer): Generator<unknown> {
  let at = 0;
  while (at + 4 <= body.length) {
    const n = body.readUInt32LE(at);
    // v8.serialize output starts with 0xFF: a raw slab chunk (formats 5, 6) has its own tag.
    yield isRawSlab(body[at + 4]) ? readSlab(body, at + 4, n) : deserialize(body.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
}

/**
 * Restores a snapshot body into `state`: installs the registry version it was taken
 * under, then every entity whose table and features still match by signature (and
 * whose key `keep` accepts, when given).
 * Returns the LSN to replay the WAL after, and the dedupe entries.
 */
export function restoreSnapshot(
  state: ShardState, body: Buffer, registryOf: (version: number) => RegistryState | undefined, keep: ((key: string) => boolean) | null = null,
): { startLsn: number; dedupe: DedupeEntry[]; entities: number; walResume: WalPosition | null } {
  const it = chunks(body);
  const meta = it.next().value as SnapshotMeta;
  if (meta === undefined || !SNAPSHOT_FORMATS_READ.includes(meta.format)) {
    throw new Error(`snapshot format ${String(meta?.format)} is not readable by this version (reads formats ${SNAPSHOT_FORMATS_READ.join(', ')})`);
  }
  const reg = registryOf(meta.registryVersion);
  if (reg !== undefined) state.install(reg);
  const targets = meta.tables.map((t) => targetOf(state, t, meta.format));
  let end: EndChunk | null = null;
  let entities = 0;
  const dedupe: DedupeEntry[] = [];
  for (const c of it) {
    if ((c as EndChunk).end === true) { end = c as EndChunk; break; }
    const more = (c as DedupeChunk).dedupeMore;
    if (more !== undefined) {
      for (const e of more) dedupe.push(e);
      continue;
    }
    const ch = c as EntityChunk | SlabChunk;
    const target = targets[ch.t];
    if (target === null || target === undefined) continue;
    if ('slab' in ch) {
      entities += restoreSlab(target, ch, keep);
      continue;
    }
    for (let e = 0; e < ch.keys.length; e++) {
      const key = ch.keys[e];
      if (keep !== null && !keep(key)) continue;
      entities++;
      restoreEntity(target, key, ch, e);
    }
  }
  state.flushCold();
  if (end === null) throw new Error('snapshot body has no end chunk');
  if (end.appliedLsn > state.appliedLsn) state.appliedLsn = end.appliedLsn;
  if (end.lastT > state.lastT) state.lastT = end.lastT;
  for (const e of end.dedupe) dedupe.push(e);
  return { startLsn: meta.startLsn, dedupe, entities, walResume: meta.walResume ?? null };
}

interface Target {
  ts: TableState;
  /** Saves load one to one (same layout): frozen buffers stay frozen. */
  identity: boolean;
  /** Format 2: a save is one state per feature. */
  perFeature: boolean;
  meta: LayoutMeta;
  map: ReturnType<TableColumns['planLoad']>;
  /** Live feature index of each saved feature, -1 when none takes its state. */
  liveOf: number[];
}

/**
 * The live table a snapshot table restores into, and how its saves load. A live
 * table with no entities (recovery) takes the snapshot's layout, so its saves
 * load one to one; one with entities (a cluster import) keeps its own and maps
 * each save (TableColumns.planLoad).
 */
function targetOf(state: ShardState, t: SnapshotMeta['tables'][number], format: number): Target | null {
  const ts = state.tableByName(t.name);
  if (ts === undefined || ts.plan.keySignature !== t.keySignature) return null;
  const feats = ts.plan.features;
  const liveOf = t.features.map(([n, sig]) => {
    const i = ts.plan.featureIndex.get(n);
    return i !== undefined && feats[i].signature === sig ? i : -1;
  });
  // Format 2 has no groups: every saved feature is an object state.
  const meta: LayoutMeta = format === 2 || t.layout === undefined ? { groups: [] } : t.layout;
  if (ts.size === 0 && ts.cold.size === 0) {
    ts.replaceColumns(TableColumns.fromLayout(ts.plan, meta, liveOf, state.interns));
    // Room for every entity at once: no doubling and rehashing of the index on the way.
    if (t.hot !== undefined) ts.cols.index.reserve(t.hot);
  }
  const sameFeatures = liveOf.length === feats.length && liveOf.every((i, j) => i === j);
  const identity = format !== 2 && sameFeatures && JSON.stringify(ts.cols.layoutMeta()) === JSON.stringify(meta);
  if (!identity) ts.thawAll();
  const map = ts.cols.planLoad(meta, liveOf);
  return { ts, identity, perFeature: format === 2, meta, map, liveOf };
}

/** A slab chunk: bytes straight into the columns when the layout is the snapshot's, else entity by entity. */
function restoreSlab(target: Target, ch: SlabChunk, keep: ((key: string) => boolean) | null): number {
  const { ts, identity, meta, map, liveOf } = target;
  const drop = (key: string): void => {
    if (ts.cold.size > 0) ts.cold.delete(key);
    ts.cols.remove(key);
  };
  // The hot copy of a key is replaced inside loadSlab (one hash insert per key).
  if (identity) return loadSlab(ts.cols, ch, keep, (key) => { if (ts.cold.size > 0) ts.cold.delete(key); });
  const feats = ts.plan.features;
  const saves = slabSaves(ch, meta.groups.map((g) => 1 + g.fields.length), (j) => (liveOf[j] < 0 ? null : feats[liveOf[j]].factory.fixed ?? null));
  let n = 0;
  for (let e = 0; e < ch.keys.length; e++) {
    const key = ch.keys[e];
    if (keep !== null && !keep(key)) continue;
    drop(key);
    ts.cols.addMapped(key, ch.lastTs[e], ch.lastLsns[e], saves[e], meta, map);
    n++;
  }
  return n;
}

function restoreEntity(target: Target, key: string, ch: EntityChunk, e: number): void {
  const { ts, identity, perFeature, meta, map } = target;
  if (ch.frozen !== null && identity) {
    ts.cols.remove(key);
    ts.cold.set(key, ch.frozen[e]);
    return;
  }
  const feats = ts.plan.features;
  const fixedOf = (j: number): FixedOp | null => (target.liveOf[j] < 0 ? null : feats[target.liveOf[j]].factory.fixed ?? null);
  const saved = (ch.frozen !== null ? frozenParts(ch.frozen[e], fixedOf).saved : ch.states![e]) as EntitySave | unknown[];
  ts.cold.delete(key);
  ts.cols.remove(key);
  // Format 2 saved one state per feature: as an EntitySave of a layout without groups.
  const save: EntitySave = perFeature ? [[], saved as unknown[]] : (saved as EntitySave);
  if (identity) ts.cols.addSaved(key, ch.lastTs[e], ch.lastLsns[e], save);
  else ts.cols.addMapped(key, ch.lastTs[e], ch.lastLsns[e], save, meta, map);
}
