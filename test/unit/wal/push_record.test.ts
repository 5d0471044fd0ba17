/**
 * PUSH records (src/wal/push_record.ts): every value type round-trips exactly
 * (absent vs null, -0, int32 edges, doubles, unicode), the structural check
 * accepts exactly what the writer produces, and a batch of sealed frames goes
 * through the WAL (WalWriter, recoverWal) and reads back byte for byte, next to
 * the EVENT records of the previous format.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  PushFrameWriter, PushRecordReader, pushWellFormed, sealFrame, frameEnd, wellFormed, PUSH_INDEX_MAX,
  TAG_ABSENT, TAG_NULL, TAG_FALSE, TAG_TRUE, TAG_I32, TAG_F64, TAG_STR_ASCII, TAG_STR_UTF8, TAG_STR_UTF16,
} from '../../../src/wal/push_record';
import { FRAME_LENGTH_CRC_BYTES, FRAME_TYPE_BYTES, RECORD_BYTES_MAX, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH } from '../../../src/wal/constants';
import { checkWalDir, formatWalCheckReport, RecordEncoder, recoverWal, WalWriter, type WalRecord } from '../../../src/wal';
import { crc32c } from '../../../src/wal/crc32c';
import { KEY_BYTES_MAX, PUSH_BATCH_BYTES_KEPT_MAX, STRING_VALUE_BYTES_MAX_DEFAULT } from '../../../src/limits';
import type { Value } from '../../../src/types';

const VALUES: Array<Value | undefined> = [
  undefined, null, false, true, 0, -0, 1, -1, 2147483647, -2147483648, 2147483648, -2147483649,
  Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 0.1, -1e-300, 1.7976931348623157e308, 5e-324,
  '', 'ascii', 'é', '日本語', '🙂 emoji', 'x'.repeat(STRING_VALUE_BYTES_MAX_DEFAULT), 'é'.repeat(STRING_VALUE_BYTES_MAX_DEFAULT / 2),
  'a\u0000b', '\ud800 lone surrogate', 'tail lone \udc00', 'pair \ud83d\ude42 then lone \ud83d',
];

/** One PUSH frame with one feed holding `values`; returns the frame bytes. */
function frame(values: ReadonlyArray<Value | undefined>, key = 'k', dedupe: string | null = null): Buffer {
  const w = new PushFrameWriter(64);
  w.begin(42, 1_700_000_000_123, 7, 3, dedupe);
  w.feed(5, key);
  for (const v of values) w.value(v);
  w.end();
  return Buffer.from(w.take());
}

function readFeed(buf: Buffer): { rd: PushRecordReader; table: number; key: string; values: Array<Value | undefined> } {
  const rd = new PushRecordReader();
  rd.open(buf, FRAME_LENGTH_CRC_BYTES);
  assert.equal(rd.feedCount, 1);
  const table = rd.u16();
  const key = rd.str();
  const n = rd.u16();
  const values: Array<Value | undefined> = [];
  for (let i = 0; i < n; i++) values.push(rd.value());
  return { rd, table, key, values };
}

/** Offset of the first value of the single feed of the frame in `buf` (past its table index, key and value count). */
function firstValueAt(buf: Buffer): number {
  const rd = new PushRecordReader();
  rd.open(buf, FRAME_LENGTH_CRC_BYTES);
  rd.u16(); rd.str(); rd.u16();
  return rd.p;
}

/** The tag the writer gives `v`. */
function tagOf(v: Value | undefined): number {
  const buf = frame([v]);
  return buf[firstValueAt(buf)];
}

test('every value type round-trips exactly: absent stays absent, null stays null, -0 keeps its sign', () => {
  const buf = frame(VALUES);
  assert.ok(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, buf.length));
  const { rd, table, key, values } = readFeed(buf);
  assert.equal(rd.lsn, 42);
  assert.equal(rd.timeMs, 1_700_000_000_123);
  assert.equal(rd.registryVersion, 7);
  assert.equal(rd.eventIndex, 3);
  assert.equal(rd.dedupe, null);
  assert.equal(table, 5);
  assert.equal(key, 'k');
  assert.equal(values.length, VALUES.length);
  for (let i = 0; i < VALUES.length; i++) {
    const want = VALUES[i];
    assert.ok(Object.is(values[i], want), `value ${i}: ${String(values[i])} vs ${String(want)}`);
  }
  assert.ok(Object.is(values[VALUES.findIndex((v) => Object.is(v, -0))], -0));
  assert.equal(values[0], undefined);
  assert.equal(values[1], null);
});

