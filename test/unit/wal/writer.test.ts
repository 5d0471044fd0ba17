import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordEncoder, WalWriter, recoverWal, type WalRecord } from '../../../src/wal';
import { cleanup, makeEvents, stage, tempDir } from './helpers';

function appendInBatches(w: WalWriter, records: WalRecord[], batch: number, enc = new RecordEncoder(256)): void {
  for (let i = 0; i < records.length; i += batch) {
    enc.reset();
    for (const r of records.slice(i, i + batch)) stage(enc, r);
    w.appendStaged(enc);
  }
}

function recoverAll(dir: string, afterLsn = -1): { records: WalRecord[]; report: ReturnType<typeof recoverWal> } {
  const records: WalRecord[] = [];
  const report = recoverWal(dir, afterLsn, (r) => records.push(r));
  return { records, report };
}

function segments(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.endsWith('.log')).sort();
}

test('batches are recovered exactly and in order', () => {
  const dir = tempDir('writer');
  try {
    const records = makeEvents(500, 10, 3);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    appendInBatches(w, records, 37);
    assert.ok(w.bytesSinceSync > 0);
    w.sync();
    assert.equal(w.bytesSinceSync, 0);
    w.close();
    const { records: got, report } = recoverAll(dir);
    assert.deepEqual(got, records);
    assert.equal(report.records, 500);
    assert.equal(report.lastLsn, records[499].lsn);
    assert.deepEqual(report.log, []);
    assert.deepEqual(segments(dir), ['00000000000000000010.log']);
  } finally {
    cleanup(dir);
  }
});

test('segments rotate at segmentBytesMax, are named by first lsn, and stay under the cap', () => {
  const dir = tempDir('rotate');
  try {
    const records = makeEvents(400, 1);
    const w = WalWriter.open(dir, { segmentBytesMax: 4096 });
    appendInBatches(w, records, 10);
    w.close();
    const segs = segments(dir);
    assert.ok(segs.length > 3, `expected rotation, got ${segs.length} segment(s)`);
    for (const s of segs) assert.ok(statSync(join(dir, s)).size <= 4096, `${s} over the cap`);
    // Batches of 10 starting at lsn 1: every segment starts at a batch boundary.
    for (const s of segs) assert.equal((Number(s.slice(0, 20)) - 1) % 10, 0, s);
    const { records: got } = recoverAll(dir);
    assert.deepEqual(got, records);
  } finally {
    cleanup(dir);
  }
});

test('a batch bigger than segmentBytesMax still goes into one segment', () => {
  const dir = tempDir('bigbatch');
  try {
    const w = WalWriter.open(dir, { segmentBytesMax: 512 });
    const records = makeEvents(50, 1);
    appendInBatches(w, records, 50);
    appendInBatches(w, makeEvents(1, 100), 1);
    w.close();
    assert.deepEqual(segments(dir), ['00000000000000000001.log', '00000000000000000100.log']);
  } finally {
    cleanup(dir);
  }
});

test('recovery filters by afterLsn and skips segments wholly at or below it', () => {
  const dir = tempDir('after');
  try {
    const records = makeEvents(300, 1, 2); // lsns 1,3,...,599
    const w = WalWriter.open(dir, { segmentBytesMax: 2048 });
    appendInBatches(w, records, 8);
    w.close();
    for (const after of [-1, 0, 1, 2, 150, 301, 598, 599, 10_000]) {
      const { records: got, report } = recoverAll(dir, after);
      assert.deepEqual(got, records.filter((r) => r.lsn > after), `afterLsn ${after}`);
      if (after >= 301) assert.ok(report.segmentsSkipped > 0, `afterLsn ${after} should skip segments`);
    }
  } finally {
    cleanup(dir);
  }
});

