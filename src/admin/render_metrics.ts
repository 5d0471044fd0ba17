/**
 * /metrics: every series of docs/metrics.md, rendered from the front's counters,
 * the cached answers of the shards and the coordinator (admin/stats.ts) and the
 * process figures. Keep docs/metrics.md in step with this file.
 */
import { VERSION } from '../version';
import { TRANSPORTS } from '../front/reply';
import type { HistogramData } from './histogram';
import { processStats } from './process_stats';
import { PromText } from './prom_text';
import type { AdminContext } from './context';
import type { ShardStats, ShardWalStats, TableStats } from '../shard/shard_stats';

export function renderMetrics(ctx: AdminContext): string {
  const { front, stats } = ctx;
  const m = front.metrics;
  const p = new PromText();
  // Snapshot ages are server time (what the shards stamp); uptime and stats ages are durations.
  const now = front.clock.nowMs();
  const mono = performance.now();

  // ---- build and process ------------------------------------------------------------
  p.single('streamfeat_build_info', 'gauge', 'Always 1; the labels name the streamfeat version and the Node.js runtime.', 1, { version: VERSION, node: process.version });
  const proc = processStats();
  p.single('process_cpu_user_seconds_total', 'counter', 'User CPU time of the whole process (all threads), seconds.', proc.cpuUserSeconds);
  p.single('process_cpu_system_seconds_total', 'counter', 'System CPU time of the whole process (all threads), seconds.', proc.cpuSystemSeconds);
  p.single('process_cpu_seconds_total', 'counter', 'User and system CPU time of the whole process, seconds.', proc.cpuUserSeconds + proc.cpuSystemSeconds);
  p.single('process_resident_memory_bytes', 'gauge', 'Resident set size of the whole process, bytes.', proc.residentBytes);
  p.single('process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch, seconds.', proc.startTimeSeconds);
  p.single('process_open_fds', 'gauge', 'Open file descriptors (-1 where /proc is unavailable).', proc.openFds);
  p.single('process_max_fds', 'gauge', 'Limit of open file descriptors (-1 where /proc is unavailable).', proc.maxFds);

  // ---- per thread (front, coordinator, shard-N) --------------------------------------------
  const threads = stats.threads();
  const perThread = (name: string, help: string, pick: (t: (typeof threads)[number]) => number): void => {
    p.family(name, 'gauge', help);
    for (const t of threads) p.sample(name, { thread: t.thread }, pick(t));
  };
  perThread('nodejs_heap_size_used_bytes', 'V8 heap used by the thread\'s isolate, bytes.', (t) => t.heapUsedBytes);
  perThread('nodejs_heap_size_total_bytes', 'V8 heap reserved by the thread\'s isolate, bytes.', (t) => t.heapTotalBytes);
  perThread('nodejs_heap_size_limit_bytes', 'V8 heap limit of the thread\'s isolate, bytes.', (t) => t.heapLimitBytes);
  perThread('nodejs_external_memory_bytes', 'Memory outside the V8 heap held by the thread\'s isolate (Buffers), bytes.', (t) => t.externalBytes);
  perThread('nodejs_eventloop_utilization_ratio', 'Fraction of the last stats interval the thread\'s event loop was busy (0..1).', (t) => t.utilization);
  perThread('nodejs_eventloop_lag_mean_seconds', 'Mean event-loop delay of the thread over the last stats interval, seconds.', (t) => t.lag.mean);
  perThread('nodejs_eventloop_lag_p50_seconds', 'Median event-loop delay of the thread over the last stats interval, seconds.', (t) => t.lag.p50);
  perThread('nodejs_eventloop_lag_p99_seconds', '99th percentile event-loop delay of the thread over the last stats interval, seconds.', (t) => t.lag.p99);
  perThread('nodejs_eventloop_lag_max_seconds', 'Largest event-loop delay of the thread over the last stats interval, seconds.', (t) => t.lag.max);

  // ---- requests ---------------------------------------------------------------------------
  p.single('streamfeat_push_total', 'counter', 'Pushes acknowledged (including dedupe replays).', m.pushTotal);
  p.single('streamfeat_push_replay_total', 'counter', 'Pushes answered as idempotent dedupe replays.', m.pushReplayTotal);
  p.single('streamfeat_get_total', 'counter', 'Single-key gets answered.', m.getTotal);
  p.single('streamfeat_batch_get_total', 'counter', 'Batch gets answered.', m.batchGetTotal);
  p.single('streamfeat_batch_get_entries_total', 'counter', 'Entries inside answered batch gets.', m.batchGetEntriesTotal);
  p.single('streamfeat_register_total', 'counter', 'Successful registrations (including dry runs).', m.registerTotal);
  p.single('streamfeat_reset_total', 'counter', 'Successful resets.', m.resetTotal);
  p.single('streamfeat_forget_total', 'counter', 'Forget requests answered.', m.forgetTotal);
  p.single('streamfeat_forget_rows_total', 'counter', 'Entities (rows) removed by forget requests.', m.forgetRowsTotal);
  p.single('streamfeat_http_requests_total', 'counter', 'HTTP requests with a body received on the data plane.', m.httpRequestsTotal);
  p.single('streamfeat_completion_errors_total', 'counter', 'Requests answered internal_error because completing them threw.', m.completionErrorsTotal);
  p.single('streamfeat_dedupe_full_total', 'counter', 'Pushes refused with dedupe_capacity_exceeded (the dedupe store was full).', m.dedupeFullTotal);
  const served = front.servedLog;
  p.single('streamfeat_served_log_lines_total', 'counter', 'Rows written to the served-row log (--served-log-dir).', served?.lines ?? 0);
  p.single('streamfeat_served_log_dropped_total', 'counter', 'Served-row log lines dropped: the writer was behind or a write failed.', served?.dropped ?? 0);
  p.single('streamfeat_served_log_bytes_total', 'counter', 'Bytes written to the served-row log.', served?.bytes ?? 0);
  p.single('streamfeat_served_log_write_errors_total', 'counter', 'Failed writes (or file opens) of the served-row log.', served?.writeErrors ?? 0);
  p.family('streamfeat_errors_total', 'counter', 'Error responses by code (docs/errors.md).');
  for (const [code, n] of [...m.errors].sort()) p.sample('streamfeat_errors_total', { code }, n);
  const latency = (name: string, help: string, hs: ReadonlyArray<{ data(): HistogramData }>): void => {
    p.family(name, 'histogram', help);
    TRANSPORTS.forEach((transport, i) => p.histogram(name, { transport }, hs[i].data()));
  };
  latency('streamfeat_push_latency_seconds', 'Push latency from the request read to the ack written, by transport, seconds.', m.pushLatency);
  latency('streamfeat_get_latency_seconds', 'Get latency from the request read to the row written, by transport, seconds.', m.getLatency);
  latency('streamfeat_batch_get_latency_seconds', 'Batch get latency from the request read to the answer written, by transport, seconds.', m.batchGetLatency);
  p.single('streamfeat_tcp_connections', 'gauge', 'Open framed-TCP connections.', m.tcpConnections);
  p.single('streamfeat_uptime_seconds', 'gauge', 'Seconds since the server started.', (mono - m.startedMono) / 1000);
  p.family('streamfeat_clock_jumps_total', 'counter', 'Wall clock jumps of CLOCK_JUMP_THRESHOLD_MS or more seen by the server clock (a server.clock_jump line each; docs/time.md), by direction.');
  p.sample('streamfeat_clock_jumps_total', { direction: 'forward' }, m.clockJumpsForwardTotal);
  p.sample('streamfeat_clock_jumps_total', { direction: 'backward' }, m.clockJumpsBackwardTotal);
  p.single('streamfeat_clock_ahead_seconds', 'gauge', 'Server time minus the wall clock at the last check, seconds: above 0 while the wall clock is behind where it stepped back from (docs/time.md).', front.clock.aheadMs / 1000);
  p.single('streamfeat_registry_version', 'gauge', 'Registry version served.', front.version);
  p.single('streamfeat_registry_nodes', 'gauge', 'Nodes (events, derived events, tables) in the registry.', front.registry.state.nodes.length);
  p.single('streamfeat_dedupe_entries', 'gauge', 'Dedupe values remembered by the front.', front.dedupe.store.size);
  p.single('streamfeat_shards', 'gauge', 'Shard threads.', front.channels.length);

  // ---- shards: hand-off, entities, WAL, snapshots --------------------------------------------
  const chans = front.channels;
  const perShard = (name: string, type: 'counter' | 'gauge', help: string, pick: (i: number) => number): void => {
    p.family(name, type, help);
    for (let i = 0; i < chans.length; i++) p.sample(name, { shard: i }, pick(i));
  };
  perShard('streamfeat_shard_batches_total', 'counter', 'Batches handed to the shard thread.', (i) => chans[i].batchesSent);
  perShard('streamfeat_shard_batch_items_total', 'counter', 'Items (pushes, gets, admin items) inside those batches.', (i) => chans[i].itemsSent);
  perShard('streamfeat_shard_batch_seconds_total', 'counter', 'Sum of batch round trips front -> shard -> front, seconds.', (i) => chans[i].batchSeconds);
  perShard('streamfeat_shard_queue_items', 'gauge', 'Items waiting on the front for the shard\'s next batch.', (i) => chans[i].queued);
  perShard('streamfeat_shard_batches_in_flight', 'gauge', 'Batches dispatched to the shard and not yet answered.', (i) => chans[i].inFlight);
  // Shard figures arrive once a second (admin/stats.ts); a shard that has not answered yet has no series.
  const known: Array<[number, ShardStats]> = stats.shards.flatMap((s, i): Array<[number, ShardStats]> => (s === null ? [] : [[i, s]]));
  const bySeries = <T>(rows: ReadonlyArray<[number, T]>) => (name: string, type: 'counter' | 'gauge', help: string, pick: (v: T) => number): void => {
    p.family(name, type, help);
    for (const [i, v] of rows) p.sample(name, { shard: i }, pick(v));
  };
  const fromShards = bySeries(known);
  fromShards('streamfeat_shard_applied_lsn', 'gauge', 'Highest LSN the shard has applied.', (s) => s.appliedLsn);
  fromShards('streamfeat_shard_recovered_records', 'gauge', 'WAL records the shard replayed at boot.', (s) => s.recoveredRecords);
  fromShards('streamfeat_shard_recovery_seconds', 'gauge', 'Time the shard took to recover at boot, seconds.', (s) => s.recoveryMs / 1000);
  fromShards('streamfeat_stats_age_seconds', 'gauge', 'Age of the shard figures (refreshed every second; a growing age means a stalled shard).', (s) => (mono - stats.shardAtMs[s.shard]) / 1000);
  const perTable = (name: string, help: string, pick: (t: TableStats) => number): void => {
    p.family(name, 'gauge', help);
    for (const [i, s] of known) for (const t of s.tables) p.sample(name, { shard: i, table: t.table }, pick(t));
  };
  perTable('streamfeat_entities', 'Entities held (hot and cold), by shard and table.', (t) => t.hot + t.cold);
  perTable('streamfeat_cold_entities', 'Entities in the cold store (idle past cold_after or evicted by --memory-limit; included in streamfeat_entities), by shard and table.', (t) => t.cold);
  perTable('streamfeat_table_state_bytes', 'Estimated bytes of entity state (sampled serialized size x entities), by shard and table.', (t) => t.bytes);

  // Cold store and --memory-limit (shard/cold/cold_files.ts, shard_main.ts); disk figures are 0 in memory-only mode.
  const cold = bySeries(known.map(([i, s]): [number, ShardStats['cold']] => [i, s.cold]));
  cold('streamfeat_cold_frozen_total', 'counter', 'Idle entities (past cold_after) frozen into the cold store.', (c) => c.frozen);
  cold('streamfeat_cold_dropped_total', 'counter', 'Idle or evicted entities dropped instead of stored because every feature was empty.', (c) => c.dropped);
  cold('streamfeat_cold_evicted_total', 'counter', 'Entities frozen into the cold store because the shard was over --memory-limit.', (c) => c.evicted);
  cold('streamfeat_cold_thawed_total', 'counter', 'Cold entities brought back to memory by a push or read.', (c) => c.thawed);
  cold('streamfeat_cold_store_bytes', 'gauge', 'Bytes of the shard\'s on-disk cold store segment files.', (c) => c.diskBytes);
  cold('streamfeat_cold_store_live_bytes', 'gauge', 'Bytes of live records in the on-disk cold store (the rest is reclaimed by compaction).', (c) => c.liveBytes);
  cold('streamfeat_cold_store_segments', 'gauge', 'Segment files of the on-disk cold store.', (c) => c.segments);
  cold('streamfeat_cold_store_write_errors_total', 'counter', 'Cold store writes that failed (their entities stayed in memory).', (c) => c.writeErrors);
  cold('streamfeat_cold_store_corrupt_total', 'counter', 'Cold store records whose checksum did not match.', (c) => c.corrupt);
  cold('streamfeat_cold_store_compactions_total', 'counter', 'Cold store segments compacted (live records moved, file deleted).', (c) => c.compactedSegments);
  cold('streamfeat_cold_memory_bytes', 'gauge', 'Bytes cold entities keep in memory: the on-disk store\'s index, or the frozen buffers in memory-only mode.', (c) => c.memoryBytes);
  cold('streamfeat_memory_limit_bytes', 'gauge', 'The shard\'s share of --memory-limit (0: no limit).', (c) => c.memoryLimitBytes);
  cold('streamfeat_shard_memory_bytes', 'gauge', 'The shard\'s measured memory, compared with its limit: heap in use (garbage included until the next GC) plus external buffers.', (c) => c.measuredBytes);
  cold('streamfeat_memory_refused_total', 'counter', 'Pushes refused with memory_limit_exceeded (memory-only mode over --memory-limit).', (c) => c.refused);

  if (!ctx.memoryOnly) {
    const wals: Array<[number, ShardWalStats]> = known.flatMap(([i, s]): Array<[number, ShardWalStats]> => (s.wal === null ? [] : [[i, s.wal]]));
    const wal = bySeries(wals);
    wal('streamfeat_wal_appends_total', 'counter', 'WAL writes (one per batch with pushes or installs).', (w) => w.appends);
    wal('streamfeat_wal_append_bytes_total', 'counter', 'Bytes written to the WAL.', (w) => w.appendBytes);
    wal('streamfeat_wal_append_errors_total', 'counter', 'WAL writes that failed (the batch answered wal_unavailable).', (w) => w.appendErrors);
    wal('streamfeat_wal_fsyncs_total', 'counter', 'WAL fdatasync calls that succeeded.', (w) => w.syncs);
    wal('streamfeat_wal_fsync_errors_total', 'counter', 'WAL fdatasync calls that failed.', (w) => w.syncErrors);
    wal('streamfeat_wal_unsynced_bytes', 'gauge', 'Bytes written to the WAL and not yet fdatasynced.', (w) => w.bytesSinceSync);
    wal('streamfeat_wal_segment_bytes', 'gauge', 'Size of the WAL segment being appended.', (w) => w.segmentBytes);
    wal('streamfeat_wal_last_lsn', 'gauge', 'Highest LSN written to the shard\'s WAL.', (w) => w.lastLsn);
    p.family('streamfeat_wal_append_latency_seconds', 'histogram', 'Time of one WAL write (write(2) of a whole batch), seconds.');
    for (const [i, w] of wals) p.histogram('streamfeat_wal_append_latency_seconds', { shard: i }, w.appendLatency);
    p.family('streamfeat_wal_fsync_latency_seconds', 'histogram', 'Time of one WAL fdatasync, seconds.');
    for (const [i, w] of wals) p.histogram('streamfeat_wal_fsync_latency_seconds', { shard: i }, w.syncLatency);

    type Snap = NonNullable<ShardStats['snapshot']>;
    const snap = bySeries(known.flatMap(([i, s]): Array<[number, Snap]> => (s.snapshot === null ? [] : [[i, s.snapshot]])));
    snap('streamfeat_snapshot_last_success_timestamp_seconds', 'gauge', 'When the shard\'s newest snapshot was written (Unix seconds; 0: none).', (x) => x.lastSuccessMs / 1000);
    snap('streamfeat_snapshot_age_seconds', 'gauge', 'Seconds since the shard\'s newest snapshot was written (+Inf: none yet).', (x) => (x.lastSuccessMs > 0 ? (now - x.lastSuccessMs) / 1000 : Infinity));
    snap('streamfeat_snapshot_last_duration_seconds', 'gauge', 'Start-to-durable time of the last snapshot this process wrote, seconds (0: none yet).', (x) => x.lastDurationS);
    snap('streamfeat_snapshot_last_bytes', 'gauge', 'File size of the last snapshot this process wrote, bytes.', (x) => x.lastBytes);
    snap('streamfeat_snapshots_total', 'counter', 'Snapshots written by this process.', (x) => x.written);
    snap('streamfeat_snapshot_failures_total', 'counter', 'Snapshots that failed to write.', (x) => x.failures);
  }
  return p.text();
}
