/**
 * The aggregates a shard owns: per table its entities (key -> slot) and every
 * feature's state in columns by slot (../columns/table_columns.ts), its cold store
 * and the registry plans. Only the shard thread touches this; no locks. Applying a
 * push and reading a row are synchronous; the registry plans are swapped whole on
 * install.
 */
import { strict as assert } from 'node:assert';
import { compileRegistry, SlicedCompile, type CompiledRegistry, type TablePlan } from '../../registry/compile';
import { partitionOf, shardOf } from '../../registry/key';
import { renamesBetween, underNewNames } from '../../coordinator/renames';
import type { RegistryState } from '../../registry/model';
import type { RegistrySource } from '../../registry/wire';
import type { Row } from '../../types';
import { SweepCursor } from '../cold/cold';
import { freeze, frozenParts, thaw } from '../cold/frozen_entity';
import type { FixedOp } from '../../ops/fixed';
import { TableColumns } from '../columns/table_columns';
import type { InternTable } from './intern';
import type { DroppedCells } from '../columns/dropped_cells';
import { keyHash } from './entity_index';
import { strOf } from '../../wal/push_record';
import { MemColdStore, type ColdStore } from '../cold/cold_store';
import type { ColdFiles } from '../cold/cold_files';
import { jsonText } from './json_text';
import { SfError } from '../../errors';
import { COLD_SWEEP_ENTITIES_PER_TICK, MEMORY_EVICT_SCAN_ENTITIES, RESPONSE_BYTES_MAX } from '../../limits';

/** Cold-store counters of a shard (/metrics via shard_stats.ts). */
export class ColdCounters {
  /** Idle entities frozen into the cold store (cold_after). */
  frozen = 0;
  /** Idle or evicted entities dropped because every feature was back to empty. */
  dropped = 0;
  /** Entities frozen because the shard was over --memory-limit. */
  evicted = 0;
  /** Cold entities brought back by a push or read. */
  thawed = 0;
  /** Pushes refused with memory_limit_exceeded (memory-only mode). */
  refused = 0;
}

export class TableState {
  readonly cursor = new SweepCursor();
  /** Memory-limit eviction's own cursor (it looks at every entity, not only idle ones). */
  readonly lruCursor = new SweepCursor();
  constructor(
    public plan: TablePlan,
    /**
     * The hot entities: key -> slot, and every feature's state by slot
     * (table_columns.ts). Per slot, `lastT` is the server time of the last push
     * that reached the entity (cold eviction) and `lastLsn` the LSN of the last
     * push applied to it. Snapshots are fuzzy (written in slices between batches,
     * snapshot_job.ts): replay after a snapshot skips the records an entity
     * already reflects (lsn <= lastLsn), like a page LSN.
     */
    public cols: TableColumns,
    /** `cold_after` of the table's root event, or null (never evicted). */
    public coldAfterMs: number | null = null,
    /** Entities idle past `cold_after` (or evicted by --memory-limit), frozen (cold.ts); thawed by the next push or read. */
    readonly cold: ColdStore = new MemColdStore(),
    readonly counters: ColdCounters = new ColdCounters(),
  ) {}

  /** Hot entities. */
  get size(): number {
    return this.cols.size;
  }

  /** The slot of `key`'s hot entity, thawing it from the cold store if it is there; -1 when it has none. */
  hot(key: string): number {
    const slot = this.cols.index.slotOf(key);
    if (slot >= 0 || this.cold.size === 0) return slot;
    const buf = this.cold.take(key);
    if (buf === undefined) return -1;
    this.counters.thawed++;
    return thaw(buf, this.cols, key);
  }

  /** Whether `key` exists, hot or cold (without thawing it). */
  holds(key: string): boolean {
    return this.cols.index.slotOf(key) >= 0 || (this.cold.size > 0 && this.cold.has(key));
  }

  /**
   * Takes the entity at `slot` out of hot memory: dropped when every feature is
   * empty from `t` on (a later get of the key answers `{}`, as for a key never
   * pushed; docs/durability.md), else frozen into the cold store. Returns true when dropped.
   */
  evict(slot: number, t: number): boolean {
    if (this.cols.emptyAt(slot, t)) {
      this.cols.removeSlot(slot);
      this.counters.dropped++;
      return true;
    }
    this.cold.set(this.cols.index.keyOf(slot), freeze(this.cols, slot));
    this.cols.removeSlot(slot);
    return false;
  }

