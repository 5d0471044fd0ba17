/**
 * The typed entry into a shard thread (shard/shard_main.ts handle), for the main
 * thread: piscina's run() takes and returns `any`, so this is the one place where
 * the task and answer types of the shard protocol are tied to it.
 */
import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import Piscina from 'piscina';
import { SHARD_BATCHES_IN_FLIGHT_MAX, SHARD_YOUNG_GENERATION_MB } from '../limits';
import type { ShardBatch, ShardBatchResult, ShardHello, ShardHelloTask, ShardInit } from './messages';

/** What the shard calls need of a pool (a fake in unit tests). */
export type ShardPool = Pick<Piscina, 'run'>;

const HELLO: ShardHelloTask = { hello: true };

/** Runs one batch; the batch's bytes are transferred to the shard thread (unusable here afterwards). */
export function runShardBatch(pool: ShardPool, batch: ShardBatch): Promise<ShardBatchResult> {
  const buf = batch.bytes.buffer;
  return pool.run(batch, batch.bytes.byteLength > 0 && buf instanceof ArrayBuffer ? { transferList: [buf] } : {});
}

/** The first task of a shard thread: answered once it has recovered. */
export function runShardHello(pool: ShardPool): Promise<ShardHello> {
  return pool.run(HELLO);
}

/** One shard's pool (one thread), started with `init` as its workerData: the other end of shardInit(). */
export function startShardPool(init: ShardInit): Piscina {
  return new Piscina({
    filename: join(__dirname, '..', 'shard', 'shard_main.js'),
    minThreads: 1, maxThreads: 1, idleTimeout: Number.MAX_SAFE_INTEGER, useAtomics: false, workerData: init,
    resourceLimits: { maxYoungGenerationSizeMb: SHARD_YOUNG_GENERATION_MB },
    // The handler is synchronous, so tasks posted ahead still run one at a time in
    // FIFO order; posting them ahead saves a cross-thread round trip per batch.
    concurrentTasksPerWorker: SHARD_BATCHES_IN_FLIGHT_MAX,
  });
}

/** In a shard thread: the init startShardPool passed. */
export function shardInit(): ShardInit {
  return workerData as ShardInit;
}
