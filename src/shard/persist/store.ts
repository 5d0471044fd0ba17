/**
 * A shard's durability: its WAL segments and snapshots under `<data>/shard-<i>/`
 * (formats: docs/durability.md). Recovery = newest valid snapshot + WAL records after it,
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
import { deleteAllSnapshots, faultyFs, fsError, realFs, type FaultCode, RecordEncoder, RECORD_TYPE_FORGET, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH, SNAPSHOT_KEEP_DEFAULT, WalWriter, SnapshotStream, writeSnapshot, type FaultyFs, type RecoveryLogEntry, type RecoveryProgress, type SnapshotWriteResult, type WalRecord } from '../../wal';
import { EVIDENCE_CASES, formatEvidence, registryKnownOf, type ShardAudit } from '../../wal/loss';
import { recoverShardFiles } from '../../wal/audit';
import { PushApplier } from '../state/push_apply';
import { applyForget } from '../state/forget_apply';
import { RECOVERY_PROGRESS_INTERVAL_MS, RECOVERY_PROGRESS_RECORDS_STRIDE, SNAPSHOT_LOOP_DELAY_RESOLUTION_MS, SNAPSHOT_SLICE_MS, WAL_ERROR_LOG_INTERVAL_MS } from '../../limits';
import { RepeatedLine } from '../../log_throttle';
import type { ShardState } from '../state/state';
import { restoreSnapshot, SnapshotJob } from './snapshot_job';
import type { DedupeLog } from '../state/dedupe_log';
import { SnapshotStats, WalStats, type ShardWalStats } from '../shard_stats';
import { retireFile } from '../../wal/file_ops';
import { ServerClock } from '../../clock';

export interface RecoveryInfo {
  lastLsn: number;
  records: number;
  snapshotLsn: number;
  ms: number;
  /** WAL bytes not read thanks to the snapshot's resume point (recover.ts resumeAt). */
  resumeSkippedBytes: number;
  /** What recovery proves lost, and the registry versions it met (wal/loss.ts); boot decides on it. */
  audit: ShardAudit;
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
  /**
   * Highest lsn of a forget applied (live or replayed), and the highest whose
   * entity no snapshot or WAL segment holds any more (#beginScrub): while the first
   * is ahead, the next snapshot also removes what came before it.
   */
  #forgetLsn = 0;
  #scrubbedLsn = 0;
  /** The snapshot job that removes older files once written, and the forget lsn it covers. */
  #scrubJob: SnapshotJob | null = null;
  #scrubLsn = 0;
  /** Test hook only (SERVICE_FAULT_WAL_FILE); null in production. */
  #faults: FaultyFs | null = null;
  #failTruncate = false;
  /**
   * The shard thread's event-loop delay while a periodic snapshot runs (a 1 ms timer; its figures include the period):
   * its max is the longest the snapshot, or anything else, kept a batch waiting.
   */
  #pauses: IntervalHistogram | null = null;

  readonly #writeFailures: RepeatedLine;
  readonly #syncFailures: RepeatedLine;
  /** Built once: a successful write passes it to RepeatedLine.ok without allocating. */
  readonly #logFields: { shard: number };

  private constructor(readonly init: ShardInit, walDir: string, snapDir: string, wal: WalWriter, readonly log: Logger, readonly clock: ServerClock) {
    this.#walDir = walDir;
    this.#snapDir = snapDir;
    this.#wal = wal;
    this.#logFields = { shard: init.shardId };
    this.#writeFailures = new RepeatedLine(log, 'wal.write_failed', 'wal.write_recovered', WAL_ERROR_LOG_INTERVAL_MS);
    this.#syncFailures = new RepeatedLine(log, 'wal.sync_failed', 'wal.sync_recovered', WAL_ERROR_LOG_INTERVAL_MS);
  }

  /**
   * Recovers `state` from disk, then opens the WAL for appends. `clock`: the
   * server's (snapshot times); a thread of its own outside a server.
   */
  static open(init: ShardInit, state: ShardState, dedupe: DedupeLog, log: Logger, clock = ServerClock.owner()): { store: ShardStore; info: RecoveryInfo } {
    const t0 = performance.now();
    const base = join(init.dataDir, `shard-${init.shardId}`);
    const walDir = join(base, 'wal');
    const snapDir = join(base, 'snapshots');
    mkdirSync(walDir, { recursive: true });
    mkdirSync(snapDir, { recursive: true });
    const history = new Map<number, RegistryState>(init.history.map((s) => [s.version, s]));
    log.info({ kind: 'shard.recovery_started', shard: init.shardId });
    let records = 0;
    let forgetLsn = 0;
    const bad: BadRecords = { count: 0, firstLsn: 0, lastLsn: 0 };
    // Progress at least every RECOVERY_PROGRESS_INTERVAL_MS: a long replay (48 s for
    // 10M events) must not look like a hang. The clock is read once per stride.
    const progress: RecoveryProgress = { bytesTotal: 0, bytesRead: 0 };
    let nextReportMs = performance.now() + RECOVERY_PROGRESS_INTERVAL_MS;
    const pushes = new PushApplier(state);
    // The same recovery wal-check runs (wal/audit.ts): records under a version the
    // registry log lacks are counted there and never reach replay.
    const rec = recoverShardFiles({
      walDir, snapDir, shard: `shard-${init.shardId}`, known: registryKnownOf(init.history), repair: true, progress,
      // Logged whether or not another snapshot verified: with none left, this line is why recovery starts from the WAL alone.
      onSnapshotSkipped: (path, reason) => log.warn({ kind: 'wal.snapshot_skipped', shard: init.shardId, path, reason }),
      onSnapshot: (snap, versionKnown) => {
        // A snapshot under a lost version restores what the current registry still defines (same names and signatures).
        const restored = restoreSnapshot(state, snap.body, (v) => history.get(v) ?? (versionKnown ? undefined : init.current));
        dedupe.load(restored.dedupe, (e) => state.registry?.events.get(e)?.dedupeWindowMs ?? 0);
        return restored;
      },
      onRecord: (r: WalRecord) => {
        records++;
        if (r.type === RECORD_TYPE_FORGET && r.lsn > forgetLsn) forgetLsn = r.lsn;
        replay(state, pushes, dedupe, history, r, bad);
        if (records % RECOVERY_PROGRESS_RECORDS_STRIDE === 0 && performance.now() >= nextReportMs) {
          nextReportMs = performance.now() + RECOVERY_PROGRESS_INTERVAL_MS;
          log.info({
            kind: 'shard.recovery_progress', shard: init.shardId, records, bytes: progress.bytesRead, bytes_total: progress.bytesTotal,
            percent: progress.bytesTotal === 0 ? 100 : Math.floor((progress.bytesRead / progress.bytesTotal) * 1000) / 10, elapsed_ms: Math.round(performance.now() - t0),
          });
        }
      },
    });
    const { report, snapshotLsn, audit } = rec;
    const snapshotCreatedMs = rec.snapshot === null ? 0 : rec.snapshot.meta.createdAtMs;
    // One line for all undecodable rows: a damaged WAL must not flood the log.
    if (bad.count > 0) log.warn({ kind: 'wal.bad_rows', shard: init.shardId, count: bad.count, first_lsn: bad.firstLsn, last_lsn: bad.lastLsn });
    for (const entry of report.log) logFinding(log, init.shardId, entry);
    logAudit(log, init.shardId, audit);
    // nextLsnMin also covers LSNs of skipped (corrupt) records: new LSNs never reuse them.
    // And of unreadable snapshots: their lsns were used even when no record of them is left.
    const lastLsn = Math.max(report.lastLsn, report.nextLsnMin - 1, snapshotLsn, state.appliedLsn, rec.skippedSnapshotLsnMax);
    const faults = init.faultFile === null ? null : faultyFs(realFs);
    const wal = WalWriter.open(walDir, {
      segmentBytesMax: init.walSegmentBytesMax, nextLsnHint: lastLsn + 1, lastRecordLsn: report.lastLsn, resumeFrom: report.lastRecordAt,
      ...(faults === null ? {} : { fs: faults }),
    });
    const store = new ShardStore(init, walDir, snapDir, wal, log, clock);
    store.#faults = faults;
    // A forget replayed here is one whose files the next snapshot has yet to remove.
    store.#forgetLsn = forgetLsn;
    store.#lastSnapshotLsn = snapshotLsn;
    store.snapshotStats.lastSuccessMs = snapshotCreatedMs;
    const info = { lastLsn, records, snapshotLsn, ms: Math.round(performance.now() - t0), resumeSkippedBytes: report.resumeSkippedBytes };
    log.info({ kind: 'shard.recovered', shard: init.shardId, ...info, truncated_bytes: report.truncatedBytes, corrupt_segments: report.corruptSegments });
    return { store, info: { ...info, audit } };
  }

  /** Writes what the encoder staged (one write). Throws the fs error on failure. */
  writeStaged(firstLsn: number, lastLsn: number): void {
    if (this.encoder.count === 0) return;
    this.writeFrames(this.encoder.bytes(), firstLsn, lastLsn);
  }

  /**
   * Writes whole sealed frames (a batch's run, shard.ts) with one write. Throws the
   * fs error on failure, logged here as wal.write_failed: in full once, then a count
   * per WAL_ERROR_LOG_INTERVAL_MS while every batch fails (log_throttle.ts).
   */
  writeFrames(bytes: Buffer, firstLsn: number, lastLsn: number): void {
    const st = this.walStats;
    const t0 = performance.now();
    try {
      this.#wal.append(bytes, firstLsn, lastLsn);
    } catch (err) {
      st.appendErrors++;
      this.#writeFailures.hit(this.#logFields, err);
      throw err;
    }
    this.#writeFailures.ok(this.#logFields);
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
        this.syncFailed(err);
        return;
      }
      this.#syncFailures.ok(this.#logFields);
      this.walStats.syncs++;
      this.walStats.syncLatency.observe((performance.now() - t0) / 1000);
    });
  }

  /** A background fdatasync failed: the next batch reports it (readiness); logged like a write failure. */
  syncFailed(err: unknown): void {
    this.pendingSyncError = `fdatasync failed: ${String(err)}`;
    this.#syncFailures.hit(this.#logFields, err);
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
    const scrub = this.#beginScrub();
    const keep = scrub === 0 ? SNAPSHOT_KEEP_DEFAULT : 1;
    // Batches are appended and applied in one turn: the WAL's position is inside what the job captures.
    const job = new SnapshotJob(state, null, this.#faults === null ? new SnapshotStream(this.#snapDir, meta, { nowMs: () => this.clock.nowMs(), keep }) : undefined, this.#wal.position());
    this.#scrubJob = scrub === 0 ? null : job;
    this.#scrubLsn = scrub;
    return job;
  }

  /** A forget was applied (or replayed) at `lsn`: the next snapshot removes the files that predate it (#beginScrub). */
  forgotten(lsn: number): void {
    if (lsn > this.#forgetLsn) this.#forgetLsn = lsn;
  }

  /**
   * When a forget is newer than the last scrub: closes the WAL segment now (every
   * record so far, the forgotten entities' pushes included, is then in closed
   * segments) and answers the forget lsn the snapshot being begun covers (its start
   * lsn is the applied lsn, at or past it); 0 when there is nothing to scrub, or
   * the segment could not be closed (the next snapshot tries again). Once that
   * snapshot is durable, #written removes every older snapshot and the segments it
   * covers (docs/durability.md "Forgetting an entity").
   */
  #beginScrub(): number {
    if (this.#forgetLsn <= this.#scrubbedLsn) return 0;
    try {
      this.#wal.startSegment();
    } catch (err) {
      this.log.warn({ kind: 'wal.forget_scrub_deferred', shard: this.init.shardId, err: String(err) }, 'the WAL segment could not be closed for a forget; the next snapshot tries again');
      return 0;
    }
    return this.#forgetLsn;
  }

  #snapshotDue(state: ShardState): boolean {
    if (state.appliedLsn <= Math.max(this.#lastSnapshotLsn, this.#pendingSnapshotLsn)) return false;
    this.snapshotStats.startedMs = performance.now();
    return true;
  }

  /** Shutdown: the whole snapshot now, blocking the shard (nothing else is coming). */
  snapshotNow(state: ShardState, dedupe: DedupeLog): void {
    if (!this.#snapshotDue(state)) return;
    const scrub = this.#beginScrub();
    const job = new SnapshotJob(state, null, undefined, this.#wal.position());
    this.#scrubJob = scrub === 0 ? null : job;
    this.#scrubLsn = scrub;
    job.step(Number.POSITIVE_INFINITY);
    const { body, rawBytes } = job.finish(dedupe, this.clock.nowMs());
    this.syncIfDirty();
    const res = writeSnapshot(this.#snapDir, { lsn: job.startLsn, registryVersion: job.registryVersion }, body, this.#writeOptions(scrub === 0 ? SNAPSHOT_KEEP_DEFAULT : 1));
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
        while (!job.stepDedupe(dedupe, SNAPSHOT_SLICE_MS, this.clock.nowMs())) await new Promise<void>((resolve) => job.whenRoom(resolve));
        const t0 = performance.now();
        rawBytes = job.end(dedupe, this.clock.nowMs());
        const written = sink.finish();
        job.maxSliceMs = Math.max(job.maxSliceMs, performance.now() - t0);
        res = await written;
      } else {
        const out = job.finish(dedupe, this.clock.nowMs());
        rawBytes = out.rawBytes;
        res = writeSnapshot(this.#snapDir, { lsn: job.startLsn, registryVersion: job.registryVersion }, out.body, this.#writeOptions(job === this.#scrubJob ? 1 : SNAPSHOT_KEEP_DEFAULT));
      }
    } catch (err) {
      if (gen === this.#resetGeneration) throw err;
      this.snapshotAbandoned(false);
      return;
    }
    if (gen !== this.#resetGeneration) { deleteAllSnapshots(this.#snapDir); this.snapshotAbandoned(false); return; }
    this.#written(job, state, res, rawBytes);
  }

  /** A snapshot header's time is server time, like every time the data dir holds. `keep`: snapshots left after it. */
  #writeOptions(keep: number): { nowMs: number; keep: number; fs?: FaultyFs } {
    return this.#faults === null ? { nowMs: this.clock.nowMs(), keep } : { nowMs: this.clock.nowMs(), keep, fs: this.#faults };
  }

  #written(job: SnapshotJob, state: ShardState, res: { bytes: number; compressMs: number; writeMs: number }, rawBytes: number): void {
    const ss = this.snapshotStats;
    const durationMs = ss.startedMs > 0 ? Math.round(performance.now() - ss.startedMs) : 0;
    if (ss.startedMs > 0) ss.lastDurationS = durationMs / 1000;
    ss.startedMs = 0;
    if (job.startLsn <= this.#lastSnapshotLsn) return; // a newer one landed first (shutdown during an async write)
    ss.lastSuccessMs = this.clock.nowMs();
    ss.lastBytes = res.bytes;
    ss.lastEntities = job.entities;
    ss.written++;
    // After a forget the snapshot written was the only one kept (keep 1): older ones, and the
    // segments before it, held the forgotten entities. Otherwise the WAL is kept back to the
    // older of the two snapshots: a corrupt newest one falls back to it.
    const scrubbed = job === this.#scrubJob;
    this.#olderSnapshotLsn = scrubbed ? job.startLsn : this.#lastSnapshotLsn;
    this.#lastSnapshotLsn = job.startLsn;
    if (scrubbed) {
      this.#scrubJob = null;
      if (this.#scrubLsn > this.#scrubbedLsn) this.#scrubbedLsn = this.#scrubLsn;
    }
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
      bytes: res.bytes, raw_bytes: rawBytes, segments_deleted: deleted, durationMs, ...(scrubbed ? { forget_scrub_lsn: this.#scrubLsn } : {}),
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
    // Every file went: nothing of a forgotten entity is left to remove.
    this.#forgetLsn = 0;
    this.#scrubbedLsn = 0;
    this.#scrubJob = null;
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

/** A recovery finding as one line at its own level (`level` is pino's, not a field of the line). */
function logFinding(log: Logger, shard: number, entry: RecoveryLogEntry): void {
  const { level, kind, ...rest } = entry;
  log[level]({ kind: `wal.${kind}`, shard, ...rest });
}

/**
 * The shard's evidence (wal/loss.ts rows A-G), logged here so that a shard thread
 * replaced at run time reports it too, and the registry versions it met: one line
 * per missing version, with counts, instead of one per record. Boot judges them
 * with the registry log (coordinator/boot_losses.ts).
 */
function logAudit(log: Logger, shard: number, audit: ShardAudit): void {
  for (const e of audit.evidence) {
    if (EVIDENCE_CASES.find((c) => c.label === e.label)?.verdict === 'repaired') continue; // its finding was logged (wal.torn_tail)
    const line = { kind: e.loss ? 'wal.data_loss' : `wal.${e.kind}`, shard, label: e.label, file: e.file, lsn_from: e.lsnFrom, lsn_to: e.lsnTo, why: e.why };
    if (e.loss) log.error(line, formatEvidence(e));
    else log.warn(line, formatEvidence(e));
  }
  for (const m of audit.versions.missing) {
    log.error({ kind: 'wal.unknown_registry_version', shard, version: m.version, pushes: m.pushes, others: m.others, first_lsn: m.firstLsn, last_lsn: m.lastLsn, snapshot: m.snapshot },
      `records under registry version ${m.version}, which the registry log lacks, were not applied`);
  }
  const p = audit.versions.preReset;
  if (p !== null) log.warn({ kind: 'wal.pre_reset_records', shard, records: p.records, first_lsn: p.firstLsn, last_lsn: p.lastLsn });
}

/**
 * One WAL record on replay, under the registry version it was written with (its
 * install comes first). PUSH and FORGET records are applied in place from the segment buffer.
 */
export function replay(state: ShardState, pushes: PushApplier, dedupe: DedupeLog, history: Map<number, RegistryState>, r: WalRecord, bad: BadRecords): void {
  if (r.type === RECORD_TYPE_PUSH || r.type === RECORD_TYPE_FORGET) {
    // Only records under a version of the registry log get here (VersionTally.admit).
    if (r.registryVersion !== state.registryVersion) {
      const reg = history.get(r.registryVersion);
      if (reg !== undefined) state.install(reg);
    }
    const ok = r.type === RECORD_TYPE_PUSH ? pushes.apply(r.buf, r.body, dedupe) : applyForget(state, r.buf, r.body) !== null;
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
