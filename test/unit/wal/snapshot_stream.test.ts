/**
 * Streamed snapshot files (src/wal/snapshot_stream.ts, file version 2): a body
 * appended in pieces across several lz4 blocks reads back byte for byte; the file
 * is the one writeSnapshot writes; version-1 files (one lz4 block) still read; a
 * damaged block is refused by the body crc; the producer is held back while
 * its compressed blocks wait for the disk; an abort or a failed write leaves no file behind; older
 * snapshots and covered WAL segments are retired (renamed out of every listing,
 * unlinked off-thread), and retired leftovers of a crash go too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32c, readNewestSnapshot, recoverWal, SnapshotStream, WalWriter, writeSnapshot } from '../../../src/wal';
import { retireFile, RETIRED_SUFFIX } from '../../../src/wal/file_ops';
import { SNAPSHOT_BLOCK_BYTES, SNAPSHOT_BLOCKS_IN_FLIGHT } from '../../../src/limits';
import { appendRecords, cleanup, makePushes, prng, tempDir } from './helpers';

async function settle(dir: string, n: number): Promise<string[]> {
  for (let i = 0; i < 300 && readdirSync(dir).length > n; i++) await new Promise((r) => setTimeout(r, 10));
  return readdirSync(dir).sort();
}

/** Compressible but not trivial: a few random bytes per run of repeats. */
function body(seed: number, bytes: number): Buffer {
  const rnd = prng(seed);
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) b[i] = i % 13 === 0 ? Math.floor(rnd() * 256) : i % 7;
  return b;
}

/** Appends `b` in pieces of varied sizes (some larger than a block). */
function feed(s: SnapshotStream, b: Buffer, seed: number): void {
  const rnd = prng(seed);
  for (let at = 0; at < b.length;) {
    const n = Math.min(b.length - at, 1 + Math.floor(rnd() * (rnd() < 0.1 ? 3 * SNAPSHOT_BLOCK_BYTES : 200_000)));
    s.write(b.subarray(at, at + n));
    at += n;
  }
}

test('a streamed snapshot over several blocks reads back byte for byte, like writeSnapshot\'s file', async () => {
  const dir = tempDir('snapstream');
  try {
    const b = body(1, Math.floor(3.5 * SNAPSHOT_BLOCK_BYTES));
    const s = new SnapshotStream(dir, { lsn: 77, registryVersion: 3 });
    feed(s, b, 2);
    assert.equal(s.rawBytes, b.length);
    const res = await s.finish();
    assert.equal(res.path, join(dir, '00000000000000000077.snap'));
    assert.equal(res.rawBytes, b.length);
    assert.ok(res.bytes < b.length / 2, `compressed: ${res.bytes}`);
    const file = readFileSync(res.path);
    assert.equal(file.length, res.bytes);
    assert.equal(file.readUInt32LE(8), 1, 'file version 1');
    const got = readNewestSnapshot(dir);
    assert.equal(got?.meta.lsn, 77);
    assert.equal(got?.meta.registryVersion, 3);
    assert.ok(got?.body.equals(b));
    assert.deepEqual(readdirSync(dir), ['00000000000000000077.snap'], 'no tmp file left');
    // The synchronous writer makes the same blocks: the same bytes after the header.
    const other = tempDir('snapsync');
    try {
      const sync = writeSnapshot(other, { lsn: 77, registryVersion: 3 }, b);
      assert.ok(readFileSync(sync.path).subarray(64).equals(file.subarray(64)));
    } finally {
      cleanup(other);
    }
    // An empty body is a file with no blocks.
    const empty = new SnapshotStream(dir, { lsn: 78, registryVersion: 3 });
    await empty.finish();
    assert.equal(readNewestSnapshot(dir)?.body.length, 0);
  } finally {
    cleanup(dir);
  }
});

test('a file of another file version is skipped, naming the version; the newest file of this version is read', () => {
  const dir = tempDir('snapver');
  try {
    const b = body(3, 200_000);
    writeSnapshot(dir, { lsn: 500, registryVersion: 4 }, b);
    const good = readFileSync(join(dir, '00000000000000000500.snap'));
    assert.equal(good.readUInt32LE(8), 1);
    // Version 2 was the block layout of pre-release builds (now version 1), 9 is unknown.
    for (const [lsn, version] of [[600, 2], [700, 9]]) {
      const h = Buffer.from(good);
      h.writeUInt32LE(version, 8);
      h.writeUInt32LE(lsn, 16);
      h.writeUInt32LE(crc32c(h, 0, 60), 60);
      writeFileSync(join(dir, `${String(lsn).padStart(20, '0')}.snap`), h);
    }
    const seen: string[] = [];
    const got = readNewestSnapshot(dir, { onSkip: (_, r) => seen.push(r) });
    assert.deepEqual(got?.meta, { lsn: 500, registryVersion: 4, createdAtMs: got?.meta.createdAtMs });
    assert.ok(got?.body.equals(b));
    assert.deepEqual(seen, ['unknown_version 9 (reads 1)', 'unknown_version 2 (reads 1)']);
  } finally {
    cleanup(dir);
  }
});

