/**
 * The `--hop ring` hand-off of the bench's hop baselines (bench/baseline/hop_ring.ts):
 * batches of strings come out of the ring as they went in, in order, across many
 * wrap-arounds of the ring, and a reader waiting for the next batch is woken by it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CTRL_SLOTS, RING_BYTES, StringRing } from '../../bench/baseline/hop_ring';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../../src/limits';
import { prng } from '../harness/prng';

function pair(): { writer: StringRing; reader: StringRing } {
  const sab = new SharedArrayBuffer(RING_BYTES);
  const ctrl = new Int32Array(new SharedArrayBuffer(4 * CTRL_SLOTS));
  return { writer: new StringRing(sab, ctrl, 0), reader: new StringRing(sab, ctrl, 0) };
}

test('hop ring: random batches (empty ones, empty strings, non-ASCII) come back in order across wrap-arounds', () => {
  const { writer, reader } = pair();
  const rnd = prng(20261125);
  const alphabet = ['a', 'b', 'é', '日', '🙂', '"', '\u0000'];
  // Strings are slices of a few random texts (building each one a character at a time is most of the test's
  // time), cut between code points: the ring carries UTF-8, as the bodies it stands for are.
  const texts = Array.from({ length: 16 }, () => Array.from({ length: 4000 }, () => alphabet[Math.floor(rnd() * alphabet.length)]));
  const inFlight: string[][] = [];
  let bytes = 0;
  for (let b = 0; b < 800; b++) {
    const batch = Array.from({ length: Math.floor(rnd() * 40) }, () => {
      const n = rnd() < 0.1 ? 0 : Math.floor(rnd() * 2000);
      const at = Math.floor(rnd() * 2000);
      return texts[Math.floor(rnd() * texts.length)].slice(at, at + n).join('');
    });
    writer.put(batch);
    inFlight.push(batch);
    bytes += batch.reduce((a, s) => a + Buffer.byteLength(s), 0);
    // The servers keep at most SHARD_BATCHES_IN_FLIGHT_MAX batches in a ring.
    if (inFlight.length === SHARD_BATCHES_IN_FLIGHT_MAX || rnd() < 0.5) {
      while (reader.ready > 0) assert.deepEqual(reader.take(), inFlight.shift(), `batch ${b}`);
      assert.equal(inFlight.length, 0);
    }
  }
  while (reader.ready > 0) assert.deepEqual(reader.take(), inFlight.shift());
  assert.equal(inFlight.length, 0);
  assert.ok(bytes > 5 * RING_BYTES, `the run wrapped the ring several times (${bytes} bytes)`);
});

test('hop ring: a reader waiting for a batch is woken when it is put, and at once when one is ready', async () => {
  const { writer, reader } = pair();
  const woken = new Promise<void>((resolve) => reader.whenReady(resolve));
  setTimeout(() => writer.put(['late']), 20);
  await woken;
  assert.deepEqual(reader.take(), ['late']);
  writer.put(['ready']);
  await new Promise<void>((resolve) => reader.whenReady(resolve));
  assert.deepEqual(reader.take(), ['ready']);
  assert.equal(reader.ready, 0);
});
