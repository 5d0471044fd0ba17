/**
 * One shard's batch execution, behind the thin worker entry (shard_main.ts) so
 * that unit tests can drive it with a ShardState, a store (or none) and a batch.
 *
 *   for each run of items up to a RESET/SNAPSHOT marker:
 *     1. seal the run's WAL frames (pushes, installs and forgets, in item order,
 *        written by the front into ShardBatch.bytes) and write them: ONE write, no copy
 *     2. walk the run in order: apply pushes and forgets (only if the write
 *        succeeded), install registries, read rows for gets
 *   markers run in their place in the order.
 *
 * Ordering rule: a batch's records are on disk (written; fdatasync'ed too with
 * --wal-sync always) before any of its pushes is applied or answered, because an
 * answered push must survive a crash; a failed write applies nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { strict as assert } from 'node:assert';
import { asSfError, SfError } from '../errors';
import type { Logger } from '../log';
import {
  ITEM_EXPORT, ITEM_FORGET, ITEM_GET, ITEM_IMPORT, ITEM_INSPECT, ITEM_INSTALL, ITEM_PREPARE, ITEM_PUSH, ITEM_RESET, ITEM_SNAPSHOT, ITEM_STATS, PREPARE_PENDING,
  type ErrorPayload, type GetItem, type InspectItem, type ServedRowOut, type InspectResult, type PushRunOut, type ShardBatch, type ShardBatchResult, type ShardHello, type ShardInit, type ShardItem,
} from '../protocol/messages';
import { COLD_COMPACT_BYTES_PER_TICK, COLD_SWEEP_SLICE_MS, MEMORY_CHECK_INTERVAL_MS, MEMORY_EVICT_FRACTION_MAX, MEMORY_EVICT_TARGET_RATIO, REGISTRY_COMPILE_SLICE_MS, RESPONSE_BYTES_MAX, SNAPSHOT_SLICE_MS } from '../limits';
import { getHeapStatistics } from 'node:v8';
import type { RegistryWire } from '../registry/wire';
import { FRAME_LENGTH_CRC_BYTES, FRAME_TYPE_BYTES } from '../wal/constants';
import { frameEnd, sealFrame } from '../wal/push_record';
import { readU64 } from '../wal/u64';
import type { ShardAudit } from '../wal/loss';
import type { DedupeLog } from './state/dedupe_log';
import { PushApplier } from './state/push_apply';
import { applyForget } from './state/forget_apply';
import type { SnapshotJob } from './persist/snapshot_job';
import type { ShardState } from './state/state';
import type { ShardStore } from './persist/store';
import { coldView, snapshotView, tableStats, type ShardStats } from './shard_stats';
import type { ColdFiles } from './cold/cold_files';
import { exportPartition, importPartition } from './persist/partition_io';
import type { ThreadSampler } from '../admin/thread_stats';
import { TL, tlNow, tlSpan } from '../timeline';
import { reservationsRefused, unaccountedBytes } from '../util/unaccounted';
import { ServerClock } from '../clock';


export interface ShardDeps {
  init: ShardInit;
  state: ShardState;
  dedupe: DedupeLog;
  /** null in memory-only mode. */
  store: ShardStore | null;
  /** The on-disk cold store (cold_files.ts); null in memory-only mode. */
  coldFiles: ColdFiles | null;
  log: Logger;
  /** `audit`: what recovery proved lost (disk mode), for the boot verdict (ShardHello.audit). */
  recovered: { lastLsn: number; records: number; ms: number; audit?: ShardAudit };
  /** Thread figures for STATS (admin). */
  sampler: ThreadSampler;
  /** Server time (reads, cold sweeps, dedupe expiry): the server's (a view), or a clock of its own outside a server. */
  clock?: ServerClock;
}

/** Offset of the lsn in a frame (every WAL payload starts with it). */
const LSN_AT = FRAME_LENGTH_CRC_BYTES + FRAME_TYPE_BYTES;

