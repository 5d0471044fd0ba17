/**
 * Shard worker entry (a one-thread piscina pool per shard). Recovers at module
 * load (so a replaced thread recovers by itself), then runs one task per batch:
 *
 *   for each run of items up to a RESET/SNAPSHOT marker:
 *     1. stage WAL records of the run's pushes and installs; ONE write
 *     2. walk the run in order: apply pushes (only if the write succeeded),
 *        install registries, read rows for gets
 *   markers run in their place in the order.
 */
import { workerData } from 'node:worker_threads';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanRegistryLog } from '../wal';
import type { RegistryState } from '../registry/model';
import { asSfError, SfError } from '../errors';
import { createLogger } from '../log';
import { ITEM_EXPORT, ITEM_GET, ITEM_IMPORT, ITEM_INSPECT, ITEM_INSTALL, ITEM_PREPARE, ITEM_PUSH, ITEM_RESET, ITEM_SNAPSHOT, ITEM_STATS, PREPARE_PENDING, type ErrorPayload, type InspectItem, type InspectResult, type ShardBatch, type ShardBatchResult, type ShardHello, type ShardInit, type ShardItem } from '../protocol/messages';
import { getHeapStatistics } from 'node:v8';
import { COLD_SWEEP_INTERVAL_MS, COLD_SWEEP_SLICE_MS } from './cold';
import { ColdFiles } from './cold_files';
import { COLD_COMPACT_BYTES_PER_TICK, MEMORY_CHECK_INTERVAL_MS, MEMORY_EVICT_FRACTION_MAX, MEMORY_EVICT_TARGET_RATIO, REGISTRY_COMPILE_SLICE_MS, RESPONSE_BYTES_MAX } from '../limits';
import { DedupeLog } from './dedupe_log';
import type { SnapshotJob } from './snapshot_job';
import { ShardState } from './state';
import { ShardStore } from './store';
import { ThreadSampler } from '../admin/thread_stats';
import { coldView, snapshotView, tableStats, type ShardStats } from './shard_stats';
import { exportPartition, importPartition } from './partition_io';

const init = workerData as ShardInit;
// A shard thread replaced after a crash starts with the boot-time workerData: the
// registry may have moved on since. In disk mode the registry log (fsynced before
// any version reaches a shard) has every version; read it without modifying it.
refreshRegistry(init);
const log = createLogger(init.logLevel, { thread: `shard-${init.shardId}` });
// Disk mode: cold entities leave memory for <data>/shard-<i>/cold/ (a cache of the
// WAL and snapshots, emptied here before recovery refills it from the snapshot).
const coldFiles = init.memoryOnly ? null : ColdFiles.open(join(init.dataDir, `shard-${init.shardId}`, 'cold'), log);
const state = new ShardState({ shardId: init.shardId, shardCount: init.shardCount, memoryGovEnforce: init.memoryGovEnforce, partitions: init.partitions, coldFiles });
const dedupe = new DedupeLog();
let store: ShardStore | null = null;
let recovered = { lastLsn: 0, records: 0, ms: 0 };
const sampler = new ThreadSampler(`shard-${init.shardId}`);
/** WAL outcome of the batch being handled (ShardBatchResult.walError); a failure sticks for the batch. */
let walOutcome: string | null | undefined;

function walFailed(reason: string): void {
  walOutcome = reason;
}

if (!init.memoryOnly) {
  const opened = ShardStore.open(init, state, dedupe, log);
  store = opened.store;
  recovered = opened.info;
}
state.install(init.current);
if (store !== null && init.walSync === 'batch') {
  // Batch mode acks after write(); fdatasync follows within a few ms.
  const timer = setInterval(() => {
    try { store?.syncInBackground(); } catch (err) { if (store !== null) store.pendingSyncError = `fdatasync failed: ${String(err)}`; log.error({ kind: 'wal.sync_failed', err }); }
  }, init.walSyncIntervalMs);
  timer.unref();
}
if (store !== null && init.faultFile !== null) {
  // Test hook only: arm or clear injected WAL faults from the control file.
  setInterval(() => store?.pollFaultFile(), 20).unref();
}

// ---- snapshots and idle eviction, between batches --------------------------------

/** Encoding time per event-loop turn of a running snapshot job: bounds the stall it adds to a batch. */
const SNAPSHOT_SLICE_MS = 4;
let job: SnapshotJob | null = null;
let snapshotWriting = false;

function startSnapshotJob(): void {
  if (store === null || job !== null || snapshotWriting) return;
  job = store.beginSnapshot(state);
  if (job !== null) setImmediate(stepSnapshotJob);
}