test('reopen starts a new segment; lsns must keep growing', () => {
  const dir = tempDir('reopen');
  try {
    let w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    appendInBatches(w, makeEvents(5, 1), 5);
    w.close();
    w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, nextLsnHint: 6 });
    assert.throws(() => appendInBatches(w, makeEvents(1, 5), 1), /lsns must grow/);
    appendInBatches(w, makeEvents(5, 6), 5);
    w.close();
    assert.deepEqual(segments(dir), ['00000000000000000001.log', '00000000000000000006.log']);
    assert.deepEqual(recoverAll(dir).records.map((r) => r.lsn), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  } finally {
    cleanup(dir);
  }
});

test('empty segments (crash before the first write, tail cut to nothing) are removed at open', () => {
  const dir = tempDir('emptyleft');
  try {
    const w0 = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    appendInBatches(w0, makeEvents(3, 1), 3);
    w0.close();
    writeFileSync(join(dir, '00000000000000000009.log'), '');
    writeFileSync(join(dir, '00000000000000000012.log'), Buffer.alloc(20, 0xee));
    const { report } = recoverAll(dir); // cuts 12.log (all garbage) to 0 bytes
    assert.equal(report.lastLsn, 3);
    assert.equal(report.nextLsnMin, 4);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, nextLsnHint: report.nextLsnMin });
    assert.deepEqual(segments(dir), ['00000000000000000001.log']);
    appendInBatches(w, makeEvents(2, 4), 2);
    w.close();
    assert.deepEqual(recoverAll(dir).records.map((r) => r.lsn), [1, 2, 3, 4, 5]);
  } finally {
    cleanup(dir);
  }
});

test('nextLsnMin respects a non-empty newest segment without valid records, and afterLsn', () => {
  const dir = tempDir('nextmin');
  try {
    const w0 = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    appendInBatches(w0, makeEvents(3, 1), 3);
    w0.close();
    // A closed segment of garbage followed by a later segment with a valid record.
    writeFileSync(join(dir, '00000000000000000050.log'), Buffer.alloc(20, 0xee));
    const w1 = WalWriter.open(dir, { segmentBytesMax: 1 << 20, nextLsnHint: 60 });
    appendInBatches(w1, makeEvents(1, 60), 1);
    w1.close();
    const { report } = recoverAll(dir);
    assert.equal(report.nextLsnMin, 61);
    assert.equal(recoverAll(dir, 100).report.nextLsnMin, 101);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    assert.throws(() => appendInBatches(w, makeEvents(1, 60), 1), /lsns must grow/);
    w.close();
  } finally {
    cleanup(dir);
  }
});

test('deleteSegmentsCoveredBy removes only closed segments whose records are all <= lsn', () => {
  const dir = tempDir('delete');
  try {
    const w = WalWriter.open(dir, { segmentBytesMax: 1024 });
    const records = makeEvents(200, 1);
    appendInBatches(w, records, 5);
    const before = segments(dir);
    assert.ok(before.length >= 4);
    const firsts = before.map((s) => Number(s.slice(0, 20)));
    // lsn just below the third segment's first: segments 0 and 1 are covered.
    assert.equal(w.deleteSegmentsCoveredBy(firsts[2] - 1), 2);
    assert.deepEqual(segments(dir), before.slice(2));
    // One short of covering segment 2: nothing happens.
    assert.equal(w.deleteSegmentsCoveredBy(firsts[3] - 2), 0);
    // Everything: the current segment survives.
    assert.equal(w.deleteSegmentsCoveredBy(10_000), before.length - 3);
    assert.deepEqual(segments(dir), [before[before.length - 1]]);
    assert.equal(w.segmentName, before[before.length - 1]);
    appendInBatches(w, makeEvents(1, 500), 1);
    w.close();
    const { records: got } = recoverAll(dir);
    assert.deepEqual(got.map((r) => r.lsn), records.filter((r) => r.lsn >= firsts[firsts.length - 1]).map((r) => r.lsn).concat([500]));
  } finally {
    cleanup(dir);
  }
});

