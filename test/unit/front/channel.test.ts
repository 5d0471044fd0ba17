/**
 * A completion that throws costs its own request only (issue 11 finding 1): the
 * other sinks of the batch complete, the failure handler sees the sink (and its
 * reply), and the channel keeps dispatching.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardChannel, type Sink } from '../../../src/front/channel';
import { ITEM_GET, type GetItem, type ShardBatch, type ShardBatchResult } from '../../../src/protocol/messages';
import { overResponseLimit } from '../../../src/front/sinks';
import { RESPONSE_BYTES_MAX } from '../../../src/limits';

function fakePool(): { run(task: ShardBatch): Promise<ShardBatchResult>; runs: number } {
  const pool = {
    runs: 0,
    run(task: ShardBatch): Promise<ShardBatchResult> {
      pool.runs++;
      return Promise.resolve({ outs: task.items.map((_, i) => `row${i}`) });
    },
  };
  return pool;
}

// A get as the front builds it (the channel only looks at an item's kind).
const item: GetItem = { k: ITEM_GET, v: 1, t: 0, key: 'k', f: null };

test('a sink that throws answers through onSinkFailed; the other sinks of the batch and later batches complete', async () => {
  const pool = fakePool();
  const failed: Array<{ sink: Sink; err: unknown }> = [];
  const ch = new ShardChannel(0, pool as never, () => assert.fail('no shard failure'), (sink, err) => failed.push({ sink, err }));
  const got: string[] = [];
  const reply = { ok: () => {}, error: () => {}, transport: 0 } as never;
  const bad: Sink = { reply, done: () => { throw new RangeError('Invalid string length'); } };
  const good = (name: string): Sink => ({ done: (out) => { got.push(`${name}:${String(out)}`); } });
  ch.enqueue(item, good('a'), 0);
  ch.enqueue(item, bad, 0);
  ch.enqueue(item, good('c'), 0);
  ch.flush();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(got, ['a:row0', 'c:row2']);
  assert.equal(failed.length, 1);
  assert.equal(failed[0].sink.reply, reply);
  assert.match(String(failed[0].err), /Invalid string length/);
  ch.enqueue(item, good('d'), 0);
  ch.flush();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(got, ['a:row0', 'c:row2', 'd:row0']);
  assert.ok(ch.idle);
});

test('a failure handler that throws too does not escape the completion', async () => {
  const ch = new ShardChannel(0, fakePool() as never, () => {}, () => { throw new Error('handler broke'); });
  const rejections: unknown[] = [];
  const onRej = (e: unknown): void => { rejections.push(e); };
  process.on('unhandledRejection', onRej);
  try {
    ch.enqueue(item, { done: () => { throw new Error('sink broke'); } }, 0);
    ch.flush();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(rejections.length, 0);
    assert.ok(ch.idle);
  } finally {
    process.off('unhandledRejection', onRej);
  }
});

test('overResponseLimit: counts UTF-8 bytes exactly near the limit, cheaply far from it', () => {
  assert.equal(overResponseLimit(10, ['x'.repeat(10)]), false);
  assert.equal(overResponseLimit(RESPONSE_BYTES_MAX + 1, []), true, 'units above the limit are bytes above it');
  const n = Math.floor(RESPONSE_BYTES_MAX / 2) - 10;
  assert.equal(overResponseLimit(n, ['é'.repeat(n)]), false, '2-byte characters just under');
  const m = Math.floor(RESPONSE_BYTES_MAX / 2) + 10;
  assert.equal(overResponseLimit(m, ['é'.repeat(m)]), true, '2-byte characters just over');
});
