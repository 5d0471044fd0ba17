/**
 * Disk failures through faultyFs: a failed append leaves no partial batch, a
 * failed fdatasync abandons the segment, failed rollbacks are repaired or fenced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SfError } from '../../../src/errors';
import { WalWriter, faultyFs, realFs, recoverWal } from '../../../src/wal';
import { appendRecords, cleanup, makePushes, tempDir } from './helpers';

function recoverAll(dir: string): { lsns: number[]; report: ReturnType<typeof recoverWal> } {
  const lsns: number[] = [];
  const report = recoverWal(dir, -1, (r) => lsns.push(r.lsn));
  return { lsns, report };
}

function segSizes(dir: string): number[] {
  return readdirSync(dir).filter((n) => n.endsWith('.log')).sort().map((n) => statSync(join(dir, n)).size);
}

test('ENOSPC on append: throws the original error, truncates back, later appends succeed', () => {
  const dir = tempDir('enospc');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, fs });
    appendRecords(w, makePushes(10, 1));
    appendRecords(w, makePushes(10, 11));
    const good = w.segmentBytes;
    fs.failWrites('ENOSPC');
    assert.throws(() => appendRecords(w, makePushes(10, 21)), (e: NodeJS.ErrnoException) => e.code === 'ENOSPC');
    assert.equal(fs.faultCount, 1);
    assert.deepEqual(segSizes(dir), [good], 'the half-written batch was cut off');
    assert.equal(w.tailDirty, false);
    fs.failWrites(null);
    appendRecords(w, makePushes(10, 31));
    w.close();
    const { lsns, report } = recoverAll(dir);
    const expected = [...Array(20).keys()].map((i) => i + 1).concat([...Array(10).keys()].map((i) => i + 31));
    assert.deepEqual(lsns, expected);
    assert.deepEqual(report.log, []);
  } finally {
    cleanup(dir);
  }
});

test('EIO on fdatasync: sync throws, the segment is abandoned, the next append starts a new one', () => {
  const dir = tempDir('eio-sync');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, fs });
    appendRecords(w, makePushes(5, 1));
    fs.failSyncs('EIO');
    assert.throws(() => w.sync(), (e: NodeJS.ErrnoException) => e.code === 'EIO');
    assert.equal(w.segmentName, '');
    fs.failSyncs(null);
    appendRecords(w, makePushes(5, 6));
    w.sync();
    w.close();
    assert.equal(segSizes(dir).length, 2);
    assert.deepEqual(recoverAll(dir).lsns, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  } finally {
    cleanup(dir);
  }
});

test('failed fdatasync during rotation fails the append; the next append rotates cleanly', () => {
  const dir = tempDir('eio-rotate');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 300, fs });
    appendRecords(w, makePushes(3, 1));
    assert.ok(w.segmentBytes > 150, 'the next batch must rotate');
    fs.failSyncs('EIO');
    assert.throws(() => appendRecords(w, makePushes(3, 4)), (e: NodeJS.ErrnoException) => e.code === 'EIO');
    fs.failSyncs(null);
    appendRecords(w, makePushes(3, 7));
    w.close();
    assert.deepEqual(recoverAll(dir).lsns, [1, 2, 3, 7, 8, 9]);
  } finally {
    cleanup(dir);
  }
});

test('failed rollback: the next append cuts the dirty tail first', () => {
  const dir = tempDir('dirty');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, fs });
    appendRecords(w, makePushes(4, 1));
    const good = w.segmentBytes;
    fs.failWrites('EIO');
    fs.failTruncates('EIO');
    assert.throws(() => appendRecords(w, makePushes(4, 5)), (e: NodeJS.ErrnoException) => e.code === 'EIO');
    assert.equal(w.tailDirty, true);
    assert.ok(segSizes(dir)[0] > good, 'half a batch is on disk');
    fs.failWrites(null);
    fs.failTruncates(null);
    appendRecords(w, makePushes(2, 9));
    w.close();
    const { lsns, report } = recoverAll(dir);
    assert.deepEqual(lsns, [1, 2, 3, 4, 9, 10]);
    assert.deepEqual(report.log, []);
  } finally {
    cleanup(dir);
  }
});

test('rollback and repair both fail: the segment is fenced off and recovery skips its bad tail', () => {
  const dir = tempDir('fenced');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, fs });
    appendRecords(w, makePushes(4, 1));
    fs.failWrites('ENOSPC');
    fs.failTruncates('EIO');
    // One record: its first half cannot form a valid record.
    assert.throws(() => appendRecords(w, makePushes(1, 5)));
    fs.failWrites(null);
    appendRecords(w, makePushes(2, 9)); // repair fails -> new segment
    fs.failTruncates(null);
    w.close();
    assert.equal(segSizes(dir).length, 2);
    const { lsns, report } = recoverAll(dir);
    assert.deepEqual(lsns, [1, 2, 3, 4, 9, 10]);
    assert.ok(report.log.some((e) => e.kind === 'closed_segment_tail'));
    assert.equal(report.corruptSegments.length, 1);
  } finally {
    cleanup(dir);
  }
});

test('truncateAll failure is wal_truncate_failed', () => {
  const dir = tempDir('trunc-fail');
  try {
    const fs = faultyFs(realFs);
    const w = WalWriter.open(dir, { segmentBytesMax: 1 << 20, fs });
    appendRecords(w, makePushes(2, 1));
    fs.failSyncs('EIO');
    assert.throws(() => w.truncateAll(), (e: unknown) => e instanceof SfError && e.code === 'wal_truncate_failed' && /EIO/.test(String(e.detail.reason)));
    fs.failSyncs(null);
    w.close();
  } finally {
    cleanup(dir);
  }
});
