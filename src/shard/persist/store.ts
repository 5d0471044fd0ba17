/**
 * A shard's durability (DESIGN.md section 4): its WAL segments and snapshots under
 * `<data>/shard-<i>/`. Recovery = newest valid snapshot + WAL records after it,
 * replayed under the registry version each record was validated with and with
 * its recorded server time, so windows and decays rebuild exactly.
 *
 * Ordering rule: a batch's records are written (one write) BEFORE any of its
 * pushes is applied or acknowledged; a failed write applies nothing.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Logger } from '../../log';
import type { RegistryState } from '../../registry/model';
import type { ShardInit } from '../../protocol/messages';
import { deleteAllSnapshots, faultyFs, fsError, realFs, type FaultCode, RecordEncoder, RECORD_TYPE_EVENT, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH, WalWriter, recoverWal, readNewestSnapshot, SnapshotStream, writeSnapshot, type FaultyFs, type RecoveryProgress, type SnapshotWriteResult, type WalPosition, type WalRecord } from '../../wal';
import { PushApplier } from '../state/push_apply';
import { RECOVERY_PROGRESS_INTERVAL_MS, RECOVERY_PROGRESS_RECORDS_STRIDE, SNAPSHOT_LOOP_DELAY_RESOLUTION_MS, SNAPSHOT_SLICE_MS } from '../../limits';
import type { ShardState } from '../state/state';
import { restoreSnapshot, SnapshotJob } from './snapshot_job';
import type { DedupeLog } from '../state/dedupe_log';
import { SnapshotStats, WalStats, type ShardWalStats } from '../shard_stats';
import { retireFile } from '../../wal/file_ops';

export interface RecoveryInfo {
  lastLsn: number;
  records: number;
  snapshotLsn: number;
  ms: number;
  /** WAL bytes not read thanks to the snapshot's resume point (recover.ts resumeAt). */
  resumeSkippedBytes: number;
}

export class ShardStore {
  readonly encoder = new RecordEncoder();
  /** Counters for /metrics (shard_stats.ts); plain fields, bumped once per write or sync. */
  readonly walStats = new WalStats();
  readonly snapshotStats = new SnapshotStats();
  #wal: WalWriter;
  readonly #walDir: string;
  readonly #snapDir: string;
  #lastSnapshotLsn = 0;
  /** LSN of the snapshot before the newest: WAL is only deleted up to here, so a corrupt newest snapshot can fall back to it. */
  #olderSnapshotLsn = 0;
  /** Start LSN of a snapshot being written (async). */
  #pendingSnapshotLsn = 0;
  #slowSync = false;
  /** A background fdatasync failure not yet reported in a batch result (readiness: ShardBatchResult.walError). */
  pendingSyncError: string | null = null;
  /** Bumped by truncateAll: a snapshot write that started before a reset must not survive it. */
  #resetGeneration = 0;
  /** Test hook only (SERVICE_FAULT_WAL_FILE); null in production. */
  #faults: FaultyFs | null = null;
  #failTruncate = false;
  /**
   * The shard thread's event-loop delay while a periodic snapshot runs (a 1 ms timer; its figures include the period):
   * its max is the longest the snapshot, or anything else, kept a batch waiting.
   */
  #pauses: IntervalHistogram | null = null;

  private constructor(readonly init: ShardInit, walDir: string, snapDir: string, wal: WalWriter, readonly log: Logger) {
    this.#walDir = walDir;
    this.#snapDir = snapDir;
    this.#wal = wal;
  }

