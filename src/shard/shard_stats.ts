/**
 * What a shard reports to the front (admin/stats.ts asks once a second with an
 * ITEM_STATS item in its channel): runtime of its thread, entities and an
 * estimate of state bytes per table, WAL and snapshot figures. The WAL and
 * snapshot counters are plain fields bumped by ShardStore, once per batch at most.
 */
import { serialize } from 'node:v8';
import { Histogram, type HistogramData } from '../admin/histogram';
import type { ThreadStats } from '../admin/thread_stats';
import { TABLE_MEMORY_SAMPLE_ENTITIES, TABLE_MEMORY_SAMPLES_PER_CALL } from '../limits';
import type { ShardState, TableState } from './state/state';
import type { ColdFiles } from './cold/cold_files';

export class WalStats {
  appends = 0;
  appendBytes = 0;
  appendErrors = 0;
  readonly appendLatency = new Histogram();
  syncs = 0;
  syncErrors = 0;
  readonly syncLatency = new Histogram();
}

export class SnapshotStats {
  /** Server time (clock/server_clock.ts) of the newest snapshot written (or found at recovery); 0 when none. */
  lastSuccessMs = 0;
  /** Begin-to-durable time of the last snapshot written by this process, seconds. */
  lastDurationS = 0;
  lastBytes = 0;
  lastEntities = 0;
  written = 0;
  failures = 0;
  /** performance.now() when a job started (its duration is monotonic); 0 when none runs. */
  startedMs = 0;
}

export interface TableStats {
  table: string;
  hot: number;
  cold: number;
  /** Estimated bytes of entity state (see estimateTableBytes). */
  bytes: number;
}

export interface ShardWalStats {
  appends: number;
  appendBytes: number;
  appendErrors: number;
  appendLatency: HistogramData;
  syncs: number;
  syncErrors: number;
  syncLatency: HistogramData;
  bytesSinceSync: number;
  segment: string;
  segmentBytes: number;
  lastLsn: number;
}

export interface ShardStats {
  shard: number;
  runtime: ThreadStats;
  registryVersion: number;
  appliedLsn: number;
  recoveredRecords: number;
  recoveryMs: number;
  tables: TableStats[];
  /** null in memory-only mode. */
  wal: ShardWalStats | null;
  snapshot: { lastSuccessMs: number; lastDurationS: number; lastBytes: number; lastEntities: number; written: number; failures: number; running: boolean } | null;
  cold: ShardColdStats;
}

/** Cold store and memory-limit figures of a shard (counters since boot). */
export interface ShardColdStats {
  frozen: number;
  dropped: number;
  evicted: number;
  thawed: number;
  refused: number;
  /** On-disk cold store (0 in memory-only mode): bytes in segment files, of which live. */
  diskBytes: number;
  liveBytes: number;
  segments: number;
  /** Bytes the cold store keeps in memory (the index, or frozen buffers without disk). */
  memoryBytes: number;
  writeErrors: number;
  corrupt: number;
  compactedSegments: number;
  /** The shard's share of --memory-limit (0: none) and its last measured memory (heap used + external). */
  memoryLimitBytes: number;
  measuredBytes: number;
}

export function coldView(state: ShardState, files: ColdFiles | null, memoryLimitBytes: number, measuredBytes: number): ShardColdStats {
  const c = state.counters;
  let memoryBytes = 0;
  for (const ts of state.tables) memoryBytes += ts.cold.memoryBytes();
  return {
    frozen: c.frozen, dropped: c.dropped, evicted: c.evicted, thawed: c.thawed, refused: c.refused,
    diskBytes: files === null ? 0 : files.diskBytes, liveBytes: files === null ? 0 : files.liveBytes, segments: files === null ? 0 : files.segments,
    memoryBytes, writeErrors: files === null ? 0 : files.stats.writeErrors, corrupt: files === null ? 0 : files.stats.corrupt,
    compactedSegments: files === null ? 0 : files.stats.compactedSegments, memoryLimitBytes, measuredBytes,
  };
}

/** A table's last TABLE_MEMORY_SAMPLE_ENTITIES sampled entity sizes, and where the next sample starts. */
interface SizeSamples {
  sizes: Float64Array;
  /** Samples taken so far (the ring holds the last min(n, length) of them). */
  n: number;
  /** The slot the next sample looks from. */
  cursor: number;
}

/** Per table of this thread (a table replaced by an install starts over). */
const samplesOf = new WeakMap<TableState, SizeSamples>();

/**
 * Estimated bytes a table's entities hold: the mean v8-serialized size of the last
 * TABLE_MEMORY_SAMPLE_ENTITIES sampled hot entities (their op states as a snapshot
 * or a cold freeze stores them, plus the key) times the hot count, plus what the
 * cold store keeps in memory (frozen buffers, or the on-disk store's index). Live
 * objects on the heap take more than their serialized form; the shard's measured
 * heap is in `runtime` — this number says which table holds the state, not the
 * exact heap bytes.
 *
 * A call samples at most TABLE_MEMORY_SAMPLES_PER_CALL entities (all
 * TABLE_MEMORY_SAMPLE_ENTITIES on a table's first call), walking the slots round
 * from where the last call stopped: sampling 16 entities of each of the fraud
 * workload's four tables in every once-a-second STATS item held the shard for 4-13
 * ms (a batch behind it waited as long), and always sampled the same first slots.
 */
export function estimateTableBytes(ts: TableState): number {
  let bytes = 0;
  const index = ts.cols.index;
  if (ts.size > 0) {
    let s = samplesOf.get(ts);
    if (s === undefined) {
      s = { sizes: new Float64Array(TABLE_MEMORY_SAMPLE_ENTITIES), n: 0, cursor: 0 };
      samplesOf.set(ts, s);
    }
    const want = s.n === 0 ? TABLE_MEMORY_SAMPLE_ENTITIES : TABLE_MEMORY_SAMPLES_PER_CALL;
    const ring = s.sizes;
    let slot = s.cursor < index.high ? s.cursor : 0;
    // At most one lap of the slots per call: a table with fewer live entities than `want` samples each once.
    for (let taken = 0, seen = 0; taken < want && seen < index.high; seen++, slot = slot + 1 < index.high ? slot + 1 : 0) {
      if (!index.live(slot)) continue;
      ring[s.n % ring.length] = serialize(ts.cols.save(slot)).length + index.keyBytes(slot) + 16;
      s.n++;
      taken++;
    }
    s.cursor = slot;
    const held = Math.min(s.n, ring.length);
    let sum = 0;
    for (let i = 0; i < held; i++) sum += ring[i];
    bytes += held === 0 ? 0 : (sum / held) * ts.size;
  }
  // Cold entities: what they keep in memory (frozen buffers in memory-only mode; the index on disk).
  bytes += ts.cold.memoryBytes();
  return Math.round(bytes);
}

export function tableStats(state: ShardState): TableStats[] {
  return state.tables.map((ts) => ({ table: ts.plan.name, hot: ts.size, cold: ts.cold.size, bytes: estimateTableBytes(ts) }));
}

export function snapshotView(s: SnapshotStats): NonNullable<ShardStats['snapshot']> {
  return {
    lastSuccessMs: s.lastSuccessMs, lastDurationS: s.lastDurationS, lastBytes: s.lastBytes, lastEntities: s.lastEntities,
    written: s.written, failures: s.failures, running: s.startedMs > 0,
  };
}