test('tags: int32 integers are 4 bytes, everything else numeric is f64; ASCII strings are marked as such', () => {
  assert.equal(tagOf(undefined), TAG_ABSENT);
  assert.equal(tagOf(null), TAG_NULL);
  assert.equal(tagOf(false), TAG_FALSE);
  assert.equal(tagOf(true), TAG_TRUE);
  for (const v of [0, 1, -1, 2147483647, -2147483648]) assert.equal(tagOf(v), TAG_I32, String(v));
  assert.equal(tagOf(2147483648), TAG_F64);
  assert.equal(tagOf(-0), TAG_F64);
  assert.equal(tagOf(1.5), TAG_F64);
  assert.equal(tagOf('abc'), TAG_STR_ASCII);
  assert.equal(tagOf('x'.repeat(500)), TAG_STR_ASCII);
  assert.equal(tagOf('é'), TAG_STR_UTF8);
  assert.equal(tagOf('x'.repeat(500) + 'é'), TAG_STR_UTF8);
  assert.equal(tagOf('🙂'), TAG_STR_UTF8);
  assert.equal(tagOf('\ud800'), TAG_STR_UTF16, 'a lone surrogate has no UTF-8 form');
});

test('unicode keys and dedupe values, a key of KEY_BYTES_MAX bytes, composite keys', () => {
  for (const key of ['ключ', '🔑🔑', 'lone \udfff key', 'é'.repeat(KEY_BYTES_MAX / 2), 'k'.repeat(KEY_BYTES_MAX), '["a","b|c"]']) {
    const buf = frame([1], key, `dédup-${key.slice(0, 10)}`);
    assert.ok(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, buf.length));
    const { rd, key: got } = readFeed(buf);
    assert.equal(got, key);
    assert.equal(rd.dedupe, `dédup-${key.slice(0, 10)}`);
  }
});

test('limits: u16 indexes and counts are checked when written; many feeds and values per record', () => {
  const w = new PushFrameWriter();
  assert.throws(() => w.begin(1, 1, 1, PUSH_INDEX_MAX + 1, null), /event index/);
  w.abort();
  w.begin(1, 1, 1, PUSH_INDEX_MAX, null);
  assert.throws(() => w.feed(PUSH_INDEX_MAX + 1, 'k'), /table index/);
  w.abort();
  w.begin(1, 1, 1, 0, null);
  w.feed(PUSH_INDEX_MAX, 'k');
  w.end();
  const last = Buffer.from(w.take());
  assert.equal(readFeed(last).table, PUSH_INDEX_MAX);
  w.begin(1, 1, 1, PUSH_INDEX_MAX, null);
  for (let t = 0; t < 300; t++) {
    w.feed(t, `key${t}`);
    for (let j = 0; j < 20; j++) w.value(t * 100 + j);
  }
  w.end();
  const buf = Buffer.from(w.take());
  assert.ok(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, buf.length));
  const rd = new PushRecordReader();
  rd.open(buf, FRAME_LENGTH_CRC_BYTES);
  assert.equal(rd.eventIndex, PUSH_INDEX_MAX);
  assert.equal(rd.feedCount, 300);
  for (let t = 0; t < 300; t++) {
    assert.equal(rd.u16(), t);
    assert.equal(rd.str(), `key${t}`);
    assert.equal(rd.u16(), 20);
    for (let j = 0; j < 20; j++) assert.equal(rd.value(), t * 100 + j);
  }
  assert.equal(rd.p, buf.length);
  // A feed's value count is a u16 too: 65,535 values are written, one more is refused.
  for (const [n, ok] of [[PUSH_INDEX_MAX, true], [PUSH_INDEX_MAX + 1, false]] as const) {
    w.begin(1, 1, 1, 0, null);
    w.feed(0, 'k');
    for (let j = 0; j < n; j++) w.value(null);
    if (!ok) {
      assert.throws(() => w.end(), /too many values/);
      w.abort();
      continue;
    }
    w.end();
    const one = Buffer.from(w.take());
    assert.ok(pushWellFormed(one, FRAME_LENGTH_CRC_BYTES, one.length));
    assert.equal(readFeed(one).values.length, PUSH_INDEX_MAX);
  }
});

