import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deleteAllSnapshots, faultyFs, readNewestSnapshot, realFs, writeSnapshot } from '../../../src/wal';
import { cleanup, prng, tempDir } from './helpers';

function body(seed: number, bytes: number): Buffer {
  const rnd = prng(seed);
  const b = Buffer.alloc(bytes);
  // Half random, half repetitive: exercises lz4 on both kinds of data.
  for (let i = 0; i < bytes; i++) b[i] = i < bytes / 2 ? Math.floor(rnd() * 256) : i % 17;
  return b;
}

function snaps(dir: string): string[] {
  return readdirSync(dir).sort();
}

test('snapshot round-trip (header fields, body, empty body)', () => {
  const dir = tempDir('snap');
  try {
    const b = body(1, 100_000);
    const res = writeSnapshot(dir, { lsn: 4242, registryVersion: 7 }, b, { nowMs: 1_700_000_000_000 });
    assert.equal(res.path, join(dir, '00000000000000004242.snap'));
    assert.equal(res.rawBytes, b.length);
    assert.ok(res.bytes < b.length, 'lz4 compressed the repetitive half');
    assert.ok(res.compressMs >= 0 && res.writeMs >= 0);
    const got = readNewestSnapshot(dir);
    assert.ok(got !== null);
    assert.deepEqual(got.meta, { lsn: 4242, registryVersion: 7, createdAtMs: 1_700_000_000_000 });
    assert.ok(got.body.equals(b));
    assert.deepEqual(got.skipped, []);
    writeSnapshot(dir, { lsn: 5000, registryVersion: 8 }, Buffer.alloc(0));
    const empty = readNewestSnapshot(dir);
    assert.equal(empty?.meta.lsn, 5000);
    assert.equal(empty?.body.length, 0);
  } finally {
    cleanup(dir);
  }
});

test('keeps the newest two (or `keep`) and removes tmp leftovers', () => {
  const dir = tempDir('snapkeep');
  try {
    writeFileSync(join(dir, '00000000000000000001.snap.tmp'), 'half-written');
    for (const lsn of [10, 20, 30, 40]) writeSnapshot(dir, { lsn, registryVersion: 1 }, body(lsn, 1000));
    assert.deepEqual(snaps(dir), ['00000000000000000030.snap', '00000000000000000040.snap']);
    writeSnapshot(dir, { lsn: 50, registryVersion: 1 }, body(50, 1000), { keep: 3 });
    assert.deepEqual(snaps(dir), ['00000000000000000030.snap', '00000000000000000040.snap', '00000000000000000050.snap']);
  } finally {
    cleanup(dir);
  }
});

test('a corrupt newest snapshot is skipped and reported; the previous one is returned', () => {
  const dir = tempDir('snapcorrupt');
  try {
    const older = body(3, 5000);
    writeSnapshot(dir, { lsn: 100, registryVersion: 2 }, older);
    writeSnapshot(dir, { lsn: 200, registryVersion: 3 }, body(4, 5000));
    const newest = join(dir, '00000000000000000200.snap');
    for (const at of [3, 20, 61, 64, 100]) {
      const orig = readFileSync(newest);
      const bad = Buffer.from(orig);
      bad[Math.min(at, bad.length - 1)] ^= 0x01;
      writeFileSync(newest, bad);
      const seen: string[] = [];
      const got = readNewestSnapshot(dir, { onSkip: (name, reason) => seen.push(`${name}:${reason}`) });
      assert.equal(got?.meta.lsn, 100, `flip at ${at}`);
      assert.ok(got?.body.equals(older));
      assert.equal(got?.skipped.length, 1);
      assert.match(got?.skipped[0] ?? '', /^00000000000000000200\.snap: /);
      assert.equal(seen.length, 1);
      writeFileSync(newest, orig);
    }
    writeFileSync(newest, readFileSync(newest).subarray(0, 40));
    assert.match(readNewestSnapshot(dir)?.skipped[0] ?? '', /short_header/);
  } finally {
    cleanup(dir);
  }
});

test('a snapshot whose name disagrees with its header lsn is rejected', () => {
  const dir = tempDir('snapname');
  try {
    writeSnapshot(dir, { lsn: 7, registryVersion: 1 }, body(7, 100));
    const src = join(dir, '00000000000000000007.snap');
    writeFileSync(join(dir, '00000000000000000009.snap'), readFileSync(src));
    const got = readNewestSnapshot(dir);
    assert.equal(got?.meta.lsn, 7);
    assert.match(got?.skipped[0] ?? '', /lsn_does_not_match_name/);
  } finally {
    cleanup(dir);
  }
});

test('no valid snapshot: null; tmp leftovers alone are ignored', () => {
  const dir = tempDir('snapnone');
  try {
    assert.equal(readNewestSnapshot(join(dir, 'missing')), null);
    writeFileSync(join(dir, '00000000000000000005.snap.tmp'), 'junk');
    assert.equal(readNewestSnapshot(dir), null);
    writeFileSync(join(dir, '00000000000000000006.snap'), 'junk');
    const seen: string[] = [];
    assert.equal(readNewestSnapshot(dir, { onSkip: (n, r) => seen.push(r) }), null);
    assert.deepEqual(seen, ['short_header']);
  } finally {
    cleanup(dir);
  }
});

test('a failed snapshot write leaves the previous snapshot and no tmp file', () => {
  const dir = tempDir('snapfail');
  try {
    const fs = faultyFs(realFs);
    writeSnapshot(dir, { lsn: 1, registryVersion: 1 }, body(1, 3000), { fs });
    fs.failWrites('ENOSPC');
    assert.throws(() => writeSnapshot(dir, { lsn: 2, registryVersion: 1 }, body(2, 3000), { fs }), (e: NodeJS.ErrnoException) => e.code === 'ENOSPC');
    fs.failWrites(null);
    fs.failSyncs('EIO');
    assert.throws(() => writeSnapshot(dir, { lsn: 3, registryVersion: 1 }, body(3, 3000), { fs }), (e: NodeJS.ErrnoException) => e.code === 'EIO');
    fs.failSyncs(null);
    assert.deepEqual(snaps(dir), ['00000000000000000001.snap']);
    assert.equal(readNewestSnapshot(dir, { fs })?.meta.lsn, 1);
  } finally {
    cleanup(dir);
  }
});

test('deleteAllSnapshots (for /reset) removes snapshots and tmp files', () => {
  const dir = tempDir('snapdel');
  try {
    writeSnapshot(dir, { lsn: 1, registryVersion: 1 }, body(1, 10));
    writeSnapshot(dir, { lsn: 2, registryVersion: 1 }, body(2, 10));
    writeFileSync(join(dir, '00000000000000000003.snap.tmp'), 'x');
    assert.equal(deleteAllSnapshots(dir), 3);
    assert.deepEqual(snaps(dir), []);
    assert.equal(deleteAllSnapshots(join(dir, 'missing')), 0);
  } finally {
    cleanup(dir);
  }
});
