/**
 * Cluster checkpoints, shard side (docs/cluster.md "Checkpoints"): export and
 * import the entities of one partition.
 *
 * No new encoding: an export is a snapshot body (snapshot_job.ts: meta, entity
 * chunks with per-entity lastLsn, end chunk) restricted to the partition's keys,
 * lz4-compressed like snapshot files. It runs synchronously in its place in the
 * shard's batch, so it reflects exactly the pushes the front enqueued before it
 * (batches are FIFO): that is what makes a checkpoint consistent with the stream
 * sequence the feed recorded when it enqueued the export.
 *
 * An import replaces the partition's entities by the checkpoint's, matched to the
 * installed registry by feature signature (restoreSnapshot); every shard receives
 * every part of the exporting node (whose shard count may differ) and keeps only
 * the keys it owns.
 */
import { compressSync, uncompressSync } from 'lz4-napi';
import { DedupeLog } from '../state/dedupe_log';
import { restoreSnapshot, SnapshotJob } from './snapshot_job';
import type { ShardState } from '../state/state';

/** Encodes this shard's entities of partition `p` (synchronous: the shard stalls for its size). */
export function exportPartition(state: ShardState, p: number): { body: Uint8Array; entities: number } {
  const job = new SnapshotJob(state, (key) => state.ownsInPartition(key, p));
  job.step(Number.POSITIVE_INFINITY);
  // Cluster dedupe lives in JetStream (message ids), not in the shards: no entries to carry.
  const { body } = job.finish(new DedupeLog());
  return { body: compressSync(body), entities: job.entities };
}

/** Replaces this shard's entities of partition `p` by those in `parts`. Returns entities restored. */
export function importPartition(state: ShardState, p: number, parts: readonly Uint8Array[]): number {
  state.dropPartition(p);
  let n = 0;
  const keep = (key: string): boolean => state.ownsInPartition(key, p);
  for (const part of parts) {
    // The registry is never rolled back to the checkpoint's version: features are matched by signature.
    n += restoreSnapshot(state, uncompressSync(Buffer.from(part.buffer, part.byteOffset, part.byteLength)), () => undefined, keep).entities;
  }
  return n;
}
