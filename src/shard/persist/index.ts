/**
 * shard/persist/: a shard's durability and its state as bytes.
 *
 *   store.ts          ShardStore: WAL writes, recovery (newest snapshot + WAL replay),
 *                     snapshot scheduling
 *   snapshot_job.ts   fuzzy incremental snapshots and their restore
 *   slab_chunk.ts     a snapshot's chunks of hot entities as slab bytes
 *   plain_values.ts   the plain encoding of JSON-like values (a frozen entity's rest)
 *   scratch.ts        the byte scratch the encoders write into
 *   partition_io.ts   cluster checkpoints: one partition's entities as a snapshot body
 *
 * The file formats (WAL segments, snapshot files) are in ../../wal/ and
 * docs/durability.md.
 */
export {};
