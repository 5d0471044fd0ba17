/**
 * The WAL resume point of a snapshot (WalWriter.position, kept in the snapshot
 * body's meta, recoverWal's resumeAt): replay reads the segment holding the
 * snapshot's lsn from the batch the point names, and gives exactly the records a
 * whole read gives; a point that does not hold falls back to the whole read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { WalWriter, recoverWal, type WalPosition } from '../../../src/wal';
import { appendRecords, cleanup, makePushes, plain, tempDir, type TestRecord } from './helpers';

function append(w: WalWriter, records: TestRecord[], batch: number): void {
  for (let i = 0; i < records.length; i += batch) appendRecords(w, records.slice(i, i + batch));
}

function replay(dir: string, afterLsn: number, resumeAt: WalPosition | null): { records: TestRecord[]; report: ReturnType<typeof recoverWal> } {
  const records: TestRecord[] = [];
  const report = recoverWal(dir, afterLsn, (r) => records.push(plain(r)), { resumeAt });
  return { records, report };
}

/** 300 records in batches of 10, one segment; the position after the first 200. */
function build(dir: string): { records: TestRecord[]; at: WalPosition } {
  const records = makePushes(300, 1);
  const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
  append(w, records.slice(0, 200), 10);
  const at = w.position();
  assert.ok(at !== null);
  append(w, records.slice(200), 10);
  w.close();
  return { records, at };
}

test('WAL resume: replay from the point gives what a whole read gives, and skips the bytes before it', () => {
  const dir = tempDir('resume');
  try {
    const { at } = build(dir);
    assert.equal(at.lsn, 191, 'the last batch appended: records 191..200');
    assert.ok(at.offset > 0);
    for (const after of [195, 200, 250]) {
      const whole = replay(dir, after, null);
      const resumed = replay(dir, after, at);
      assert.deepEqual(resumed.records, whole.records, `afterLsn ${after}`);
      assert.deepEqual(resumed.report.log, []);
      assert.equal(resumed.report.resumeSkippedBytes, at.offset, `afterLsn ${after}`);
      assert.equal(whole.report.resumeSkippedBytes, 0);
      assert.equal(resumed.report.lastLsn, 300);
      assert.equal(resumed.report.nextLsnMin, whole.report.nextLsnMin);
      assert.deepEqual(resumed.report.lastRecordAt, whole.report.lastRecordAt);
    }
    // The last record read is a resume point too (a snapshot right after recovery).
    const last = replay(dir, 300, null).report.lastRecordAt!;
    assert.equal(last.lsn, 300);
    const fromLast = replay(dir, 300, last);
    assert.deepEqual(fromLast.records, []);
    assert.equal(fromLast.report.resumeSkippedBytes, last.offset);
    assert.equal(fromLast.report.recordsRead, 1);
  } finally {
    cleanup(dir);
  }
});

test('WAL resume: a point that does not hold is ignored (whole segment read)', () => {
  const dir = tempDir('resumebad');
  try {
    const { at } = build(dir);
    const after = 200;
    const whole = replay(dir, after, null);
    const bad: WalPosition[] = [
      { ...at, lsn: at.lsn + 1 }, // another record
      { ...at, offset: at.offset + 3 }, // inside a record
      { ...at, offset: 1 << 30 }, // past the end of the file
      { ...at, segmentLsn: at.segmentLsn + 1 }, // no such segment
    ];
    for (const p of bad) {
      const got = replay(dir, after, p);
      assert.deepEqual(got.records, whole.records, JSON.stringify(p));
      assert.equal(got.report.resumeSkippedBytes, 0, JSON.stringify(p));
      assert.deepEqual(got.report.log, []);
    }
    // A point past afterLsn (its batch is not all in the snapshot) is not used either.
    const early = replay(dir, at.lsn - 1, at);
    assert.equal(early.report.resumeSkippedBytes, 0);
    assert.deepEqual(early.records, replay(dir, at.lsn - 1, null).records);
  } finally {
    cleanup(dir);
  }
});

test('WAL resume: a torn tail after the point is cut at its place in the file', () => {
  const dir = tempDir('resumetail');
  try {
    const records = makePushes(50, 1);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20 });
    append(w, records.slice(0, 30), 10);
    const at = w.position()!;
    append(w, records.slice(30), 10);
    w.close();
    const seg = join(dir, '00000000000000000001.log');
    const size = statSync(seg).size;
    appendFileSync(seg, Buffer.from([0x20, 0, 0, 0, 1, 2, 3])); // a frame header cut short
    const { records: got, report } = replay(dir, 30, at);
    assert.deepEqual(got, records.slice(30));
    assert.equal(report.resumeSkippedBytes, at.offset);
    assert.equal(report.truncatedBytes, 7);
    assert.equal(report.log[0].kind, 'short_header');
    assert.equal(report.log[0].offset, size, 'offsets in the log are offsets in the file');
    assert.equal(statSync(seg).size, size);
  } finally {
    cleanup(dir);
  }
});