  /**
   * A forget: the entity of `key` goes, hot or frozen, without thawing it (a frozen
   * one is also overwritten where the disk cold store holds it, cold_store.ts
   * erase). True when there was one.
   */
  forget(key: string): boolean {
    const hot = this.cols.remove(key);
    const cold = this.cold.size > 0 && this.cold.erase(key);
    return hot || cold;
  }

  /** Replaces the (empty) columns by another layout of the same plan (snapshot restore). */
  replaceColumns(cols: TableColumns): void {
    assert(this.cols.size === 0 && this.cold.size === 0, 'layout replaced under live entities');
    assert(cols.plan === this.plan);
    this.cols = cols;
  }

  /** Thaws every cold entity (before its feature layout changes). */
  thawAll(): void {
    for (const key of [...this.cold.keys()]) this.hot(key);
  }
}

/** `cold_after` of the source event at the root of a table's upstream chain. */
function coldAfterOf(reg: CompiledRegistry, table: string): number | null {
  let def = reg.defs.get(table);
  for (let hops = 0; def !== undefined && def.kind !== 'event' && hops < 1000; hops++) def = reg.defs.get(def.upstream);
  return def !== undefined && def.kind === 'event' ? def.coldAfterMs : null;
}

export interface ShardOptions {
  shardId: number;
  shardCount: number;
  memoryGovEnforce: boolean;
  /** Cluster mode: partitions of the cluster (a pushed event is applied only to keys of its message's partition); 0 = single node. */
  partitions?: number;
  /** The shard's on-disk cold store; absent or null: cold entities stay in memory, frozen (memory-only mode). */
  coldFiles?: ColdFiles | null;
}

/**
 * A registry version made ready ahead of its install, in slices between batches
 * (PREPARE items, shard.ts): first its compile, then the column storage of
 * each table that will start empty (allocating rings for a 100-feature table
 * costs milliseconds, a 4,000-feature registry ~150 ms: too long for one turn).
 * Nothing here is visible until the INSTALL swaps it in.
 */
export class PreparedVersion {
  readonly #fresh = new Map<TablePlan, TableColumns>();
  #tables: Iterator<TablePlan> | null = null;
  /** The previous version under this one's names (renames only), compiled in slices too. */
  #ref: SlicedCompile | null = null;
  #refFailed = false;
  #done = false;

  constructor(
    private readonly compile: SlicedCompile,
    /** The version this one follows (install checks it is still the current one). */
    readonly previous: CompiledRegistry | null,
    private readonly memoryGovEnforce: boolean,
    private readonly startsEmpty: (plan: TablePlan) => boolean,
    /** The shard's intern tables (ShardState.interns). */
    private readonly interns: Map<string, InternTable>,
  ) {}

  get version(): number {
    return this.compile.version;
  }

  get done(): boolean {
    return this.#done;
  }

