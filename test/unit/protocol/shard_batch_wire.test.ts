/**
 * A batch's crossing to its shard thread (protocol/messages.ts ShardBatchWire):
 * the frames as latin1 text over a real MessagePort, turned back into bytes by
 * ShardBatchDecoder in one buffer reused batch after batch (no ArrayBuffer per
 * batch in the shard's isolate), grown for a large batch and not kept once it
 * is past PUSH_BATCH_BYTES_KEPT_MAX.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { ITEM_PUSH, type ShardBatchWire } from '../../../src/protocol/messages';
import { ShardBatchDecoder } from '../../../src/protocol/shard_calls';
import { PUSH_BATCH_BYTES_INITIAL, PUSH_BATCH_BYTES_KEPT_MAX } from '../../../src/limits';
import { prng } from '../../harness/prng';

function randomBytes(n: number, seed: number): Buffer {
  const rnd = prng(seed);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rnd() * 256);
  return b;
}

/** `wire` as the shard thread receives it: posted on a MessagePort (structured clone). */
function cross(wire: ShardBatchWire): Promise<ShardBatchWire> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port2.once('message', (m: ShardBatchWire) => { port1.close(); resolve(m); });
    port1.postMessage(wire);
  });
}

test('every byte value crosses as latin1 text and decodes unchanged, into one buffer reused batch after batch', async () => {
  const dec = new ShardBatchDecoder();
  const a = randomBytes(3_000, 1);
  a[0] = 0;
  a[1] = 0xff;
  const first = dec.decode(await cross({ items: [{ k: ITEM_PUSH, n: 3 }], frames: a.toString('latin1') }));
  assert.deepEqual(first.items, [{ k: ITEM_PUSH, n: 3 }]);
  assert.deepEqual(Buffer.from(first.bytes), a);
  const buffer = first.bytes.buffer;
  const b = randomBytes(500, 2);
  const second = dec.decode(await cross({ items: [], frames: b.toString('latin1') }));
  assert.deepEqual(Buffer.from(second.bytes), b);
  assert.equal(second.bytes.buffer, buffer, 'the same buffer, no new ArrayBuffer');
  assert.equal(second.bytes.byteOffset, first.bytes.byteOffset);
  const empty = dec.decode({ items: [], frames: '' });
  assert.equal(empty.bytes.byteLength, 0);
});

test('a batch larger than the buffer grows it; past PUSH_BATCH_BYTES_KEPT_MAX it is not kept', () => {
  const dec = new ShardBatchDecoder();
  assert.equal(dec.bufferBytes, PUSH_BATCH_BYTES_INITIAL);
  const mid = randomBytes(PUSH_BATCH_BYTES_INITIAL * 3, 3);
  assert.deepEqual(Buffer.from(dec.decode({ items: [], frames: mid.toString('latin1') }).bytes), mid);
  assert.equal(dec.bufferBytes, PUSH_BATCH_BYTES_INITIAL * 4, 'doubled until it fits');
  const small = randomBytes(100, 4);
  assert.deepEqual(Buffer.from(dec.decode({ items: [], frames: small.toString('latin1') }).bytes), small);
  assert.equal(dec.bufferBytes, PUSH_BATCH_BYTES_INITIAL * 4, 'a grown buffer under the kept maximum stays');
  const huge = randomBytes(PUSH_BATCH_BYTES_KEPT_MAX + 1, 5);
  assert.deepEqual(Buffer.from(dec.decode({ items: [], frames: huge.toString('latin1') }).bytes), huge);
  assert.ok(dec.bufferBytes > PUSH_BATCH_BYTES_KEPT_MAX);
  assert.deepEqual(Buffer.from(dec.decode({ items: [], frames: small.toString('latin1') }).bytes), small);
  assert.equal(dec.bufferBytes, PUSH_BATCH_BYTES_INITIAL, 'back to the initial size after a huge batch');
});
