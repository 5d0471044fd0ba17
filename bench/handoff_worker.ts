/** bench/handoff.ts, piscina variants: the worker side (a task per batch, or batches over a port the serve task brings). */
import type { MessagePort } from 'node:worker_threads';
import type { ShardBatch, ShardBatchResult, ShardBatchWire } from '../src/protocol/messages';
import { ShardBatchDecoder } from '../src/protocol/shard_calls';
import { walk } from './handoff_walk';

let checksum = 0;

function run(batch: ShardBatch): ShardBatchResult {
  const b = batch.bytes;
  checksum += walk(Buffer.from(b.buffer, b.byteOffset, b.byteLength), 0, b.byteLength);
  return { outs: batch.items.map(() => null) };
}

export default function handle(task: ShardBatch | { serve: MessagePort }): ShardBatchResult | Promise<void> {
  if (!('serve' in task)) return run(task);
  const port = task.serve;
  // The server's pipe: frames as latin1 text, decoded into one reused buffer (shard_main.ts).
  const batches = new ShardBatchDecoder();
  port.on('message', (b: ShardBatchWire) => port.postMessage(run(batches.decode(b))));
  return new Promise((resolve) => port.once('close', resolve));
}

process.on('exit', () => { if (checksum < 0) console.log(checksum); });