test('the structural check rejects every truncation, a bad tag and trailing bytes', () => {
  const buf = frame([1, 'two', null, undefined, 2.5], 'key', 'dd');
  const end = buf.length;
  for (let cut = FRAME_LENGTH_CRC_BYTES + 1; cut < end; cut++) assert.equal(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, cut), false, `cut at ${cut}`);
  const longer = Buffer.concat([buf, Buffer.from([0])]);
  assert.equal(pushWellFormed(longer, FRAME_LENGTH_CRC_BYTES, longer.length), false);
  const badTag = Buffer.from(buf);
  badTag[firstValueAt(badTag)] = 99;
  assert.equal(pushWellFormed(badTag, FRAME_LENGTH_CRC_BYTES, end), false);
  // The key's tag, and its length pointing past the end: the walk must stop at the key.
  const rd = new PushRecordReader();
  for (const [at, v] of [[0, 99], [1, 0xff]] as const) {
    const badKey = Buffer.from(buf);
    rd.open(badKey, FRAME_LENGTH_CRC_BYTES);
    rd.u16();
    badKey[rd.p + at] = v;
    assert.equal(pushWellFormed(badKey, FRAME_LENGTH_CRC_BYTES, end), false, `key byte ${at}`);
  }
  const badFlags = Buffer.from(buf);
  badFlags[FRAME_LENGTH_CRC_BYTES + 1 + 22] = 0x80;
  assert.equal(pushWellFormed(badFlags, FRAME_LENGTH_CRC_BYTES, end), false);
});

test('the structural check: LSN and time up to 2^53 - 1 pass and a high word past it fails in either; a last value that is an empty string; a frame without feeds', () => {
  const w = new PushFrameWriter(64);
  w.begin(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 1, 0, null);
  w.feed(0, 'k');
  w.value(1);
  w.end();
  const top = Buffer.from(w.take());
  assert.ok(pushWellFormed(top, FRAME_LENGTH_CRC_BYTES, top.length));
  const rd = new PushRecordReader();
  rd.open(top, FRAME_LENGTH_CRC_BYTES);
  assert.equal(rd.lsn, Number.MAX_SAFE_INTEGER);
  assert.equal(rd.timeMs, Number.MAX_SAFE_INTEGER);
  // The high words of the LSN and of the time (u64 little endian after the type byte).
  const fixed = FRAME_LENGTH_CRC_BYTES + FRAME_TYPE_BYTES;
  for (const hi of [fixed + 4, fixed + 12]) {
    const bad = Buffer.from(frame([1]));
    bad.writeUInt32LE(0x200000, hi); // 2^53: not a safe integer
    assert.equal(pushWellFormed(bad, FRAME_LENGTH_CRC_BYTES, bad.length), false, `high word at ${hi}`);
  }
  // A record may end exactly after an empty string (its length word is its last byte).
  for (const vals of [[''], ['a', ''], [1, '']]) {
    const buf = frame(vals);
    assert.ok(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, buf.length), JSON.stringify(vals));
    assert.deepEqual(readFeed(buf).values, vals);
  }
  // An event that reaches no table of a shard still has a well-formed record: the fixed part and a feed count of 0.
  w.begin(3, 4, 1, 0, null);
  w.end();
  const bare = Buffer.from(w.take());
  assert.ok(pushWellFormed(bare, FRAME_LENGTH_CRC_BYTES, bare.length));
  rd.open(bare, FRAME_LENGTH_CRC_BYTES);
  assert.equal(rd.feedCount, 0);
  // A table whose features read no field (a lifetime count) gets a feed without values; it can be the last.
  const noValues = frame([]);
  assert.ok(pushWellFormed(noValues, FRAME_LENGTH_CRC_BYTES, noValues.length));
  assert.deepEqual(readFeed(noValues).values, []);
});

test('a record of exactly RECORD_BYTES_MAX bytes is written; one byte more is refused and dropped, and the writer goes on', () => {
  const w = new PushFrameWriter();
  const withValue = (n: number): number => {
    w.begin(1, 1, 1, 0, null);
    w.feed(0, 'k');
    w.value('x'.repeat(n));
    return w.end() - FRAME_LENGTH_CRC_BYTES;
  };
  const base = withValue(0);
  w.take();
  assert.equal(withValue(RECORD_BYTES_MAX - base), RECORD_BYTES_MAX);
  const buf = Buffer.from(w.take());
  assert.ok(pushWellFormed(buf, FRAME_LENGTH_CRC_BYTES, buf.length));
  // One byte more: end() refuses it (-1) and drops the frame; the writer takes the next one.
  assert.equal(withValue(RECORD_BYTES_MAX - base + 1), -1 - FRAME_LENGTH_CRC_BYTES);
  assert.equal(w.pos, 0);
  assert.equal(withValue(3), base + 3);
  assert.equal(w.take().length, FRAME_LENGTH_CRC_BYTES + base + 3);
});

