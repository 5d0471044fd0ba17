import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordEncoder, decodeWalRecord, encodeJsonFrame, crc32c } from '../../../src/wal';
import { RECORD_TYPE_PUSH } from '../../../src/wal/constants';
import { encode, frameOffsets, plain, prng, randomPush, type TestRecord } from './helpers';

function decodeAll(buf: Buffer): TestRecord[] {
  const offs = frameOffsets(buf);
  const out: TestRecord[] = [];
  for (let i = 0; i + 1 < offs.length; i++) {
    const o = offs[i];
    assert.equal(crc32c(buf, o + 8, offs[i + 1]), buf.readUInt32LE(o + 4), 'frame crc');
    out.push(plain(decodeWalRecord(buf, o + 8, offs[i + 1])));
  }
  return out;
}

test('push, install and reset records round-trip, including unicode', () => {
  const push = { type: RECORD_TYPE_PUSH, dedupe: null, table: 0 } as const;
  const records: TestRecord[] = [
    { ...push, lsn: 0, timeMs: 0, registryVersion: 0, eventIndex: 0, key: '', values: [] },
    { ...push, lsn: 7, timeMs: 1_700_000_000_123, registryVersion: 4, eventIndex: 3, key: 'pay', values: [1] },
    { type: 2, lsn: 8, registryVersion: 5 },
    { ...push, lsn: 2 ** 40 + 3, timeMs: 2 ** 45, registryVersion: 0xffffffff, eventIndex: 0xffff, dedupe: 'événement_中', table: 0xffff, key: 'héllo 😀 \u2028 "q" \\ \n', values: ['\ud800', null, undefined, true, -0, 2.5] },
    { type: 3, lsn: Number.MAX_SAFE_INTEGER, registryVersion: 9 },
  ];
  const buf = encode(records);
  assert.deepEqual(decodeAll(buf), records);
});

test('property: random batches round-trip byte-exactly, install and reset records through a reused encoder (seeded)', () => {
  const seed = 20240611;
  const rnd = prng(seed);
  const enc = new RecordEncoder(16);
  for (let batch = 0; batch < 60; batch++) {
    const records: TestRecord[] = [];
    let lsn = Math.floor(rnd() * 1e6);
    const n = 1 + Math.floor(rnd() * 40);
    for (let i = 0; i < n; i++) {
      lsn += 1 + Math.floor(rnd() * 5);
      const kind = rnd();
      if (kind < 0.8) records.push(randomPush(rnd, lsn));
      else if (kind < 0.9) records.push({ type: 2, lsn, registryVersion: Math.floor(rnd() * 1000) });
      else records.push({ type: 3, lsn, registryVersion: Math.floor(rnd() * 1000) });
    }
    const buf = encode(records, enc);
    assert.deepEqual(decodeAll(buf), records, `seed ${seed} batch ${batch}`);
  }
  // One batch of version records through the same encoder: count, bounds, growth.
  enc.reset();
  for (let lsn = 1; lsn <= 100; lsn++) enc.install(lsn, lsn);
  assert.equal(enc.count, 100);
  assert.equal(enc.firstLsn, 1);
  assert.equal(enc.lastLsn, 100);
  assert.ok(enc.capacity >= 1024, 'the staging buffer grew by doubling');
});

test('encoder reuse: reset() clears count and lsn bounds, capacity is kept', () => {
  const enc = new RecordEncoder(32);
  for (let lsn = 1; lsn <= 30; lsn++) enc.install(lsn, 1);
  const cap = enc.capacity;
  assert.ok(cap >= 500);
  enc.reset();
  assert.equal(enc.count, 0);
  assert.equal(enc.byteLength, 0);
  assert.equal(enc.firstLsn, -1);
  assert.equal(enc.capacity, cap);
  enc.install(1, 2);
  assert.equal(enc.bytes().length, 8 + 1 + 12);
});

test('frame layout: u32 LE length, u32 LE crc32c over type+payload, type byte', () => {
  const enc = new RecordEncoder();
  enc.install(0x0102030405, 7);
  const b = enc.bytes();
  assert.equal(b.readUInt32LE(0), 13);
  assert.equal(b.readUInt32LE(4), crc32c(b, 8, b.length));
  assert.equal(b[8], 2);
  assert.equal(b.readUInt32LE(9), 0x02030405);
  assert.equal(b.readUInt32LE(13), 0x01);
  assert.equal(b.readUInt32LE(17), 7);
});

test('encoder rejects programmer errors (lsn order, bad numbers)', () => {
  const enc = new RecordEncoder();
  enc.install(5, 1);
  assert.throws(() => enc.resetRecord(5, 1), /lsn must increase/);
  assert.throws(() => enc.install(1.5, 1), /safe integer/);
  assert.throws(() => enc.install(10, -1), /registryVersion/);
  assert.throws(() => enc.install(11, 2 ** 32), /u32/);
});

test('JSON frames carry type 16 and the UTF-8 JSON', () => {
  const f = encodeJsonFrame({ v: 'ü', n: [1, 2] });
  assert.equal(f[8], 16);
  assert.equal(f.readUInt32LE(0), f.length - 8);
  assert.equal(f.readUInt32LE(4), crc32c(f, 8, f.length));
  assert.deepEqual(JSON.parse(f.toString('utf8', 9)), { v: 'ü', n: [1, 2] });
});