function stepSnapshotJob(): void {
  const j = job;
  if (j === null || store === null) return; // aborted by an install or reset
  if (!j.step(SNAPSHOT_SLICE_MS)) { setImmediate(stepSnapshotJob); return; }
  job = null;
  snapshotWriting = true;
  store.writeJob(j, state, dedupe, SNAPSHOT_SLICE_MS).catch((err) => { store?.snapshotAbandoned(true); log.error({ kind: 'wal.snapshot_failed', shard: init.shardId, err }); })
    .finally(() => { snapshotWriting = false; });
}

let sweepQueued = false;

/**
 * One sweep slice (COLD_SWEEP_SLICE_MS). Out of time with work left, the next
 * slice follows at once (setImmediate: batches that arrived meanwhile run first),
 * so sweeping keeps up with key churn using the time the shard has to spare.
 */
function sweepSlice(): void {
  if (job !== null) return;
  const deadline = performance.now() + COLD_SWEEP_SLICE_MS;
  state.sweepCold(Date.now(), undefined, deadline);
  if (performance.now() < deadline || sweepQueued) return;
  sweepQueued = true;
  setImmediate(() => { sweepQueued = false; sweepSlice(); });
}

/** The shard's memory as measured: its isolate's heap in use (garbage included until the next GC) plus external buffers. */
function measureMemory(): number {
  const h = getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

let measuredBytes = measureMemory();
let measuredAtMs = 0;
/** Sweep counters at the last shard.cold_evicted line (one line a second at most). */
let logged = { frozen: 0, dropped: 0, evicted: 0, atMs: 0 };

setInterval(() => {
  const now = Date.now();
  const limit = init.memoryLimitBytes;
  // The heap figure moves slowly (and only drops at a GC): measured and acted on once a second.
  const check = now - measuredAtMs >= MEMORY_CHECK_INTERVAL_MS;
  if (check) {
    measuredBytes = measureMemory();
    measuredAtMs = now;
  }
  const over = limit > 0 && measuredBytes > limit;
  // Without a disk (and outside cluster mode, whose log is applied as written) new entities are refused while over.
  state.refuseNew = over && init.memoryOnly && init.partitions === 0;
  // Sweeping moves entities between maps and compaction moves records; a running snapshot iterates them, so both wait.
  if (job !== null) return;
  const c = state.counters;
  sweepSlice();
  if (over && check) {
    // Evict the share that brings the shard under MEMORY_EVICT_TARGET_RATIO of its limit; the heap figure
    // only drops at the next GC, so at most MEMORY_EVICT_FRACTION_MAX per tick.
    state.evictColdest(Math.min(MEMORY_EVICT_FRACTION_MAX, (measuredBytes - limit * MEMORY_EVICT_TARGET_RATIO) / measuredBytes), now);
  }
  if (check) coldFiles?.compactStep(COLD_COMPACT_BYTES_PER_TICK);
  const frozen = c.frozen - logged.frozen;
  const dropped = c.dropped - logged.dropped;
  const evicted = c.evicted - logged.evicted;
  if (frozen + dropped + evicted > 0 && now - logged.atMs >= MEMORY_CHECK_INTERVAL_MS) {
    logged = { frozen: c.frozen, dropped: c.dropped, evicted: c.evicted, atMs: now };
    log.info({ kind: 'shard.cold_evicted', shard: init.shardId, frozen, dropped, evicted, cold: state.coldCount(), measured_bytes: measuredBytes, limit_bytes: limit });
  }
}, COLD_SWEEP_INTERVAL_MS).unref();

// ---- the next registry version, compiled in slices between batches ---------------

let prepareScheduled = false;

/** PREPARE: one slice now (a small registry is ready at once), the rest between batches. */
function prepare(version: number, next: RegistryState | null): boolean {
  const job = next !== null ? state.prepare(next) : state.preparing(version);
  if (job === null) return true; // superseded (or this thread was replaced): the INSTALL compiles
  if (job.step(REGISTRY_COMPILE_SLICE_MS)) return true;
  if (!prepareScheduled) { prepareScheduled = true; setImmediate(() => stepPrepare(version)); }
  return false;
}

function stepPrepare(version: number): void {
  prepareScheduled = false;
  const job = state.preparing(version);
  if (job === null || job.step(REGISTRY_COMPILE_SLICE_MS)) return;
  prepareScheduled = true;
  setImmediate(() => stepPrepare(version));
}

function dropJob(): void {
  if (job !== null) store?.snapshotAbandoned(false);
  job = null;
}

function shardStats(): ShardStats {
  return {
    shard: init.shardId,
    runtime: sampler.sample(),
    registryVersion: state.registryVersion,
    appliedLsn: state.appliedLsn,
    recoveredRecords: recovered.records,
    recoveryMs: recovered.ms,
    tables: tableStats(state),
    wal: store === null ? null : store.walView(),
    snapshot: store === null ? null : snapshotView(store.snapshotStats),
    cold: coldView(state, coldFiles, init.memoryLimitBytes, measuredBytes),
  };
}

/** One entity for the admin inspector; reading it thaws it when cold, as a get would. */
function inspect(it: InspectItem, now: number): InspectResult {
  const ts = state.tableByName(it.table);
  const cold = ts !== undefined && ts.cold.has(it.key);
  const slot = ts === undefined ? -1 : ts.hot(it.key);
  if (ts === undefined || slot < 0) return { shard: init.shardId, cold: false, lastPushMs: null, lastLsn: null, row: null };
  const { lastT, lastLsn } = ts.cols.index;
  const lastPushMs = lastT[slot];
  const lastLsnOf = lastLsn[slot];
  const row = JSON.parse(state.read(it.table, it.key, null, now)) as Record<string, unknown>;
  return { shard: init.shardId, cold, lastPushMs, lastLsn: lastLsnOf, row };
}

function refreshRegistry(i: ShardInit): void {
  if (i.memoryOnly) return;
  const path = join(i.dataDir, 'registry', 'registry.log');
  if (!existsSync(path)) return;
  const entries = scanRegistryLog(readFileSync(path), path).entries as RegistryState[];
  const known = new Set(i.history.map((s) => s.version));
  for (const e of entries) {
    if (typeof e !== 'object' || e === null || !Array.isArray(e.nodes) || known.has(e.version)) continue;
    i.history.push(e);
    if (e.version > i.current.version) i.current = e;
  }
}

function errorPayload(err: unknown): ErrorPayload {
  const e = asSfError(err);
  return { code: e.code, detail: e.detail };
}

/** Stages and writes the WAL records of items[from, to). Returns the error every push of the run gets, or null. */
function writeRun(items: ShardItem[], from: number, to: number): ErrorPayload | null {
  if (store === null) return null;
  const enc = store.encoder;
  enc.reset();
  let first = -1;
  let last = -1;
  for (let i = from; i < to; i++) {
    const it = items[i];
    if (it.k === ITEM_PUSH) {
      enc.event(it.lsn, it.t, it.v, it.e, it.j);
      if (first < 0) first = it.lsn;
      last = it.lsn;
    } else if (it.k === ITEM_INSTALL) {
      enc.install(it.lsn, it.state.version);
      if (first < 0) first = it.lsn;
      last = it.lsn;
    }
  }
  if (enc.count === 0) return null;
  try {
    store.writeStaged(first, last);
  } catch (err) {
    log.error({ kind: 'wal.write_failed', shard: init.shardId, err });
    walFailed(`append failed: ${String((err as Error).message ?? err)}`);
    return { code: 'wal_unavailable', detail: { message: 'write-ahead log append failed; the event was not applied', reason: String((err as Error).message ?? err) } };
  }
  if (init.walSync === 'always') {
    try {
      const ms = store.sync();
      if (ms > init.walSyncTimeoutMs) {
        return { code: 'wal_sync_timeout', detail: { message: `fdatasync took ${ms.toFixed(1)} ms (timeout ${init.walSyncTimeoutMs} ms); the event may or may not be durable` } };
      }
    } catch (err) {
      walFailed(`fdatasync failed: ${String(err)}`);
      return { code: 'wal_unavailable', detail: { message: 'fdatasync failed', reason: String(err) } };
    }
  }
  if (walOutcome === undefined) walOutcome = null;
  return null;
}

/** Test hook only (SERVICE_FAULT_WAL_FILE containing CRASH): the thread dies, piscina replaces it. */
function crashIfAsked(): void {
  if (init.faultFile !== null && existsSync(init.faultFile) && readFileSync(init.faultFile, 'utf8').trim() === 'CRASH') {
    process.exit(70);
  }
}

function runItems(items: ShardItem[], from: number, to: number, outs: ShardBatchResult['outs']): void {
  crashIfAsked();
  const walErr = writeRun(items, from, to);
  const now = Date.now();
  // Units of row text already built per batch_get (GetItem.g): its later gets
  // answer response_too_large instead of building rows nobody can send.
  let groupUnits: Map<number, number> | null = null;
  for (let i = from; i < to; i++) {
    const it = items[i];
    switch (it.k) {
      case ITEM_PUSH:
        if (walErr !== null) { outs[i] = walErr; break; }
        try {
          applyPush(it.e, it.j, it.t, it.lsn, it.v, it.p ?? -1);
          outs[i] = null;
        } catch (err) {
          // A coded refusal (memory_limit_exceeded) is an answer, not a failure to log.
          if (!(err instanceof SfError)) log.error({ kind: 'shard.apply_failed', err });
          outs[i] = errorPayload(err);
        }
        break;
      case ITEM_GET: {
        const used = it.g === undefined ? 0 : groupUnits?.get(it.g) ?? 0;
        try {
          const row = state.read(it.table, it.key, it.features, now, RESPONSE_BYTES_MAX - used);
          if (it.g !== undefined) (groupUnits ??= new Map()).set(it.g, used + row.length);
          outs[i] = row;
        } catch (err) {
          if (!(err instanceof SfError)) log.error({ kind: 'shard.read_failed', err: String((err as Error)?.stack ?? err) });
          else if (it.g !== undefined && err.code === 'response_too_large') (groupUnits ??= new Map()).set(it.g, RESPONSE_BYTES_MAX);
          outs[i] = errorPayload(err);
        }
        break;
      }
      case ITEM_STATS:
        outs[i] = JSON.stringify(shardStats());
        break;
      case ITEM_INSPECT:
        outs[i] = JSON.stringify(inspect(it, now));
        break;
      case ITEM_EXPORT:
        // Cluster checkpoint: in its place among the pushes, so it reflects exactly those before it.
        try { outs[i] = exportPartition(state, it.p).body; } catch (err) { outs[i] = errorPayload(err); }
        break;
      case ITEM_IMPORT:
        try {
          const n = importPartition(state, it.p, it.parts);
          log.info({ kind: 'shard.partition_imported', shard: init.shardId, partition: it.p, entities: n });
          outs[i] = null;
        } catch (err) {
          log.error({ kind: 'shard.partition_import_failed', shard: init.shardId, partition: it.p, err: String(err) });
          outs[i] = errorPayload(err);
        }
        break;
      case ITEM_PREPARE:
        outs[i] = prepare(it.version, it.state) ? null : PREPARE_PENDING;
        break;
      case ITEM_INSTALL:
        dropJob(); // the layout a running snapshot captured is gone: start over next time
        state.install(it.state, it.renames);
        if (it.lsn > state.appliedLsn) state.appliedLsn = it.lsn;
        outs[i] = null;
        break;
      default:
        throw new Error(`unexpected item kind ${(it as ShardItem).k} inside a run`);
    }
  }
}

function applyPush(event: string, text: string, t: number, lsn: number, v: number, partition: number): void {
  // Validated by the front under this very registry version: a mismatch is a bug.
  if (!state.applyText(event, text, t, lsn, v, store === null ? null : dedupe, partition)) {
    throw new Error(`push of ${event} at lsn ${lsn} cannot be applied under registry v${state.registryVersion}`);
  }
}

function runMarker(it: ShardItem): ErrorPayload | null {
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
      log.error({ kind: 'wal.truncate_failed', err });
      return { code: 'wal_truncate_failed', detail: { message: 'WAL truncation failed during reset; server state is undefined', reason: String(err) } };
    }
    dropJob();
    state.reset(it.state);
    state.appliedLsn = it.lsn;
    dedupe.clear();
    return null;
  }
  if (it.k === ITEM_SNAPSHOT) {
    if (!it.sync) { startSnapshotJob(); return null; }
    dropJob();
    try {
      store?.snapshotNow(state, dedupe);
    } catch (err) {
      store?.snapshotAbandoned(true);
      log.error({ kind: 'wal.snapshot_failed', err });
      return errorPayload(new SfError('wal_unavailable', 'snapshot failed', { reason: String(err) }));
    }
  }
  return null;
}

export default function handle(task: ShardBatch | { hello: true }): ShardBatchResult | ShardHello {
  if ('hello' in task) {
    return { shardId: init.shardId, lastLsn: recovered.lastLsn, recoveredRecords: recovered.records, dedupe: dedupe.entries(Date.now()) };
  }
  const items = task.items;
  // A background fdatasync failure since the last batch counts against this one.
  walOutcome = store?.pendingSyncError ?? undefined;
  if (store !== null) store.pendingSyncError = null;
  const outs: ShardBatchResult['outs'] = new Array(items.length).fill(null);
  let from = 0;
  for (let i = 0; i <= items.length; i++) {
    const marker = i < items.length && (items[i].k === ITEM_RESET || items[i].k === ITEM_SNAPSHOT);
    if (i === items.length || marker) {
      if (i > from) runItems(items, from, i, outs);
      if (marker) outs[i] = runMarker(items[i]);
      from = i + 1;
    }
  }
  return walOutcome === undefined ? { outs } : { outs, walError: walOutcome };
}

process.on('exit', () => {
  try { store?.syncIfDirty(); store?.close(); coldFiles?.close(); } catch { /* exiting */ }
});
