/** bench/handoff.ts, piscina variant: the worker side (one task per batch, bytes transferred). */
import type { ShardBatch, ShardBatchResult } from '../src/protocol/messages';
import { walk } from './handoff_walk';

let checksum = 0;

export default function handle(batch: ShardBatch): ShardBatchResult {
  const b = batch.bytes;
  checksum += walk(Buffer.from(b.buffer, b.byteOffset, b.byteLength), 0, b.byteLength);
  return { outs: batch.items.map(() => null) };
}

process.on('exit', () => { if (checksum < 0) console.log(checksum); });
