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
 * the on-disk store is a cache the snapshot must cover), then hot ones. With cold
 * sweeps, memory-limit evictions and cold-store compaction paused during a job, an entity that moves cold -> hot (a thaw) is appended to the
 * hot map and captured there; a key captured twice keeps its later copy on restore.
 * An install or reset aborts the job (the layout it captured is gone).
 *
 * Body: a sequence of [u32 LE length][v8-serialized chunk]:
 *   chunk 0            SnapshotMeta  (format, registry version, start LSN, tables + feature signatures)
 *   chunks 1..n        EntityChunk   (one table, hot states as OpState.save() or frozen buffers)
 *   last chunk         EndChunk      (dedupe entries, max LSN and time applied at the end)
 */
import { deserialize, serialize } from 'node:v8';
import type { RegistryState } from '../registry/model';
import { frozenParts } from './cold';
import type { DedupeEntry, DedupeLog } from './dedupe_log';
import type { ShardState, TableState } from './state';
import { TableColumns, type EntitySave, type LayoutMeta } from './table_columns';

/**
 * 3: columnar entity state (table_columns.ts): per table its layout (ring groups),
 *    per entity an EntitySave. 2 (before issue 12): per entity one save per feature;
 *    it still loads, every feature as an object column (the layout of a table
 *    without shared rings), exactly as it was saved.
 */
export const SNAPSHOT_FORMAT = 3;
const SNAPSHOT_FORMATS_READ = [2, 3];
/** Entities per chunk (one v8.serialize call): small enough that a chunk stays within a few ms. */
const CHUNK_ENTITIES = 256;

interface SnapshotMeta {
  format: number;
  shardId: number;
  shardCount: number;
  registryVersion: number;
  startLsn: number;
  tables: Array<{ name: string; keySignature: string; features: Array<[string, string]>; layout?: LayoutMeta }>;
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
  readonly #parts: Buffer[] = [];
  #rawBytes = 0;
  #table = 0;
  #cold = true;
  #it: Iterator<[string, Buffer]> | null = null;
  /** Next slot to capture of the current table (hot phase). */
  #slot = 0;
  entities = 0;
  encodeMs = 0;
  /** Longest single step: the longest a batch waited behind this snapshot. */
  maxSliceMs = 0;
  done = false;

  /** `keep`: only these keys (a cluster partition's, shard/partition_io.ts); default every key. */
  constructor(state: ShardState, readonly keep: ((key: string) => boolean) | null = null) {
    this.#state = state;
    this.#tables = state.tables;
    this.startLsn = state.appliedLsn;
    this.registryVersion = state.registryVersion;
    const meta: SnapshotMeta = {
      format: SNAPSHOT_FORMAT, shardId: state.opts.shardId, shardCount: state.opts.shardCount,
      registryVersion: state.registryVersion, startLsn: this.startLsn,
      tables: state.tables.map((ts) => ({
        name: ts.plan.name, keySignature: ts.plan.keySignature, features: ts.plan.features.map((f) => [f.name, f.signature]), layout: ts.cols.layoutMeta(),
      })),
    };
    this.#push(meta);
  }