  /** Recovers `state` from disk, then opens the WAL for appends. */
  static open(init: ShardInit, state: ShardState, dedupe: DedupeLog, log: Logger): { store: ShardStore; info: RecoveryInfo } {
    const t0 = Date.now();
    const base = join(init.dataDir, `shard-${init.shardId}`);
    const walDir = join(base, 'wal');
    const snapDir = join(base, 'snapshots');
    mkdirSync(walDir, { recursive: true });
    mkdirSync(snapDir, { recursive: true });
    const history = new Map<number, RegistryState>(init.history.map((s) => [s.version, s]));
    let snapshotLsn = 0;
    let walResume: WalPosition | null = null;
    log.info({ kind: 'shard.recovery_started', shard: init.shardId });
    const snap = readNewestSnapshot(snapDir);
    if (snap !== null) {
      for (const path of snap.skipped) log.warn({ kind: 'wal.snapshot_skipped', path });
      const restored = restoreSnapshot(state, snap.body, (v) => history.get(v));
      dedupe.load(restored.dedupe, (e) => state.registry?.events.get(e)?.dedupeWindowMs ?? 0);
      snapshotLsn = restored.startLsn;
      walResume = restored.walResume;
    }
    const snapshotCreatedMs = snap === null ? 0 : snap.meta.createdAtMs;
    let records = 0;
    const bad: BadRecords = { count: 0, firstLsn: 0, lastLsn: 0 };
    // Progress at least every RECOVERY_PROGRESS_INTERVAL_MS: a long replay (48 s for
    // 10M events) must not look like a hang. The clock is read once per stride.
    const progress: RecoveryProgress = { bytesTotal: 0, bytesRead: 0 };
    let nextReportMs = Date.now() + RECOVERY_PROGRESS_INTERVAL_MS;
    const pushes = new PushApplier(state);
    const report = recoverWal(walDir, snapshotLsn, (r: WalRecord) => {
      records++;
      replay(state, pushes, dedupe, history, r, log, bad);
      if (records % RECOVERY_PROGRESS_RECORDS_STRIDE === 0 && Date.now() >= nextReportMs) {
        nextReportMs = Date.now() + RECOVERY_PROGRESS_INTERVAL_MS;
        log.info({
          kind: 'shard.recovery_progress', shard: init.shardId, records, bytes: progress.bytesRead, bytes_total: progress.bytesTotal,
          percent: progress.bytesTotal === 0 ? 100 : Math.floor((progress.bytesRead / progress.bytesTotal) * 1000) / 10, elapsed_ms: Date.now() - t0,
        });
      }
    }, { progress, resumeAt: walResume });
    // One line for all undecodable rows: a damaged WAL must not flood the log.
    if (bad.count > 0) log.warn({ kind: 'wal.bad_rows', shard: init.shardId, count: bad.count, first_lsn: bad.firstLsn, last_lsn: bad.lastLsn });
    for (const entry of report.log) log.warn({ ...entry, kind: `wal.${entry.kind}` });
    // nextLsnMin also covers LSNs of skipped (corrupt) records: new LSNs never reuse them.
    const lastLsn = Math.max(report.lastLsn, report.nextLsnMin - 1, snapshotLsn, state.appliedLsn);
    const faults = init.faultFile === null ? null : faultyFs(realFs);
    const wal = WalWriter.open(walDir, { segmentBytesMax: init.walSegmentBytesMax, nextLsnHint: lastLsn + 1, resumeFrom: report.lastRecordAt, ...(faults === null ? {} : { fs: faults }) });
    const store = new ShardStore(init, walDir, snapDir, wal, log);
    store.#faults = faults;
    store.#lastSnapshotLsn = snapshotLsn;
    store.snapshotStats.lastSuccessMs = snapshotCreatedMs;
    const info = { lastLsn, records, snapshotLsn, ms: Date.now() - t0, resumeSkippedBytes: report.resumeSkippedBytes };
    log.info({ kind: 'shard.recovered', shard: init.shardId, ...info, truncated_bytes: report.truncatedBytes, corrupt_segments: report.corruptSegments });
    return { store, info };
  }

  /** Writes what the encoder staged (one write). Throws the fs error on failure. */
  writeStaged(firstLsn: number, lastLsn: number): void {
    if (this.encoder.count === 0) return;
    this.writeFrames(this.encoder.bytes(), firstLsn, lastLsn);
  }