test('begin() refuses an LSN that is not a safe integer and a begin inside a frame, the batch\'s first frame included; abort() drops the first frame as well as a later one', () => {
  const w = new PushFrameWriter(64);
  for (const lsn of [-1, 2 ** 53, Number.NaN, 1.5e300]) assert.throws(() => w.begin(lsn, 1, 1, 0, null), /lsn/, String(lsn));
  w.begin(0, 1, 1, 0, null);
  assert.throws(() => w.begin(1, 1, 1, 0, null), /inside a frame/, 'the first frame of the batch');
  w.end();
  w.begin(1, 1, 1, 0, null);
  assert.throws(() => w.begin(2, 1, 1, 0, null), /inside a frame/, 'a later frame');
  w.end();
  w.take();
  // Refused after it began (e.g. a value over a limit): nothing of it stays in the batch.
  const lsns = (buf: Buffer): number[] => {
    const out: number[] = [];
    const rd = new PushRecordReader();
    for (let p = 0; p < buf.length; p = frameEnd(buf, p)) {
      assert.ok(pushWellFormed(buf, p + FRAME_LENGTH_CRC_BYTES, frameEnd(buf, p)));
      rd.open(buf, p + FRAME_LENGTH_CRC_BYTES);
      out.push(rd.lsn);
    }
    return out;
  };
  for (const abortAt of [0, 1]) {
    for (let lsn = 10; lsn < 13; lsn++) {
      w.begin(lsn, 1, 1, 0, 'dedupe');
      w.feed(0, 'key');
      w.value('value');
      if (lsn - 10 === abortAt) w.abort();
      else w.end();
    }
    assert.deepEqual(lsns(Buffer.from(w.take())), [10, 11, 12].filter((l) => l - 10 !== abortAt), `abort of frame ${abortAt}`);
  }
});

test('strings: a surrogate pair at either end of the astral range has a UTF-8 form; a lone surrogate at either end of either range does not', () => {
  for (const s of ['\ud800\udc00', '\udbff\udfff', 'a\ud800\udfffb', '\udbff\udc00', '\ud7ff', '\ue000', '\u{10000}\u{10ffff}']) {
    assert.equal(wellFormed(s), true, JSON.stringify(s));
  }
  for (const s of ['\ud800', '\udbff', '\udc00', '\udfff', '\ud800\ud800', '\udbff\udbff', 'a\udc00\ud800', '\udfff\udc00', 'x\udbff']) {
    assert.equal(wellFormed(s), false, JSON.stringify(s));
  }
  // What the WAL holds follows: the pairs as UTF-8 (what a build with another check would have to match on replay).
  assert.equal(tagOf('\u{10000}'), TAG_STR_UTF8);
  assert.equal(tagOf('\u{10ffff}'), TAG_STR_UTF8);
  assert.equal(tagOf('\udbff'), TAG_STR_UTF16);
  assert.equal(tagOf('\udc00'), TAG_STR_UTF16);
});

test('the writer leaves the crc to the shard: sealFrame fills it in; install and prepended install frames', () => {
  const w = new PushFrameWriter(64);
  w.begin(10, 5, 1, 0, null);
  w.feed(0, 'a');
  w.value(1);
  w.end();
  w.install(11, 2);
  w.prependInstall(9, 1);
  const buf = Buffer.from(w.take());
  const lsns: number[] = [];
  const types: number[] = [];
  for (let p = 0; p < buf.length; p = frameEnd(buf, p)) {
    assert.equal(buf.readUInt32LE(p + 4), 0, 'crc not filled in by the front');
    const end = sealFrame(buf, p);
    assert.equal(buf.readUInt32LE(p + 4), crc32c(buf, p + FRAME_LENGTH_CRC_BYTES, end));
    types.push(buf[p + FRAME_LENGTH_CRC_BYTES]);
    lsns.push(buf.readUInt32LE(p + FRAME_LENGTH_CRC_BYTES + 1));
  }
  assert.deepEqual(types, [RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH, RECORD_TYPE_INSTALL]);
  assert.deepEqual(lsns, [9, 10, 11]);
  assert.equal(w.byteLength, 0, 'take() starts a new batch');
});