export class Shard {
  readonly #init: ShardInit;
  readonly #state: ShardState;
  readonly #dedupe: DedupeLog;
  readonly #store: ShardStore | null;
  readonly #coldFiles: ColdFiles | null;
  readonly #log: Logger;
  readonly #recovered: { lastLsn: number; records: number; ms: number; audit?: ShardAudit };
  readonly #sampler: ThreadSampler;
  readonly #clock: ServerClock;
  readonly #pushes: PushApplier;
  /** WAL outcome of the batch being handled (ShardBatchResult.walError); a failure sticks for the batch. */
  #walOutcome: string | null | undefined = undefined;
  /** The batch's frames and the offset of the next one to apply. */
  #bytes: Buffer = Buffer.alloc(0);
  #cursor = 0;
  /** Row text units per batch_get group of the run being handled (#runItems). */
  readonly #groupUnits = new Map<number, number>();
  #job: SnapshotJob | null = null;
  #snapshotWriting = false;
  #prepareScheduled = false;
  #sweepQueued = false;
  /** The shard's memory as last measured (measureMemory), and when (performance.now()). */
  #measuredBytes = measureMemory();
  #measuredAtMs = Number.NEGATIVE_INFINITY;
  /** Sweep counters at the last shard.cold_evicted line; atMs: when (performance.now()) the first eviction not yet logged happened (0: none). */
  #logged = { frozen: 0, dropped: 0, evicted: 0, atMs: 0 };
  /** Refused address-space reservations already logged (util/unaccounted.ts). */
  #refusedLogged = 0;

  constructor(deps: ShardDeps) {
    this.#init = deps.init;
    this.#state = deps.state;
    this.#dedupe = deps.dedupe;
    this.#store = deps.store;
    this.#coldFiles = deps.coldFiles;
    this.#log = deps.log;
    this.#recovered = deps.recovered;
    this.#sampler = deps.sampler;
    this.#clock = deps.clock ?? ServerClock.owner();
    this.#pushes = new PushApplier(deps.state);
  }

