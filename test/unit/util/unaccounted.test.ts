/**
 * util/unaccounted.ts: the shard's doubling tables on SharedArrayBuffers are left
 * out of V8's external-memory figure (so a doubling does not start a
 * mark-compact) but counted by unaccountedBytes() until they are collected; the
 * ring pools, intern tables and entity indexes whose arrays grow with grown()
 * keep their content across growth. Large arrays grow in place (no copy) on a
 * growable buffer, through fixed-length views.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { spawnSync } from 'node:child_process';
import { growableBytes, grown, int32sOf, unaccountedBytes, unaccountedFloat64, wordsOf } from '../../../src/util/unaccounted';
import { GROW_IN_PLACE_BYTES_MIN } from '../../../src/limits';
import { BlockPool } from '../../../src/shard/columns/ring_pool';
import { InternTable } from '../../../src/shard/state/intern';
import { EntityIndex } from '../../../src/shard/state/entity_index';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('arrays outside V8\'s external figure, counted by unaccountedBytes() until collected', async () => {
  const before = unaccountedBytes();
  const growable0 = growableBytes();
  const ext0 = getHeapStatistics().external_memory;
  let f: Float64Array | null = unaccountedFloat64(1 << 20);
  let i: Float64Array | null = unaccountedFloat64(1 << 19);
  assert.ok(f.buffer instanceof SharedArrayBuffer && i.buffer instanceof SharedArrayBuffer);
  assert.equal(f.length, 1 << 20);
  assert.ok(f.every((x) => x === 0) && i.every((x) => x === 0), 'zeroed');
  assert.equal(unaccountedBytes() - before, 12 << 20);
  assert.equal(growableBytes() - growable0, 12 << 20, 'large: on growable buffers');
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
  assert.equal(growableBytes(), growable0);
});

test('a ring pool, an intern table and an entity index keep their content as they grow', () => {
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

test('grown: small arrays are copied and stay ordinary (or shared), large ones move once to a growable buffer and then grow in place', () => {
  const small = new Float64Array(16).map((_, k) => k + 0.5);
  const s2 = grown(small, 32);
  assert.ok(s2.buffer instanceof ArrayBuffer && s2.buffer !== small.buffer, 'a small ordinary array stays an ordinary copy');
  assert.deepEqual(Array.from(s2.subarray(0, 16)), Array.from(small));
  assert.ok(s2.subarray(16).every((x) => x === 0), 'zeros after');
  const sh = grown(unaccountedFloat64(16).fill(-1), 32);
  assert.ok(sh.buffer instanceof SharedArrayBuffer, 'a small shared array stays shared');
  assert.notEqual((sh.buffer as unknown as { growable?: boolean }).growable, true, 'and reserves nothing');
  assert.ok(sh.subarray(0, 16).every((x) => x === -1) && sh.subarray(16).every((x) => x === 0), 'values kept, zeros after');

  const before = unaccountedBytes();
  const n = GROW_IN_PLACE_BYTES_MIN / 8;
  let a = new Float64Array(n / 2).map((_, k) => k);
  a = grown(a, n);
  const buf = a.buffer as unknown as SharedArrayBuffer & { growable?: boolean };
  assert.ok(buf instanceof SharedArrayBuffer && buf.growable === true, 'moved to a growable buffer at GROW_IN_PLACE_BYTES_MIN');
  assert.equal(unaccountedBytes() - before, 8 * n);
  for (let k = 0; k < n / 2; k++) assert.equal(a[k], k);
  const prev = a;
  a = grown(a, 4 * n);
  assert.equal(a.buffer, buf, 'grown in place: the same buffer');
  assert.equal(a.length, 4 * n);
  assert.equal(unaccountedBytes() - before, 32 * n, 'the accounting follows the buffer');
  assert.equal(a[n / 2 - 1], n / 2 - 1, 'values kept');
  assert.equal(a[n], 0, 'zeros after the old length (committed in place)');
  assert.equal(a[n - 1], 0);
  assert.equal(prev.length, n, 'the replaced array keeps its fixed length');
  prev[3] = 42;
  assert.equal(a[3], 42, 'and aliases the first bytes');
  // Views of a growable buffer are fixed-length: a later growth does not move them.
  const w = wordsOf(a);
  const i32 = int32sOf(a);
  assert.equal(w.length, 8 * n);
  assert.equal(i32.length, 8 * n);
  a = grown(a, 8 * n);
  assert.equal(w.length, 8 * n, 'a view does not track the buffer\'s length');
  assert.equal(a.buffer, buf);
  // A stale array (not the buffer's whole length) is copied, not grown over the live one.
  const stale = grown(prev, 2 * n);
  assert.notEqual(stale.buffer, buf);
  assert.equal(stale[3], 42);
  assert.equal(a.length, 8 * n);
});

test('a large ring pool grows in place and its u32 view follows it', () => {
  const pool = new BlockPool(64);
  const blocks = (4 * GROW_IN_PLACE_BYTES_MIN) / (64 * 8);
  let large: ArrayBufferLike | null = null;
  for (let b = 0; b < blocks; b++) {
    const at = pool.alloc();
    pool.data[at * 64] = b;
    pool.u32[at * 128 + 3] = b;
    if (large === null && pool.data.byteLength >= GROW_IN_PLACE_BYTES_MIN) large = pool.data.buffer;
    if (large !== null) assert.equal(pool.data.buffer, large, `block ${b}: grown in place once large`);
  }
  assert.equal(pool.data.byteLength, 4 * GROW_IN_PLACE_BYTES_MIN);
  assert.equal(pool.u32.length, 2 * pool.data.length);
  for (let b = 0; b < blocks; b++) {
    assert.equal(pool.data[b * 64], b);
    assert.equal(pool.u32[b * 128 + 3], b);
  }
});

test('under a limit on address space (ulimit -v) the reservations are refused and counted, and arrays grow by copying', () => {
  const mod = require.resolve('../../../src/util/unaccounted');
  const script = `
    const u = require(${JSON.stringify(mod)});
    let a = new Float64Array(1 << 16).fill(1);
    for (let n = 1 << 17; n <= 1 << 22; n *= 2) { a = u.grown(a, n); a[n - 1] = n; }
    console.log(JSON.stringify({ length: a.length, first: a[0], last: a[a.length - 1], growable: a.buffer.growable === true, refused: u.reservationsRefused() }));`;
  // 3 GB of address space: node runs, a 4 GiB reservation cannot.
  const r = spawnSync('bash', ['-c', `ulimit -v 3000000; exec "${process.execPath}" -e '${script.replace(/'/g, "'\\''")}'`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { length: number; first: number; last: number; growable: boolean; refused: number };
  assert.deepEqual(out, { length: 1 << 22, first: 1, last: 1 << 22, growable: false, refused: 6 });
});
