/**
 * util/unaccounted.ts: the shard's doubling tables on SharedArrayBuffers are left
 * out of V8's external-memory figure (so a doubling does not start a
 * mark-compact) but counted by unaccountedBytes() until they are collected; the
 * ring pools, intern tables and entity key tables that use them keep their
 * content across growth.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { unaccountedBytes, unaccountedFloat64, unaccountedInt32 } from '../../../src/util/unaccounted';
import { BlockPool } from '../../../src/shard/ring_pool';
import { InternTable } from '../../../src/shard/intern';
import { EntityIndex } from '../../../src/shard/entity_index';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('arrays outside V8\'s external figure, counted by unaccountedBytes() until collected', async () => {
  const before = unaccountedBytes();
  const ext0 = getHeapStatistics().external_memory;
  let f: Float64Array | null = unaccountedFloat64(1 << 20);
  let i: Int32Array | null = unaccountedInt32(1 << 20);
  assert.ok(f.buffer instanceof SharedArrayBuffer && i.buffer instanceof SharedArrayBuffer);
  assert.equal(f.length, 1 << 20);
  assert.ok(f.every((x) => x === 0) && i.every((x) => x === 0), 'zeroed');
  assert.equal(unaccountedBytes() - before, 12 << 20);
  assert.ok(getHeapStatistics().external_memory - ext0 < 1 << 20, 'not in V8\'s external memory');
  f[5] = 1.5;
  i[7] = -3;
  assert.equal(f[5] + i[7], -1.5);
  // Dropped and collected: the bytes come off (the registry's callback runs after the GC).
  f = null;
  i = null;
  for (let k = 0; k < 50 && unaccountedBytes() > before; k++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(unaccountedBytes(), before);
});

test('a ring pool, an intern table and an entity key table keep their content as they grow on shared memory', () => {
  const pool = new BlockPool(4);
  const blocks: number[] = [];
  for (let b = 0; b < 100; b++) {
    const at = pool.alloc();
    blocks.push(at);
    pool.data[at * 4] = b + 0.25;
  }
  assert.ok(pool.data.buffer instanceof SharedArrayBuffer);
  assert.equal(pool.u32.buffer, pool.data.buffer);
  blocks.forEach((at, b) => assert.equal(pool.data[at * 4], b + 0.25));
  const saved = pool.save();
  assert.ok(saved.bytes.buffer instanceof ArrayBuffer, 'a save is an ordinary copy (it can be serialized)');
  const back = new BlockPool(4);
  back.load(saved);
  blocks.forEach((at, b) => assert.equal(back.data[at * 4], b + 0.25));

  const intern = new InternTable();
  const ids = Array.from({ length: 500 }, (_, k) => intern.ref(`value-${k}`));
  ids.forEach((id, k) => assert.equal(intern.value(id), `value-${k}`));
  for (let k = 0; k < 500; k++) assert.equal(intern.ref(`value-${k}`), ids[k], 'found again after the rehashes');

  const index = new EntityIndex();
  const slots = Array.from({ length: 1000 }, (_, k) => index.add(`key-${k}`, k, k));
  for (let k = 0; k < 1000; k++) assert.equal(index.slotOf(`key-${k}`), slots[k]);
  assert.equal(index.slotOf('key-1000'), -1);
});