test('take() hands over a copy of exactly the batch in its own ArrayBuffer; the next batch reuses the writer and leaves it intact', () => {
  const w = new PushFrameWriter(64);
  const batch = (lsn: number, key: string): Uint8Array => {
    w.begin(lsn, 5, 1, 0, null);
    w.feed(0, key);
    w.value(lsn);
    w.end();
    return w.take();
  };
  const a = batch(1, 'first-key');
  const before = Buffer.from(a);
  assert.equal(a.byteOffset, 0);
  assert.equal(a.buffer.byteLength, a.byteLength, 'exactly the frames: nothing more is transferred');
  const b = batch(2, 'other');
  assert.notEqual(a.buffer, b.buffer);
  assert.deepEqual(Buffer.from(a), before, 'writing the next batch does not touch the one handed over');
  assert.equal(readFeed(Buffer.from(b)).key, 'other');
  // A batch far past the kept size: handed over whole, then the writer starts small again.
  for (let i = 0; i < 40_000; i++) { w.begin(i, 5, 1, 0, null); w.feed(0, 'k'.repeat(100)); w.end(); }
  const big = w.take();
  assert.ok(big.byteLength > PUSH_BATCH_BYTES_KEPT_MAX);
  assert.equal(big.buffer.byteLength, big.byteLength);
  assert.ok(w.buf.length <= PUSH_BATCH_BYTES_KEPT_MAX, 'a huge buffer is not kept between batches');
  assert.equal(readFeed(Buffer.from(batch(3, 'after'))).key, 'after');
});

test('takeLatin1() hands over the same bytes as take() as one character per byte, and starts the next batch', () => {
  const w = new PushFrameWriter(64);
  const write = (lsn: number, key: string): void => {
    w.begin(lsn, 5, 1, 0, null);
    w.feed(0, key);
    w.value(lsn + 0.5);
    w.end();
  };
  assert.equal(w.takeLatin1(), '', 'no frames: nothing');
  // Bytes >= 0x80 (a UTF-8 key, the f64) must come through unchanged.
  write(1, 'clé-€');
  write(2, 'other');
  const viaBytes = Buffer.from(w.take());
  write(1, 'clé-€');
  write(2, 'other');
  const text = w.takeLatin1();
  assert.equal(text.length, viaBytes.length);
  assert.deepEqual(Buffer.from(text, 'latin1'), viaBytes);
  assert.equal(w.byteLength, 0, 'takeLatin1() starts a new batch');
  write(3, 'after');
  assert.equal(readFeed(Buffer.from(w.takeLatin1(), 'latin1')).key, 'after');
});

test('WAL round trip: sealed frames written with one append recover byte for byte, after an INSTALL record staged by the RecordEncoder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-push-wal-'));
  try {
    const writer = WalWriter.open(dir, { segmentBytesMax: 1 << 20, nextLsnHint: 1 });
    const first = new RecordEncoder();
    first.install(1, 1);
    writer.appendStaged(first);
    const w = new PushFrameWriter(64);
    const want: Array<{ lsn: number; key: string; values: Array<Value | undefined> }> = [];
    for (let i = 0; i < 500; i++) {
      const values: Array<Value | undefined> = [i, i % 3 === 0 ? undefined : `v${i}é`, i % 5 === 0 ? null : i / 7];
      w.begin(2 + i, 2000 + i, 1, 0, i % 2 === 0 ? `d${i}` : null);
      w.feed(0, `key-${i}-ключ`);
      for (const v of values) w.value(v);
      w.end();
      want.push({ lsn: 2 + i, key: `key-${i}-ключ`, values });
    }
    const buf = Buffer.from(w.take());
    for (let p = 0; p < buf.length;) p = sealFrame(buf, p);
    writer.append(buf, 2, 501);
    writer.sync();
    writer.close();
    const got: WalRecord[] = [];
    const report = recoverWal(dir, 0, (r) => got.push(r));
    assert.equal(report.corruptSegments.length, 0);
    assert.equal(report.records, 501);
    assert.equal(got[0].type, RECORD_TYPE_INSTALL);
    const rd = new PushRecordReader();
    for (let i = 0; i < 500; i++) {
      const r = got[i + 1];
      assert.equal(r.type, RECORD_TYPE_PUSH);
      if (r.type !== RECORD_TYPE_PUSH) continue;
      assert.equal(r.lsn, want[i].lsn);
      assert.equal(r.timeMs, 2000 + i);
      assert.equal(r.registryVersion, 1);
      rd.open(r.buf, r.body);
      assert.equal(rd.dedupe, i % 2 === 0 ? `d${i}` : null);
      assert.equal(rd.u16(), 0);
      assert.equal(rd.str(), want[i].key);
      const n = rd.u16();
      const values = Array.from({ length: n }, () => rd.value());
      assert.deepEqual(values, want[i].values);
      assert.equal(rd.p, r.end);
    }
    const check = checkWalDir(dir);
    assert.equal(check.ok, true);
    assert.deepEqual(check.types, { push: 500, install: 1, reset: 0, forget: 0 }, 'wal-check counts records by type');
    assert.match(formatWalCheckReport(check), /500 push, 1 install, 0 reset, 0 forget/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