test('deleteSegmentsCoveredBy after reopen keeps the newest segment (its end is unknown)', () => {
  const dir = tempDir('delete2');
  try {
    let w = WalWriter.open(dir, { segmentBytesMax: 1024 });
    appendInBatches(w, makeEvents(100, 1), 5);
    w.close();
    const before = segments(dir);
    w = WalWriter.open(dir, { segmentBytesMax: 1024 });
    assert.equal(w.deleteSegmentsCoveredBy(1_000_000), before.length - 1);
    assert.deepEqual(segments(dir), [before[before.length - 1]]);
    w.close();
  } finally {
    cleanup(dir);
  }
});

test('truncateAll deletes every segment and the next append starts fresh', () => {
  const dir = tempDir('truncall');
  try {
    const w = WalWriter.open(dir, { segmentBytesMax: 1024 });
    appendInBatches(w, makeEvents(100, 50), 10);
    w.truncateAll();
    assert.deepEqual(segments(dir), []);
    assert.equal(recoverAll(dir).records.length, 0);
    const enc = new RecordEncoder();
    enc.resetRecord(1, 9);
    w.appendStaged(enc);
    w.close();
    assert.deepEqual(recoverAll(dir).records, [{ type: 3, lsn: 1, registryVersion: 9 }]);
  } finally {
    cleanup(dir);
  }
});

test('recovery of a missing directory is empty, and open creates it', () => {
  const dir = tempDir('missing');
  try {
    const sub = join(dir, 'shard-0', 'wal');
    assert.equal(recoverAll(sub).report.segments, 0);
    WalWriter.open(sub, { segmentBytesMax: 1024 }).close();
    assert.ok(existsSync(sub));
  } finally {
    cleanup(dir);
  }
});

test('every segment opens with a SEGMENT frame naming the last lsn written before it (0 at the start and after truncateAll)', () => {
  const dir = tempDir('writer-seg');
  try {
    const prevOf = (name: string): number => {
      const b = readFileSync(join(dir, name));
      assert.equal(b[8], 5, `${name} opens with a SEGMENT frame`);
      assert.equal(b.readUInt32LE(0), 9);
      return b.readUInt32LE(9) + b.readUInt32LE(13) * 2 ** 32;
    };
    const records = makeEvents(60, 1, 2);
    let w = WalWriter.open(dir, { segmentBytesMax: 400 });
    appendInBatches(w, records.slice(0, 40), 1);
    w.close();
    const first = segments(dir);
    assert.ok(first.length >= 3);
    assert.equal(prevOf(first[0]), 0);
    for (let i = 1; i < first.length; i++) assert.equal(prevOf(first[i]), Number(first[i].slice(0, 20)) - 2, 'the lsn just before (lsns step by 2)');
    // A new process: its first segment follows what recovery read (lastRecordLsn), not the newest name.
    w = WalWriter.open(dir, { segmentBytesMax: 400, nextLsnHint: records[40].lsn, lastRecordLsn: records[39].lsn });
    appendInBatches(w, records.slice(40, 41), 1);
    assert.equal(prevOf(w.segmentName), records[39].lsn);
    w.truncateAll();
    appendInBatches(w, records.slice(41, 42), 1);
    assert.equal(prevOf(w.segmentName), 0, 'after a reset the history starts again');
    w.close();
    const { records: got, report } = recoverAll(dir);
    assert.deepEqual(got, records.slice(41, 42), 'SEGMENT frames are not records');
    assert.deepEqual(report.log, []);
    assert.deepEqual(report.chain.map((c) => [c.prevLsn, c.firstLsn]), [[0, records[41].lsn]]);
  } finally {
    cleanup(dir);
  }
});

test('a segment holding only its SEGMENT frame (a crash before the first batch landed) is removed at open', () => {
  const dir = tempDir('writer-hdr');
  try {
    let w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    appendInBatches(w, makeEvents(3, 1), 1);
    w.close();
    const [only] = segments(dir);
    const hdr = readFileSync(join(dir, only)).subarray(0, 17);
    writeFileSync(join(dir, '00000000000000000009.log'), hdr);
    w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    assert.deepEqual(segments(dir), [only]);
    w.close();
  } finally {
    cleanup(dir);
  }
});
