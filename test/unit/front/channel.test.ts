/**
 * A completion that throws costs its own request only: the
 * other sinks of the batch complete, the failure handler sees the sink (and its
 * reply), and the channel keeps dispatching.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardChannel, type Sink } from '../../../src/front/channel';
import { ITEM_GET, type GetItem, type ShardBatch, type ShardBatchResult, type ShardServeTask } from '../../../src/protocol/messages';
import { overResponseLimit } from '../../../src/front/sinks';
import { RESPONSE_BYTES_MAX } from '../../../src/limits';

/** A shard thread's stand-in: serves the pipe (protocol/shard_calls.ts) and answers every get with row<i>. */
function fakePool(): { run(task: ShardServeTask): Promise<void>; batches: number } {
  const pool = {
    batches: 0,
    run(task: ShardServeTask): Promise<void> {
      const port = task.serve;
      port.on('message', (b: ShardBatch) => {
        pool.batches++;
        const res: ShardBatchResult = { outs: b.items.map((_, i) => `row${i}`) };
        port.postMessage(res);
      });
      return new Promise((resolve) => port.once('close', resolve));
    },
  };
  return pool;
}

/** Until the channel has nothing in flight (answers cross a real MessagePort). */
async function settled(ch: ShardChannel): Promise<void> {
  for (let i = 0; i < 500 && !ch.idle; i++) await new Promise((r) => setTimeout(r, 2));
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
  await settled(ch);
  assert.deepEqual(got, ['a:row0', 'c:row2']);
  assert.equal(failed.length, 1);
  assert.equal(failed[0].sink.reply, reply);
  assert.match(String(failed[0].err), /Invalid string length/);
  ch.enqueue(item, good('d'), 0);
  ch.flush();
  await settled(ch);
  assert.deepEqual(got, ['a:row0', 'c:row2', 'd:row0']);
  assert.ok(ch.idle);
  assert.equal(pool.batches, 2);
  ch.close();
});

test('a failure handler that throws too does not escape the completion', async () => {
  const ch = new ShardChannel(0, fakePool() as never, () => {}, () => { throw new Error('handler broke'); });
  const rejections: unknown[] = [];
  const onRej = (e: unknown): void => { rejections.push(e); };
  process.on('unhandledRejection', onRej);
  try {
    ch.enqueue(item, { done: () => { throw new Error('sink broke'); } }, 0);
    ch.flush();
    await settled(ch);
    assert.equal(rejections.length, 0);
    assert.ok(ch.idle);
    ch.close();
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

/**
 * A pool whose first thread answers the first batch only when the second arrives
 * and dies at once: the answer is still queued on the front's port when the serve
 * task fails (the race of a real thread's exit). Later serve tasks get a healthy thread.
 */
function dyingPool(): { run(task: ShardServeTask): Promise<void>; serves: number } {
  const pool = {
    serves: 0,
    run(task: ShardServeTask): Promise<void> {
      const port = task.serve;
      const life = ++pool.serves;
      let seen = 0;
      return new Promise((resolve, reject) => {
        port.on('message', (b: ShardBatch) => {
          const ok: ShardBatchResult = { outs: b.items.map(() => 'ok') };
          if (life > 1) { port.postMessage(ok); return; }
          if (++seen === 2) {
            port.postMessage(ok); // the answer to batch 1
            reject(new Error('worker exited with code: 70'));
          }
        });
        port.once('close', resolve);
      });
    },
  };
  return pool;
}

test('a thread that dies: answers it posted still complete, batches it did not answer get internal_error, the next batch goes to a new pipe', async () => {
  const pool = dyingPool();
  const failures: unknown[] = [];
  const ch = new ShardChannel(0, pool as never, (err) => failures.push(err), () => assert.fail('no sink failure'));
  const got: string[] = [];
  const sink = (name: string): Sink => ({ done: (out) => { got.push(`${name}:${typeof out === 'string' ? out : (out as { code: string }).code}`); } });
  ch.enqueue(item, sink('a'), 0);
  ch.flush(); // batch 1: answered as the thread dies
  ch.enqueue(item, sink('b'), 0);
  ch.flush(); // batch 2: the thread dies on it
  await settled(ch);
  assert.deepEqual(got, ['a:ok', 'b:internal_error']);
  assert.equal(failures.length, 1);
  assert.match(String(failures[0]), /exited with code: 70/);
  ch.enqueue(item, sink('c'), 0);
  ch.flush();
  await settled(ch);
  assert.deepEqual(got, ['a:ok', 'b:internal_error', 'c:ok']);
  assert.equal(pool.serves, 2, 'a second pipe, to the replacement thread');
  ch.close();
});

test('a batch that throws in the shard is answered internal_error and reported; the pipe carries on', async () => {
  const pool = {
    run(task: ShardServeTask): Promise<void> {
      const port = task.serve;
      let n = 0;
      port.on('message', (b: ShardBatch) => {
        port.postMessage(++n === 1 ? { failed: { message: 'boom', stack: 'Error: boom\n    at shard' } } : { outs: b.items.map(() => 'ok') });
      });
      return new Promise((resolve) => port.once('close', resolve));
    },
  };
  const failures: Error[] = [];
  const ch = new ShardChannel(0, pool as never, (err) => failures.push(err as Error), () => assert.fail('no sink failure'));
  const got: unknown[] = [];
  ch.enqueue(item, { done: (out) => { got.push(out); } }, 0);
  ch.flush();
  await settled(ch);
  ch.enqueue(item, { done: (out) => { got.push(out); } }, 0);
  ch.flush();
  await settled(ch);
  assert.equal((got[0] as { code: string }).code, 'internal_error');
  assert.equal(got[1], 'ok');
  assert.equal(failures.length, 1);
  assert.equal(failures[0].message, 'boom');
  assert.match(String(failures[0].stack), /at shard/);
  ch.close();
});

test('answered batches are reused: every sink and tag gets its own answer across batches of shrinking and growing sizes, several in flight', async () => {
  // Answers each get with its own key, so that an answer can be checked whatever batch it went in.
  const pool = {
    run(task: ShardServeTask): Promise<void> {
      const port = task.serve;
      port.on('message', (b: ShardBatch) => { port.postMessage({ outs: b.items.map((it) => `row:${(it as GetItem).key}`) } satisfies ShardBatchResult); });
      return new Promise((resolve) => port.once('close', resolve));
    },
  };
  const ch = new ShardChannel(0, pool as never, () => assert.fail('no shard failure'), () => assert.fail('no sink failure'));
  try {
    const got: string[] = [];
    const want: string[] = [];
    const sizes = [5, 1, 3, 8, 2, 8, 1];
    for (let round = 0; round < 3; round++) {
      for (const [b, n] of sizes.entries()) {
        for (let i = 0; i < n; i++) {
          const key = `${round}.${b}.${i}`;
          ch.enqueue({ ...item, key }, { done: (out, tag) => { got.push(`${String(out)}:${tag}`); } }, 100 + i);
          want.push(`row:${key}:${100 + i}`);
        }
        ch.flush(); // up to SHARD_BATCHES_IN_FLIGHT_MAX go out at once; the rest when answers return
      }
      await settled(ch);
    }
    assert.deepEqual(got, want);
    assert.ok(ch.idle);
  } finally {
    ch.close();
  }
});