  /** Works for about `budgetMs`; true once done (a failed compile is done: the install reports it). */
  step(budgetMs: number): boolean {
    if (this.#done) return true;
    const end = performance.now() + budgetMs;
    if (!this.compile.step(budgetMs)) return false;
    let reg: CompiledRegistry;
    try { reg = this.compile.finish(); } catch { this.#done = true; return true; }
    if (this.#tables === null) {
      this.#tables = reg.tables.values();
      const moved = renamesBetween(this.previous === null ? null : this.previous.state, reg.state);
      if (moved.length > 0) this.#ref = new SlicedCompile(underNewNames(this.previous!.state, moved), { memoryGovEnforce: this.memoryGovEnforce, pushValidators: false, previous: this.previous });
    }
    if (this.#ref !== null && !this.#refFailed) {
      const left = end - performance.now();
      if (!this.#ref.step(Math.max(0, left))) return false;
      try { this.#ref.finish(); } catch { this.#refFailed = true; }
    }
    for (;;) {
      const n = this.#tables.next();
      if (n.done === true) { this.#done = true; return true; }
      if (this.startsEmpty(n.value)) this.#fresh.set(n.value, new TableColumns(n.value, null, true, this.interns));
      if (performance.now() >= end) return false;
    }
  }

  /** The compiled version (compiling what is left now); throws the compile's error. */
  finish(): CompiledRegistry {
    return this.compile.finish();
  }

  /**
   * The previous version under this one's names if the prepare compiled it (a
   * rename), null if that compile failed, undefined if it was not made here.
   */
  renamedPrevious(): CompiledRegistry | null | undefined {
    if (this.#ref === null || !this.#ref.done) return undefined;
    return this.#refFailed ? null : this.#ref.finish();
  }

  /** Storage built ahead for `plan` of this version (once), or null. */
  columnsFor(plan: TablePlan): TableColumns | null {
    const cols = this.#fresh.get(plan);
    if (cols === undefined) return null;
    this.#fresh.delete(plan);
    return cols;
  }
}

export class ShardState {
  registry: CompiledRegistry | null = null;
  /** By table index of the current registry. */
  tables: TableState[] = [];
  readonly #byName = new Map<string, TableState>();
  /** Highest server time applied: reads never go backwards in time. */
  lastT = 0;
  /** Highest LSN applied (snapshots cover up to here). */
  appliedLsn = 0;
  readonly counters = new ColdCounters();
  /**
   * String values interned per column name for every table of the shard
   * (table_columns.ts `interns`): reference counted by the cells that hold them,
   * so a table or feature that goes gives its references back (install: #dropped).
   */
  readonly interns = new Map<string, InternTable>();
  /** Cells a registry change dropped that still hold references in `interns`: released in slices (releaseDropped). */
  readonly #dropped: DroppedCells[] = [];
  readonly #onDropped = (cells: DroppedCells): void => { this.#dropped.push(cells); };
  /**
   * Memory-only mode over --memory-limit (shard.ts sets it at each memory check): a push
   * that would create an entity is refused with memory_limit_exceeded; existing
   * entities keep updating.
   */
  refuseNew = false;

  constructor(readonly opts: ShardOptions) {
    assert(opts.shardId >= 0 && opts.shardId < opts.shardCount);
  }

  get registryVersion(): number {
    return this.registry === null ? 0 : this.registry.version;
  }

  /**
   * Installs a registry version, keeping the state of every feature whose signature
   * is unchanged (same rows, same key, same op and params, same types of the columns
   * it reads); everything else starts empty. Renames come from the states
   * themselves (`renamed_from`, coordinator/renames.ts) so that WAL replay after a
   * restart keeps exactly what the live install kept; `renames` from the caller is
   * merged in for completeness. Across a rename the previous version is recompiled
   * under the new names, because signatures embed source event names.
   */
  install(source: RegistrySource, renames: ReadonlyArray<[string, string]> = []): void {
    if (this.registry !== null && this.registry.version === source.version) return;
    const prev = this.registry;
    // Incremental: unchanged nodes reuse the previous version's compiled artefacts.
    const opts = { memoryGovEnforce: this.opts.memoryGovEnforce, pushValidators: false, previous: prev };
    const ready = this.#prepared !== null && this.#prepared.version === source.version && this.#prepared.previous === prev ? this.#prepared : null;
    this.#prepared = null;
    const next = ready !== null ? ready.finish() : compileRegistry(source, opts);
    const fromStates = renamesBetween(prev === null ? null : prev.state, next.state);
    const moved = new Map(fromStates);
    for (const [from, to] of renames) if (!moved.has(from)) moved.set(from, to);
    let ref: CompiledRegistry | null = prev;
    if (prev !== null && moved.size > 0) {
      // The prepare compiled the renames the states give; the caller's extra ones need a compile here.
      const prepared = ready?.renamedPrevious();
      if (prepared !== undefined && moved.size === fromStates.length) ref = prepared;
      else {
        try {
          ref = compileRegistry(underNewNames(prev.state, [...moved]), opts);
        } catch {
          ref = null; // Cannot compare across this rename: the affected tables start empty.
        }
      }
    }
    const renamedTo = new Map([...moved].map(([from, to]) => [to, from]));
    const tables: TableState[] = [];
    const carried = new Set<TableState>();
    for (const plan of next.tables.values()) {
      const old = this.#byName.get(renamedTo.get(plan.name) ?? plan.name);
      const oldRef = ref === null ? undefined : ref === prev ? old?.plan : ref.tables.get(plan.name);
      if (old === undefined || oldRef === undefined || oldRef.keySignature !== plan.keySignature) {
        tables.push(new TableState(plan, ready?.columnsFor(plan) ?? new TableColumns(plan, null, true, this.interns), null, this.#newCold(), this.counters));
      } else {
        tables.push(carryOver(old, plan, oldRef, () => this.#newCold(), this.#onDropped));
        carried.add(old);
      }
    }
    // A table that went (dropped, or its key changed) gives back the references its cells
    // hold in the shard's intern tables: later, in slices (a 1M-entity table takes ~170 ms).
    for (const t of this.tables) if (!carried.has(t) && t.cols.size > 0) this.#dropped.push(t.cols.dropAll());
    for (const t of tables) t.coldAfterMs = coldAfterOf(next, t.plan.name);
    this.#disposeCold(this.tables, tables);
    this.flushCold();
    this.registry = next;
    this.tables = tables;
    this.#byName.clear();
    for (const t of tables) this.#byName.set(t.plan.name, t);
  }

  /**
   * The version a PREPARE started compiling in slices between batches (shard.ts),
   * swapped in by the INSTALL of that version without compiling again.
   */
  #prepared: PreparedVersion | null = null;

  /** The sliced preparation of `source` (started now unless already under way or done). */
  prepare(source: RegistrySource): PreparedVersion {
    if (this.#prepared === null || this.#prepared.version !== source.version || this.#prepared.previous !== this.registry) {
      const compile = new SlicedCompile(source, { memoryGovEnforce: this.opts.memoryGovEnforce, pushValidators: false, previous: this.registry });
      this.#prepared = new PreparedVersion(compile, this.registry, this.opts.memoryGovEnforce, (plan) => this.#byName.get(plan.name)?.plan.keySignature !== plan.keySignature, this.interns);
    }
    return this.#prepared;
  }

  /** The preparation a PREPARE of `version` started, if it is the current one. */
  preparing(version: number): PreparedVersion | null {
    return this.#prepared !== null && this.#prepared.version === version ? this.#prepared : null;
  }

  #newCold(): ColdStore {
    const files = this.opts.coldFiles ?? null;
    return files === null ? new MemColdStore() : files.newStore();
  }

  /** Cold stores of `before` that no table of `after` kept: their entries are gone. */
  #disposeCold(before: readonly TableState[], after: readonly TableState[]): void {
    const kept = new Set(after.map((t) => t.cold));
    for (const t of before) {
      if (kept.has(t.cold)) continue;
      t.cold.clear();
      this.opts.coldFiles?.forget(t.cold as import('../cold/cold_files').DiskColdStore);
    }
  }

  /** Clears every aggregate and installs `state` (normally empty). */
  reset(state: RegistryState): void {
    this.#prepared = null;
    this.#disposeCold(this.tables, []);
    this.opts.coldFiles?.clear();
    this.registry = null;
    this.tables = [];
    // Every table goes: so do their interned values (nothing left to release).
    this.#dropped.length = 0;
    this.interns.clear();
    this.#byName.clear();
    this.lastT = 0;
    this.install(state);
  }

  /** Time and LSN of a push applied (also one that reaches no entity of this shard). */
  advance(t: number, lsn: number): void {
    if (t > this.lastT) this.lastT = t;
    if (lsn > this.appliedLsn) this.appliedLsn = lsn;
  }

  /**
   * One feed of a PUSH record (push_apply.ts): the row reaching table `ts` for the
   * entity whose key is `len` bytes at `from` of `b` (str tag `tag`), at time `t`
   * with LSN `lsn`. The key is looked up without a key string; one is decoded only
   * to ask the cold store about a key that is not hot. Skipped when the entity
   * already reflects `lsn` (replay over a fuzzy snapshot). `r` is only read during
   * the call (the applier reuses it).
   */
  applyFeedBytes(ts: TableState, b: Buffer, from: number, len: number, tag: number, r: Row, t: number, lsn: number): void {
    const index = ts.cols.index;
    const h = keyHash(b, from, len, tag);
    let slot = index.findBytes(b, from, len, tag, h);
    if (slot < 0 && ts.cold.size > 0) slot = ts.hot(strOf(b, from, len, tag));
    if (slot < 0) slot = ts.cols.addBytes(b, from, len, tag, h, t, 0);
    else if (lsn <= index.lastLsn[slot]) return; // replay over a fuzzy snapshot: this entity already has the event
    index.lastT[slot] = t;
    index.lastLsn[slot] = lsn;
    applyFeatures(ts, slot, r, t);
  }

  /** The refusal of a push that would create an entity while `refuseNew` (counted). */
  refuseNewEntity(): never {
    this.counters.refused++;
    throw new SfError('memory_limit_exceeded', `shard ${this.opts.shardId} is over --memory-limit and runs without disk (--memory-only): new entities are refused until memory is freed; pushes to existing entities keep working`);
  }

  /**
   * The row of `key` as JSON text (a get, resolved to indexes on the front:
   * GetItem): `f` lists feature indexes of `ts.plan` (null: all of them, in
   * order). `{}` for a key never pushed, or dropped once cold and empty. Throws
   * response_too_large as soon as the text passes `budget` UTF-16 units (each
   * feature's text is bounded, so the row never grows far past it).
   */
  readRow(ts: TableState, key: string, f: readonly number[] | null, now: number, budget = RESPONSE_BYTES_MAX): string {
    const slot = ts.hot(key);
    if (slot < 0) return '{}';
    if (budget <= 0) overBudget();
    const t = now > this.lastT ? now : this.lastT;
    // The row is written as JSON text directly (no intermediate object): `"name":`
    // prefixes are built once per registry version (FeaturePlan.jsonKey).
    const feats = ts.plan.features;
    const cols = ts.cols;
    const n = f === null ? feats.length : f.length;
    let out = '{';
    for (let j = 0; j < n; j++) {
      const i = f === null ? j : f[j];
      if (j > 0) out += ',';
      out += feats[i].jsonKey + jsonText(cols.read(i, slot, t));
      if (out.length > budget) overBudget();
    }
    return out + '}';
  }

  tableByName(name: string): TableState | undefined {
    return this.#byName.get(name);
  }

  entityCount(): number {
    let n = 0;
    for (const t of this.tables) n += t.size + t.cold.size;
    return n;
  }

  coldCount(): number {
    let n = 0;
    for (const t of this.tables) n += t.cold.size;
    return n;
  }

  /** Cluster mode: is `key` one of partition `p`'s keys held by this shard? */
  ownsInPartition(key: string, p: number): boolean {
    const { shardId, shardCount } = this.opts;
    return partitionOf(key, this.opts.partitions ?? 0) === p && (shardCount === 1 || shardOf(key, shardCount) === shardId);
  }

  /** Cluster mode: forgets every entity of partition `p` (before a checkpoint of it is imported). Returns how many. */
  dropPartition(p: number): number {
    const parts = this.opts.partitions ?? 0;
    let n = 0;
    for (const ts of this.tables) {
      for (const slot of ts.cols.index.liveSlots()) {
        if (partitionOf(ts.cols.index.keyOf(slot), parts) === p) { ts.cols.removeSlot(slot); n++; }
      }
      for (const key of ts.cold.keys()) if (partitionOf(key, parts) === p) { ts.cold.delete(key); n++; }
    }
    return n;
  }

  /**
   * Takes entities idle past their table's cold_after out of hot memory (frozen
   * into the cold store, or dropped when empty); bounded work per call. Returns
   * entities taken out (frozen + dropped).
   */
  sweepCold(now: number, budget = COLD_SWEEP_ENTITIES_PER_TICK, deadline = Number.POSITIVE_INFINITY): number {
    // Dropped tables' references first; out of time, the next slice goes on (shard.ts #sweepSlice).
    if (!this.releaseDropped(deadline)) return 0;
    // Emptiness at the time a read now would use: reads never go back before it.
    const t = now > this.lastT ? now : this.lastT;
    let out = 0;
    for (const ts of this.tables) {
      if (ts.coldAfterMs === null || ts.size === 0) continue;
      out += ts.cursor.sweep(ts.cols.index, now - ts.coldAfterMs, budget, (slot) => {
        if (!ts.evict(slot, t)) this.counters.frozen++;
      }, deadline);
    }
    this.flushCold();
    return out;
  }

  /**
   * Releases dropped tables' interned references until `deadline` (performance.now());
   * true when none is left. The cold sweep runs it first, every slice.
   */
  releaseDropped(deadline = Number.POSITIVE_INFINITY): boolean {
    const dropped = this.#dropped;
    while (dropped.length > 0) {
      if (!dropped[0].step(deadline)) return false;
      dropped.shift();
    }
    return true;
  }

  /**
   * --memory-limit: takes about `fraction` of the hot entities out of memory, the
   * least recently pushed first (approximately: the oldest `fraction` of the next
   * MEMORY_EVICT_SCAN_ENTITIES of each table, a resumable scan). Returns entities taken out.
   */
  evictColdest(fraction: number, now: number, scan = MEMORY_EVICT_SCAN_ENTITIES): number {
    const t = now > this.lastT ? now : this.lastT;
    let out = 0;
    for (const ts of this.tables) {
      if (ts.size === 0) continue;
      const index = ts.cols.index;
      const seen: Array<[number, number]> = [];
      ts.lruCursor.sweep(index, Number.POSITIVE_INFINITY, Math.min(scan, ts.size), (slot) => { seen.push([index.lastT[slot], slot]); });
      // The sweep only listed them (nothing removed yet): evict the oldest share.
      seen.sort((a, b) => a[0] - b[0]);
      const n = Math.ceil(seen.length * fraction);
      for (let i = 0; i < n; i++) {
        if (!ts.evict(seen[i][1], t)) this.counters.evicted++;
        out++;
      }
    }
    this.flushCold();
    return out;
  }

  /** Writes frozen entities queued for the disk cold store (no-op in memory). */
  flushCold(): void {
    this.opts.coldFiles?.flush();
  }
}

function overBudget(): never {
  throw new SfError('response_too_large', `the answer is over the ${RESPONSE_BYTES_MAX}-byte response limit (RESPONSE_BYTES_MAX); ask for fewer entries or features`);
}

/** The feature-apply seam: one row that reached table `ts`, for the entity at `slot`. */
function applyFeatures(ts: TableState, slot: number, r: Row, t: number): void {
  ts.cols.apply(slot, r, t);
}

/**
 * Same key signature: keep the entities; per feature keep the state when its
 * signature is unchanged. `ref` is the previous plan with signatures comparable to
 * `plan` (the old plan itself, or recompiled under new names across a rename); its
 * features are in the same order as `old.plan`'s.
 */
function carryOver(old: TableState, plan: TablePlan, ref: TablePlan, newCold: () => ColdStore, dropped: (cells: DroppedCells) => void): TableState {
  const map: number[] = plan.features.map((f) => {
    const j = ref.featureIndex.get(f.name);
    return j !== undefined && ref.features[j].signature === f.signature ? j : -1;
  });
  const identity = map.length === old.plan.features.length && map.every((j, i) => j === i);
  // Frozen entities keep the old feature layout: identical layouts keep them frozen.
  if (identity) {
    old.cols.plan = plan;
    old.cols.rebind();
    return new TableState(plan, old.cols, null, old.cold, old.counters);
  }
  // The layout frozen entities were saved in, before carry() rewrites the groups.
  const meta = old.cols.layoutMeta();
  const cols = old.cols.carry(plan, map, dropped);
  // Frozen entities are remapped one at a time into a new store (install disposes
  // of the old one): each loads into the new layout as a save of the old one
  // (planLoad/addMapped), is frozen again and leaves; they never all come back to memory.
  let cold = old.cold;
  if (cold.size > 0) {
    cold = newCold();
    const liveOf: number[] = new Array(old.plan.features.length).fill(-1);
    map.forEach((j, i) => { if (j >= 0) liveOf[j] = i; });
    const load = cols.planLoad(meta, liveOf);
    const fixedOf = (j: number): FixedOp | null => (liveOf[j] < 0 ? null : plan.features[liveOf[j]].factory.fixed ?? null);
    for (const [key, buf] of old.cold.entries()) {
      const { lastT, lastLsn, saved } = frozenParts(buf, fixedOf);
      const slot = cols.addMapped(key, lastT, lastLsn, saved, meta, load);
      cold.set(key, freeze(cols, slot));
      cols.remove(key);
    }
  }
  return new TableState(plan, cols, null, cold, old.counters);
}
