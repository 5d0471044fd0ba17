/**
 * The typed entry into a shard thread (shard/shard_main.ts handle), for the main
 * thread: piscina's run() takes and returns `any`, so this is the one place where
 * the task and answer types of the shard protocol are tied to it.
 */
import type Piscina from 'piscina';
import type { ShardBatch, ShardBatchResult, ShardHello, ShardHelloTask } from './messages';

/** What the shard calls need of a pool (a fake in unit tests). */
export type ShardPool = Pick<Piscina, 'run'>;

const HELLO: ShardHelloTask = { hello: true };

/** Runs one batch; the batch's bytes are transferred to the shard thread (unusable here afterwards). */
export function runShardBatch(pool: ShardPool, batch: ShardBatch): Promise<ShardBatchResult> {
  const buf = batch.bytes.buffer;
  return pool.run(batch, buf.byteLength > 0 && buf instanceof ArrayBuffer ? { transferList: [buf] } : {});
}

/** The first task of a shard thread: answered once it has recovered. */
export function runShardHello(pool: ShardPool): Promise<ShardHello> {
  return pool.run(HELLO);
}