test('a damaged block is refused (body crc) and the previous snapshot is used', async () => {
  const dir = tempDir('snapdamage');
  try {
    const older = body(4, 1000);
    writeSnapshot(dir, { lsn: 10, registryVersion: 1 }, older);
    const s = new SnapshotStream(dir, { lsn: 20, registryVersion: 1 });
    feed(s, body(5, 2 * SNAPSHOT_BLOCK_BYTES + 10), 6);
    const res = await s.finish();
    const file = readFileSync(res.path);
    file[file.length - 100] ^= 0x10;
    writeFileSync(res.path, file);
    const got = readNewestSnapshot(dir);
    assert.equal(got?.meta.lsn, 10);
    assert.ok(got?.body.equals(older));
    assert.match(got?.skipped[0] ?? '', /body_crc_mismatch/);
  } finally {
    cleanup(dir);
  }
});

test('the producer is held back while SNAPSHOT_BLOCKS_IN_FLIGHT blocks wait for the disk, then let go', async () => {
  const dir = tempDir('snapfull');
  try {
    const s = new SnapshotStream(dir, { lsn: 5, registryVersion: 1 });
    const b = body(7, SNAPSHOT_BLOCK_BYTES);
    let blocks = 0;
    while (!s.full) {
      s.write(b);
      blocks++;
    }
    assert.equal(blocks, SNAPSHOT_BLOCKS_IN_FLIGHT, 'full once that many compressed blocks wait for the disk');
    await new Promise<void>((resolve) => s.whenRoom(resolve));
    assert.equal(s.full, false);
    const res = await s.finish();
    assert.equal(res.rawBytes, blocks * b.length);
    assert.equal(readNewestSnapshot(dir)?.body.length, blocks * b.length);
  } finally {
    cleanup(dir);
  }
});

test('an aborted stream leaves no file; a failed one rejects and leaves the previous snapshot', async () => {
  const dir = tempDir('snapabort');
  try {
    writeSnapshot(dir, { lsn: 1, registryVersion: 1 }, body(8, 100));
    const s = new SnapshotStream(dir, { lsn: 2, registryVersion: 1 });
    feed(s, body(9, 2 * SNAPSHOT_BLOCK_BYTES), 10);
    s.abort();
    // The tmp file goes once the blocks in flight settle.
    for (let i = 0; i < 200 && readdirSync(dir).length > 1; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(readdirSync(dir), ['00000000000000000001.snap']);
    // The directory disappears under a stream: its open fails, finish() rejects.
    const gone = join(dir, 'gone');
    const f = new SnapshotStream(gone, { lsn: 3, registryVersion: 1 });
    f.write(body(11, 1000));
    await assert.rejects(f.finish(), (e: NodeJS.ErrnoException) => e.code === 'ENOENT');
    rmSync(gone, { recursive: true, force: true });
    assert.equal(readNewestSnapshot(dir)?.meta.lsn, 1);
  } finally {
    cleanup(dir);
  }
});

test('a stream retires older snapshots (no blocking unlink) and retired leftovers; readers never see them', async () => {
  const dir = tempDir('snapretire');
  try {
    writeFileSync(join(dir, `00000000000000000001.snap${RETIRED_SUFFIX}`), 'left by a crash');
    for (const lsn of [10, 20, 30]) {
      const s = new SnapshotStream(dir, { lsn, registryVersion: 1 });
      s.write(body(lsn, 5000));
      const res = await s.finish();
      if (lsn === 30) assert.ok(res.pruned.includes('00000000000000000010.snap'), 'the oldest snapshot');
      assert.equal(readNewestSnapshot(dir)?.meta.lsn, lsn);
    }
    assert.deepEqual(await settle(dir, 2), ['00000000000000000020.snap', '00000000000000000030.snap']);
  } finally {
    cleanup(dir);
  }
});

test('covered WAL segments retired off-thread: gone from the listing at once, unlinked later; recovery reads the rest', async () => {
  const dir = tempDir('walretire');
  try {
    const w = WalWriter.open(dir, { segmentBytesMax: 1024 });
    const records = makePushes(200, 1);
    for (let i = 0; i < records.length; i += 5) appendRecords(w, records.slice(i, i + 5));
    const segs = (): string[] => readdirSync(dir).filter((n) => n.endsWith('.log')).sort();
    const before = segs();
    assert.ok(before.length >= 4);
    const firsts = before.map((n) => Number(n.slice(0, 20)));
    writeFileSync(join(dir, `00000000000000000000.log${RETIRED_SUFFIX}`), 'left by a crash');
    assert.equal(w.deleteSegmentsCoveredBy(firsts[2] - 1, (name) => retireFile(dir, name)), 2);
    assert.deepEqual(segs(), before.slice(2), 'renamed out of the listing before the call returns');
    assert.deepEqual(await settle(dir, before.length - 2), before.slice(2), 'retired files and the leftover unlinked');
    w.close();
    const got: number[] = [];
    recoverWal(dir, -1, (r) => got.push(r.lsn));
    assert.deepEqual(got, records.filter((r) => r.lsn >= firsts[2]).map((r) => r.lsn));
  } finally {
    cleanup(dir);
  }
});