  hello(): ShardHello {
    const r = this.#recovered;
    const lastTimeMs = Math.max(this.#state.lastT, this.#store?.snapshotStats.lastSuccessMs ?? 0);
    return { shardId: this.#init.shardId, lastLsn: r.lastLsn, recoveredRecords: r.records, dedupe: this.#dedupe.entries(this.#clock.nowMs()), audit: r.audit ?? null, lastTimeMs };
  }

  runBatch(batch: ShardBatch): ShardBatchResult {
    const items = batch.items;
    const store = this.#store;
    this.#bytes = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength);
    this.#cursor = 0;
    // A background fdatasync failure since the last batch counts against this one.
    this.#walOutcome = store?.pendingSyncError ?? undefined;
    if (store !== null) store.pendingSyncError = null;
    const outs: ShardBatchResult['outs'] = new Array(items.length).fill(null);
    let from = 0;
    for (let i = 0; i <= items.length; i++) {
      const marker = i < items.length && (items[i].k === ITEM_RESET || items[i].k === ITEM_SNAPSHOT);
      if (i === items.length || marker) {
        if (i > from) this.#runItems(items, from, i, outs);
        if (marker) outs[i] = this.#runMarker(items[i]);
        from = i + 1;
      }
    }
    assert(this.#cursor === this.#bytes.length, 'every frame of the batch belongs to an item');
    const walOutcome = this.#walOutcome;
    return walOutcome === undefined ? { outs } : { outs, walError: walOutcome };
  }

  /**
   * Between batches, every COLD_SWEEP_INTERVAL_MS (a timer of shard_main.ts): cold
   * sweep slices, --memory-limit checks and eviction, cold store compaction.
   * Intervals are monotonic (`mono`: performance.now()); eviction reads emptiness at server time.
   */
  memoryTick(mono = performance.now()): void {
    const state = this.#state;
    const limit = this.#init.memoryLimitBytes;
    // The heap figure moves slowly (and only drops at a GC): measured and acted on once a second.
    const check = mono - this.#measuredAtMs >= MEMORY_CHECK_INTERVAL_MS;
    if (check) {
      this.#measuredBytes = measureMemory();
      this.#measuredAtMs = mono;
      this.#logRefusedReservations();
    }
    const measured = this.#measuredBytes;
    const over = limit > 0 && measured > limit;
    // Without a disk (and outside cluster mode, whose log is applied as written) new entities are refused while over.
    state.refuseNew = over && this.#init.memoryOnly && this.#init.partitions === 0;
    // Sweeping moves entities between maps and compaction moves records; a running snapshot iterates them, so both wait.
    if (this.#job !== null) return;
    const c = state.counters;
    this.#sweepSlice();
    if (over && check) {
      // Evict the share that brings the shard under MEMORY_EVICT_TARGET_RATIO of its limit; the heap figure
      // only drops at the next GC, so at most MEMORY_EVICT_FRACTION_MAX per tick.
      state.evictColdest(Math.min(MEMORY_EVICT_FRACTION_MAX, (measured - limit * MEMORY_EVICT_TARGET_RATIO) / measured), this.#clock.nowMs());
    }
    if (check) this.#coldFiles?.compactStep(COLD_COMPACT_BYTES_PER_TICK);
    const logged = this.#logged;
    const frozen = c.frozen - logged.frozen;
    const dropped = c.dropped - logged.dropped;
    const evicted = c.evicted - logged.evicted;
    // One line per second of evictions, written a second after the first one it counts
    // (sweeps run every 100 ms: a burst of idle entities is one line, not several).
    if (frozen + dropped + evicted === 0) return;
    if (logged.atMs === 0) { this.#logged = { ...logged, atMs: mono }; return; }
    if (mono - logged.atMs >= MEMORY_CHECK_INTERVAL_MS) {
      this.#logged = { frozen: c.frozen, dropped: c.dropped, evicted: c.evicted, atMs: 0 };
      this.#log.info({ kind: 'shard.cold_evicted', shard: this.#init.shardId, frozen, dropped, evicted, cold: state.coldCount(), measured_bytes: measured, limit_bytes: limit });
    }
  }

  /** One warning per second with new refusals: large arrays grow by copying again (a limit on address space, docs/operations.md). */
  #logRefusedReservations(): void {
    const refused = reservationsRefused();
    if (refused === this.#refusedLogged) return;
    this.#log.warn({ kind: 'shard.reservation_refused', shard: this.#init.shardId, refused: refused - this.#refusedLogged, total: refused });
    this.#refusedLogged = refused;
  }

  /**
   * One sweep slice (COLD_SWEEP_SLICE_MS). Out of time with work left, the next
   * slice follows at once (setImmediate: batches that arrived meanwhile run first),
   * so sweeping keeps up with key churn using the time the shard has to spare.
   */
  readonly #sweepSlice = (): void => {
    if (this.#job !== null) return;
    const t0 = tlNow();
    const deadline = performance.now() + COLD_SWEEP_SLICE_MS;
    const swept = this.#state.sweepCold(this.#clock.nowMs(), undefined, deadline);
    tlSpan(TL.COLD_SWEEP, t0, swept, 0);
    if (performance.now() < deadline || this.#sweepQueued) return;
    this.#sweepQueued = true;
    setImmediate(() => { this.#sweepQueued = false; this.#sweepSlice(); });
  };

  // ---- WAL ----------------------------------------------------------------------

  /**
   * Seals and writes the frames of items[from, to) (push runs and installs have
   * frames, in item order, from the cursor on). Returns the error every push of
   * the run gets, or null.
   */
  #writeRun(items: ShardItem[], from: number, to: number): ErrorPayload | null {
    const store = this.#store;
    if (store === null) return null;
    const buf = this.#bytes;
    const start = this.#cursor;
    let p = start;
    let last = start;
    for (let i = from; i < to; i++) {
      const it = items[i];
      const frames = it.k === ITEM_PUSH ? it.n : it.k === ITEM_INSTALL || it.k === ITEM_FORGET ? 1 : 0;
      for (let j = 0; j < frames; j++) { last = p; p = sealFrame(buf, p); }
    }
    if (p === start) return null;
    const firstLsn = readU64(buf, start + LSN_AT);
    const lastLsn = readU64(buf, last + LSN_AT);
    try {
      store.writeFrames(buf.subarray(start, p), firstLsn, lastLsn);
    } catch (err) {
      // Logged by the store (wal.write_failed, throttled: every batch fails while the disk is full).
      this.#walOutcome = `append failed: ${String((err as Error).message ?? err)}`;
      return { code: 'wal_unavailable', detail: { message: 'write-ahead log append failed; the event was not applied', reason: String((err as Error).message ?? err) } };
    }
    return this.#syncIfAlways(store);
  }

  #syncIfAlways(store: ShardStore): ErrorPayload | null {
    if (this.#init.walSync === 'always') {
      try {
        const ms = store.sync();
        if (ms > this.#init.walSyncTimeoutMs) {
          return { code: 'wal_sync_timeout', detail: { message: `fdatasync took ${ms.toFixed(1)} ms (timeout ${this.#init.walSyncTimeoutMs} ms); the event may or may not be durable` } };
        }
      } catch (err) {
        this.#walOutcome = `fdatasync failed: ${String(err)}`;
        return { code: 'wal_unavailable', detail: { message: 'fdatasync failed', reason: String(err) } };
      }
    }
    if (this.#walOutcome === undefined) this.#walOutcome = null;
    return null;
  }

  // ---- items --------------------------------------------------------------------

  #runItems(items: ShardItem[], from: number, to: number, outs: ShardBatchResult['outs']): void {
    crashIfAsked(this.#init.faultFile);
    const walErr = this.#writeRun(items, from, to);
    // Server time of the run's reads: one clock for every thread (clock/server_clock.ts).
    const now = this.#clock.nowMs();
    // Units of row text already built per batch_get (GetItem.g): its later gets
    // answer response_too_large instead of building rows nobody can send. One map
    // for the thread, emptied per run: a Map per batch was garbage the scavenges copied.
    const groupUnits = this.#groupUnits;
    if (groupUnits.size > 0) groupUnits.clear();
    for (let i = from; i < to; i++) {
      const it = items[i];
      switch (it.k) {
        case ITEM_PUSH:
          outs[i] = this.#applyRun(it.n, walErr);
          break;
        case ITEM_GET:
          outs[i] = this.#get(it, now, groupUnits);
          break;
        case ITEM_FORGET:
          outs[i] = this.#forget(walErr);
          break;
        case ITEM_STATS:
          outs[i] = JSON.stringify(this.#stats());
          break;
        case ITEM_INSPECT:
          outs[i] = JSON.stringify(this.#inspect(it, now));
          break;
        case ITEM_EXPORT:
          // Cluster checkpoint: in its place among the pushes, so it reflects exactly those before it.
          try { outs[i] = exportPartition(this.#state, it.p).body; } catch (err) { outs[i] = errorPayload(err); }
          break;
        case ITEM_IMPORT:
          outs[i] = this.#import(it.p, it.parts);
          break;
        case ITEM_PREPARE:
          outs[i] = this.#prepare(it.version, it.wire) ? null : PREPARE_PENDING;
          break;
        case ITEM_INSTALL:
          this.#cursor = frameEnd(this.#bytes, this.#cursor);
          this.#dropJob(); // the layout a running snapshot captured is gone: start over next time
          this.#state.install(it.wire, it.renames);
          if (it.lsn > this.#state.appliedLsn) this.#state.appliedLsn = it.lsn;
          outs[i] = null;
          break;
        default:
          throw new Error(`unexpected item kind ${it.k} inside a run`);
      }
    }
  }

  /** Applies the next `n` PUSH frames (unless the run's write failed: then each gets `walErr`). */
  #applyRun(n: number, walErr: ErrorPayload | null): PushRunOut {
    const buf = this.#bytes;
    let p = this.#cursor;
    if (walErr !== null) {
      for (let j = 0; j < n; j++) p = frameEnd(buf, p);
      this.#cursor = p;
      return walErr;
    }
    const dedupe = this.#store === null ? null : this.#dedupe;
    let out: Array<ErrorPayload | null> | null = null;
    for (let j = 0; j < n; j++) {
      const end = frameEnd(buf, p);
      let err: ErrorPayload | null = null;
      try {
        // Written by the front under the registry version installed here: a mismatch is a bug.
        if (!this.#pushes.apply(buf, p + FRAME_LENGTH_CRC_BYTES, dedupe)) {
          throw new Error(`push at lsn ${readU64(buf, p + LSN_AT)} was written under another registry version than v${this.#state.registryVersion}`);
        }
      } catch (e) {
        // A coded refusal (memory_limit_exceeded) is an answer, not a failure to log.
        if (!(e instanceof SfError)) this.#log.error({ kind: 'shard.apply_failed', err: e });
        err = errorPayload(e);
      }
      if (err !== null) (out ??= new Array<ErrorPayload | null>(n).fill(null))[j] = err;
      p = end;
    }
    this.#cursor = p;
    return out;
  }

  /**
   * Applies the next frame, a FORGET, unless the run's write failed (then nothing is
   * removed and it answers `walErr`): per entry whether it removed one (ForgetItem).
   */
  #forget(walErr: ErrorPayload | null): string | ErrorPayload {
    const buf = this.#bytes;
    const p = this.#cursor;
    this.#cursor = frameEnd(buf, p);
    if (walErr !== null) return walErr;
    const lsn = readU64(buf, p + LSN_AT);
    try {
      // Written by the front under the registry version installed here: a mismatch is a bug.
      const removed = applyForget(this.#state, buf, p + FRAME_LENGTH_CRC_BYTES);
      if (removed === null) throw new Error(`forget at lsn ${lsn} was written under another registry version than v${this.#state.registryVersion}`);
      this.#store?.forgotten(lsn);
      return removed;
    } catch (e) {
      this.#log.error({ kind: 'shard.forget_failed', shard: this.#init.shardId, lsn, err: String((e as Error)?.stack ?? e) });
      return errorPayload(e);
    }
  }

  #get(it: GetItem, now: number, groupUnits: Map<number, number>): string | ServedRowOut | ErrorPayload {
    const used = it.g === undefined ? 0 : groupUnits.get(it.g) ?? 0;
    const state = this.#state;
    try {
      // Resolved on the front under version v, which travelled ahead of it in this channel.
      if (it.v !== state.registryVersion) throw new Error(`get resolved under registry v${it.v} reached a shard at v${state.registryVersion}`);
      const row = state.readRow(state.tables[it.t], it.key, it.f, now, RESPONSE_BYTES_MAX - used);
      if (it.g !== undefined) groupUnits.set(it.g, used + row.length);
      // The served-row log's answer: the read time readRow used and the position the row reflects.
      if (it.p === 1) return { row, t: now > state.lastT ? now : state.lastT, lsn: state.appliedLsn };
      return row;
    } catch (err) {
      if (!(err instanceof SfError)) this.#log.error({ kind: 'shard.read_failed', err: String((err as Error)?.stack ?? err) });
      else if (it.g !== undefined && err.code === 'response_too_large') groupUnits.set(it.g, RESPONSE_BYTES_MAX);
      return errorPayload(err);
    }
  }

  #import(p: number, parts: Uint8Array[]): ErrorPayload | null {
    try {
      const n = importPartition(this.#state, p, parts);
      this.#log.info({ kind: 'shard.partition_imported', shard: this.#init.shardId, partition: p, entities: n });
      return null;
    } catch (err) {
      this.#log.error({ kind: 'shard.partition_import_failed', shard: this.#init.shardId, partition: p, err: String(err) });
      return errorPayload(err);
    }
  }

  #runMarker(it: ShardItem): ErrorPayload | null {
    const store = this.#store;
    if (it.k === ITEM_RESET) {
      try {
        // Truncate, then log the reset itself: its LSN keeps ack_lsn monotonic across a restart.
        if (store !== null) {
          store.truncateAll();
          store.encoder.reset();
          store.encoder.resetRecord(it.lsn, it.state.version);
          store.writeStaged(it.lsn, it.lsn);
        }
      } catch (err) {
        this.#log.error({ kind: 'wal.truncate_failed', err });
        return { code: 'wal_truncate_failed', detail: { message: 'WAL truncation failed during reset; server state is undefined', reason: String(err) } };
      }
      this.#dropJob();
      this.#state.reset(it.state);
      this.#state.appliedLsn = it.lsn;
      this.#dedupe.clear();
      return null;
    }
    if (it.k === ITEM_SNAPSHOT) {
      if (!it.sync) { this.#startSnapshotJob(); return null; }
      this.#dropJob();
      try {
        store?.snapshotNow(this.#state, this.#dedupe);
      } catch (err) {
        store?.snapshotAbandoned(true);
        this.#log.error({ kind: 'wal.snapshot_failed', err });
        return errorPayload(new SfError('wal_unavailable', 'snapshot failed', { reason: String(err) }));
      }
    }
    return null;
  }

  // ---- the next registry version, compiled in slices between batches ---------------

  /** PREPARE: one slice now (a small registry is ready at once), the rest between batches. */
  #prepare(version: number, next: RegistryWire | null): boolean {
    const state = this.#state;
    const job = next !== null ? state.prepare(next) : state.preparing(version);
    if (job === null) return true; // superseded (or this thread was replaced): the INSTALL compiles
    if (job.step(REGISTRY_COMPILE_SLICE_MS)) return true;
    if (!this.#prepareScheduled) { this.#prepareScheduled = true; setImmediate(() => this.#stepPrepare(version)); }
    return false;
  }

  #stepPrepare(version: number): void {
    this.#prepareScheduled = false;
    const job = this.#state.preparing(version);
    if (job === null || job.step(REGISTRY_COMPILE_SLICE_MS)) return;
    this.#prepareScheduled = true;
    setImmediate(() => this.#stepPrepare(version));
  }

  // ---- snapshots, between batches -------------------------------------------------

  #startSnapshotJob(): void {
    const store = this.#store;
    if (store === null || this.#job !== null || this.#snapshotWriting) return;
    const job = store.beginSnapshot(this.#state);
    this.#job = job;
    if (job !== null) setImmediate(() => this.#stepSnapshotJob(job));
  }

  /** One slice of `job`; the next when its stream has room again (a slow disk slows the job, not the shard). */
  #stepSnapshotJob(job: SnapshotJob): void {
    const store = this.#store;
    if (this.#job !== job || store === null) return; // dropped by an install or reset
    const t0 = tlNow();
    const more = !job.step(SNAPSHOT_SLICE_MS);
    tlSpan(TL.SNAPSHOT_SLICE, t0, job.entities, 0);
    if (more) { job.whenRoom(() => this.#stepSnapshotJob(job)); return; }
    this.#job = null;
    this.#snapshotWriting = true;
    store.writeJob(job, this.#state, this.#dedupe)
      .catch((err) => { store.snapshotAbandoned(true); this.#log.error({ kind: 'wal.snapshot_failed', shard: this.#init.shardId, err }); })
      .finally(() => { this.#snapshotWriting = false; });
  }

  #dropJob(): void {
    if (this.#job === null) return;
    this.#job.abort();
    this.#store?.snapshotAbandoned(false);
    this.#job = null;
  }

  // ---- admin --------------------------------------------------------------------

  #stats(): ShardStats {
    const store = this.#store;
    const state = this.#state;
    return {
      shard: this.#init.shardId,
      runtime: this.#sampler.sample(),
      registryVersion: state.registryVersion,
      appliedLsn: state.appliedLsn,
      recoveredRecords: this.#recovered.records,
      recoveryMs: this.#recovered.ms,
      tables: tableStats(state),
      wal: store === null ? null : store.walView(),
      snapshot: store === null ? null : snapshotView(store.snapshotStats),
      cold: coldView(state, this.#coldFiles, this.#init.memoryLimitBytes, this.#measuredBytes),
    };
  }

  /** One entity for the admin inspector; reading it thaws it when cold, as a get would. */
  #inspect(it: InspectItem, now: number): InspectResult {
    const state = this.#state;
    const ts = state.tableByName(it.table);
    const cold = ts !== undefined && ts.cold.has(it.key);
    const slot = ts === undefined ? -1 : ts.hot(it.key);
    if (ts === undefined || slot < 0) return { shard: this.#init.shardId, cold: false, lastPushMs: null, lastLsn: null, row: null };
    const { lastT, lastLsn } = ts.cols.index;
    const row = JSON.parse(state.readRow(ts, it.key, null, now)) as Record<string, unknown>;
    return { shard: this.#init.shardId, cold, lastPushMs: lastT[slot], lastLsn: lastLsn[slot], row };
  }
}

function measureMemory(): number {
  const h = getHeapStatistics();
  // The shard's pools and hash tables on SharedArrayBuffers are not in V8's external figure.
  return h.used_heap_size + h.external_memory + unaccountedBytes();
}

function errorPayload(err: unknown): ErrorPayload {
  const e = asSfError(err);
  return { code: e.code, detail: e.detail };
}

/** Test hook only (SERVICE_FAULT_WAL_FILE containing CRASH): the thread dies, piscina replaces it. */
function crashIfAsked(faultFile: string | null): void {
  if (faultFile !== null && existsSync(faultFile) && readFileSync(faultFile, 'utf8').trim() === 'CRASH') {
    process.exit(70);
  }
}