  #push(chunk: unknown): void {
    const buf = serialize(chunk);
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32LE(buf.length, 0);
    this.#parts.push(len, buf);
    this.#rawBytes += 4 + buf.length;
  }

  /** Encodes chunks until `budgetMs` has passed. Returns true when every entity is encoded. */
  step(budgetMs: number): boolean {
    const t0 = performance.now();
    while (!this.done && performance.now() - t0 < budgetMs) this.#chunk();
    const ms = performance.now() - t0;
    this.encodeMs += ms;
    if (ms > this.maxSliceMs) this.maxSliceMs = ms;
    return this.done;
  }

  #chunk(): void {
    if (this.#table >= this.#tables.length) {
      if (this.#cold) { this.#cold = false; this.#table = 0; return; }
      this.done = true;
      return;
    }
    const ts = this.#tables[this.#table];
    const keys: string[] = [];
    const lastTs: number[] = [];
    const lastLsns: number[] = [];
    const states: EntitySave[] = [];
    const frozen: Buffer[] = [];
    if (this.#cold) this.#coldChunk(ts, keys, lastTs, lastLsns, frozen);
    else this.#hotChunk(ts, keys, lastTs, lastLsns, states);
    if (keys.length === 0) return;
    this.entities += keys.length;
    const t = this.#tables.indexOf(ts);
    const chunk: EntityChunk = { t, keys, lastTs, lastLsns, states: this.#cold ? null : states, frozen: this.#cold ? frozen : null };
    this.#push(chunk);
  }

  #coldChunk(ts: TableState, keys: string[], lastTs: number[], lastLsns: number[], frozen: Buffer[]): void {
    if (this.#it === null) this.#it = ts.cold.entries();
    while (keys.length < CHUNK_ENTITIES) {
      const next = this.#it.next();
      if (next.done) { this.#it = null; this.#table++; break; }
      const [key, buf] = next.value;
      if (this.keep !== null && !this.keep(key)) continue;
      const parts = frozenParts(buf);
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
  #hotChunk(ts: TableState, keys: string[], lastTs: number[], lastLsns: number[], states: EntitySave[]): void {
    const index = ts.cols.index;
    while (keys.length < CHUNK_ENTITIES) {
      if (this.#slot >= index.high) { this.#slot = 0; this.#table++; break; }
      const slot = this.#slot++;
      const key = index.keys[slot];
      if (key === null || (this.keep !== null && !this.keep(key))) continue;
      keys.push(key);
      lastTs.push(index.lastT[slot]);
      lastLsns.push(index.lastLsn[slot]);
      states.push(ts.cols.save(slot));
    }
  }

  /** The whole body, after the end chunk (dedupe entries and the LSN reached). */
  finish(dedupe: DedupeLog): { body: Buffer; rawBytes: number } {
    const end: EndChunk = { end: true, appliedLsn: this.#state.appliedLsn, lastT: this.#state.lastT, dedupe: dedupe.entries(Date.now()) };
    this.#push(end);
    return { body: Buffer.concat(this.#parts), rawBytes: this.#rawBytes };
  }
}

function* chunks(body: Buffer): Generator<unknown> {
  let at = 0;
  while (at + 4 <= body.length) {
    const n = body.readUInt32LE(at);
    yield deserialize(body.subarray(at + 4, at + 4 + n));
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
): { startLsn: number; dedupe: DedupeEntry[]; entities: number } {
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
  for (const c of it) {
    if ((c as EndChunk).end === true) { end = c as EndChunk; break; }
    const ch = c as EntityChunk;
    const target = targets[ch.t];
    if (target === null || target === undefined) continue;
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
  return { startLsn: meta.startLsn, dedupe: end.dedupe, entities };
}

interface Target {
  ts: TableState;
  /** Saves load one to one (same layout): frozen buffers stay frozen. */
  identity: boolean;
  /** Format 2: a save is one state per feature. */
  perFeature: boolean;
  meta: LayoutMeta;
  map: ReturnType<TableColumns['planLoad']>;
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
  if (ts.size === 0 && ts.cold.size === 0) ts.replaceColumns(TableColumns.fromLayout(ts.plan, meta, liveOf));
  const sameFeatures = liveOf.length === feats.length && liveOf.every((i, j) => i === j);
  const identity = format !== 2 && sameFeatures && JSON.stringify(ts.cols.layoutMeta()) === JSON.stringify(meta);
  if (!identity) ts.thawAll();
  const map = ts.cols.planLoad(meta, liveOf);
  return { ts, identity, perFeature: format === 2, meta, map };
}

function restoreEntity(target: Target, key: string, ch: EntityChunk, e: number): void {
  const { ts, identity, perFeature, meta, map } = target;
  if (ch.frozen !== null && identity) {
    ts.cols.remove(key);
    ts.cold.set(key, ch.frozen[e]);
    return;
  }
  const saved = (ch.frozen !== null ? frozenParts(ch.frozen[e]).saved : ch.states![e]) as EntitySave | unknown[];
  ts.cold.delete(key);
  ts.cols.remove(key);
  // Format 2 saved one state per feature: as an EntitySave of a layout without groups.
  const save: EntitySave = perFeature ? [[], saved as unknown[]] : (saved as EntitySave);
  if (identity) ts.cols.addSaved(key, ch.lastTs[e], ch.lastLsns[e], save);
  else ts.cols.addMapped(key, ch.lastTs[e], ch.lastLsns[e], save, meta, map);
}
