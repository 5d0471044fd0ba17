import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WalWriter, checkWalDir, formatWalCheckReport, writeSnapshot } from '../../../src/wal';
import { appendRecords, cleanup, makePushes, tempDir } from './helpers';

function shardDir(root: string): { wal: string; snaps: string } {
  const wal = join(root, 'shard-0', 'wal');
  const snaps = join(root, 'shard-0', 'snapshots');
  mkdirSync(wal, { recursive: true });
  mkdirSync(snaps, { recursive: true });
  const w = WalWriter.open(wal, { segmentBytesMax: 2048 });
  for (const r of makePushes(60, 1)) appendRecords(w, [r]);
  w.close();
  writeSnapshot(snaps, { lsn: 30, registryVersion: 1 }, Buffer.from('state-30'));
  writeSnapshot(snaps, { lsn: 60, registryVersion: 1 }, Buffer.from('state-60'));
  return { wal, snaps };
}

test('a healthy shard directory checks ok', () => {
  const root = tempDir('check');
  try {
    shardDir(root);
    const r = checkWalDir(join(root, 'shard-0'));
    assert.equal(r.ok, true, formatWalCheckReport(r));
    assert.equal(r.records, 60);
    assert.equal(r.lastLsn, 60);
    assert.ok(r.segments.length > 1);
    assert.deepEqual(r.snapshots.map((s) => [s.lsn, s.ok]), [[30, true], [60, true]]);
    assert.match(formatWalCheckReport(r), /ok$/);
  } finally {
    cleanup(root);
  }
});

test('damage is reported and nothing is modified', () => {
  const root = tempDir('check2');
  try {
    const { wal, snaps } = shardDir(root);
    const r0 = checkWalDir(join(root, 'shard-0'));
    const last = join(wal, r0.segments[r0.segments.length - 1].name);
    const first = join(wal, r0.segments[0].name);
    writeFileSync(last, Buffer.concat([readFileSync(last), Buffer.from([1, 2, 3])]));
    const firstBuf = readFileSync(first);
    firstBuf[30] ^= 0xff;
    writeFileSync(first, firstBuf);
    const snap = join(snaps, '00000000000000000060.snap');
    const snapBuf = readFileSync(snap);
    snapBuf[snapBuf.length - 1] ^= 0xff;
    writeFileSync(snap, snapBuf);
    const sizes = [statSync(last).size, statSync(first).size];
    const r = checkWalDir(join(root, 'shard-0'));
    assert.equal(r.ok, false);
    const kinds = r.findings.map((f) => f.kind);
    assert.ok(kinds.includes('corrupt_record'), kinds.join());
    assert.ok(kinds.includes('torn_tail'), kinds.join());
    assert.ok(kinds.includes('snapshot_invalid'), kinds.join());
    assert.equal(r.findings.find((f) => f.kind === 'torn_tail')?.action, 'would_truncate');
    assert.deepEqual(r.snapshots.map((s) => [s.lsn, s.ok, s.reason]), [[30, true, ''], [60, false, 'body_crc_mismatch']]);
    assert.deepEqual([statSync(last).size, statSync(first).size], sizes);
    assert.match(formatWalCheckReport(r), /problems found$/);
  } finally {
    cleanup(root);
  }
});