  /** Writes whole sealed frames (a batch's run, shard.ts) with one write. Throws the fs error on failure. */
  writeFrames(bytes: Buffer, firstLsn: number, lastLsn: number): void {
    const st = this.walStats;
    const t0 = performance.now();
    try {
      this.#wal.append(bytes, firstLsn, lastLsn);
    } catch (err) {
      st.appendErrors++;
      throw err;
    }
    st.appendLatency.observe((performance.now() - t0) / 1000);
    st.appends++;
    st.appendBytes += bytes.length;
  }

  /** fdatasync; returns its duration in ms. */
  sync(): number {
    const t0 = performance.now();
    if (this.#slowSync) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, this.init.walSyncTimeoutMs * 2);
    try {
      this.#wal.sync();
    } catch (err) {
      this.walStats.syncErrors++;
      throw err;
    }
    const ms = performance.now() - t0;
    this.walStats.syncs++;
    this.walStats.syncLatency.observe(ms / 1000);
    return ms;
  }

  /** Syncs now when anything was written since the last sync (snapshots, shutdown). */
  syncIfDirty(): void {
    if (this.#wal.bytesSinceSync > 0) this.sync();
  }

  /** Batch mode timer: fdatasync on libuv's threadpool; the shard thread keeps applying batches meanwhile. */
  syncInBackground(): void {
    if (this.#slowSync) { this.syncIfDirty(); return; }
    const t0 = performance.now();
    this.#wal.syncAsync((err) => {
      if (err !== null) {
        this.walStats.syncErrors++;
        this.pendingSyncError = `fdatasync failed: ${String(err)}`;
        this.log.error({ kind: 'wal.sync_failed', shard: this.init.shardId, err });
        return;
      }
      this.walStats.syncs++;
      this.walStats.syncLatency.observe((performance.now() - t0) / 1000);
    });
  }

  /**
   * A new periodic snapshot job, or null when nothing was applied since the last
   * one. Its body streams to the snapshot file as it is encoded (SnapshotStream: lz4
   * and the writes on libuv's threadpool, block by block); with injected faults
   * (tests) it is kept in memory and written by writeSnapshot through the faulty fs.
   */
  beginSnapshot(state: ShardState): SnapshotJob | null {
    if (!this.#snapshotDue(state)) return null;
    const meta = { lsn: state.appliedLsn, registryVersion: state.registryVersion };
    this.#pauses?.disable();
    this.#pauses = monitorEventLoopDelay({ resolution: SNAPSHOT_LOOP_DELAY_RESOLUTION_MS });
    this.#pauses.enable();
    // Batches are appended and applied in one turn: the WAL's position is inside what the job captures.
    return new SnapshotJob(state, null, this.#faults === null ? new SnapshotStream(this.#snapDir, meta) : undefined, this.#wal.position());
  }

  #snapshotDue(state: ShardState): boolean {
    if (state.appliedLsn <= Math.max(this.#lastSnapshotLsn, this.#pendingSnapshotLsn)) return false;
    this.snapshotStats.startedMs = Date.now();
    return true;
  }

  /** Shutdown: the whole snapshot now, blocking the shard (nothing else is coming). */
  snapshotNow(state: ShardState, dedupe: DedupeLog): void {
    if (!this.#snapshotDue(state)) return;
    const job = new SnapshotJob(state, null, undefined, this.#wal.position());
    job.step(Number.POSITIVE_INFINITY);
    const { body, rawBytes } = job.finish(dedupe);
    this.syncIfDirty();
    const res = writeSnapshot(this.#snapDir, { lsn: job.startLsn, registryVersion: job.registryVersion }, body, this.#faults === null ? {} : { fs: this.#faults });
    this.#written(job, state, res, rawBytes);
  }

  /**
   * Completes a job whose every entity is encoded: the end chunk, then the rest of
   * its stream (last block, header, fsync, rename) off the shard thread, which keeps
   * applying batches meanwhile. A reset while this runs removes the file again when
   * it lands (or the rename finds its tmp file gone: the snapshot is dropped quietly).
   */
  async writeJob(job: SnapshotJob, state: ShardState, dedupe: DedupeLog): Promise<void> {
    this.#pendingSnapshotLsn = job.startLsn;
    const gen = this.#resetGeneration;
    const sink = job.sink;
    let res: SnapshotWriteResult;
    let rawBytes: number;
    try {
      if (sink instanceof SnapshotStream) {
        // The dedupe entries in slices, then the end chunk and the last block's lz4 now, on this thread: a step like a slice.
        while (!job.stepDedupe(dedupe, SNAPSHOT_SLICE_MS)) await new Promise<void>((resolve) => job.whenRoom(resolve));
        const t0 = performance.now();
        rawBytes = job.end(dedupe);
        const written = sink.finish();
        job.maxSliceMs = Math.max(job.maxSliceMs, performance.now() - t0);
        res = await written;
      } else {
        const out = job.finish(dedupe);
        rawBytes = out.rawBytes;
        res = writeSnapshot(this.#snapDir, { lsn: job.startLsn, registryVersion: job.registryVersion }, out.body, this.#faults === null ? {} : { fs: this.#faults });
      }
    } catch (err) {
      if (gen === this.#resetGeneration) throw err;
      this.snapshotAbandoned(false);
      return;
    }
    if (gen !== this.#resetGeneration) { deleteAllSnapshots(this.#snapDir); this.snapshotAbandoned(false); return; }
    this.#written(job, state, res, rawBytes);
  }

  #written(job: SnapshotJob, state: ShardState, res: { bytes: number; compressMs: number; writeMs: number }, rawBytes: number): void {
    const ss = this.snapshotStats;
    const now = Date.now();
    const durationMs = ss.startedMs > 0 ? now - ss.startedMs : 0;
    if (ss.startedMs > 0) ss.lastDurationS = durationMs / 1000;
    ss.startedMs = 0;
    if (job.startLsn <= this.#lastSnapshotLsn) return; // a newer one landed first (shutdown during an async write)
    ss.lastSuccessMs = now;
    ss.lastBytes = res.bytes;
    ss.lastEntities = job.entities;
    ss.written++;
    this.#olderSnapshotLsn = this.#lastSnapshotLsn;
    this.#lastSnapshotLsn = job.startLsn;
    // The WAL is kept back to the older of the two snapshots: a corrupt newest one falls back to it.
    // Off the shard thread where it can be: unlinking a 64 MB segment blocks 8-13 ms (file_ops retireFile).
    const retire = this.#faults === null ? (name: string) => retireFile(this.#walDir, name) : null;
    const t0 = performance.now();
    const deleted = this.#olderSnapshotLsn > 0 ? this.#wal.deleteSegmentsCoveredBy(this.#olderSnapshotLsn, retire) : 0;
    // A step of the snapshot on the shard thread like any slice.
    job.maxSliceMs = Math.max(job.maxSliceMs, performance.now() - t0);
    const pauses = this.#takePauses();
    this.log.info({
      kind: 'shard.snapshot', shard: this.init.shardId, lsn: job.startLsn, entities: job.entities, cold: state.coldCount(),
      encodeMs: Math.round(job.encodeMs), maxSliceMs: Math.round(job.maxSliceMs * 10) / 10,
      ...(pauses === null ? {} : { loopDelayMaxMs: Math.round(pauses.max / 1e5) / 10, loopDelayP99Ms: Math.round(pauses.percentile(99) / 1e5) / 10 }), compressMs: Math.round(res.compressMs), writeMs: Math.round(res.writeMs),
      bytes: res.bytes, raw_bytes: rawBytes, segments_deleted: deleted, durationMs,
    });
  }

  /** Test hook: reads the fault file (if configured) and arms or clears the injected fault. Returns the I/O fault armed (the cold store takes it too). */
  pollFaultFile(): FaultCode | null {
    const file = this.init.faultFile;
    if (file === null || this.#faults === null) return null;
    const code = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    const io = code === 'ENOSPC' || code === 'EIO' ? code : null;
    this.#faults.failWrites(io);
    this.#faults.failSyncs(io);
    this.#failTruncate = code === 'TRUNCATE';
    this.#slowSync = code === 'SLOW_SYNC';
    return io;
  }

  /** /reset: every segment and snapshot goes. Throws on failure (wal_truncate_failed). */
  truncateAll(): void {
    if (this.#failTruncate) throw fsError('EIO', 'unlink');
    this.#resetGeneration++;
    this.#wal.truncateAll();
    deleteAllSnapshots(this.#snapDir);
    this.snapshotStats.lastSuccessMs = 0;
    this.#lastSnapshotLsn = 0;
    this.#olderSnapshotLsn = 0;
    this.#pendingSnapshotLsn = 0;
  }

  /** The event-loop delay histogram of the periodic snapshot that ends, if one ran. */
  #takePauses(): IntervalHistogram | null {
    const h = this.#pauses;
    this.#pauses = null;
    h?.disable();
    return h;
  }

  /** A snapshot job was dropped (install, reset) or its write failed. */
  snapshotAbandoned(failed: boolean): void {
    this.#takePauses();
    this.snapshotStats.startedMs = 0;
    if (failed) this.snapshotStats.failures++;
  }

  walView(): ShardWalStats {
    const w = this.walStats;
    return {
      appends: w.appends, appendBytes: w.appendBytes, appendErrors: w.appendErrors, appendLatency: w.appendLatency.data(),
      syncs: w.syncs, syncErrors: w.syncErrors, syncLatency: w.syncLatency.data(),
      bytesSinceSync: this.#wal.bytesSinceSync, segment: this.#wal.segmentName, segmentBytes: this.#wal.segmentBytes, lastLsn: this.#wal.lastLsn,
    };
  }

  close(): void {
    this.#wal.close();
  }
}

export interface BadRecords {
  count: number;
  firstLsn: number;
  lastLsn: number;
}

/**
 * One WAL record on replay, under the registry version it was written with (its
 * install comes first). PUSH records are applied in place from the segment
 * buffer; EVENT records (the envelope text, written before PUSH existed) are
 * parsed again, so an old data dir still recovers (docs/durability.md).
 */
export function replay(state: ShardState, pushes: PushApplier, dedupe: DedupeLog, history: Map<number, RegistryState>, r: WalRecord, log: Logger, bad: BadRecords): void {
  if (r.type === RECORD_TYPE_PUSH || r.type === RECORD_TYPE_EVENT) {
    if (r.registryVersion !== state.registryVersion) {
      const reg = history.get(r.registryVersion);
      if (reg !== undefined) state.install(reg);
      else log.warn({ kind: 'wal.unknown_registry_version', version: r.registryVersion, lsn: r.lsn });
    }
    const ok = r.type === RECORD_TYPE_PUSH
      ? pushes.apply(r.buf, r.body, dedupe)
      : state.applyText(r.event, r.rowJson, r.timeMs, r.lsn, r.registryVersion, dedupe);
    if (!ok) {
      if (bad.count++ === 0) bad.firstLsn = r.lsn;
      bad.lastLsn = r.lsn;
    }
    return;
  }
  if (r.type === RECORD_TYPE_INSTALL) {
    const reg = history.get(r.registryVersion);
    if (reg !== undefined) state.install(reg);
    if (r.lsn > state.appliedLsn) state.appliedLsn = r.lsn;
    return;
  }
  const reg = history.get(r.registryVersion) ?? { version: r.registryVersion, nodes: [] };
  state.reset(reg);
  dedupe.clear();
}
